package dev.troupe.txn.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnLimits;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.entity.EntityTurnCore;
import dev.troupe.txn.entity.LockTable;
import dev.troupe.txn.wire.Envelope.Destination;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The converters between the cores and the wire: a whole two-phase commit run with every message
 * between the coordinator and its participants crossing as bytes, and each conversion's edge
 * (unknown type versions, failures, reserved keys).
 */
class CoreMessagesTest {
  private static final int COORDINATOR_NODE = 0;
  private static final int PARTICIPANT_NODE = 1;
  private static final long TYPE_VERSION = 1700000000123L;
  private static final CompiledType ACCOUNT = CompiledType.compile(SpecParser.parse("Account", """
      {"keys": {"balance": {"kind": "counter"}, "owner": {"kind": "register"}}}
      """.getBytes(StandardCharsets.UTF_8), false));
  private static final TypeRegistry TYPES = (name, version) ->
      name.equals("Account") && version == TYPE_VERSION ? Optional.of(ACCOUNT) : Optional.empty();
  private static final TypeReference ACCOUNT_TYPE = new TypeReference("Account", TYPE_VERSION);
  private static final EntityId ALICE = new EntityId("Account", "alice");
  private static final EntityId BOB = new EntityId("Account", "bob");

  /** Where a participant's reply goes: the kind of message it becomes, for which transaction. */
  private record ReplyTarget(String kind, long transactionId) {}

  private static Envelope overTheWire(Envelope envelope) {
    return WireCodec.decode(WireCodec.encode(envelope));
  }

  @Test
  void aTransactionCommitsWithEveryMessageCrossingAsBytes() {
    Map<EntityId, EntityTurnCore<ReplyTarget>> participants = new LinkedHashMap<>();
    for (EntityId entity : List.of(ALICE, BOB)) {
      participants.put(entity, new EntityTurnCore<>(entity, EntityState.ABSENT,
          new TurnLimits(100, 100, 4, 10), 1));
    }
    Map<EntityId, CoordinatorCore.Part> parts = new LinkedHashMap<>();
    parts.put(ALICE, new CoordinatorCore.Part(List.of(new Turn.IncrementKey("balance", -5)),
        false));
    parts.put(BOB, new CoordinatorCore.Part(List.of(new Turn.IncrementKey("balance", 5),
        new Turn.AssignKeys(Map.of("owner", Json.parse("\"Bob\"")))), true));
    CoordinatorCore coordinator =
        new CoordinatorCore(parts, new CoordinatorCore.Limits(1000, 3, 10));

    ArrayDeque<byte[]> network = new ArrayDeque<>();
    List<CoordinatorCore.Outcome> outcomes = new ArrayList<>();
    long[] clock = {1000};
    ArrayDeque<CoordinatorCore.Input> coordinatorInputs = new ArrayDeque<>();
    coordinatorInputs.add(new CoordinatorCore.Input.Started(500));
    int messages = 0;
    while (!coordinatorInputs.isEmpty() || !network.isEmpty()) {
      if (!coordinatorInputs.isEmpty()) {
        for (CoordinatorCore.Effect effect : coordinator.handle(coordinatorInputs.poll())) {
          switch (effect) {
            case CoordinatorCore.Effect.SendPrepare send -> network.add(WireCodec.encode(
                new Envelope(COORDINATOR_NODE, new Destination.ToEntity(send.participant()),
                    CoordinatorMessages.prepare(send, ACCOUNT_TYPE))));
            case CoordinatorCore.Effect.SendForwards send -> network.add(WireCodec.encode(
                new Envelope(COORDINATOR_NODE, new Destination.ToEntity(send.participant()),
                    CoordinatorMessages.forwardsChanged(send, 2))));
            case CoordinatorCore.Effect.SendDecision send -> network.add(WireCodec.encode(
                new Envelope(COORDINATOR_NODE, new Destination.ToEntity(send.participant()),
                    CoordinatorMessages.decision(send))));
            case CoordinatorCore.Effect.PersistDecision ignored ->
                coordinatorInputs.add(new CoordinatorCore.Input.DecisionPersisted(null, false));
            case CoordinatorCore.Effect.Reply reply -> outcomes.add(reply.outcome());
            default -> { }
          }
        }
        continue;
      }
      Envelope envelope = WireCodec.decode(network.poll());
      messages++;
      switch (envelope.message()) {
        case WireMessage.Vote vote -> coordinatorInputs.add(CoordinatorMessages.voteReceived(vote));
        case WireMessage.Acknowledgement acknowledgement ->
            coordinatorInputs.add(CoordinatorMessages.acknowledged(acknowledgement));
        default -> {
          EntityId entity = ((Destination.ToEntity) envelope.destination()).entity();
          EntityTurnCore.Input<ReplyTarget> input = switch (envelope.message()) {
            case WireMessage.Prepare prepare -> ParticipantMessages.prepareRequested(prepare,
                TYPES, new ReplyTarget("vote", prepare.transactionId()));
            case WireMessage.ForwardsChanged changed -> ParticipantMessages.forwardsReceived(
                changed, new ReplyTarget("vote", changed.transactionId()));
            case WireMessage.Decision decision -> ParticipantMessages.decisionReceived(decision,
                new ReplyTarget("acknowledgement", decision.transactionId()));
            default -> throw new AssertionError("not for a participant: " + envelope);
          };
          runParticipant(participants.get(entity), entity, input, network, clock);
        }
      }
    }
    CoordinatorCore.Outcome.Committed committed =
        assertInstanceOf(CoordinatorCore.Outcome.Committed.class, outcomes.getFirst());
    assertEquals(List.of(ALICE, BOB), List.copyOf(committed.results().keySet()));
    assertEquals(-5L, committed.results().get(ALICE).state().get("balance").toJson().asLong());
    assertEquals("Bob", committed.results().get(BOB).state().get("owner").toJson().asText());
    assertEquals(8, messages, "2 prepares, 2 votes, 2 decisions, 2 acknowledgements");
  }

  /** Feeds one input to a participant, completes its storage at once, sends its replies. */
  private static void runParticipant(EntityTurnCore<ReplyTarget> core, EntityId entity,
      EntityTurnCore.Input<ReplyTarget> first, ArrayDeque<byte[]> network, long[] clock) {
    ArrayDeque<EntityTurnCore.Input<ReplyTarget>> inputs = new ArrayDeque<>(List.of(first));
    while (!inputs.isEmpty()) {
      for (EntityTurnCore.Effect<ReplyTarget> effect : core.handle(inputs.poll())) {
        switch (effect) {
          case EntityTurnCore.Effect.SubmitPrepare<ReplyTarget> prepare ->
              inputs.add(new EntityTurnCore.Input.PrepareSucceeded<>(prepare.transactionId()));
          case EntityTurnCore.Effect.SubmitCommit<ReplyTarget> commit ->
              inputs.add(new EntityTurnCore.Input.CommitSucceeded<>(commit.serial(), ++clock[0]));
          case EntityTurnCore.Effect.ReportForwards<ReplyTarget> ignored -> {} // the vote carries them too
          case EntityTurnCore.Effect.Reply<ReplyTarget> reply -> {
            ReplyTarget target = reply.replyTo();
            WireMessage message = target.kind().equals("vote")
                ? ParticipantMessages.vote(target.transactionId(), entity, 1, reply.result())
                : ParticipantMessages.acknowledgement(target.transactionId(), entity,
                    reply.result());
            network.add(WireCodec.encode(new Envelope(PARTICIPANT_NODE,
                new Destination.ToNode(COORDINATOR_NODE), message)));
          }
          default -> { }
        }
      }
    }
  }

  @Test
  void aPrepareCarriesItsWholePartAndResolvesItsTypeByVersion() {
    CoordinatorCore.Part part = new CoordinatorCore.Part(List.of(new Turn.DeleteKey("owner")),
        true, List.of(), Map.of("balance", LockTable.Mode.WRITE));
    WireMessage.Prepare prepare = CoordinatorMessages.prepare(
        new CoordinatorCore.Effect.SendPrepare(ALICE, 77, 70, part, true), ACCOUNT_TYPE);
    Envelope received = overTheWire(new Envelope(COORDINATOR_NODE,
        new Destination.ToEntity(ALICE), prepare));
    EntityTurnCore.Input.PrepareRequested<String> input = ParticipantMessages.prepareRequested(
        (WireMessage.Prepare) received.message(), TYPES, "vote");
    assertEquals(77, input.transactionId());
    assertEquals(70, input.startTimestamp());
    assertEquals(part.turns(), input.turns());
    assertTrue(input.readsState());
    assertTrue(input.planned());
    assertEquals(part.reserved(), input.reserved());
    assertEquals(ACCOUNT, input.type());
    assertEquals("vote", input.voteTo());
  }

  @Test
  void aTypeVersionTheReceiverDoesNotKnowIsRefusedAsUnknownType() {
    WireMessage.StepRequest step = ParticipantMessages.stepRequest(5, 5, ALICE,
        new TypeReference("Account", TYPE_VERSION + 1), null);
    TroupeException refused = assertThrows(TroupeException.class,
        () -> ParticipantMessages.stepRequested(step, TYPES, "reply"));
    assertEquals(ErrorCode.UNKNOWN_TYPE, refused.code());
    assertTrue(refused.getMessage().contains(String.valueOf(TYPE_VERSION + 1)));
  }

  @Test
  void aFailureKeepsItsCodeReasonAndMessage() {
    TurnResult no = new TurnResult.Failed(new TroupeException(ErrorCode.ABORTED,
        TransactionAbort.LOCK_CONFLICT, "died"));
    Envelope received = overTheWire(new Envelope(PARTICIPANT_NODE,
        new Destination.ToNode(COORDINATOR_NODE), ParticipantMessages.vote(9, BOB, 1, no)));
    CoordinatorCore.Input.VoteReceived vote =
        CoordinatorMessages.voteReceived((WireMessage.Vote) received.message());
    assertEquals(BOB, vote.participant());
    assertEquals(9, vote.transactionId());
    TroupeException error = assertInstanceOf(TurnResult.Failed.class, vote.vote()).error();
    assertEquals(ErrorCode.ABORTED, error.code());
    assertEquals(TransactionAbort.LOCK_CONFLICT, error.reason());
    assertEquals("died", error.getMessage());
  }

  @Test
  void aDecisionQueryIsAnsweredBackToTheParticipantThatAsked() {
    WireMessage.DecisionQuery query = (WireMessage.DecisionQuery) overTheWire(new Envelope(
        PARTICIPANT_NODE, new Destination.ToNode(COORDINATOR_NODE),
        ParticipantMessages.decisionQuery(44, PARTICIPANT_NODE, ALICE))).message();
    assertEquals(PARTICIPANT_NODE, query.askingNode());
    for (WireMessage.DecisionState state : WireMessage.DecisionState.values()) {
      Envelope answer = overTheWire(new Envelope(COORDINATOR_NODE,
          new Destination.ToNode(query.askingNode()),
          CoordinatorMessages.decisionAnswer(query, state)));
      WireMessage.DecisionAnswer received = (WireMessage.DecisionAnswer) answer.message();
      assertEquals(ALICE, received.participant());
      Optional<EntityTurnCore.Input.DecisionAnswered<String>> decision =
          ParticipantMessages.decisionAnswered(received);
      switch (state) {
        case COMMITTED -> assertTrue(decision.orElseThrow().commit());
        case ABORTED -> assertEquals(false, decision.orElseThrow().commit());
        case UNDECIDED -> assertTrue(decision.isEmpty(), "undecided: ask again later");
      }
    }
  }

  @Test
  void aYesVoteArrivesEqualToTheOneCast() {
    TurnResult.Done yes = new TurnResult.Done(12, EntityState.ABSENT, true, 10);
    WireResult wire = WireResults.toWire(yes);
    assertEquals(yes, WireResults.fromWire(wire));
    Envelope received = overTheWire(new Envelope(PARTICIPANT_NODE,
        new Destination.ToNode(COORDINATOR_NODE), ParticipantMessages.stepAnswer(3, BOB, yes)));
    assertEquals(yes, WireResults.fromWire(((WireMessage.StepAnswer) received.message()).answer()));
  }

  @Test
  void singleTurnsAndStepsBecomeTheirCoreInputs() {
    Turn turn = new Turn.IncrementKey("balance", 2);
    WireMessage.TurnRequest request = (WireMessage.TurnRequest) overTheWire(new Envelope(2,
        new Destination.ToEntity(ALICE),
        ParticipantMessages.turnRequest(31, ALICE, ACCOUNT_TYPE, turn))).message();
    EntityTurnCore.Input.TurnRequested<String> input =
        ParticipantMessages.turnRequested(request, TYPES, "client");
    assertEquals(turn, input.turn());
    assertEquals(31, input.transactionId());
    assertEquals(ACCOUNT, input.type());
    WireMessage.StepRequest step = (WireMessage.StepRequest) overTheWire(new Envelope(2,
        new Destination.ToEntity(ALICE),
        ParticipantMessages.stepRequest(32, 30, ALICE, ACCOUNT_TYPE, null))).message();
    EntityTurnCore.Input.StepRequested<String> stepInput =
        ParticipantMessages.stepRequested(step, TYPES, "session");
    assertEquals(null, stepInput.turn());
    assertEquals(30, stepInput.startTimestamp());
  }
}
