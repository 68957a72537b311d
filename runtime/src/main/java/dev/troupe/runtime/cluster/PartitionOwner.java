package dev.troupe.runtime.cluster;

import java.util.function.IntConsumer;

/**
 * What a partition's host needs of the store: take a partition over ({@code
 * Store.acquirePartition}: fence the previous owner with a new owner epoch, recover the
 * partition, start its writer), give it back ({@code Store.releasePartition}: refuse new commits,
 * drain, stop the writer), and hear that the store lost a partition (a write fenced by another
 * node's newer epoch: {@code StorageEvents.partitionLost}).
 *
 * <p>An interface so that the hosts and their tests need no store; the engine adapts its store
 * (runtime's {@code StorePartitionOwner}). Both calls block (recovery reads the partition's
 * journal tail); hosts call them off their actor's thread.
 */
public interface PartitionOwner {
  /** Takes {@code partition} over; returns once it is recovered and this node writes it. */
  void acquirePartition(int partition);

  /**
   * The partition's registry runs here now (after {@link #acquirePartition}, before anything that
   * waited for the acquisition reaches it): hand it what must come first (the parts in doubt the
   * previous owner left). Called on the host's thread; must not block.
   */
  default void partitionHosted(int partition) {}

  /** Gives {@code partition} back; returns once its writes in flight are durable or refused. */
  void releasePartition(int partition);

  /**
   * Ends the coordinators of the removed member {@code nodeId}'s incarnation that held coordinator
   * epoch {@code epoch} ({@code Store.endCoordinator}); a no-op for a store that is not shared.
   * Blocking; called off any actor's thread.
   */
  default void endCoordinator(int nodeId, long epoch) {}

  /** Calls {@code lost} with a partition's number when the store finds another node owns it. */
  void onPartitionLost(IntConsumer lost);

  /**
   * A store that owns every partition from its open to its close and is never fenced (storage's
   * {@code PartitionOwnership.ALL}): acquiring and releasing change nothing, and no partition is
   * ever lost. What a member on its own store uses (tests of placement: members share no data).
   */
  static PartitionOwner ownsEverything() {
    return new PartitionOwner() {
      @Override
      public void acquirePartition(int partition) {}

      @Override
      public void releasePartition(int partition) {}

      @Override
      public void onPartitionLost(IntConsumer lost) {}
    };
  }
}
