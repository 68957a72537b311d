package dev.troupe.runtime;

import dev.troupe.runtime.cluster.PartitionOwner;
import dev.troupe.storage.AcquiredPartition;
import dev.troupe.storage.PartitionOwnership;
import dev.troupe.storage.Store;
import java.util.function.IntConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine's store as a {@link PartitionOwner}: under {@link PartitionOwnership#ACQUIRED} (one
 * node of several sharing one disk) a partition's host acquires and releases the partition in the
 * store, and hears of a fenced one through the store's events; under {@link PartitionOwnership#ALL}
 * (a member on a store of its own) the store owns everything already, and nothing is done.
 */
final class StorePartitionOwner implements PartitionOwner {
  private static final Logger log = LoggerFactory.getLogger(StorePartitionOwner.class);

  private final Store store;
  private final boolean acquired;
  private final LoudStorageEvents events;

  StorePartitionOwner(Store store, PartitionOwnership ownership, LoudStorageEvents events) {
    this.store = store;
    this.acquired = ownership == PartitionOwnership.ACQUIRED;
    this.events = events;
  }

  @Override
  public void acquirePartition(int partition) {
    if (!acquired) {
      return;
    }
    AcquiredPartition report = store.acquirePartition(partition);
    if (!report.prepared().isEmpty()) {
      // Resolving them needs to know which coordinators live where (the routing of issue 18).
      log.warn("partition {} acquired under owner epoch {} with {} prepared transaction parts"
          + " its previous owner left", partition, report.epoch(), report.prepared().size());
    }
  }

  @Override
  public void releasePartition(int partition) {
    if (acquired) {
      store.releasePartition(partition);
    }
  }

  @Override
  public void onPartitionLost(IntConsumer lost) {
    events.onPartitionLost(lost);
  }
}
