package dev.troupe.runtime;

import dev.troupe.model.time.TransactionIds;
import dev.troupe.runtime.cluster.PartitionOwner;
import dev.troupe.storage.AcquiredPartition;
import dev.troupe.storage.InDoubtResolution;
import dev.troupe.storage.PartitionOwnership;
import dev.troupe.storage.Store;
import dev.troupe.txn.coordinator.DecisionQueryCore;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.IntConsumer;
import java.util.function.LongPredicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine's store as a {@link PartitionOwner}: under {@link PartitionOwnership#ACQUIRED} (one
 * node of several sharing one disk) a partition's host acquires and releases the partition in the
 * store, and hears of a fenced one through the store's events; under {@link PartitionOwnership#ALL}
 * (a member on a store of its own) the store owns everything already, and nothing is done.
 *
 * <p><b>Parts in doubt a previous owner left</b> (docs/ARCHITECTURE.md, "Partition ownership and
 * fencing"). Right after the acquisition, on the host's blocking executor and before the
 * partition's registry runs, the store resolves them ({@link Store#resolveAcquired}): decided
 * parts are committed; a part whose coordinator was an earlier incarnation of this node, with no
 * decision recorded and no live coordinator here, is abandoned (presumed abort: that coordinator
 * is gone, and a restarted node answers every question about it with abort); a part whose
 * coordinator is another node stays prepared, since that coordinator may be alive and commit,
 * unless that node's coordinators are ended already (the coordinator fence: a removed member's
 * coordinator partition taken by a survivor) and, read after that, no decision of the transaction
 * is recorded: then it is abandoned at once too ({@link DecisionDirectory#askForAnotherNode}, the
 * rule a participant's question meets, asked here instead of after an in-doubt interval: a
 * failover usually acquires a dead member's partitions after the survivors ended it). A decision
 * recorded since the acquisition read its records is left to the question (it answers commit).
 * Once the registry runs ({@link #partitionHosted}) those are handed to their entities, which ask
 * the coordinator's node until answered.
 */
final class StorePartitionOwner implements PartitionOwner {
  private static final Logger log = LoggerFactory.getLogger(StorePartitionOwner.class);

  private final Store store;
  private final boolean acquired;
  private final LoudStorageEvents events;
  private final Store.Redo redo;
  private final LongPredicate coordinatedByAnEndedIncarnation;
  private final Consumer<InDoubtResolution> adopt;
  /** Resolutions whose parts in doubt wait for their partition's registry, by partition. */
  private final Map<Integer, InDoubtResolution> toAdopt = new ConcurrentHashMap<>();

  /**
   * @param redo computes a PSAC part's operations on the state it meets (as at a restart)
   * @param decisions this node's live coordinators: one running here is not ended
   * @param adopt hands a resolution's parts in doubt to their entities ({@link
   *     Troupe#adoptRecovered})
   */
  StorePartitionOwner(Store store, PartitionOwnership ownership, LoudStorageEvents events,
      Store.Redo redo, int localNode, DecisionDirectory decisions,
      Consumer<InDoubtResolution> adopt) {
    this.store = store;
    this.acquired = ownership == PartitionOwnership.ACQUIRED;
    this.events = events;
    this.redo = redo;
    this.adopt = adopt;
    this.coordinatedByAnEndedIncarnation = transactionId -> {
      int coordinatorNode = TransactionIds.nodeOf(transactionId);
      if (coordinatorNode == localNode) {
        return decisions.live(transactionId) == null;
      }
      return decisions.answersForOtherNodes()
          && decisions.askForAnotherNode(transactionId, coordinatorNode)
              == DecisionQueryCore.Answer.ABORTED;
    };
  }

  @Override
  public void endCoordinator(int nodeId, long epoch) {
    if (!acquired) {
      return;
    }
    long ended = store.endCoordinator(nodeId, epoch);
    if (ended > 0) {
      log.info("ended the coordinators of removed node {} (its coordinator epoch {}, now {}): its"
          + " participants in doubt are answered from the shared store", nodeId, epoch, ended);
    }
  }

  @Override
  public void acquirePartition(int partition) {
    acquireAndResolve(partition);
  }

  /**
   * {@link #acquirePartition}, answering how the parts in doubt the previous owner left were
   * resolved (null when there were none, or under {@link PartitionOwnership#ALL}).
   */
  InDoubtResolution acquireAndResolve(int partition) {
    if (!acquired) {
      return null;
    }
    AcquiredPartition report = store.acquirePartition(partition);
    if (report.prepared().isEmpty()) {
      return null;
    }
    InDoubtResolution resolution =
        store.resolveAcquired(report, redo, coordinatedByAnEndedIncarnation);
    log.info("partition {} acquired under owner epoch {}: of the {} prepared parts its previous"
            + " owner left, committed {}, aborted {}, {} ask their coordinators' nodes",
        partition, report.epoch(), report.prepared().size(), resolution.toCommit().size(),
        resolution.toAbort().size(), resolution.toAsk().size());
    if (!resolution.toAsk().isEmpty() || !resolution.decisionsToKeep().isEmpty()) {
      toAdopt.put(partition, resolution);
    }
    return resolution;
  }

  @Override
  public void partitionHosted(int partition) {
    InDoubtResolution resolution = toAdopt.remove(partition);
    if (resolution != null) {
      adopt.accept(resolution);
    }
  }

  @Override
  public void releasePartition(int partition) {
    toAdopt.remove(partition);
    if (acquired) {
      store.releasePartition(partition);
    }
  }

  @Override
  public void onPartitionLost(IntConsumer lost) {
    events.onPartitionLost(lost);
  }
}
