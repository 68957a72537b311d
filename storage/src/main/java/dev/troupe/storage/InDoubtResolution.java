package dev.troupe.storage;

import dev.troupe.model.EntityId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongPredicate;
import java.util.function.Predicate;

/**
 * How a node resolves the two-phase-commit state a crash left behind, decided from that state
 * alone (pure). Every coordinator and participant of a transaction lives on this node and none
 * survives the crash, so no undecided transaction can still be decided by anyone:
 *
 * <ul>
 *   <li>a prepared part whose transaction has a commit decision is committed (its operations are
 *       written as an ordinary commit record, and the prepared record removed atomically with it);
 *   <li>a prepared part without a decision is aborted (presumed abort): its coordinator either
 *       decided abort, which is never recorded, or crashed before deciding, and a transaction is
 *       acknowledged to its client only after its decision is durable;
 *   <li>every decision is forgotten once its prepared parts are resolved (a decision without any
 *       prepared part left means every participant applied it before the crash).
 * </ul>
 *
 * <p>{@code toCommit} is in the order to apply: parts with their operations first, then parts
 * that need a redo (PSAC), per entity in arrival order, to be applied one at a time so that each
 * meets the state the previous one left.
 *
 * <p><b>Several nodes.</b> The rule above holds because the coordinator died with the node. When
 * a prepared part's coordinator lives on another node ({@link #of(List, List, LongPredicate,
 * Predicate)}), that coordinator may be alive and may still decide commit, so the part is neither
 * committed nor abandoned: it is kept prepared ({@code toAsk}) and its entity asks the
 * coordinator's node ({@code DecisionQueryCore} answers, presumed abort), as a live part in doubt
 * does. And a decision record that names a participant on another node is not forgotten ({@code
 * decisionsToKeep}): that participant may still be in doubt and ask, and only this record can
 * answer commit. On one node both lists are empty and the resolution is exactly the rule above.
 */
public record InDoubtResolution(
    List<PreparedTransaction> toCommit,
    List<PreparedTransaction> toAbort,
    List<DecidedTransaction> decisionsToForget,
    List<PreparedTransaction> toAsk,
    List<DecidedTransaction> decisionsToKeep) {
  public InDoubtResolution {
    toCommit = List.copyOf(toCommit);
    toAbort = List.copyOf(toAbort);
    decisionsToForget = List.copyOf(decisionsToForget);
    toAsk = List.copyOf(toAsk);
    decisionsToKeep = List.copyOf(decisionsToKeep);
  }

  /** A single node's resolution: nothing to ask, nothing kept. */
  public InDoubtResolution(List<PreparedTransaction> toCommit, List<PreparedTransaction> toAbort,
      List<DecidedTransaction> decisionsToForget) {
    this(toCommit, toAbort, decisionsToForget, List.of(), List.of());
  }

  /**
   * Resolves what the transactions column family held at start-up, on a node where every
   * coordinator and participant lives (today's single node).
   */
  public static InDoubtResolution of(
      List<PreparedTransaction> prepared, List<DecidedTransaction> decided) {
    return of(prepared, decided, transactionId -> true, entity -> true);
  }

  /**
   * Resolves what the transactions column family held at start-up, on one node of several.
   *
   * @param coordinatedHere whether this node coordinated the transaction (its id says which node
   *     issued it: {@code TransactionIds.nodeOf})
   * @param hostedHere whether an entity lives on this node
   */
  public static InDoubtResolution of(List<PreparedTransaction> prepared,
      List<DecidedTransaction> decided, LongPredicate coordinatedHere,
      Predicate<EntityId> hostedHere) {
    Map<Long, DecidedTransaction> decisions = new HashMap<>();
    for (DecidedTransaction decision : decided) {
      decisions.put(decision.transactionId(), decision);
    }
    List<PreparedTransaction> commit = new ArrayList<>();
    List<PreparedTransaction> abort = new ArrayList<>();
    List<PreparedTransaction> ask = new ArrayList<>();
    for (PreparedTransaction part : prepared) {
      DecidedTransaction decision = decisions.get(part.transactionId());
      if (decision != null && decision.participants().contains(part.entity())) {
        commit.add(part);
      } else if (coordinatedHere.test(part.transactionId())) {
        abort.add(part); // its coordinator died here before recording a commit: presumed abort
      } else {
        ask.add(part); // its coordinator is elsewhere and may be alive: in doubt, ask it
      }
    }
    List<DecidedTransaction> forget = new ArrayList<>();
    List<DecidedTransaction> keep = new ArrayList<>();
    for (DecidedTransaction decision : decided) {
      if (decision.participants().stream().allMatch(hostedHere)) {
        forget.add(decision);
      } else {
        keep.add(decision); // a participant elsewhere may still be in doubt and ask
      }
    }
    // Stable: parts with operations keep their order, before every redo.
    commit.sort(java.util.Comparator.comparing(PreparedTransaction::needsRedo)
        .thenComparing(part -> part.needsRedo() ? part.entity().toString() : "")
        .thenComparingLong(part -> part.needsRedo() ? part.arrival() : 0));
    return new InDoubtResolution(commit, abort, forget, ask, keep);
  }

  /** Whether there was anything to resolve. */
  public boolean isEmpty() {
    return toCommit.isEmpty() && toAbort.isEmpty() && decisionsToForget.isEmpty()
        && toAsk.isEmpty() && decisionsToKeep.isEmpty();
  }
}
