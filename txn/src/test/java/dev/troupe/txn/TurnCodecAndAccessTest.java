package dev.troupe.txn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.value.Tag;
import dev.troupe.txn.entity.AccessSets;
import dev.troupe.txn.entity.LockTable.LockSet;
import dev.troupe.txn.entity.LockTable.Mode;
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
        new Turn.DiscardHiddenValues(),
        new Turn.InvokeAction("move", Json.parse("{\"n\": 2}")),
        // A delivery of this DC's message, of another origin's, and a consumed one.
        new Turn.DeliverMessage(300, 1, new dev.troupe.model.EntityId("S", "s"), "hear",
            Json.parse("{\"v\": 1}")),
        new Turn.DeliverMessage(4, 300, 2, new dev.troupe.model.EntityId("S", "s"), "hear",
            Json.parse("{\"v\": 1}")),
        new Turn.DeliverMessage(4, 300, 2, new dev.troupe.model.EntityId("S", "s"), "hear",
            Json.parse("{\"v\": 1}"), "precondition_failed"));
    assertEquals(turns, TurnCodec.decode(TurnCodec.encode(turns)));
    byte[] bytes = TurnCodec.encode(turns);
    bytes[1] = 9;
    assertThrows(IllegalArgumentException.class, () -> TurnCodec.decode(bytes));
  }

  @Test
  void discardHiddenValuesDeletesExactlyWhatTheTypeDoesNotShow() {
    CompiledType type = type("keys");
    EntityId entity = new EntityId("T", "t");
    // a holds a register where a counter is declared, d is not declared, b and c are shown.
    EntityState state = EntityState.ABSENT.apply(List.of(
        new Operation.Assign("a", Json.parse("1")), new Operation.Assign("b", Json.parse("2")),
        new Operation.AddElement("c", Json.parse("3"), new Tag(0, 1, 0)),
        new Operation.Assign("d", Json.parse("4"))), 1, 0);
    TurnEvaluator.Decision decision = TurnEvaluator.evaluate(entity, type, state,
        new Turn.DiscardHiddenValues(), 2, 0, TurnLimits.DEFAULTS);
    assertEquals(new TurnEvaluator.Decision.Write(List.of(new Operation.DeleteKey("a"),
        new Operation.DeleteKey("d"))), decision);
    // Nothing to discard (or no entity): a write of nothing, never a refusal.
    EntityState clean = state.apply(List.of(new Operation.DeleteKey("a"),
        new Operation.DeleteKey("d")), 2, 0);
    assertEquals(new TurnEvaluator.Decision.Write(List.of()), TurnEvaluator.evaluate(entity, type,
        clean, new Turn.DiscardHiddenValues(), 3, 0, TurnLimits.DEFAULTS));
    assertEquals(new TurnEvaluator.Decision.Write(List.of()), TurnEvaluator.evaluate(entity, type,
        EntityState.ABSENT, new Turn.DiscardHiddenValues(), 3, 0, TurnLimits.DEFAULTS));
    assertEquals(LockSet.wholeEntity(Mode.WRITE),
        AccessSets.forTransaction(type, List.of(new Turn.DiscardHiddenValues()), false));
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

  @Test
  void knownLocksAreTakenOnlyForTheVeryInputsTheyWereWorkedOutFrom() {
    CompiledType keys = type("keys");
    List<Turn> turns = List.of(new Turn.InvokeAction("move", Json.parse("{\"n\": 1}")));
    AccessSets.KnownLocks known = AccessSets.known(keys, turns, false);
    assertEquals(AccessSets.forTransaction(keys, turns, false), known.locks());
    assertEquals(known.locks(), AccessSets.forPart(keys, turns, false, List.of(), known));
    // Marked locks (not what the turns need) show which were taken: the carried ones only for the
    // same type and turns by identity; an equal list, another compilation of the same type or
    // another readsState is worked out again.
    LockSet marked = LockSet.wholeEntity(Mode.WRITE);
    AccessSets.KnownLocks carried = new AccessSets.KnownLocks(keys, turns, false, marked);
    assertSame(marked, AccessSets.forPart(keys, turns, false, List.of(), carried));
    LockSet worked = new LockSet(null, Map.of("a", Mode.READ, "b", Mode.WRITE));
    assertEquals(worked, AccessSets.forPart(keys, List.copyOf(new java.util.ArrayList<>(turns)),
        false, List.of(), carried));
    assertEquals(worked, AccessSets.forPart(type("keys"), turns, false, List.of(), carried));
    assertEquals(new LockSet(Mode.READ, Map.of("a", Mode.READ, "b", Mode.WRITE)),
        AccessSets.forPart(keys, turns, true, List.of(), carried));
    assertEquals(worked, AccessSets.forPart(keys, turns, false, List.of(), null));
    // A union with nothing is the set itself.
    assertSame(worked, worked.merge(new LockSet(null, Map.of())));
    assertSame(worked, new LockSet(null, Map.of()).merge(worked));
  }
}
