package dev.troupe.runtime;

import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.coordinator.DecisionQueryCore;
import dev.troupe.model.TroupeException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongPredicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Shell of the node's {@link DecisionQueryCore}: knows the node's live coordinators (every attempt
 * id of each {@link TransactionRun}) and mirrors its decision records, so that a participant in
 * doubt can ask "what did transaction T decide?".
 *
 * <p><b>Concurrency.</b> Coordinators register and report from their own threads, participants
 * ask from theirs. The live coordinators are a concurrent map; the core is fed under this object's
 * monitor. A question asks the live coordinator for its knowledge (under that coordinator's
 * monitor) before it takes this monitor, and a coordinator reports to this object under its own
 * monitor, so the locks are always taken in the order coordinator, then directory: no deadlock.
 *
 * <p>On one node the entity actors' mailboxes never lose a decision, so questions are rare (a
 * decision slower than {@code in-doubt-query-interval-millis}); between nodes the {@link NodeInbox}
 * answers every {@code DecisionQuery} from here, and finds the coordinator of every vote and
 * acknowledgement that came through the transport ({@link #live}). A question about a transaction
 * no live coordinator knows is answered from the store's decision records too (a record means
 * commit), so a part recovered in doubt on another node learns a commit decided before a restart.
 */
final class DecisionDirectory {
  private static final Logger log = LoggerFactory.getLogger(DecisionDirectory.class);

  private final Map<Long, TransactionRun> liveAttempts = new ConcurrentHashMap<>();
  private final DecisionQueryCore core = new DecisionQueryCore();
  /**
   * Whether the store holds a decision record of a transaction ({@code Store#decisionRecorded}):
   * asked when no live coordinator of this node knows it. In a DC of several nodes the records
   * live in the shared store, written by whichever node coordinated, and outlive a restart.
   */
  private final LongPredicate storedDecision;
  /**
   * Whether a node's coordinators are ended in the store ({@code Store#coordinatorEnded}: another
   * node took its coordinator partition, so none of its decisions can be written any more); null
   * for a directory that answers every question as its own node's (tests of one node).
   */
  private final java.util.function.IntPredicate coordinatorEnded;

  /** A directory that answers from its live coordinators and its mirror only (tests). */
  DecisionDirectory() {
    this(transactionId -> false);
  }

  /** A directory that answers every question as its own node's (tests of one node). */
  DecisionDirectory(LongPredicate storedDecision) {
    this.storedDecision = storedDecision;
    this.coordinatorEnded = null;
  }

  DecisionDirectory(LongPredicate storedDecision,
      java.util.function.IntPredicate coordinatorEnded) {
    this.storedDecision = storedDecision;
    this.coordinatorEnded = coordinatorEnded;
  }

  /**
   * The decision of {@code transactionId}, coordinated by node {@code coordinatorNode}, another
   * node than this one (one that is no member any more: the cluster transport hands such a
   * question to the asker's own node). Reads, in this order and after the question arrived,
   * whether that node's coordinators are ended, then whether its decision is recorded (the order
   * the core's rule needs: see {@link DecisionQueryCore}). Undecided while they are not ended, or
   * if the store cannot be read (the participant asks again).
   */
  DecisionQueryCore.Answer askForAnotherNode(long transactionId, int coordinatorNode) {
    if (coordinatorEnded == null) {
      return ask(transactionId);
    }
    boolean ended;
    boolean recordStored;
    try {
      ended = coordinatorEnded.test(coordinatorNode);
      recordStored = ended && storedDecision.test(transactionId);
    } catch (TroupeException unreadable) {
      log.warn("cannot read whether node {}'s coordinators are ended or the decision record of"
          + " transaction {}: answering undecided", coordinatorNode, transactionId, unreadable);
      return DecisionQueryCore.Answer.UNDECIDED;
    }
    synchronized (this) {
      for (DecisionQueryCore.Effect effect : core.handle(
          new DecisionQueryCore.Input.AskedForAnotherNode(transactionId, ended, recordStored))) {
        switch (effect) {
          case DecisionQueryCore.Effect.Answered answered -> {
            return answered.answer();
          }
        }
      }
    }
    return DecisionQueryCore.Answer.UNDECIDED;
  }

  /**
   * Whether {@link #askForAnotherNode} answers from the shared store (whether a node's coordinators
   * are ended, then its decision record); false for a directory that answers every question as its
   * own node's (tests of one node), where only the asked node may presume abort.
   */
  boolean answersForOtherNodes() {
    return coordinatorEnded != null;
  }

  /** Recovery kept these decision records (participants on other nodes may still ask). */
  synchronized void decisionsRecovered(List<Long> transactionIds) {
    core.handle(new DecisionQueryCore.Input.DecisionsRecovered(transactionIds));
  }

  /** A coordinator started an attempt under {@code transactionId}. */
  void attemptStarted(long transactionId, TransactionRun coordinator) {
    liveAttempts.put(transactionId, coordinator);
  }

  /** A coordinator finished: none of its attempts is live any more. */
  void finished(TransactionRun coordinator) {
    liveAttempts.values().removeIf(run -> run == coordinator);
  }

  /**
   * The live coordinator of attempt {@code transactionId}, or null (finished, or never here): where
   * a vote or an acknowledgement that came through the transport goes.
   */
  TransactionRun live(long transactionId) {
    return liveAttempts.get(transactionId);
  }

  synchronized void decisionRecorded(long transactionId) {
    core.handle(new DecisionQueryCore.Input.DecisionRecorded(transactionId));
  }

  synchronized void decisionForgotten(long transactionId) {
    core.handle(new DecisionQueryCore.Input.DecisionForgotten(transactionId));
  }

  synchronized void decisionWriteUncertain(long transactionId) {
    core.handle(new DecisionQueryCore.Input.DecisionWriteUncertain(transactionId));
  }

  /** The decision of {@code transactionId} as far as this node knows (see the core). */
  DecisionQueryCore.Answer ask(long transactionId) {
    TransactionRun live = liveAttempts.get(transactionId);
    CoordinatorCore.Knowledge knowledge =
        live == null ? CoordinatorCore.Knowledge.NOT_MINE : live.knowledgeOf(transactionId);
    boolean recordStored = false;
    if (knowledge == CoordinatorCore.Knowledge.NOT_MINE) {
      try {
        // A point read, outside this monitor; only for a transaction nobody here coordinates.
        recordStored = storedDecision.test(transactionId);
      } catch (TroupeException unreadable) {
        log.warn("cannot read the decision record of transaction {}: answering undecided",
            transactionId, unreadable);
        return DecisionQueryCore.Answer.UNDECIDED; // the participant asks again
      }
    }
    synchronized (this) {
      for (DecisionQueryCore.Effect effect : core.handle(
          new DecisionQueryCore.Input.Asked(transactionId, knowledge, recordStored))) {
        switch (effect) {
          case DecisionQueryCore.Effect.Answered answered -> {
            return answered.answer();
          }
        }
      }
    }
    return DecisionQueryCore.Answer.UNDECIDED;
  }
}
