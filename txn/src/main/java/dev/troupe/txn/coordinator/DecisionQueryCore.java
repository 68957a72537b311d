package dev.troupe.txn.coordinator;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The coordinator's node answering a participant in doubt: "what did transaction T decide?"
 * (two-phase commit with presumed abort; Mohan, Lindsay and Obermarck, "Transaction management in
 * the R* distributed database management system", 1986). A deterministic state machine, one per
 * node, beside the node's coordinators.
 *
 * <p><b>Why a core of its own.</b> The answer needs what no single {@link CoordinatorCore} has:
 * the node's live coordinators (one of them may coordinate T) and the decision records the node
 * holds, which outlive their coordinator (a commit some participant could not apply, a commit
 * decided before a crash). The shell asks the live coordinator of T, if any, for its {@link
 * CoordinatorCore.Knowledge} and feeds it with the question; this core keeps the node's view of
 * its decision records, mirrored from what the shell persisted, forgot and recovered.
 *
 * <p><b>The rule, and why it is safe.</b>
 *
 * <ul>
 *   <li>A live coordinator's knowledge comes first. While it collects votes or writes its
 *       decision it answers {@link Answer#UNDECIDED} ("ask later"), never abort: it may still
 *       commit, and an abort answered now would let the asker abort a transaction that commits.
 *   <li>Else a decision record of T (mirrored here, or found in the store by the shell) means
 *       commit: a record is written only for a commit, and is forgotten only after every
 *       participant acknowledged it.
 *   <li>Else a decision write of T whose outcome is unknown (the store failed mid-write) is
 *       {@link Answer#UNDECIDED}: only the recovery of that store can tell.
 *   <li>Else {@link Answer#ABORTED} (presumed abort): nobody coordinates T any more and no commit
 *       of it was recorded, so either it aborted (never recorded), or its coordinator died
 *       before the commit decision was durable (and nobody can decide commit any more), or it
 *       committed and every participant acknowledged (then no participant is in doubt, so no
 *       such question is asked).
 * </ul>
 *
 * <p>On one node the decision record is local and every coordinator dies with its participants,
 * so recovery decides alone ({@code InDoubtResolution}); this core answers the questions asked
 * while the node runs (a decision message lost between cores).
 *
 * <p><b>Questions for another node</b> ({@link Input.AskedForAnotherNode}; a data centre of
 * several nodes on a shared store, issue 18). A participant whose coordinator's node is no member
 * any more asks its own node instead. Presumed abort is safe there only once that node's
 * coordinators are <i>ended</i>: another node took its coordinator partition (the store's
 * coordinator fence), so no decision record of it can be written any more, not even by a zombie
 * (cut off, not yet exited). Then the shared store's decision record is the whole truth:
 * recorded means commit, absent means abort. Until then the answer is {@link Answer#UNDECIDED}
 * (ask again). The shell reads "ended" after the question arrived and the record after that.
 */
public final class DecisionQueryCore {

  /** What the asker learns. */
  public enum Answer {
    /** Committed: apply the prepared part. */
    COMMITTED,
    /** Aborted (or presumed aborted): drop the prepared part. */
    ABORTED,
    /** Not decided yet: ask again later, never presume. */
    UNDECIDED
  }

  /** What the shell feeds in. */
  public sealed interface Input {
    /** A commit decision's record became durable on this node. */
    record DecisionRecorded(long transactionId) implements Input {}

    /** A decision record was forgotten (every participant acknowledged). */
    record DecisionForgotten(long transactionId) implements Input {}

    /** The write of this commit decision failed with an unknown outcome. */
    record DecisionWriteUncertain(long transactionId) implements Input {}

    /** Recovery found these decision records and kept them (participants still to hear them). */
    record DecisionsRecovered(List<Long> transactionIds) implements Input {
      public DecisionsRecovered {
        transactionIds = List.copyOf(transactionIds);
      }
    }

    /**
     * A participant asks for the decision of {@code transactionId}; {@code live} is what this
     * node's live coordinator of it knows ({@link CoordinatorCore.Knowledge#NOT_MINE} if none);
     * {@code recordStored}: the shell found a decision record of it in the store (looked up only
     * when no live coordinator knows it). In a DC of several nodes the decision records live in
     * the shared store and outlive the coordinator that wrote them, and a node's mirror holds
     * only the records it wrote since it started, so the store is asked too.
     */
    record Asked(long transactionId, CoordinatorCore.Knowledge live, boolean recordStored)
        implements Input {
      /** A question answered from the live coordinators and the mirror only. */
      public Asked(long transactionId, CoordinatorCore.Knowledge live) {
        this(transactionId, live, false);
      }
    }

    /**
     * A participant asks this node for the decision of {@code transactionId}, which another node
     * coordinated (one no longer a member): {@code coordinatorEnded}, read after the question
     * arrived, says whether that node's coordinators are ended in the store; {@code
     * recordStored}, read after that, whether the shared store holds its decision record.
     */
    record AskedForAnotherNode(long transactionId, boolean coordinatorEnded, boolean recordStored)
        implements Input {}
  }

  /** What the shell must do. */
  public sealed interface Effect {
    /** Answer the asker. */
    record Answered(long transactionId, Answer answer) implements Effect {}
  }

  private final Set<Long> recorded = new HashSet<>();
  private final Set<Long> uncertain = new HashSet<>();

  public List<Effect> handle(Input input) {
    List<Effect> effects = new ArrayList<>(1);
    switch (input) {
      case Input.DecisionRecorded decision -> recorded.add(decision.transactionId());
      case Input.DecisionForgotten decision -> {
        recorded.remove(decision.transactionId());
        uncertain.remove(decision.transactionId());
      }
      case Input.DecisionWriteUncertain decision -> uncertain.add(decision.transactionId());
      case Input.DecisionsRecovered recovered -> recorded.addAll(recovered.transactionIds());
      case Input.Asked asked ->
          effects.add(new Effect.Answered(asked.transactionId(), answer(asked)));
      case Input.AskedForAnotherNode asked -> effects.add(new Effect.Answered(
          asked.transactionId(), !asked.coordinatorEnded() ? Answer.UNDECIDED
              : asked.recordStored() ? Answer.COMMITTED : Answer.ABORTED));
    }
    return effects;
  }

  private Answer answer(Input.Asked asked) {
    return switch (asked.live()) {
      case UNDECIDED -> Answer.UNDECIDED;
      case COMMITTED -> Answer.COMMITTED;
      case ABORTED -> Answer.ABORTED;
      case NOT_MINE -> recorded.contains(asked.transactionId()) || asked.recordStored()
          ? Answer.COMMITTED
          : uncertain.contains(asked.transactionId()) ? Answer.UNDECIDED : Answer.ABORTED;
    };
  }

  /** How many decision records this node holds, as far as this core knows (tests, metrics). */
  public int recordedDecisions() {
    return recorded.size();
  }
}
