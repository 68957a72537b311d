package dev.troupe.txn.wire;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.entity.EntityTurnCore;
import dev.troupe.txn.wire.WireMessage.Acknowledgement;
import dev.troupe.txn.wire.WireMessage.Decision;
import dev.troupe.txn.wire.WireMessage.DecisionAnswer;
import dev.troupe.txn.wire.WireMessage.DecisionQuery;
import dev.troupe.txn.wire.WireMessage.ForwardsChanged;
import dev.troupe.txn.wire.WireMessage.Prepare;
import dev.troupe.txn.wire.WireMessage.StepAnswer;
import dev.troupe.txn.wire.WireMessage.StepRequest;
import dev.troupe.txn.wire.WireMessage.TurnAnswer;
import dev.troupe.txn.wire.WireMessage.TurnRequest;
import dev.troupe.txn.wire.WireMessage.Vote;
import java.util.Optional;

/**
 * The entity's side of the wire: messages for an entity become {@link EntityTurnCore} inputs
 * (types resolved by the receiving node's {@link TypeRegistry}), and its replies become messages.
 * The reply target {@code R} is the receiving shell's: it records where each reply goes (the
 * envelope's sender node) and, when the core replies, wraps the {@link TurnResult} with {@link
 * #vote}, {@link #acknowledgement}, {@link #stepAnswer} or {@link #turnAnswer}.
 *
 * <p>Assumes {@code EntityTurnCore}'s {@code PrepareRequested(transactionId, startTimestamp, turns,
 * readsState, type, voteTo, planned, forwards, reserved)}, {@code ForwardsReceived(transactionId,
 * forwards, voteTo)}, {@code DecisionReceived(transactionId, commit, acknowledgeTo)}, {@code
 * DecisionAnswered(transactionId, commit)}, {@code
 * StepRequested(transactionId, startTimestamp, turn, type, replyTo)} and {@code
 * TurnRequested(turn, type, transactionId, replyTo)}.
 */
public final class ParticipantMessages {
  private ParticipantMessages() {}

  /**
   * @throws TroupeException {@code unknown_type} when this node does not know the type at the
   *     version the sender used: the shell votes no with it (the coordinator aborts or retries)
   */
  public static <R> EntityTurnCore.Input.PrepareRequested<R> prepareRequested(Prepare prepare,
      TypeRegistry types, R voteTo) {
    return new EntityTurnCore.Input.PrepareRequested<>(prepare.transactionId(),
        prepare.startTimestamp(), prepare.turns(), prepare.readsState(),
        resolve(types, prepare.type()), voteTo, prepare.planned(), prepare.forwards(),
        prepare.reserved());
  }

  public static <R> EntityTurnCore.Input.ForwardsReceived<R> forwardsReceived(
      ForwardsChanged changed, R voteTo) {
    return new EntityTurnCore.Input.ForwardsReceived<>(changed.transactionId(),
        changed.forwards(), voteTo, changed.round());
  }

  /** @param acknowledgeTo where a commit's acknowledgement goes; may be null for an abort */
  public static <R> EntityTurnCore.Input.DecisionReceived<R> decisionReceived(Decision decision,
      R acknowledgeTo) {
    return new EntityTurnCore.Input.DecisionReceived<>(decision.transactionId(),
        decision.commit(), acknowledgeTo);
  }

  /** @throws TroupeException {@code unknown_type}, as {@link #prepareRequested} */
  public static <R> EntityTurnCore.Input.StepRequested<R> stepRequested(StepRequest step,
      TypeRegistry types, R replyTo) {
    return new EntityTurnCore.Input.StepRequested<>(step.transactionId(),
        step.startTimestamp(), step.turn(), resolve(types, step.type()), replyTo);
  }

  /** @throws TroupeException {@code unknown_type}, as {@link #prepareRequested} */
  public static <R> EntityTurnCore.Input.TurnRequested<R> turnRequested(TurnRequest request,
      TypeRegistry types, R replyTo) {
    return new EntityTurnCore.Input.TurnRequested<>(request.turn(),
        resolve(types, request.type()), request.transactionId(), replyTo);
  }

  /** A step request for an entity of a node elsewhere ({@code turn} null reads the state). */
  public static StepRequest stepRequest(long transactionId, long startTimestamp, EntityId entity,
      TypeReference type, Turn turn) {
    return new StepRequest(transactionId, startTimestamp, entity, type, turn);
  }

  public static TurnRequest turnRequest(long transactionId, EntityId entity, TypeReference type,
      Turn turn) {
    return new TurnRequest(transactionId, entity, type, turn);
  }

  /**
   * A turn with the client's idempotency record (its stored frame), written in the entity's
   * node's store with the turn's commit (null: none).
   */
  public static TurnRequest turnRequest(long transactionId, EntityId entity, TypeReference type,
      Turn turn, byte[] idempotencyRecord) {
    return new TurnRequest(transactionId, entity, type, turn, idempotencyRecord);
  }

  /**
   * @param round what the vote answers: 1 for the prepare, the {@link ForwardsChanged}'s round
   *     for a vote after changed forwards (the shell keeps it in its reply target)
   */
  public static Vote vote(long transactionId, EntityId participant, int round,
      TurnResult vote) {
    return new Vote(transactionId, participant, round, WireResults.toWire(vote));
  }

  /**
   * The question a participant in doubt sends to the coordinator's node ({@code
   * TransactionIds.nodeOf(transactionId)}).
   */
  public static DecisionQuery decisionQuery(long transactionId, int askingNode,
      EntityId participant) {
    return new DecisionQuery(transactionId, askingNode, participant);
  }

  /**
   * The answer to a participant's question as its input ({@code DecisionAnswered}: applied only
   * while the part is still in doubt, since a presumed abort may cross the commit); empty while
   * the coordinator has not decided (the participant asks again at its next in-doubt check).
   */
  public static <R> Optional<EntityTurnCore.Input.DecisionAnswered<R>> decisionAnswered(
      DecisionAnswer answer) {
    return switch (answer.state()) {
      case COMMITTED -> Optional.of(new EntityTurnCore.Input.DecisionAnswered<>(
          answer.transactionId(), true));
      case ABORTED -> Optional.of(new EntityTurnCore.Input.DecisionAnswered<>(
          answer.transactionId(), false));
      case UNDECIDED -> Optional.empty();
    };
  }

  public static Acknowledgement acknowledgement(long transactionId, EntityId participant,
      TurnResult acknowledgement) {
    return new Acknowledgement(transactionId, participant, WireResults.toWire(acknowledgement));
  }

  public static StepAnswer stepAnswer(long transactionId, EntityId entity, TurnResult answer) {
    return new StepAnswer(transactionId, entity, WireResults.toWire(answer));
  }

  public static TurnAnswer turnAnswer(long transactionId, EntityId entity, TurnResult answer) {
    return new TurnAnswer(transactionId, entity, WireResults.toWire(answer));
  }

  private static CompiledType resolve(TypeRegistry types, TypeReference type) {
    return types.find(type.name(), type.version()).orElseThrow(() -> new TroupeException(
        ErrorCode.UNKNOWN_TYPE, "type %s at version %d is not known on this node".formatted(
            type.name(), type.version())));
  }
}
