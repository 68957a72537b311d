package dev.troupe.storage;

import dev.troupe.model.EntityId;
import java.util.List;
import java.util.function.LongPredicate;
import java.util.function.Predicate;

/**
 * What {@link Store#acquirePartition} found of a partition it took over: the owner epoch every
 * batch of this acquisition is fenced with, and the two-phase-commit state the partition's
 * previous owner left (a crash, a hand-off in the middle of a transaction). The store resolves
 * none of it itself: only the runtime knows which coordinators live on which node.
 *
 * <p>How the runtime uses it: {@link #resolution} sorts the parts. Parts with a commit decision
 * ({@code toCommit}) are committed with {@link DurableStore#commitPrepared} (a PSAC part that
 * {@link PreparedTransaction#needsRedo needs a redo} with the operations its redo computes, one at
 * a time per entity in the order given); parts whose coordinator this node was and died before
 * recording a decision ({@code toAbort}, presumed abort) are abandoned with {@link
 * DurableStore#abandonPrepared}; parts whose coordinator is on another node ({@code toAsk}) stay
 * prepared and are handed to their entities ({@code EntityTurnCore.Input.PreparedPartRecovered}),
 * which ask the coordinator's node; they are never aborted here, since that coordinator may be
 * alive and decide commit.
 *
 * @param partition the partition acquired
 * @param epoch its owner epoch for this acquisition (from {@link KeyValueDisk#acquirePartition})
 * @param prepared every prepared part of the partition's entities, in key order (transaction id,
 *     then entity)
 * @param decided the decision records of those parts' transactions that exist (a decision lives
 *     under its transaction id, not in a partition, so these are all there are for them); a
 *     decision of a transaction with no part left prepared here is not listed: whether every other
 *     participant applied it is for the coordinator to know, so this report gives no grounds to
 *     forget a decision
 */
public record AcquiredPartition(
    int partition, long epoch, List<PreparedTransaction> prepared,
    List<DecidedTransaction> decided) {
  public AcquiredPartition {
    prepared = List.copyOf(prepared);
    decided = List.copyOf(decided);
  }

  /**
   * The parts sorted by {@link InDoubtResolution#of(List, List, LongPredicate, Predicate)}.
   * Its {@code decisionsToForget} and {@code decisionsToKeep} only classify the decisions listed
   * here and are not grounds to forget one (see {@code decided}).
   *
   * @param coordinatedByAnEndedIncarnation whether the transaction's coordinator is gone without a
   *     recorded commit: one this node ran before a restart, or one of a node that left the data
   *     centre (never a coordinator that may still be running, or its live transaction would be
   *     aborted under it)
   * @param hostedHere whether an entity's partition is owned by this node
   */
  public InDoubtResolution resolution(LongPredicate coordinatedByAnEndedIncarnation,
      Predicate<EntityId> hostedHere) {
    return InDoubtResolution.of(prepared, decided, coordinatedByAnEndedIncarnation, hostedHere);
  }
}
