package dev.troupe.storage;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Owner epochs kept in process, for the disks only one process opens ({@link RocksDisk}, {@link
 * MemoryDisk}): the same contract as a shared disk's ({@link KeyValueDisk#acquirePartition}), so
 * the engine's hand-offs behave alike on every disk. {@link #check} and {@link #acquire} are
 * called under the disk's write lock (the caller's), which makes a fence check atomic with the
 * write it guards. Not durable across processes: a single-node disk has one owner per process.
 */
final class PartitionEpochs {
  /** A fence a batch carries. */
  record Fence(int partition, long epoch) {}

  private final Map<Integer, KeyValueDisk.PartitionOwner> owners = new HashMap<>();

  /** Under the caller's write lock. */
  long acquire(int partition, int nodeId) {
    KeyValueDisk.PartitionOwner previous = owners.get(partition);
    long epoch = previous == null ? 1 : previous.epoch() + 1;
    owners.put(partition, new KeyValueDisk.PartitionOwner(nodeId, epoch));
    return epoch;
  }

  /** Under the caller's write lock; 0 (nothing changed) unless the epoch is {@code expected}. */
  long acquireIfEpoch(int partition, int nodeId, long expected) {
    KeyValueDisk.PartitionOwner previous = owners.get(partition);
    long current = previous == null ? 0 : previous.epoch();
    return current == expected ? acquire(partition, nodeId) : 0;
  }

  /** Under the caller's lock. */
  KeyValueDisk.PartitionOwner ownerOf(int partition) {
    return owners.get(partition);
  }

  /** Throws unless every fence holds; under the caller's write lock. */
  void check(List<Fence> fences) throws FencedException {
    for (Fence fence : fences) {
      KeyValueDisk.PartitionOwner owner = owners.get(fence.partition());
      long current = owner == null ? 0 : owner.epoch();
      if (current != fence.epoch()) {
        throw new FencedException(fence.partition(), fence.epoch(), current);
      }
    }
  }
}
