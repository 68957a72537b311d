package dev.troupe.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.causal.Messages;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.spec.SyncInvocation;
import dev.troupe.model.spec.TypeSpec;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The {@code send} field of an action, and what messages and delivered markers do to a state. */
class MessageSpecTest {
  static final String SENDER =
      """
      {"type": "Sender", "keys": {"sent": {"kind": "counter"}},
       "actions": {
         "notify": {"params": {"to": "string", "n": "int"},
                    "effect": {"sent": "1"},
                    "send": [{"entity": "Receiver/{to}", "action": "hear",
                              "args": {"value": "n * 2"}}]},
         "onlySends": {"params": {"to": "string"},
                       "send": [{"entity": "Receiver/{to}", "action": "hear",
                                 "args": {"value": "1"}}]}}}
      """;

  private static TypeSpec parse(String json) {
    return SpecParser.parse(null, json.getBytes(StandardCharsets.UTF_8), false);
  }

  @Test
  void sendIsParsedCompiledAndResolvedFromTheArguments() {
    TypeSpec spec = parse(SENDER);
    assertEquals(1, spec.actions().get("notify").send().size());
    // The canonical form keeps it (stored definitions round-trip).
    assertEquals(spec, parse(spec.toJson().toString()));
    CompiledType type = CompiledType.compile(spec);
    assertTrue(type.sendsMessages("notify"));
    List<SyncInvocation> messages =
        type.messages("notify", Json.parse("{\"to\": \"r1\", \"n\": 21}"), ValueLimits.DEFAULTS);
    assertEquals(List.of(new SyncInvocation(new EntityId("Receiver", "r1"), "hear",
        (com.fasterxml.jackson.databind.node.ObjectNode) Json.parse("{\"value\": 42}"))),
        messages);
  }

  @Test
  void twoMessagesToOneDestinationAreRefusedAtDeclaration() {
    TroupeException refused = assertThrows(TroupeException.class, () -> parse(
        """
        {"type": "Twice", "actions": {"a": {"params": {"to": "string"},
         "send": [{"entity": "R/{to}", "action": "x"}, {"entity": "R/{to}", "action": "y"}]}}}
        """));
    assertTrue(refused.getMessage().contains("actions.a.send[1].entity"), refused.getMessage());
    TroupeException badTemplate = assertThrows(TroupeException.class, () -> parse(
        """
        {"type": "Bad", "actions": {"a": {"send": [{"entity": "R/{nobody}", "action": "x"}]}}}
        """));
    assertTrue(badTemplate.getMessage().contains("actions.a.send[0].entity"),
        badTemplate.getMessage());
  }

  @Test
  void aMessageChangesNothingAndDoesNotCreateItsSender() {
    EntityState state = EntityState.ABSENT.apply(List.of(new Operation.SendMessage(
        new EntityId("R", "r"), "hear", Json.parse("{}"))), 10, 0);
    assertFalse(state.exists());
    assertTrue(state.values().isEmpty());
  }

  @Test
  void aDeliveredMarkerAloneDoesNotCreateItsReceiverAndSurvivesDeletion() {
    String marker = Messages.deliveredMarkerKey(0);
    EntityState consumed = EntityState.ABSENT.apply(List.of(new Operation.Assign(marker,
        Messages.markerValue(5, 0, "precondition_failed"))), 10, 0);
    assertFalse(consumed.exists());
    assertNotNull(consumed.get(marker));
    EntityState written = consumed.apply(List.of(new Operation.Increment("n", 1)), 11, 0);
    assertTrue(written.exists());
    EntityState deleted = written.apply(List.of(new Operation.DeleteEntity()), 12, 0);
    assertFalse(deleted.exists());
    assertNotNull(deleted.get(marker));
  }

  @Test
  void aMarkerCoversItsMessageAndEarlierOnesOnly() {
    var marker = Messages.markerValue(100, 2, Messages.DELIVERED);
    assertTrue(Messages.covers(marker, 100, 2));
    assertTrue(Messages.covers(marker, 100, 1));
    assertTrue(Messages.covers(marker, 99, 7));
    assertFalse(Messages.covers(marker, 100, 3));
    assertFalse(Messages.covers(marker, 101, 0));
    assertFalse(Messages.covers(null, 1, 0));
    assertEquals(Messages.DELIVERED, Messages.outcome(marker));
  }
}
