package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.storage.KeyValueDisk.Column;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The in-memory disk keeps RocksDB's order, isolation and write-ahead-log durability contract:
 * the shared {@link KeyValueDiskContract}, and here what only it does (power loss, damage).
 */
class MemoryDiskTest extends KeyValueDiskContract {

  @Override
  protected KeyValueDisk openDisk() {
    return new MemoryDisk();
  }

  @Test
  void aSnapshotOfAnotherDiskIsRefused() {
    MemoryDisk other = new MemoryDisk();
    assertThrows(IllegalArgumentException.class,
        () -> new MemoryDisk().multiGet(Column.JOURNAL, List.of(bytes(1)), other.snapshot()));
  }

  @Test
  void aCrashKeepsSyncedBatchesAndLosesUnsyncedOnes() throws Exception {
    MemoryDisk disk = new MemoryDisk();
    put(disk, Column.META, bytes(1), bytes(1), true);
    put(disk, Column.META, bytes(2), bytes(2), false);
    put(disk, Column.META, bytes(3), bytes(3), true);
    put(disk, Column.META, bytes(4), bytes(4), false);
    assertEquals(1, disk.unsyncedBatches());
    MemoryDisk after = disk.crash(new SplittableRandom(1), 0.0);
    assertArrayEquals(bytes(1), after.get(Column.META, bytes(1)));
    assertArrayEquals(bytes(2), after.get(Column.META, bytes(2)), "synced by the later sync");
    assertArrayEquals(bytes(3), after.get(Column.META, bytes(3)));
    assertNull(after.get(Column.META, bytes(4)), "unsynced, lost");
    assertEquals(0, after.unsyncedBatches());
  }

  @Test
  void aSyncOrAWriteAheadLogFlushMakesEveryEarlierBatchDurable() throws Exception {
    MemoryDisk disk = new MemoryDisk();
    put(disk, Column.META, bytes(1), bytes(1), false);
    put(disk, Column.META, bytes(2), bytes(2), false);
    disk.flushWriteAheadLog(false);
    assertEquals(2, disk.unsyncedBatches(), "a flush without sync makes nothing durable");
    disk.flushWriteAheadLog(true);
    put(disk, Column.META, bytes(3), bytes(3), false);
    MemoryDisk after = disk.crash(new SplittableRandom(1), 0.0);
    assertArrayEquals(bytes(1), after.get(Column.META, bytes(1)));
    assertArrayEquals(bytes(2), after.get(Column.META, bytes(2)));
    assertNull(after.get(Column.META, bytes(3)));
  }

  @Test
  void aCrashKeepsAWholeBatchPrefixOfTheUnsyncedOnes() throws Exception {
    int batches = 6;
    Set<Integer> keptCounts = new HashSet<>();
    for (long seed = 0; seed < 200; seed++) {
      MemoryDisk disk = new MemoryDisk();
      put(disk, Column.META, bytes(0xFF), bytes(0), true);
      for (int i = 0; i < batches; i++) {
        try (KeyValueDisk.Batch batch = disk.newBatch()) {
          batch.put(Column.JOURNAL, bytes(i), bytes(i));
          batch.put(Column.INDEX, bytes(i), bytes(i));
          batch.delete(Column.META, bytes(0xFF));
          batch.put(Column.META, bytes(0xFF), bytes(i + 1));
          disk.write(batch, false);
        }
      }
      MemoryDisk after = disk.crash(new SplittableRandom(seed), 0.5);
      int kept = after.get(Column.META, bytes(0xFF))[0];
      keptCounts.add(kept);
      for (int i = 0; i < batches; i++) {
        boolean expected = i < kept;
        assertEquals(expected, after.get(Column.JOURNAL, bytes(i)) != null,
            "seed " + seed + ": journal put of batch " + i + " with " + kept + " kept");
        assertEquals(expected, after.get(Column.INDEX, bytes(i)) != null,
            "seed " + seed + ": index put of batch " + i + " with " + kept + " kept");
      }
      // What survived is durable now: a second crash keeps it.
      MemoryDisk again = after.crash(new SplittableRandom(seed), 0.0);
      assertEquals(kept, again.get(Column.META, bytes(0xFF))[0], "seed " + seed);
      assertEquals(kept, again.durableJournalValuesEverWritten().size(), "seed " + seed);
    }
    for (int kept = 0; kept <= batches; kept++) {
      assertTrue(keptCounts.contains(kept), "some seed kept " + kept + " batches: " + keptCounts);
    }
  }

  @Test
  void endedHandlesFailAndARestartKeepsUnsyncedBatchesUnsynced() throws Exception {
    MemoryDisk disk = new MemoryDisk();
    put(disk, Column.META, bytes(1), bytes(1), true);
    put(disk, Column.META, bytes(2), bytes(2), false);
    MemoryDisk restarted = disk.restart();
    assertThrows(DiskException.class, () -> put(disk, Column.META, bytes(3), bytes(3), true));
    assertThrows(DiskException.class, () -> disk.get(Column.META, bytes(1)));
    assertThrows(IllegalStateException.class, disk::snapshot);
    assertThrows(IllegalStateException.class, () -> disk.cursor(Column.META));
    assertThrows(IllegalStateException.class, disk::restart);
    assertArrayEquals(bytes(2), restarted.get(Column.META, bytes(2)), "no power was lost");
    assertEquals(1, restarted.unsyncedBatches());
    restarted.close();
    assertThrows(DiskException.class, () -> restarted.get(Column.META, bytes(1)));
    MemoryDisk crashed = restarted.crash(new SplittableRandom(3), 0.0);
    assertArrayEquals(bytes(1), crashed.get(Column.META, bytes(1)));
    assertNull(crashed.get(Column.META, bytes(2)), "still unsynced when the power went");
  }

  @Test
  void durableJournalPutsAreObservedEvenAfterTheirDeletion() throws Exception {
    MemoryDisk disk = new MemoryDisk();
    put(disk, Column.JOURNAL, bytes(1), bytes(10), false);
    put(disk, Column.INDEX, bytes(1), bytes(99), true);
    put(disk, Column.JOURNAL, bytes(2), bytes(20), false);
    assertEquals(1, disk.durableJournalValuesEverWritten().size(), "only durable puts");
    try (KeyValueDisk.Batch batch = disk.newBatch()) {
      batch.deleteRange(Column.JOURNAL, bytes(0), bytes(3));
      disk.write(batch, true);
    }
    MemoryDisk after = disk.crash(new SplittableRandom(1), 1.0);
    assertNull(after.get(Column.JOURNAL, bytes(1)));
    List<byte[]> observed = after.durableJournalValuesEverWritten();
    assertEquals(2, observed.size());
    assertArrayEquals(bytes(10), observed.get(0));
    assertArrayEquals(bytes(20), observed.get(1));
  }

  @Test
  void damagedKeysFailEveryReadUntilRewrittenAndSurviveACrash() throws Exception {
    MemoryDisk disk = new MemoryDisk();
    for (int i = 1; i <= 3; i++) {
      put(disk, Column.CHECKPOINTS, bytes(i), bytes(10 * i), true);
    }
    assertFalse(disk.damage(Column.CHECKPOINTS, bytes(9)), "no such key: nothing to damage");
    assertTrue(disk.damage(Column.CHECKPOINTS, bytes(2)));
    assertEquals(3, disk.storedKeys(Column.CHECKPOINTS, bytes(0), bytes(9)).size());

    assertArrayEquals(bytes(10), disk.get(Column.CHECKPOINTS, bytes(1)));
    assertThrows(CorruptDataException.class, () -> disk.get(Column.CHECKPOINTS, bytes(2)));
    assertThrows(CorruptDataException.class,
        () -> disk.multiGet(Column.CHECKPOINTS, List.of(bytes(1), bytes(2)), null));
    // A cursor stops at the damage and says so; it never reports the end of the data there.
    try (KeyValueDisk.Cursor cursor = disk.cursor(Column.CHECKPOINTS)) {
      cursor.seekToFirst();
      assertTrue(cursor.isValid());
      cursor.next();
      assertThrows(CorruptDataException.class, cursor::isValid);
      cursor.seek(bytes(3));
      assertTrue(cursor.isValid(), "past the damage the cursor reads on");
    }

    MemoryDisk restarted = disk.crash(new SplittableRandom(1), 0.5);
    assertThrows(CorruptDataException.class, () -> restarted.get(Column.CHECKPOINTS, bytes(2)));
    put(restarted, Column.CHECKPOINTS, bytes(2), bytes(21), true);
    assertArrayEquals(bytes(21), restarted.get(Column.CHECKPOINTS, bytes(2)),
        "fresh bytes are intact");

    assertTrue(restarted.damage(Column.CHECKPOINTS, bytes(3)));
    restarted.ignoreDamageAsUncheckedRocksDbDid();
    assertNull(restarted.get(Column.CHECKPOINTS, bytes(3)), "the breakage answers absent");
  }
}
