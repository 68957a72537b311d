package dev.troupe.txn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.causal.Messages;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.value.RegisterValue;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Sending (operations of the sender's turn) and delivering (marker, action or consumed). */
class MessageDeliveryEvaluationTest {
  private static final int DC = 7;
  private static final EntityId SENDER = new EntityId("Sender", "s");
  private static final EntityId RECEIVER = new EntityId("Receiver", "r");

  private static CompiledType type(String json) {
    return CompiledType.compile(
        SpecParser.parse(null, json.getBytes(StandardCharsets.UTF_8), false));
  }

  private static final CompiledType SENDER_TYPE = type("""
      {"type": "Sender", "keys": {"n": {"kind": "counter"}},
       "actions": {
         "notify": {"params": {"to": "string"}, "effect": {"n": "1"},
                    "send": [{"entity": "Receiver/{to}", "action": "hear", "args": {"v": "5"}}]},
         "both": {"params": {"a": "string", "b": "string"},
                  "send": [{"entity": "Receiver/{a}", "action": "hear", "args": {"v": "1"}},
                           {"entity": "Receiver/{b}", "action": "hear", "args": {"v": "2"}}]}}}
      """);

  private static final CompiledType RECEIVER_TYPE = type("""
      {"type": "Receiver", "keys": {"total": {"kind": "register", "default": 0}},
       "actions": {"hear": {"params": {"v": "int"}, "pre": ["v > 0", "total < 10"],
                            "effect": {"total": "total + v"}}}}
      """);

  private static List<Operation> written(TurnEvaluator.Decision decision) {
    return assertInstanceOf(TurnEvaluator.Decision.Write.class, decision).operations();
  }

  private static TurnEvaluator.Decision deliver(EntityState state, long timestamp, int index,
      String action, String args) {
    return TurnEvaluator.evaluate(RECEIVER, RECEIVER_TYPE, state, new Turn.DeliverMessage(
        timestamp, index, SENDER, action, Json.parse(args)), 1, DC, TurnLimits.DEFAULTS);
  }

  @Test
  void anActionsMessagesAreOperationsOfItsTurn() {
    List<Operation> operations = written(TurnEvaluator.evaluate(SENDER, SENDER_TYPE,
        EntityState.ABSENT, new Turn.InvokeAction("notify", Json.parse("{\"to\": \"r\"}")), 1, DC,
        TurnLimits.DEFAULTS));
    assertEquals(new Operation.SendMessage(RECEIVER, "hear", Json.parse("{\"v\": 5}")),
        operations.get(operations.size() - 1));
  }

  @Test
  void twoMessagesToOneEntityInOneTurnAreRefused() {
    TurnEvaluator.Decision twice = TurnEvaluator.evaluate(SENDER, SENDER_TYPE, EntityState.ABSENT,
        new Turn.InvokeAction("both", Json.parse("{\"a\": \"r\", \"b\": \"r\"}")), 1, DC,
        TurnLimits.DEFAULTS);
    TurnEvaluator.Decision.Reject rejected =
        assertInstanceOf(TurnEvaluator.Decision.Reject.class, twice);
    assertTrue(rejected.error().getMessage().contains("at most one message per destination"));
    // Two turns of one transaction on the sender: the same rule.
    TurnEvaluator.Sequence sequence = TurnEvaluator.evaluateSequence(SENDER, SENDER_TYPE,
        EntityState.ABSENT, List.of(new Turn.InvokeAction("notify", Json.parse("{\"to\": \"r\"}")),
            new Turn.InvokeAction("notify", Json.parse("{\"to\": \"r\"}"))), 1, DC,
        TurnLimits.DEFAULTS);
    assertTrue(sequence.error() != null);
  }

  @Test
  void aDeliveryRunsTheActionOnceAndRecordsItsMarker() {
    List<Operation> operations = written(deliver(EntityState.ABSENT, 100, 0, "hear",
        "{\"v\": 3}"));
    assertEquals(new Operation.Assign(Messages.deliveredMarkerKey(DC),
        Messages.markerValue(100, 0, Messages.DELIVERED)), operations.get(0));
    EntityState after = EntityState.ABSENT.apply(operations, 5, DC);
    assertTrue(after.exists());
    assertEquals(3, ((RegisterValue) after.get("total")).value().asInt());
    // Delivered again (after a crash): nothing; an earlier message of this DC too.
    assertEquals(List.of(), written(deliver(after, 100, 0, "hear", "{\"v\": 3}")));
    assertEquals(List.of(), written(deliver(after, 99, 4, "hear", "{\"v\": 3}")));
    // The next one runs.
    assertEquals(2, written(deliver(after, 100, 1, "hear", "{\"v\": 3}")).size());
  }

  @Test
  void aMessageThatCannotRunIsConsumedByItsMarkerAlone() {
    for (String[] failing : new String[][] {{"hear", "{\"v\": 0}", "precondition_failed"},
        {"nothing", "{}", "unknown_action"}, {"hear", "{\"v\": \"x\"}", "invalid_request"}}) {
      List<Operation> operations =
          written(deliver(EntityState.ABSENT, 100, 0, failing[0], failing[1]));
      assertEquals(1, operations.size(), failing[0] + " " + failing[1]);
      JsonNode marker = ((Operation.Assign) operations.get(0)).value();
      assertEquals(failing[2], Messages.outcome(marker));
      // A consumed message does not create its receiver.
      assertFalse(EntityState.ABSENT.apply(operations, 5, DC).exists());
    }
    TurnEvaluator.Decision schemaless = TurnEvaluator.evaluate(RECEIVER,
        CompiledType.schemaless("Receiver"), EntityState.ABSENT, new Turn.DeliverMessage(1, 0,
            SENDER, "hear", Json.parse("{}")), 1, DC, TurnLimits.DEFAULTS);
    assertEquals("unknown_type", Messages.outcome(
        ((Operation.Assign) written(schemaless).get(0)).value()));
  }

  private static final CompiledType CALLING_TYPE = type("""
      {"type": "Receiver", "keys": {"total": {"kind": "register", "default": 0}},
       "actions": {"hear": {"params": {"v": "int"}, "pre": ["v > 0"],
                            "effect": {"total": "total + v"},
                            "sync": [{"entity": "Other/o", "action": "ping"}]}}}
      """);

  private static TurnEvaluator.Decision deliverCalling(EntityState state, Turn.DeliverMessage turn) {
    return TurnEvaluator.evaluate(RECEIVER, CALLING_TYPE, state, turn, 1, DC, TurnLimits.DEFAULTS);
  }

  @Test
  void anotherOriginsMessageKeepsAMarkerOfItsOwn() {
    int origin = DC + 1;
    List<Operation> operations = written(TurnEvaluator.evaluate(RECEIVER, RECEIVER_TYPE,
        EntityState.ABSENT, new Turn.DeliverMessage(origin, 100, 0, SENDER, "hear",
            Json.parse("{\"v\": 3}")), 1, DC, TurnLimits.DEFAULTS));
    assertEquals(new Operation.Assign(Messages.deliveredMarkerKey(origin),
        Messages.markerValue(100, 0, Messages.DELIVERED)), operations.get(0));
    EntityState after = EntityState.ABSENT.apply(operations, 5, DC);
    // This DC's own message at an earlier timestamp is not covered by the other origin's marker.
    assertEquals(2, written(deliver(after, 50, 0, "hear", "{\"v\": 3}")).size());
  }

  @Test
  void aDeliveryWithSyncCallsFailsRatherThanConsumesAndRefusesARepeat() {
    Turn.DeliverMessage message = new Turn.DeliverMessage(100, 0, SENDER, "hear",
        Json.parse("{\"v\": 3}"));
    List<Operation> operations = written(deliverCalling(EntityState.ABSENT, message));
    assertEquals(Messages.DELIVERED, Messages.outcome(((Operation.Assign) operations.get(0))
        .value()));
    EntityState after = EntityState.ABSENT.apply(operations, 5, DC);
    // Delivered before: its calls must not run again, so the transaction is refused whole.
    TurnEvaluator.Decision.Reject again = assertInstanceOf(TurnEvaluator.Decision.Reject.class,
        deliverCalling(after, message));
    assertEquals(Messages.ALREADY_DELIVERED, again.error().reason());
    // A false precondition fails the turn (and its transaction): it is not consumed here.
    TurnEvaluator.Decision.Reject failed = assertInstanceOf(TurnEvaluator.Decision.Reject.class,
        deliverCalling(EntityState.ABSENT, new Turn.DeliverMessage(101, 0, SENDER, "hear",
            Json.parse("{\"v\": 0}"))));
    assertEquals("precondition_failed", failed.error().code().wireName());
    // The shell then consumes it with a turn of its own: the marker alone, with that outcome.
    List<Operation> consumed = written(deliverCalling(EntityState.ABSENT,
        new Turn.DeliverMessage(101, 0, SENDER, "hear", Json.parse("{\"v\": 0}"))
            .consumed("precondition_failed")));
    assertEquals(List.of(new Operation.Assign(Messages.deliveredMarkerKey(DC),
        Messages.markerValue(101, 0, "precondition_failed"))), consumed);
    // A consumed message already covered writes nothing.
    assertEquals(List.of(), written(deliverCalling(after, message.consumed("too_large"))));
  }
}
