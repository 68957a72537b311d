package dev.troupe.runtime.cluster;

import dev.troupe.storage.Store;
import java.util.function.IntConsumer;

/**
 * What a partition's host needs of the store in cluster mode: take a partition over (fence the
 * previous owner with a new owner epoch, recover the partition, start its writer), give it back
 * (refuse new commits, drain, stop the writer), and hear that the store lost a partition (a
 * write fenced by another node's newer epoch).
 *
 * <p>A seam while the store's own API ({@code acquirePartition(int)}, {@code
 * releasePartition(int)}, the lost-partition callback; issue 18, branch i18-ownership) is being
 * built: once it lands, the store is adapted to it (or used directly) and this interface goes. Both calls block
 * (recovery reads the partition's journal tail); hosts call them off their actor's thread.
 */
public interface PartitionOwnership {
  /** Takes {@code partition} over; returns once it is recovered and this node writes it. */
  void acquirePartition(int partition);

  /** Gives {@code partition} back; returns once its writes in flight are durable or refused. */
  void releasePartition(int partition);

  /** Calls {@code lost} with a partition's number when the store finds another node owns it. */
  void onPartitionLost(IntConsumer lost);

  /**
   * The ownership of {@code store}'s partitions. Today's store opens owning every partition
   * ({@link #ownsEverything}); with the store's acquired mode (issue 18) this adapts its
   * {@code acquirePartition}, {@code releasePartition} and lost-partition callback.
   */
  static PartitionOwnership of(Store store) {
    return ownsEverything();
  }

  /**
   * The store of today, which opens owning every partition and is never fenced: acquiring and
   * releasing change nothing, and no partition is ever lost. Right for nodes each on its own
   * store (tests of placement only: they share no data).
   */
  static PartitionOwnership ownsEverything() {
    return new PartitionOwnership() {
      @Override
      public void acquirePartition(int partition) {}

      @Override
      public void releasePartition(int partition) {}

      @Override
      public void onPartitionLost(IntConsumer lost) {}
    };
  }
}
