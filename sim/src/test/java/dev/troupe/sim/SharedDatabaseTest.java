package dev.troupe.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.storage.DiskException;
import dev.troupe.storage.FencedException;
import dev.troupe.storage.KeyValueDisk;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/**
 * {@link SharedDatabase}: node views of one disk whose close leaves it open, and the journal audit
 * that catches a journal record written under an owner epoch that is not the partition's current
 * one (what the fence refuses, and what {@code UNFENCED_WRITES} lets through).
 */
class SharedDatabaseTest {
  /** A journal key as the store writes it: partition (u16), sequence (u64). */
  private static byte[] journalKey(int partition, long sequence) {
    return ByteBuffer.allocate(10).putShort((short) partition).putLong(sequence).array();
  }

  private static void writeJournal(KeyValueDisk view, int partition, long epoch, long sequence)
      throws DiskException {
    try (KeyValueDisk.Batch batch = view.newBatch()) {
      batch.put(KeyValueDisk.Column.JOURNAL, journalKey(partition, sequence), new byte[] {1});
      batch.fence(partition, epoch);
      view.write(batch, true);
    }
  }

  @Test
  void aViewsCloseLeavesTheDatabaseOpenForTheOthers() throws DiskException {
    SharedDatabase database = new SharedDatabase(false);
    KeyValueDisk first = database.viewFor(0);
    KeyValueDisk second = database.viewFor(1);
    long epoch = first.acquirePartition(0, 0);
    first.close();
    writeJournal(database.viewFor(0), 0, epoch, 1);
    assertNotNull(second.get(KeyValueDisk.Column.JOURNAL, journalKey(0, 1)));
  }

  @Test
  void theFenceRefusesTheOldOwnerAndTheAuditStaysQuiet() throws DiskException {
    SharedDatabase database = new SharedDatabase(false);
    KeyValueDisk zombie = database.viewFor(0);
    KeyValueDisk next = database.viewFor(1);
    long old = zombie.acquirePartition(3, 0);
    writeJournal(zombie, 3, old, 1);
    long fresh = next.acquirePartition(3, 1);
    assertThrows(FencedException.class, () -> writeJournal(zombie, 3, old, 2));
    writeJournal(next, 3, fresh, 2);
    assertNull(database.violation());
    assertEquals(2, database.auditedJournalRecords());
    assertNull(next.get(KeyValueDisk.Column.JOURNAL, journalKey(3, 3)));
  }

  @Test
  void withoutFencesTheZombiesWriteLandsAndTheAuditNamesIt() throws DiskException {
    SharedDatabase database = new SharedDatabase(true);
    KeyValueDisk zombie = database.viewFor(0);
    KeyValueDisk next = database.viewFor(1);
    long old = zombie.acquirePartition(3, 0);
    next.acquirePartition(3, 1);
    writeJournal(zombie, 3, old, 2);
    assertTrue(database.violation().contains("journal record 2 of partition 3 written by node 0"
        + " under owner epoch 1 while node 1 owned it under epoch 2"), database.violation());
  }

  @Test
  void aJournalRecordWithoutAFenceIsAViolation() throws DiskException {
    SharedDatabase database = new SharedDatabase(false);
    KeyValueDisk view = database.viewFor(0);
    try (KeyValueDisk.Batch batch = view.newBatch()) {
      batch.put(KeyValueDisk.Column.JOURNAL, journalKey(1, 1), new byte[] {1});
      view.write(batch, true);
    }
    assertTrue(database.violation().contains("without a fence"), database.violation());
  }
}
