package dev.troupe.runtime;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.model.time.TransactionIds;
import dev.troupe.storage.Codec;
import dev.troupe.storage.CorruptDataException;
import dev.troupe.storage.DurableStore;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.coordinator.DecisionQueryCore;
import dev.troupe.txn.port.Transport;
import dev.troupe.txn.wire.CoordinatorMessages;
import dev.troupe.txn.wire.Envelope;
import dev.troupe.txn.wire.ParticipantMessages;
import dev.troupe.txn.wire.TypeRegistry;
import dev.troupe.txn.wire.WireMessage;
import dev.troupe.txn.wire.WireMessage.DecisionState;
import dev.troupe.txn.wire.WireResults;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * Where the messages a {@link Transport} delivers to this node go: each one is handed to the shell
 * of the core it is for (docs/ARCHITECTURE.md, "Entity messages between nodes").
 *
 * <ul>
 *   <li>For an entity of this node (a prepare, changed forwards, a decision, a turn, a step): its
 *       type reference is resolved with the node's {@link TypeRegistry} (a version unknown here:
 *       the answer is {@code unknown_type}, a no vote for a prepare), and it reaches the entity
 *       through its partition's {@link EntityRegistry} with recipients that answer through the
 *       transport to the sender's node ({@link Recipient.RemoteVoter}, {@link
 *       Recipient.RemoteAcknowledger}, {@link Recipient.RemoteCaller}).
 *   <li>For this node's coordinators (a vote, an acknowledgement): the live {@link TransactionRun}
 *       of the attempt, found in the {@link DecisionDirectory}; none (it finished): dropped and
 *       counted.
 *   <li>For this node's callers (a turn's, a step's or a read's answer): their entry in {@link
 *       RemoteReplies}, which drops and counts an answer nobody waits for any more.
 *   <li>A read of an entity of this node ({@link WireMessage.ReadRequest}): served on the node's
 *       {@link ReadPath} and answered with its state ({@link RemoteReads}).
 *   <li>The in-doubt path ("Two-phase commit over a network"): a {@link
 *       WireMessage.DecisionQuery} is answered from the {@link DecisionDirectory}; a decided
 *       {@link WireMessage.DecisionAnswer} reaches the participant as a decision nobody
 *       acknowledges (an undecided one is dropped: the participant asks again).
 * </ul>
 *
 * <p>Runs on the transport's delivering thread; non-blocking (a lookup, a send, a tell, a call of
 * a coordinator under its short monitor).
 */
final class NodeInbox {
  private final DecisionDirectory decisions;
  private final EntityRoutes routes;
  private final TypeRegistry types;
  private final RemoteReplies replies;
  /** Serves reads other nodes ask of this node's entities. */
  private final ReadPath reads;
  /** Where a turn's idempotency record from another node is attached (written with its commit). */
  private final DurableStore store;
  private final LongAdder orphanedCoordinatorAnswers = new LongAdder();

  NodeInbox(DecisionDirectory decisions,
      EntityRoutes routes, TypeRegistry types,
      RemoteReplies replies, ReadPath reads, DurableStore store) {
    this.reads = reads;
    this.store = store;
    this.decisions = decisions;
    this.routes = routes;
    this.types = types;
    this.replies = replies;
  }

  /** Hands one delivered message to its shell; {@code transport} sends what it answers. */
  void receive(Envelope envelope, Transport transport) {
    int sender = envelope.senderNode();
    switch (envelope.message()) {
      case WireMessage.Prepare prepare -> {
        Recipient voteTo = new Recipient.RemoteVoter(transport, sender, prepare.participant(),
            prepare.transactionId(), 1);
        try {
          var input = ParticipantMessages.prepareRequested(prepare, types, voteTo);
          route(prepare.participant(), new EntityActor.Prepare(input.transactionId(),
              input.startTimestamp(), input.turns(), input.readsState(), input.type(),
              input.planned(), input.forwards(), input.reserved(), null, voteTo));
        } catch (TroupeException unknownType) {
          voteTo.deliver(new TurnResult.Failed(unknownType));
        }
      }
      case WireMessage.ForwardsChanged changed -> route(changed.participant(),
          new EntityActor.Forwards(changed.transactionId(), changed.forwards(),
              new Recipient.RemoteVoter(transport, sender, changed.participant(),
                  changed.transactionId(), changed.round()), changed.round()));
      case WireMessage.Decision decision -> route(decision.participant(),
          new EntityActor.Decide(decision.transactionId(), decision.commit(),
              decision.commit() ? new Recipient.RemoteAcknowledger(transport, sender,
                  decision.participant(), decision.transactionId()) : null));
      case WireMessage.TurnRequest request -> {
        Recipient replyTo = new Recipient.RemoteCaller(transport, sender, request.entity(),
            request.transactionId(), false, request.transactionId());
        try {
          byte[] idempotency = request.idempotencyRecord();
          if (idempotency != null) {
            // Written with the turn's commit by this node's store; the entity detaches it when
            // it answers (RemoteCaller's idempotentTransactionId).
            store.attachIdempotency(request.transactionId(), Codec.decodeIdempotency(idempotency));
          }
          var input = ParticipantMessages.turnRequested(request, types, replyTo);
          route(request.entity(), new EntityActor.RunTurn(input.turn(), input.type(), replyTo,
              input.transactionId()));
        } catch (TroupeException unknownType) {
          store.detachIdempotency(request.transactionId());
          replyTo.deliver(new TurnResult.Failed(unknownType));
        } catch (CorruptDataException damaged) {
          replyTo.deliver(new TurnResult.Failed(new TroupeException(ErrorCode.CORRUPT_DATA,
              "the idempotency record of the turn did not survive the wire: "
                  + damaged.getMessage())));
        }
      }
      case WireMessage.StepRequest step -> {
        Recipient replyTo = new Recipient.RemoteCaller(transport, sender, step.entity(),
            step.transactionId(), true, 0);
        try {
          var input = ParticipantMessages.stepRequested(step, types, replyTo);
          route(step.entity(), new EntityActor.Step(input.transactionId(),
              input.startTimestamp(), input.turn(), input.type(), replyTo));
        } catch (TroupeException unknownType) {
          replyTo.deliver(new TurnResult.Failed(unknownType));
        }
      }
      case WireMessage.Vote vote -> {
        TransactionRun coordinator = decisions.live(vote.transactionId());
        if (coordinator == null) {
          orphanedCoordinatorAnswers.increment();
          return;
        }
        var input = CoordinatorMessages.voteReceived(vote);
        coordinator.voteReceived(input.participant(), input.transactionId(), input.vote(),
            input.round());
      }
      case WireMessage.Acknowledgement acknowledgement -> {
        TransactionRun coordinator = decisions.live(acknowledgement.transactionId());
        if (coordinator == null) {
          orphanedCoordinatorAnswers.increment(); // finished: nothing waits for it
          return;
        }
        var input = CoordinatorMessages.acknowledged(acknowledgement);
        coordinator.acknowledged(input.participant(), input.transactionId(),
            input.acknowledgement());
      }
      case WireMessage.TurnAnswer answer -> {
        // Answered, even late: an idempotency record this node attached for the turn (so that a
        // retry here waits while it runs) is no longer needed (its commit, if any, wrote it).
        store.detachIdempotency(answer.transactionId());
        replies.answer(RemoteReplies.Kind.TURN, answer.transactionId(), answer.entity(),
            WireResults.fromWire(answer.answer()), sender);
      }
      case WireMessage.StepAnswer answer -> replies.answer(RemoteReplies.Kind.STEP,
          answer.transactionId(), answer.entity(), WireResults.fromWire(answer.answer()), sender);
      case WireMessage.ReadRequest read -> RemoteReads.serve(read, sender, reads, transport);
      case WireMessage.ReadAnswer answer -> replies.answer(RemoteReplies.Kind.READ,
          answer.readId(), answer.entity(), WireResults.fromWire(answer.answer()), sender);
      // A cluster member's ClusterNode answers these before its inbox (NodeStatusQueries); a
      // single node is never asked: nothing to do.
      case WireMessage.NodeStatusQuery ignored -> {}
      case WireMessage.NodeStatusAnswer ignored -> {}
      case WireMessage.DecisionQuery query -> {
        // A question for another node's transaction reached this node: the cluster transport
        // hands a participant's question to its own node when the coordinator's node is no member
        // (ClusterTransport#sendToNode); answered only once that node's coordinators are ended.
        int coordinatorNode = TransactionIds.nodeOf(query.transactionId());
        DecisionQueryCore.Answer answer = coordinatorNode == transport.localNode()
            ? decisions.ask(query.transactionId())
            : decisions.askForAnotherNode(query.transactionId(), coordinatorNode);
        DecisionState state = switch (answer) {
          case COMMITTED -> DecisionState.COMMITTED;
          case ABORTED -> DecisionState.ABORTED;
          case UNDECIDED -> DecisionState.UNDECIDED;
        };
        transport.send(new Envelope(transport.localNode(),
            new Envelope.Destination.ToEntity(query.participant()),
            CoordinatorMessages.decisionAnswer(query, state)));
      }
      case WireMessage.DecisionAnswer answer -> {
        if (answer.state() == DecisionState.UNDECIDED) {
          return; // the participant asks again after its next interval
        }
        route(answer.participant(), new EntityActor.Decide(answer.transactionId(),
            answer.state() == DecisionState.COMMITTED, null, true));
      }
    }
  }

  /** Votes and acknowledgements dropped because their coordinator had finished. */
  long orphanedCoordinatorAnswers() {
    return orphanedCoordinatorAnswers.sum();
  }

  private void route(EntityId entity, EntityActor.Routed message) {
    routes.route(entity, message);
  }
}
