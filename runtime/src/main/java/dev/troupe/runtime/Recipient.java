package dev.troupe.runtime;

import dev.troupe.model.EntityId;
import dev.troupe.txn.Forward;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.port.Transport;
import dev.troupe.txn.wire.Envelope;
import dev.troupe.txn.wire.ParticipantMessages;
import dev.troupe.txn.wire.WireMessage;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Who receives an entity's answer: the caller of a turn, or the coordinator of a transaction (a
 * vote, or the acknowledgement of a decision), on this node or on the node that sent the message
 * through the {@link Transport} (the {@code Remote} ones: the answer goes back as a wire message to
 * the sender's node, whose {@link NodeInbox} turns it into the local call). The entity core treats
 * them alike; this tells them apart when the entity actor delivers.
 */
sealed interface Recipient {
  void deliver(TurnResult result);

  /**
   * A part's forwards, reported to the coordinator that waits for its vote before the vote (the
   * entity core's {@code ReportForwards}, issue 20). Only a coordinator on this node takes it: the
   * vote carries the same forwards, so elsewhere it is dropped (not sent over the wire yet).
   */
  default void reportForwards(List<Forward> forwards) {}

  /** Whether this is the caller of a turn or a step (counted as a turn by the metrics). */
  default boolean answersCaller() {
    return false;
  }

  /**
   * The turn's transaction id when an idempotency record may be attached to it (0 otherwise); the
   * entity drops the attachment when it answers (see {@link Troupe#idempotentWriteRunning}).
   */
  default long idempotentTransactionId() {
    return 0;
  }

  /**
   * The caller of a single-entity turn or a step on this node: the answer completes {@code answer}
   * on the entity actor's thread, with no actor in between (the caller's continuations run there,
   * as they ran on the ask's completion before; docs/ARCHITECTURE.md, "A write, end to end"). A
   * second answer, or one after the caller gave up ({@code answer} already failed with a timeout),
   * changes nothing. {@code idempotentTransactionId}: the turn's transaction id when an idempotency
   * record is attached to it (0 otherwise); the entity drops the attachment when it answers, so an
   * attached record marks a turn still running (see {@link Troupe#idempotentWriteRunning}).
   */
  record Caller(CompletableFuture<TurnResult> answer, long idempotentTransactionId)
      implements Recipient {
    Caller(CompletableFuture<TurnResult> answer) {
      this(answer, 0);
    }

    @Override
    public void deliver(TurnResult result) {
      answer.complete(result);
    }

    @Override
    public boolean answersCaller() {
      return true;
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

    @Override
    public void reportForwards(List<Forward> forwards) {
      coordinator.forwardsReported(participant, transactionId, forwards, round);
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

  /**
   * The caller of a turn or a step on the node {@code callerNode}: the answer travels back as a
   * {@link WireMessage.TurnAnswer} or {@link WireMessage.StepAnswer}, matched there by (transaction
   * id, entity) in its {@link RemoteReplies}.
   *
   * @param idempotentTransactionId the turn's transaction id (a step's: 0): an idempotency record
   *     attached to it in this node's store is dropped when the entity answers, as for a local
   *     caller (detaching an id nothing is attached to does nothing)
   */
  record RemoteCaller(Transport transport, int callerNode, EntityId entity, long transactionId,
      boolean step, long idempotentTransactionId) implements Recipient {
    @Override
    public void deliver(TurnResult result) {
      WireMessage answer = step
          ? ParticipantMessages.stepAnswer(transactionId, entity, result)
          : ParticipantMessages.turnAnswer(transactionId, entity, result);
      transport.send(new Envelope(transport.localNode(),
          new Envelope.Destination.ToNode(callerNode), answer));
    }

    @Override
    public boolean answersCaller() {
      return true;
    }
  }

  /**
   * A coordinator on the node {@code coordinatorNode} waiting for this participant's vote of one
   * round: sent back as a {@link WireMessage.Vote}, found there by its transaction id in the
   * node's {@link DecisionDirectory}.
   */
  record RemoteVoter(Transport transport, int coordinatorNode, EntityId participant,
      long transactionId, int round) implements Recipient {
    @Override
    public void deliver(TurnResult result) {
      transport.send(new Envelope(transport.localNode(),
          new Envelope.Destination.ToNode(coordinatorNode),
          ParticipantMessages.vote(transactionId, participant, round, result)));
    }
  }

  /** A coordinator on {@code coordinatorNode} waiting for this participant's commit to apply. */
  record RemoteAcknowledger(Transport transport, int coordinatorNode, EntityId participant,
      long transactionId) implements Recipient {
    @Override
    public void deliver(TurnResult result) {
      transport.send(new Envelope(transport.localNode(),
          new Envelope.Destination.ToNode(coordinatorNode),
          ParticipantMessages.acknowledgement(transactionId, participant, result)));
    }
  }
}
