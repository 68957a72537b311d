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

/** The in-memory disk keeps RocksDB's order, isolation and write-ahead-log durability contract. */
class MemoryDiskTest {

  private static byte[] bytes(int... values) {
    byte[] result = new byte[values.length];
    for (int i = 0; i < values.length; i++) {
      result[i] = (byte) values[i];
    }
    return result;
  }

  private static void put(KeyValueDisk disk, Column column, byte[] key, byte[] value, boolean sync)
      throws DiskException {
    try (KeyValueDisk.Batch batch = disk.newBatch()) {
      batch.put(column, key, value);
      disk.write(batch, sync);
    }
  }

  private static List<byte[]> keys(KeyValueDisk.Cursor cursor) {
    List<byte[]> keys = new ArrayList<>();
    for (; cursor.isValid(); cursor.next()) {
      keys.add(cursor.key());
    }
    return keys;
  }

  private static void assertKeys(List<byte[]> expected, List<byte[]> actual) {
    assertEquals(expected.size(), actual.size(), "number of keys");
    for (int i = 0; i < expected.size(); i++) {
      assertArrayEquals(expected.get(i), actual.get(i), "key " + i);
    }
  }

  @Test
  void keysAreInUnsignedLexicographicOrderPerColumn() throws Exception {
    MemoryDisk disk = new MemoryDisk();
    List<byte[]> sorted = List.of(bytes(), bytes(0x00), bytes(0x00, 0x01), bytes(0x01),
        bytes(0x7F), bytes(0x80), bytes(0x80, 0x00), bytes(0xFF));
    for (int i = sorted.size() - 1; i >= 0; i--) {
      put(disk, Column.INDEX, sorted.get(i), bytes(i), false);
    }
    put(disk, Column.META, bytes(0x42), bytes(1), false);
    try (KeyValueDisk.Cursor cursor = disk.cursor(Column.INDEX)) {
      cursor.seekToFirst();
      assertKeys(sorted, keys(cursor));
    }
    try (KeyValueDisk.Cursor cursor = disk.cursor(Column.META)) {
      cursor.seekToFirst();
      assertKeys(List.of(bytes(0x42)), keys(cursor));
    }
    assertArrayEquals(bytes(5), disk.get(Column.INDEX, bytes(0x80)));
    assertNull(disk.get(Column.JOURNAL, bytes(0x80)), "columns are separate");
  }

  @Test
  void cursorsSeekForwardAndBackWithinTheirBounds() throws Exception {
    MemoryDisk disk = new MemoryDisk();
    try (KeyValueDisk.Cursor cursor = disk.cursor(Column.CHECKPOINTS)) {
      cursor.seekToFirst();
      assertFalse(cursor.isValid(), "an empty column");
      cursor.seek(bytes(1));
      assertFalse(cursor.isValid());
      cursor.seekForPrev(bytes(1));
      assertFalse(cursor.isValid());
    }
    for (int i = 0; i < 10; i++) {
      put(disk, Column.CHECKPOINTS, bytes(2 * i), bytes(i), false);
    }
    try (KeyValueDisk.Cursor cursor = disk.cursor(Column.CHECKPOINTS)) {
      cursor.seek(bytes(5));
      assertArrayEquals(bytes(6), cursor.key());
      assertArrayEquals(bytes(3), cursor.value());
      cursor.seekForPrev(bytes(5));
      assertArrayEquals(bytes(4), cursor.key());
      cursor.seekForPrev(bytes(4));
      assertArrayEquals(bytes(4), cursor.key(), "seekForPrev finds an equal key");
      cursor.next();
      assertArrayEquals(bytes(6), cursor.key());
      cursor.seekForPrev(bytes(0xFF, 0xFF));
      assertArrayEquals(bytes(18), cursor.key());
      cursor.next();
      assertFalse(cursor.isValid());
      cursor.seek(bytes(19));
      assertFalse(cursor.isValid());
      cursor.seekForPrev(bytes());
      assertFalse(cursor.isValid());
      assertThrows(IllegalStateException.class, cursor::key);
    }
    // [4, 10): as RocksDB's iterate bounds, seeks clamp to them.
    try (KeyValueDisk.Cursor cursor = disk.cursor(Column.CHECKPOINTS, null, bytes(4), bytes(10))) {
      cursor.seekToFirst();
      assertKeys(List.of(bytes(4), bytes(6), bytes(8)), keys(cursor));
      cursor.seek(bytes(0));
      assertArrayEquals(bytes(4), cursor.key());
      cursor.seekForPrev(bytes(0x7F));
      assertArrayEquals(bytes(8), cursor.key(), "the upper bound is exclusive");
      cursor.seekForPrev(bytes(3));
      assertFalse(cursor.isValid(), "nothing at or before 3 within the bounds");
      cursor.seek(bytes(9));
      assertFalse(cursor.isValid());
    }
  }

  @Test
  void snapshotsAndCursorsReadOnePointInTime() throws Exception {
    MemoryDisk disk = new MemoryDisk();
    put(disk, Column.JOURNAL, bytes(1), bytes(10), false);
    put(disk, Column.JOURNAL, bytes(2), bytes(20), false);
    KeyValueDisk.Snapshot snapshot = disk.snapshot();
    KeyValueDisk.Cursor cursorBefore = disk.cursor(Column.JOURNAL);
    try (KeyValueDisk.Batch batch = disk.newBatch()) {
      batch.put(Column.JOURNAL, bytes(1), bytes(11));
      batch.delete(Column.JOURNAL, bytes(2));
      batch.put(Column.JOURNAL, bytes(3), bytes(30));
      disk.write(batch, false);
    }
    List<byte[]> atSnapshot =
        disk.multiGet(Column.JOURNAL, List.of(bytes(1), bytes(2), bytes(3)), snapshot);
    assertArrayEquals(bytes(10), atSnapshot.get(0));
    assertArrayEquals(bytes(20), atSnapshot.get(1));
    assertNull(atSnapshot.get(2));
    List<byte[]> latest = disk.multiGet(Column.JOURNAL, List.of(bytes(1), bytes(2), bytes(3)), null);
    assertArrayEquals(bytes(11), latest.get(0));
    assertNull(latest.get(1));
    assertArrayEquals(bytes(30), latest.get(2));
    try (KeyValueDisk.Cursor cursor = disk.cursor(Column.JOURNAL, snapshot, null, null)) {
      cursor.seekToFirst();
      assertKeys(List.of(bytes(1), bytes(2)), keys(cursor));
    }
    cursorBefore.seekToFirst();
    assertKeys(List.of(bytes(1), bytes(2)), keys(cursorBefore));
    cursorBefore.close();
    try (KeyValueDisk.Cursor cursor = disk.cursor(Column.JOURNAL)) {
      cursor.seekToFirst();
      assertKeys(List.of(bytes(1), bytes(3)), keys(cursor));
    }
    snapshot.close();
    assertThrows(IllegalArgumentException.class,
        () -> new MemoryDisk().multiGet(Column.JOURNAL, List.of(bytes(1)), disk.snapshot()));
  }

  @Test
  void deleteRangeDeletesFromInclusiveToExclusive() throws Exception {
    MemoryDisk disk = new MemoryDisk();
    for (int i = 0; i < 8; i++) {
      put(disk, Column.JOURNAL, bytes(0, i), bytes(i), false);
      put(disk, Column.INDEX, bytes(0, i), bytes(i), false);
    }
    try (KeyValueDisk.Batch batch = disk.newBatch()) {
      batch.deleteRange(Column.JOURNAL, bytes(0, 2), bytes(0, 5));
      batch.deleteRange(Column.JOURNAL, bytes(0, 6), bytes(0, 6));
      disk.write(batch, true);
    }
    try (KeyValueDisk.Cursor cursor = disk.cursor(Column.JOURNAL)) {
      cursor.seekToFirst();
      assertKeys(List.of(bytes(0, 0), bytes(0, 1), bytes(0, 5), bytes(0, 6), bytes(0, 7)),
          keys(cursor));
    }
    try (KeyValueDisk.Cursor cursor = disk.cursor(Column.INDEX)) {
      cursor.seekToFirst();
      assertEquals(8, keys(cursor).size(), "other columns are untouched");
    }
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
