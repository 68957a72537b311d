package dev.troupe.runtime;

import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.coordinator.DecisionQueryCore;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

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
 * decision slower than {@code in-doubt-query-interval-millis}); the directory is what a transport
 * between nodes will answer from (issue 11).
 */
final class DecisionDirectory {
  private final Map<Long, TransactionRun> liveAttempts = new ConcurrentHashMap<>();
  private final DecisionQueryCore core = new DecisionQueryCore();

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
    synchronized (this) {
      for (DecisionQueryCore.Effect effect :
          core.handle(new DecisionQueryCore.Input.Asked(transactionId, knowledge))) {
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
