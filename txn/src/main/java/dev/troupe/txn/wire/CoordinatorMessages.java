package dev.troupe.txn.wire;

import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.coordinator.CoordinatorCore.Effect.SendDecision;
import dev.troupe.txn.coordinator.CoordinatorCore.Effect.SendForwards;
import dev.troupe.txn.coordinator.CoordinatorCore.Effect.SendPrepare;
import dev.troupe.txn.wire.WireMessage.Acknowledgement;
import dev.troupe.txn.wire.WireMessage.Decision;
import dev.troupe.txn.wire.WireMessage.DecisionAnswer;
import dev.troupe.txn.wire.WireMessage.DecisionQuery;
import dev.troupe.txn.wire.WireMessage.DecisionState;
import dev.troupe.txn.wire.WireMessage.ForwardsChanged;
import dev.troupe.txn.wire.WireMessage.Prepare;
import dev.troupe.txn.wire.WireMessage.Vote;

/**
 * The coordinator's side of the wire: its effects that reach a participant become messages, and
 * the participants' messages become its inputs. A shell encodes what these return with {@link
 * WireCodec} and routes it to the participant's entity ({@link Envelope.Destination.ToEntity}).
 *
 * <p>Assumes {@code CoordinatorCore}'s {@code SendPrepare(participant, transactionId,
 * startTimestamp, part, planned)}, {@code SendForwards(participant, transactionId, forwards)}
 * (its round passed beside it until the coordinator numbers rounds),
 * {@code SendDecision(participant, transactionId, commit)}, {@code VoteReceived(participant,
 * transactionId, vote)} and {@code Acknowledged(participant, transactionId, acknowledgement)}.
 */
public final class CoordinatorMessages {
  private CoordinatorMessages() {}

  /**
   * @param type the participant's type as the coordinator's node knows it (its name and the
   *     commit timestamp of its stored definition)
   */
  public static Prepare prepare(SendPrepare send, TypeReference type) {
    CoordinatorCore.Part part = send.part();
    return new Prepare(send.transactionId(), send.startTimestamp(), send.participant(), type,
        part.turns(), part.readsState(), part.forwards(), part.reserved(), send.planned());
  }

  /**
   * @param round the coordinator's round of this part for these forwards (2 for the first after
   *     the prepare): the {@code round} of a coordinator that numbers its rounds
   */
  public static ForwardsChanged forwardsChanged(SendForwards send, int round) {
    return new ForwardsChanged(send.transactionId(), send.participant(), round, send.forwards());
  }

  public static Decision decision(SendDecision send) {
    return new Decision(send.transactionId(), send.participant(), send.commit());
  }

  /**
   * The vote as the coordinator's input, with the round it answers (the coordinator ignores a
   * duplicate and a vote of an earlier round).
   */
  public static CoordinatorCore.Input.VoteReceived voteReceived(Vote vote) {
    return new CoordinatorCore.Input.VoteReceived(vote.participant(), vote.transactionId(),
        WireResults.fromWire(vote.vote()), vote.round());
  }

  /** The coordinator's node's answer to a participant's question, sent back to its node. */
  public static DecisionAnswer decisionAnswer(DecisionQuery query, DecisionState state) {
    return new DecisionAnswer(query.transactionId(), query.participant(), state);
  }

  public static CoordinatorCore.Input.Acknowledged acknowledged(Acknowledgement acknowledgement) {
    return new CoordinatorCore.Input.Acknowledged(acknowledgement.participant(),
        acknowledgement.transactionId(), WireResults.fromWire(acknowledgement.acknowledgement()));
  }
}
