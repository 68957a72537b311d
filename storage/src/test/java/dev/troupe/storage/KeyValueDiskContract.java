package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.storage.KeyValueDisk.Column;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The {@link KeyValueDisk} contract, run against every disk ({@link MemoryDiskTest}, {@code
 * RocksDiskContractTest}, {@code PostgresDiskContractTest}): key order (bytes at and above 0x80
 * included), seeks and bounds, snapshot isolation of cursors and multiGet, range deletions, the
 * order of a batch's operations on one key, atomic batches, and the owner-epoch fence, also while
 * fenced batches are in flight. What only one disk can do (simulated power loss, damage) stays in
 * its own test.
 */
abstract class KeyValueDiskContract {
  protected KeyValueDisk disk;

  /** A new, empty disk. */
  protected abstract KeyValueDisk openDisk() throws Exception;

  @BeforeEach
  void openTheDisk() throws Exception {
    disk = openDisk();
  }

  @AfterEach
  void closeTheDisk() {
    if (disk != null) {
      disk.close();
    }
  }

  static byte[] bytes(int... values) {
    byte[] result = new byte[values.length];
    for (int i = 0; i < values.length; i++) {
      result[i] = (byte) values[i];
    }
    return result;
  }

  static void put(KeyValueDisk disk, Column column, byte[] key, byte[] value, boolean sync)
      throws DiskException {
    try (KeyValueDisk.Batch batch = disk.newBatch()) {
      batch.put(column, key, value);
      disk.write(batch, sync);
    }
  }

  static List<byte[]> keys(KeyValueDisk.Cursor cursor) {
    List<byte[]> keys = new ArrayList<>();
    for (; cursor.isValid(); cursor.next()) {
      keys.add(cursor.key());
    }
    return keys;
  }

  static void assertKeys(List<byte[]> expected, List<byte[]> actual) {
    assertEquals(expected.size(), actual.size(), "number of keys");
    for (int i = 0; i < expected.size(); i++) {
      assertArrayEquals(expected.get(i), actual.get(i), "key " + i);
    }
  }

  @Test
  void keysAreInUnsignedLexicographicOrderPerColumn() throws Exception {
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
    // Bounds and seeks on high bytes: [0x7F, 0xFF) holds 0x7F, 0x80, 0x80 0x00.
    try (KeyValueDisk.Cursor cursor = disk.cursor(Column.INDEX, null, bytes(0x7F), bytes(0xFF))) {
      cursor.seekToFirst();
      assertKeys(List.of(bytes(0x7F), bytes(0x80), bytes(0x80, 0x00)), keys(cursor));
      cursor.seekForPrev(bytes(0xFF, 0xFF));
      assertArrayEquals(bytes(0x80, 0x00), cursor.key());
    }
  }

  @Test
  void cursorsSeekForwardAndBackWithinTheirBounds() throws Exception {
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
  void aCursorReadsManyKeysInOrderAcrossItsReads() throws Exception {
    // More keys than a PostgreSQL cursor reads per page: the pages join without gaps or repeats.
    List<byte[]> expected = new ArrayList<>();
    try (KeyValueDisk.Batch batch = disk.newBatch()) {
      for (int i = 0; i < 1500; i++) {
        byte[] key = bytes(i >> 8, i & 0xFF);
        batch.put(Column.JOURNAL, key, bytes(i & 0x7F));
        expected.add(key);
      }
      disk.write(batch, true);
    }
    try (KeyValueDisk.Cursor cursor = disk.cursor(Column.JOURNAL)) {
      cursor.seekToFirst();
      assertKeys(expected, keys(cursor));
      cursor.seekForPrev(bytes(2, 0x80));
      assertArrayEquals(bytes(2, 0x80), cursor.key());
      List<byte[]> rest = keys(cursor);
      assertKeys(expected.subList(0x280, expected.size()), rest);
    }
    try (KeyValueDisk.Cursor cursor =
        disk.cursor(Column.JOURNAL, null, bytes(1, 0x10), bytes(4, 0x90))) {
      cursor.seek(bytes(0));
      assertKeys(expected.subList(0x110, 0x490), keys(cursor));
    }
  }

  @Test
  void snapshotsAndCursorsReadOnePointInTime() throws Exception {
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
  }

  @Test
  void deleteRangeDeletesFromInclusiveToExclusive() throws Exception {
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
  void aBatchAppliesItsOperationsOnOneKeyInOrder() throws Exception {
    put(disk, Column.META, bytes(1), bytes(1), true);
    put(disk, Column.META, bytes(5), bytes(5), true);
    try (KeyValueDisk.Batch batch = disk.newBatch()) {
      batch.delete(Column.META, bytes(1));
      batch.put(Column.META, bytes(1), bytes(2)); // deleted, then put: present
      batch.put(Column.META, bytes(2), bytes(2));
      batch.delete(Column.META, bytes(2)); // put, then deleted: absent
      batch.put(Column.META, bytes(3), bytes(3));
      batch.deleteRange(Column.META, bytes(3), bytes(6)); // covers 3 (pending) and 5 (stored)
      batch.put(Column.META, bytes(4), bytes(4)); // after the range: present
      batch.put(Column.META, bytes(0x90), bytes(1));
      batch.put(Column.META, bytes(0x90), bytes(2)); // the last put wins
      disk.write(batch, true);
    }
    assertArrayEquals(bytes(2), disk.get(Column.META, bytes(1)));
    assertNull(disk.get(Column.META, bytes(2)));
    assertNull(disk.get(Column.META, bytes(3)));
    assertArrayEquals(bytes(4), disk.get(Column.META, bytes(4)));
    assertNull(disk.get(Column.META, bytes(5)));
    assertArrayEquals(bytes(2), disk.get(Column.META, bytes(0x90)));
  }

  @Test
  void readersNeverSeeHalfABatch() throws Exception {
    // Each batch writes the same value to two columns and two keys; concurrent readers at a
    // snapshot (and cursors of their own) must find them equal.
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Throwable> readerFailure = new AtomicReference<>();
    Thread reader = new Thread(() -> {
      try {
        while (!stop.get()) {
          try (KeyValueDisk.Snapshot snapshot = disk.snapshot()) {
            List<byte[]> journal =
                disk.multiGet(Column.JOURNAL, List.of(bytes(1), bytes(0xF0)), snapshot);
            byte[] index;
            try (KeyValueDisk.Cursor cursor = disk.cursor(Column.INDEX, snapshot, null, null)) {
              cursor.seekToFirst();
              index = cursor.isValid() ? cursor.value() : null;
            }
            assertArrayEquals(journal.get(0), journal.get(1), "both keys of one batch");
            assertArrayEquals(journal.get(0), index, "both columns of one batch");
          }
        }
      } catch (Throwable e) {
        readerFailure.set(e);
      }
    }, "contract-reader");
    reader.start();
    for (int i = 0; i < 200; i++) {
      try (KeyValueDisk.Batch batch = disk.newBatch()) {
        byte[] value = bytes(i >> 8, i & 0xFF);
        batch.put(Column.JOURNAL, bytes(1), value);
        batch.put(Column.JOURNAL, bytes(0xF0), value);
        batch.put(Column.INDEX, bytes(7), value);
        disk.write(batch, false);
      }
    }
    stop.set(true);
    reader.join(TimeUnit.SECONDS.toMillis(30));
    if (readerFailure.get() != null) {
      throw new AssertionError("a reader saw half a batch", readerFailure.get());
    }
  }

  @Test
  void aConditionalAcquisitionTakesOnlyTheExpectedEpoch() throws Exception {
    int partition = CoordinatorPartitions.of(5); // far outside the storage partitions
    byte[] key = bytes(4, 5, 6);
    assertEquals(0, disk.acquirePartitionIfEpoch(partition, 2, 1), "nobody acquired it: epoch 0");
    assertNull(disk.ownerOf(partition));
    fencedPut(partition, 0, Column.META, key, bytes(1)); // leaves a placeholder row at epoch 0
    assertEquals(1, disk.acquirePartitionIfEpoch(partition, 5, 0));
    assertEquals(new KeyValueDisk.PartitionOwner(5, 1), disk.ownerOf(partition));
    assertEquals(2, disk.acquirePartitionIfEpoch(partition, 2, 1));
    assertEquals(0, disk.acquirePartitionIfEpoch(partition, 3, 1), "epoch 1 is over already");
    assertEquals(new KeyValueDisk.PartitionOwner(2, 2), disk.ownerOf(partition));
    assertThrows(FencedException.class, () -> fencedPut(partition, 1, Column.META, key, bytes(2)));
    assertArrayEquals(bytes(1), disk.get(Column.META, key));
    assertEquals(3, disk.acquirePartition(partition, 5));
  }

  @Test
  void aSupersededEpochIsRefusedAndWritesNothing() throws Exception {
    byte[] key = bytes(1, 2, 3);
    assertNull(disk.ownerOf(3));
    long first = disk.acquirePartition(3, 7);
    assertEquals(1, first);
    fencedPut(3, first, Column.META, key, bytes(1));
    long second = disk.acquirePartition(3, 8);
    assertEquals(2, second);
    assertEquals(new KeyValueDisk.PartitionOwner(8, 2), disk.ownerOf(3));
    FencedException refused = assertThrows(FencedException.class, () -> {
      try (KeyValueDisk.Batch batch = disk.newBatch()) {
        batch.put(Column.META, key, bytes(2));
        batch.put(Column.JOURNAL, key, bytes(2));
        batch.deleteRange(Column.INDEX, bytes(), bytes(0xFF));
        batch.fence(3, first);
        disk.write(batch, true);
      }
    });
    assertEquals(2, refused.currentEpoch());
    assertEquals(first, refused.epoch());
    assertEquals(3, refused.partition());
    assertArrayEquals(bytes(1), disk.get(Column.META, key), "a fenced batch wrote nothing");
    assertNull(disk.get(Column.JOURNAL, key), "a fenced batch wrote nothing");
    fencedPut(3, second, Column.META, key, bytes(3));
    assertArrayEquals(bytes(3), disk.get(Column.META, key));
    // A fence on a partition nobody acquired holds only for epoch 0.
    assertThrows(FencedException.class, () -> fencedPut(4, 1, Column.META, key, bytes(4)));
    fencedPut(4, 0, Column.META, key, bytes(5));
    assertArrayEquals(bytes(5), disk.get(Column.META, key));
    assertNull(disk.ownerOf(4), "a fence at epoch 0 acquires nothing");
    assertEquals(1, disk.acquirePartition(4, 9));
    // Several fences must all hold.
    assertThrows(FencedException.class, () -> {
      try (KeyValueDisk.Batch batch = disk.newBatch()) {
        batch.put(Column.META, key, bytes(6));
        batch.fence(3, second);
        batch.fence(4, 0);
        disk.write(batch, true);
      }
    });
    assertArrayEquals(bytes(5), disk.get(Column.META, key));
  }

  private void fencedPut(int partition, long epoch, Column column, byte[] key, byte[] value)
      throws DiskException {
    try (KeyValueDisk.Batch batch = disk.newBatch()) {
      batch.put(column, key, value);
      batch.fence(partition, epoch);
      disk.write(batch, true);
    }
  }

  @Test
  void anAcquisitionStopsFencedBatchesInFlight() throws Exception {
    // Writers keep writing batches fenced with the first epoch while another node acquires the
    // partition. Once the acquisition returned, no such batch may be applied any more: what the
    // disk holds then is final, every batch that returned is in it, every refused one is not.
    long first = disk.acquirePartition(9, 1);
    int writers = 3;
    List<List<byte[]>> acknowledged = new ArrayList<>();
    List<List<byte[]>> refused = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    AtomicReference<Throwable> unexpected = new AtomicReference<>();
    CountDownLatch started = new CountDownLatch(writers);
    for (int w = 0; w < writers; w++) {
      List<byte[]> written = Collections.synchronizedList(new ArrayList<>());
      List<byte[]> fenced = Collections.synchronizedList(new ArrayList<>());
      acknowledged.add(written);
      refused.add(fenced);
      int writer = w;
      Thread thread = new Thread(() -> {
        try {
          for (int i = 0; ; i++) {
            byte[] key = bytes(writer, i >> 8, i & 0xFF);
            try (KeyValueDisk.Batch batch = disk.newBatch()) {
              batch.put(Column.JOURNAL, key, key);
              batch.put(Column.INDEX, key, key);
              batch.fence(9, first);
              disk.write(batch, i % 2 == 0);
              written.add(key);
            } catch (FencedException e) {
              fenced.add(key);
              return;
            }
            if (i == 5) {
              started.countDown();
            }
          }
        } catch (Throwable e) {
          unexpected.set(e);
          started.countDown();
        }
      }, "fenced-writer-" + w);
      threads.add(thread);
      thread.start();
    }
    assertTrue(started.await(30, TimeUnit.SECONDS));
    long second = disk.acquirePartition(9, 2);
    assertEquals(first + 1, second);
    List<byte[]> atAcquisition;
    try (KeyValueDisk.Cursor cursor = disk.cursor(Column.JOURNAL)) {
      cursor.seekToFirst();
      atAcquisition = keys(cursor);
    }
    for (Thread thread : threads) {
      thread.join(TimeUnit.SECONDS.toMillis(30));
      assertFalse(thread.isAlive());
    }
    if (unexpected.get() != null) {
      throw new AssertionError("a writer failed otherwise than fenced", unexpected.get());
    }
    try (KeyValueDisk.Cursor cursor = disk.cursor(Column.JOURNAL)) {
      cursor.seekToFirst();
      assertKeys(atAcquisition, keys(cursor));
    }
    List<byte[]> expected = new ArrayList<>();
    for (int w = 0; w < writers; w++) {
      assertEquals(1, refused.get(w).size(), "every writer was fenced in the end");
      assertNull(disk.get(Column.INDEX, refused.get(w).get(0)), "a refused batch wrote nothing");
      expected.addAll(acknowledged.get(w));
    }
    expected.sort(java.util.Arrays::compareUnsigned);
    assertKeys(expected, atAcquisition);
  }
}
