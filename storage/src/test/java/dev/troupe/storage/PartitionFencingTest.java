package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The owner epochs of the in-memory disk survive a power loss. The fence itself ({@link
 * KeyValueDisk#acquirePartition}, {@link KeyValueDisk.Batch#fence}) is part of {@link
 * KeyValueDiskContract}, run on every disk.
 */
class PartitionFencingTest {
  @Test
  void memoryDiskKeepsOwnerEpochsAcrossCrashes() throws Exception {
    MemoryDisk disk = new MemoryDisk();
    assertEquals(1, disk.acquirePartition(3, 7));
    assertEquals(2, disk.acquirePartition(3, 8));
    MemoryDisk next = disk.crash(new SplittableRandom(1), 0.0);
    assertEquals(new KeyValueDisk.PartitionOwner(8, 2), next.ownerOf(3));
    assertEquals(3, next.acquirePartition(3, 9));
    next.close();
  }
}
