package dev.troupe.storage;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

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
 * <p>With several nodes (issue 7) an undecided participant must ask its coordinator instead; this
 * rule is the single-node case of that exchange.
 */
public record InDoubtResolution(
    List<PreparedTransaction> toCommit,
    List<PreparedTransaction> toAbort,
    List<DecidedTransaction> decisionsToForget) {
  public InDoubtResolution {
    toCommit = List.copyOf(toCommit);
    toAbort = List.copyOf(toAbort);
    decisionsToForget = List.copyOf(decisionsToForget);
  }

  /** Resolves what the transactions column family held at start-up. */
  public static InDoubtResolution of(
      List<PreparedTransaction> prepared, List<DecidedTransaction> decided) {
    Map<Long, DecidedTransaction> decisions = new HashMap<>();
    for (DecidedTransaction decision : decided) {
      decisions.put(decision.transactionId(), decision);
    }
    List<PreparedTransaction> commit = new ArrayList<>();
    List<PreparedTransaction> abort = new ArrayList<>();
    for (PreparedTransaction part : prepared) {
      DecidedTransaction decision = decisions.get(part.transactionId());
      if (decision != null && decision.participants().contains(part.entity())) {
        commit.add(part);
      } else {
        abort.add(part);
      }
    }
    // Stable: parts with operations keep their order, before every redo.
    commit.sort(java.util.Comparator.comparing(PreparedTransaction::needsRedo)
        .thenComparing(part -> part.needsRedo() ? part.entity().toString() : "")
        .thenComparingLong(part -> part.needsRedo() ? part.arrival() : 0));
    return new InDoubtResolution(commit, abort, decided);
  }

  /** Whether there was anything to resolve. */
  public boolean isEmpty() {
    return toCommit.isEmpty() && toAbort.isEmpty() && decisionsToForget.isEmpty();
  }
}
