package dev.troupe.runtime;

import dev.troupe.model.EntityId;
import dev.troupe.txn.port.Transport;
import dev.troupe.txn.wire.CoordinatorMessages;
import dev.troupe.txn.wire.Envelope;
import dev.troupe.txn.wire.WireMessage;
import dev.troupe.txn.wire.WireMessage.DecisionState;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the messages a {@link Transport} delivers to this node go: each one is handed to the shell
 * of the core it is for. Today that is the in-doubt path (docs/ARCHITECTURE.md, "Two-phase commit
 * over a network"): a {@link WireMessage.DecisionQuery} is answered from the node's {@link
 * DecisionDirectory} with a {@link WireMessage.DecisionAnswer} sent back to the participant, and a
 * decided answer reaches the participant's actor as a decision nobody acknowledges (an undecided
 * one is dropped: the participant asks again after its interval). The other messages still travel
 * inside the actors' own messages on one node; one that arrives here is dropped with a warning
 * until the cluster transport routes them (issue 18).
 *
 * <p>Runs on the transport's delivering thread; non-blocking (a directory lookup under short
 * monitors, a send, a tell).
 */
final class NodeInbox {
  private static final Logger log = LoggerFactory.getLogger(NodeInbox.class);

  private final DecisionDirectory decisions;
  private final Function<EntityId, ActorRef<EntityRegistry.Command>> registryOf;

  NodeInbox(DecisionDirectory decisions,
      Function<EntityId, ActorRef<EntityRegistry.Command>> registryOf) {
    this.decisions = decisions;
    this.registryOf = registryOf;
  }

  /** Hands one delivered message to its shell; {@code replies} sends what it answers. */
  void receive(Envelope envelope, Transport replies) {
    switch (envelope.message()) {
      case WireMessage.DecisionQuery query -> {
        DecisionState state = switch (decisions.ask(query.transactionId())) {
          case COMMITTED -> DecisionState.COMMITTED;
          case ABORTED -> DecisionState.ABORTED;
          case UNDECIDED -> DecisionState.UNDECIDED;
        };
        replies.send(new Envelope(replies.localNode(),
            new Envelope.Destination.ToEntity(query.participant()),
            CoordinatorMessages.decisionAnswer(query, state)));
      }
      case WireMessage.DecisionAnswer answer -> {
        if (answer.state() == DecisionState.UNDECIDED) {
          return; // the participant asks again after its next interval
        }
        EntityId participant = answer.participant();
        registryOf.apply(participant).tell(new EntityRegistry.Route(participant,
            new EntityActor.Decide(answer.transactionId(),
                answer.state() == DecisionState.COMMITTED, null, true)));
      }
      case WireMessage.Prepare ignored -> notRoutedYet(envelope);
      case WireMessage.Vote ignored -> notRoutedYet(envelope);
      case WireMessage.ForwardsChanged ignored -> notRoutedYet(envelope);
      case WireMessage.Decision ignored -> notRoutedYet(envelope);
      case WireMessage.Acknowledgement ignored -> notRoutedYet(envelope);
      case WireMessage.StepRequest ignored -> notRoutedYet(envelope);
      case WireMessage.StepAnswer ignored -> notRoutedYet(envelope);
      case WireMessage.TurnRequest ignored -> notRoutedYet(envelope);
      case WireMessage.TurnAnswer ignored -> notRoutedYet(envelope);
    }
  }

  private static void notRoutedYet(Envelope envelope) {
    log.warn("dropped a {}: on one node it travels in the actors' messages, not the transport",
        envelope.message().getClass().getSimpleName());
  }
}
