package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.troupe.storage.KeyValueDisk.Column;
import java.nio.file.Path;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The owner-epoch fence of {@link KeyValueDisk#acquirePartition} and {@link
 * KeyValueDisk.Batch#fence} on the single-process disks: a batch fenced with a superseded epoch
 * applies nothing, epochs only grow, and (on the in-memory disk) survive a power loss.
 */
class PartitionFencingTest {
  @TempDir Path directory;

  private static final byte[] KEY = {1, 2, 3};

  @Test
  void memoryDiskRefusesSupersededEpochsAcrossCrashes() throws Exception {
    MemoryDisk disk = new MemoryDisk();
    checkFencing(disk);
    MemoryDisk next = disk.crash(new SplittableRandom(1), 0.0);
    assertEquals(new KeyValueDisk.PartitionOwner(8, 2), next.ownerOf(3));
    assertEquals(3, next.acquirePartition(3, 9));
    next.close();
  }

  @Test
  void rocksDiskRefusesSupersededEpochs() throws Exception {
    try (RocksDisk disk = RocksDisk.open(directory)) {
      checkFencing(disk);
    }
  }

  private static void checkFencing(KeyValueDisk disk) throws DiskException {
    assertNull(disk.ownerOf(3));
    long first = disk.acquirePartition(3, 7);
    assertEquals(1, first);
    write(disk, 3, first, new byte[] {1});
    long second = disk.acquirePartition(3, 8);
    assertEquals(2, second);
    assertEquals(new KeyValueDisk.PartitionOwner(8, 2), disk.ownerOf(3));
    FencedException refused =
        assertThrows(FencedException.class, () -> write(disk, 3, first, new byte[] {2}));
    assertEquals(2, refused.currentEpoch());
    assertArrayEquals(new byte[] {1}, disk.get(Column.META, KEY), "a fenced batch wrote nothing");
    write(disk, 3, second, new byte[] {3});
    assertArrayEquals(new byte[] {3}, disk.get(Column.META, KEY));
    // A fence on a partition nobody acquired holds only for epoch 0.
    assertThrows(FencedException.class, () -> write(disk, 4, 1, new byte[] {4}));
  }

  private static void write(KeyValueDisk disk, int partition, long epoch, byte[] value)
      throws DiskException {
    try (KeyValueDisk.Batch batch = disk.newBatch()) {
      batch.put(Column.META, KEY, value);
      batch.fence(partition, epoch);
      disk.write(batch, true);
    }
  }
}
