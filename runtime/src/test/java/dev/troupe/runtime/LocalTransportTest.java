package dev.troupe.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityLocator;
import dev.troupe.model.SingleNodeLocator;
import dev.troupe.txn.wire.Envelope;
import dev.troupe.txn.wire.ParticipantMessages;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The in-doubt path through the node's transport, with every envelope encoded and decoded: a
 * participant's {@code DecisionQuery} to the coordinator's node is answered from the node's
 * {@link DecisionDirectory}, and a decided {@code DecisionAnswer} reaches the participant's
 * registry as a decision nobody acknowledges; envelopes for other nodes are dropped and counted.
 */
class LocalTransportTest {
  private static final int NODE = 3;
  private static final EntityId PARTICIPANT = EntityId.parse("Account/alice");

  private ActorSystem<Void> system;
  /** What reached the participant's registry. */
  private final BlockingQueue<EntityRegistry.Command> routed = new LinkedBlockingQueue<>();
  private final DecisionDirectory decisions = new DecisionDirectory();
  private LocalTransport transport;

  @BeforeEach
  void start() {
    system = ActorSystem.create(Behaviors.empty(), "local-transport-test");
    ActorRef<EntityRegistry.Command> registry = system.systemActorOf(
        Behaviors.receive(EntityRegistry.Command.class)
            .onMessage(EntityRegistry.Command.class, command -> {
              routed.add(command);
              return Behaviors.same();
            })
            .build(),
        "registry", Props.empty());
    transport = new LocalTransport(NODE, new SingleNodeLocator(4, NODE), true,
        new NodeInbox(decisions,
            (entity, message) -> registry.tell(new EntityRegistry.Route(entity, message)), (name, version) -> Optional.empty(),
            new RemoteReplies(10, new PekkoTimers(system)), null, null));
  }

  @AfterEach
  void stop() {
    system.terminate();
  }

  /** What the participant's shell sends for the core's QueryDecision effect. */
  private void ask(long transactionId) {
    transport.send(new Envelope(NODE, new Envelope.Destination.ToNode(NODE),
        ParticipantMessages.decisionQuery(transactionId, NODE, PARTICIPANT)));
  }

  private EntityActor.Decide nextDecision() throws InterruptedException {
    EntityRegistry.Command command = routed.poll(5, TimeUnit.SECONDS);
    assertNotNull(command, "no decision reached the participant");
    EntityRegistry.Route route = assertInstanceOf(EntityRegistry.Route.class, command);
    assertEquals(PARTICIPANT, route.entity());
    return assertInstanceOf(EntityActor.Decide.class, route.message());
  }

  @Test
  void aRecordedCommitIsAnsweredThroughTheWireFormats() throws Exception {
    decisions.decisionRecorded(101);
    ask(101);
    EntityActor.Decide decide = nextDecision();
    assertEquals(101, decide.transactionId());
    assertEquals(true, decide.commit());
    assertNull(decide.acknowledgeTo(), "a decision learned by asking is acknowledged to nobody");
    assertEquals(2, transport.delivered(), "the question and its answer");
    assertEquals(2, transport.encoded(), "both went through WireCodec");
  }

  @Test
  void aTransactionNobodyCoordinatesIsPresumedAborted() throws Exception {
    ask(202);
    EntityActor.Decide decide = nextDecision();
    assertEquals(202, decide.transactionId());
    assertEquals(false, decide.commit());
  }

  @Test
  void anUndecidedAnswerReachesNobodyAndTheParticipantAsksAgain() throws Exception {
    decisions.decisionWriteUncertain(303);
    ask(303);
    assertEquals(2, transport.delivered(), "the question was answered");
    assertNull(routed.poll(200, TimeUnit.MILLISECONDS), "an undecided answer is dropped");
    decisions.decisionRecorded(303);
    ask(303);
    assertEquals(true, nextDecision().commit());
  }

  @Test
  void envelopesForOtherNodesAreDroppedAndCounted() throws Exception {
    transport.send(new Envelope(NODE, new Envelope.Destination.ToNode(NODE + 1),
        ParticipantMessages.decisionQuery(404, NODE, PARTICIPANT)));
    EntityLocator elsewhere = new EntityLocator() {
      @Override
      public int partitions() {
        return 1;
      }

      @Override
      public int partitionOf(EntityId entity) {
        return 0;
      }

      @Override
      public int nodeOf(EntityId entity) {
        return NODE + 2;
      }
    };
    LocalTransport toRemoteEntities = new LocalTransport(NODE, elsewhere, true,
        new NodeInbox(decisions, (entity, message) -> {
          throw new AssertionError("nothing may be delivered for another node's entity");
        }, (name, version) -> Optional.empty(), new RemoteReplies(10, new PekkoTimers(system)),
        null, null));
    toRemoteEntities.send(new Envelope(NODE, new Envelope.Destination.ToEntity(PARTICIPANT),
        new dev.troupe.txn.wire.WireMessage.DecisionAnswer(404, PARTICIPANT,
            dev.troupe.txn.wire.WireMessage.DecisionState.COMMITTED)));
    assertEquals(1, transport.droppedForOtherNodes());
    assertEquals(1, toRemoteEntities.droppedForOtherNodes());
    assertEquals(0, transport.delivered() + toRemoteEntities.delivered());
    assertNull(routed.poll(100, TimeUnit.MILLISECONDS));
  }

  @Test
  void theSettingDefaultsToHandingMessagesOverAsTheyAre() {
    RuntimeSettings.TransportSettings defaults =
        RuntimeSettings.fromConfig(com.typesafe.config.ConfigFactory.load()).transport();
    assertEquals(false, defaults.encodeLocalMessages());
    assertEquals(false, defaults.routeEntityMessages(),
        "on one node entity messages are told directly unless a test asks for the remote path");
  }
}
