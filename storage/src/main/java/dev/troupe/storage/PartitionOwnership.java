package dev.troupe.storage;

/**
 * Which partitions a store writes ({@link StorageSettings#partitionOwnership}): all of them, as
 * the only node of its data centre, or only those it acquired, as one node of several sharing one
 * disk (issue 18; docs/ARCHITECTURE.md, "Partition ownership and fencing").
 */
public enum PartitionOwnership {
  /**
   * The single node: the store owns every partition from its open to its close, recovers them all
   * at open and writes without fences (no owner epoch is ever taken; nothing costs more than
   * before).
   */
  ALL,
  /**
   * One node of a data centre of several on a shared disk: the store opens owning no partition,
   * writes a partition only between {@link Store#acquirePartition} and {@link
   * Store#releasePartition} (or until the disk fences it), fences every batch a partition's writer
   * writes with the owner epoch it acquired, and refuses reads and commits of entities of
   * partitions it does not own with {@code not_owner}.
   */
  ACQUIRED
}
