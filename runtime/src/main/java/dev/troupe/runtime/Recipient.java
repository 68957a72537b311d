package dev.troupe.runtime;

import dev.troupe.model.EntityId;
import dev.troupe.txn.TurnResult;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * Who receives an entity's answer: the caller of a turn, or the coordinator of a transaction (a
 * vote, or the acknowledgement of a decision). The entity core treats them alike; this tells them
 * apart when the entity actor delivers.
 */
sealed interface Recipient {
  void deliver(TurnResult result);

  /**
   * The caller of a single-entity turn. {@code idempotentTransactionId}: the turn's transaction id
   * when an idempotency record is attached to it (0 otherwise); the entity drops the attachment
   * when it answers, so an attached record marks a turn still running (see {@link
   * Troupe#idempotentWriteRunning}).
   */
  record Caller(ActorRef<TurnResult> replyTo, long idempotentTransactionId) implements Recipient {
    Caller(ActorRef<TurnResult> replyTo) {
      this(replyTo, 0);
    }

    @Override
    public void deliver(TurnResult result) {
      replyTo.tell(result);
    }
  }

  /** A coordinator waiting for this participant's vote on one attempt, in one round. */
  record Voter(TransactionRun coordinator, EntityId participant, long transactionId, int round)
      implements Recipient {
    /** The vote that answers the prepare. */
    Voter(TransactionRun coordinator, EntityId participant, long transactionId) {
      this(coordinator, participant, transactionId, 1);
    }

    @Override
    public void deliver(TurnResult result) {
      coordinator.voteReceived(participant, transactionId, result, round);
    }
  }

  /** A coordinator waiting for this participant to apply its commit decision. */
  record Acknowledger(TransactionRun coordinator, EntityId participant, long transactionId)
      implements Recipient {
    @Override
    public void deliver(TurnResult result) {
      coordinator.acknowledged(participant, transactionId, result);
    }
  }
}
