package dev.troupe.txn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.troupe.model.Json;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.txn.LockTable.LockSet;
import dev.troupe.txn.LockTable.Mode;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The persisted form of turns, and the locks each admission policy derives from them. */
class TurnCodecAndAccessTest {
  private static CompiledType type(String admission) {
    return CompiledType.compile(SpecParser.parse("T", ("""
        {"admission": "%s", "keys": {"a": {"kind": "counter"}, "b": {"kind": "register"},
          "c": {"kind": "set"}},
         "actions": {"move": {"params": {"n": "int"}, "pre": ["a >= n"], "effect": {"b": "n"}},
                     "peek": {"pre": ["size(state) > 0"]}}}
        """.formatted(admission)).getBytes(StandardCharsets.UTF_8), false));
  }

  @Test
  void turnsRoundTrip() {
    List<Turn> turns = List.of(
        new Turn.AssignKeys(Map.of("b", Json.parse("{\"x\": [1, 2]}"))),
        new Turn.DeleteKey("b"),
        new Turn.IncrementKey("a", -7),
        new Turn.AddElement("c", Json.parse("\"e\"")),
        new Turn.RemoveElement("c", Json.parse("3")),
        new Turn.DeleteEntity(),
        new Turn.InvokeAction("move", Json.parse("{\"n\": 2}")));
    assertEquals(turns, TurnCodec.decode(TurnCodec.encode(turns)));
    byte[] bytes = TurnCodec.encode(turns);
    bytes[1] = 9;
    assertThrows(IllegalArgumentException.class, () -> TurnCodec.decode(bytes));
  }

  @Test
  void keyLevelLocksFollowWhatActionsNameAndSerialLocksTheEntity() {
    CompiledType keys = type("keys");
    assertEquals(new LockSet(null, Map.of("a", Mode.READ, "b", Mode.WRITE)),
        AccessSets.forTurn(keys, new Turn.InvokeAction("move", Json.parse("{\"n\": 1}"))));
    assertEquals(new LockSet(Mode.READ, Map.of()),
        AccessSets.forTurn(keys, new Turn.InvokeAction("peek", Json.parse("{}"))),
        "naming state reads every key");
    assertEquals(new LockSet(Mode.WRITE, Map.of("a", Mode.WRITE)),
        AccessSets.forTransaction(keys, List.of(new Turn.IncrementKey("a", 1),
            new Turn.DeleteEntity()), false));
    assertEquals(new LockSet(Mode.READ, Map.of()), AccessSets.forTransaction(keys, List.of(), true));
    CompiledType serial = type("serial");
    assertEquals(LockSet.wholeEntity(Mode.WRITE),
        AccessSets.forTurn(serial, new Turn.IncrementKey("a", 1)));
    assertEquals(LockSet.wholeEntity(Mode.READ),
        AccessSets.forTurn(serial, new Turn.InvokeAction("peek", Json.parse("{}"))),
        "an action without effects only reads");
  }
}
