package dev.troupe.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.Operation.AddElement;
import dev.troupe.model.Operation.Assign;
import dev.troupe.model.Operation.Increment;
import dev.troupe.model.Operation.RemoveElement;
import dev.troupe.model.spec.ActionOutcome;
import dev.troupe.model.spec.ActionOutcome.Applied;
import dev.troupe.model.spec.ActionOutcome.PreconditionFailed;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.spec.SyncInvocation;
import dev.troupe.model.spec.TypeSpec;
import dev.troupe.model.value.CounterValue;
import dev.troupe.model.value.KeyKind;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.model.value.SetValue;
import dev.troupe.model.value.Tag;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class CompiledTypeTest {
  private static final int DC = 3;

  private static final String ACCOUNT =
      """
      {"type": "Account",
       "keys": {"balance": {"kind": "register", "default": 0},
                "status": {"kind": "register", "default": "new"},
                "visits": {"kind": "counter"},
                "tags": {"kind": "set"}},
       "actions": {
         "open": {"params": {"initial": "int"}, "pre": ["status == 'new'", "initial >= 0"],
                  "effect": {"status": "'open'", "balance": "initial"}},
         "withdraw": {"params": {"amount": "int"},
                      "pre": ["status == 'open'", "amount > 0", "balance - amount >= 0"],
                      "effect": {"balance": "balance - amount"}},
         "deposit": {"params": {"amount": "int"}, "pre": ["status == 'open'", "amount > 0"],
                     "effect": {"balance": "balance + amount"}},
         "visit": {"effect": {"visits": "visits + 1"}},
         "setVisits": {"params": {"to": "int"}, "effect": {"visits": "to"}},
         "tag": {"params": {"tag": "string"}, "effect": {"tags": "tags + [tag]"}},
         "untag": {"params": {"tag": "string"}, "effect": {"tags": "tags.filter(t, t != tag)"}},
         "retag": {"params": {"all": "list"}, "effect": {"tags": "all"}}}}
      """;

  private static final CompiledType ACCOUNT_TYPE = compile("Account", ACCOUNT);

  private long nextTransaction = 100;

  private static CompiledType compile(String name, String json) {
    return CompiledType.compile(parse(name, json));
  }

  private static TypeSpec parse(String name, String json) {
    return SpecParser.parse(name, json.getBytes(StandardCharsets.UTF_8), false);
  }

  private ActionOutcome invoke(CompiledType type, EntityState state, String action, String params) {
    return type.invoke(action, Json.parse(params), state, nextTransaction++, DC);
  }

  /** Invokes an action that must apply, and applies its operations as the next record. */
  private EntityState run(CompiledType type, EntityState state, String action, String params) {
    Applied applied = assertInstanceOf(Applied.class, invoke(type, state, action, params));
    return state.apply(applied.operations(), state.version() + 1, DC);
  }

  private static JsonNode json(String text) {
    return Json.parse(text);
  }

  private static TroupeException invalid(Runnable call) {
    TroupeException error = assertThrows(TroupeException.class, call::run);
    assertEquals(ErrorCode.INVALID_REQUEST, error.code(), error.getMessage());
    return error;
  }

  // ---- the Account example ----

  @Test
  void anAbsentAccountRendersItsDefaults() {
    assertEquals(
        json("{\"balance\":0,\"status\":\"new\",\"visits\":0,\"tags\":[]}"),
        ACCOUNT_TYPE.render(EntityState.ABSENT));
  }

  @Test
  void openWithdrawDeposit() {
    ActionOutcome opening = invoke(ACCOUNT_TYPE, EntityState.ABSENT, "open", "{\"initial\": 100}");
    assertEquals(
        new Applied(
            List.of(new Assign("status", json("\"open\"")), new Assign("balance", json("100")))),
        opening);

    EntityState state = run(ACCOUNT_TYPE, EntityState.ABSENT, "open", "{\"initial\": 100}");
    assertEquals(
        json("{\"balance\":100,\"status\":\"open\",\"visits\":0,\"tags\":[]}"),
        ACCOUNT_TYPE.render(state));

    assertEquals(
        new Applied(List.of(new Assign("balance", json("70")))),
        invoke(ACCOUNT_TYPE, state, "withdraw", "{\"amount\": 30}"));
    state = run(ACCOUNT_TYPE, state, "withdraw", "{\"amount\": 30}");
    state = run(ACCOUNT_TYPE, state, "deposit", "{\"amount\": 5}");
    assertEquals(json("75"), ACCOUNT_TYPE.renderValue("balance", state));
    assertEquals(3, state.version());
    assertTrue(state.exists());
  }

  @Test
  void failingPreconditionIsNamed() {
    PreconditionFailed notOpen =
        assertInstanceOf(
            PreconditionFailed.class,
            invoke(ACCOUNT_TYPE, EntityState.ABSENT, "withdraw", "{\"amount\": 1}"));
    assertEquals("status == 'open'", notOpen.precondition());
    assertTrue(notOpen.message().contains("Account.withdraw"), notOpen.message());
    assertTrue(notOpen.message().contains("status == 'open'"), notOpen.message());

    EntityState open = run(ACCOUNT_TYPE, EntityState.ABSENT, "open", "{\"initial\": 10}");
    PreconditionFailed overdraw =
        assertInstanceOf(
            PreconditionFailed.class, invoke(ACCOUNT_TYPE, open, "withdraw", "{\"amount\": 11}"));
    assertEquals("balance - amount >= 0", overdraw.precondition());
    PreconditionFailed zero =
        assertInstanceOf(
            PreconditionFailed.class, invoke(ACCOUNT_TYPE, open, "withdraw", "{\"amount\": 0}"));
    assertEquals("amount > 0", zero.precondition());
    PreconditionFailed reopen =
        assertInstanceOf(
            PreconditionFailed.class, invoke(ACCOUNT_TYPE, open, "open", "{\"initial\": 1}"));
    assertEquals("status == 'new'", reopen.precondition());
    // Withdrawing everything is allowed: the boundary of the last precondition.
    assertEquals(
        new Applied(List.of(new Assign("balance", json("0")))),
        invoke(ACCOUNT_TYPE, open, "withdraw", "{\"amount\": 10}"));
  }

  @Test
  void preconditionsAreCheckedInOrder() {
    // Both "status == 'new'" (false after opening) and "initial >= 0" fail: the first is reported.
    EntityState open = run(ACCOUNT_TYPE, EntityState.ABSENT, "open", "{\"initial\": 10}");
    PreconditionFailed failed =
        assertInstanceOf(
            PreconditionFailed.class, invoke(ACCOUNT_TYPE, open, "open", "{\"initial\": -1}"));
    assertEquals("status == 'new'", failed.precondition());
    PreconditionFailed second =
        assertInstanceOf(
            PreconditionFailed.class,
            invoke(ACCOUNT_TYPE, EntityState.ABSENT, "open", "{\"initial\": -1}"));
    assertEquals("initial >= 0", second.precondition());
  }

  @Test
  void invocationIsDeterministicAndDoesNotChangeTheState() {
    EntityState open = run(ACCOUNT_TYPE, EntityState.ABSENT, "open", "{\"initial\": 10}");
    JsonNode before = ACCOUNT_TYPE.render(open);
    ActionOutcome first = ACCOUNT_TYPE.invoke("tag", json("{\"tag\": \"x\"}"), open, 7, DC);
    ActionOutcome second = ACCOUNT_TYPE.invoke("tag", json("{\"tag\": \"x\"}"), open, 7, DC);
    assertEquals(first, second);
    assertEquals(before, ACCOUNT_TYPE.render(open));
  }

  // ---- counters ----

  @Test
  void counterEffectsBecomeIncrements() {
    EntityState state = EntityState.ABSENT;
    assertEquals(
        new Applied(List.of(new Increment("visits", 1))),
        invoke(ACCOUNT_TYPE, state, "visit", "{}"));
    state = run(ACCOUNT_TYPE, state, "visit", "{}");
    state = run(ACCOUNT_TYPE, state, "visit", "{}");
    assertEquals(json("2"), ACCOUNT_TYPE.renderValue("visits", state));

    assertEquals(
        new Applied(List.of(new Increment("visits", -2))),
        invoke(ACCOUNT_TYPE, state, "setVisits", "{\"to\": 0}"));
    assertEquals(
        new Applied(List.of()),
        invoke(ACCOUNT_TYPE, state, "setVisits", "{\"to\": 2}"),
        "no increment when the value does not change");
    state = run(ACCOUNT_TYPE, state, "setVisits", "{\"to\": -40}");
    assertEquals(json("-40"), ACCOUNT_TYPE.renderValue("visits", state));
  }

  @Test
  void aCounterDefaultIsAnOffset() {
    CompiledType type =
        compile(
            "Stock",
            """
            {"keys": {"units": {"kind": "counter", "default": 10}},
             "actions": {"take": {"pre": ["units > 0"], "effect": {"units": "units - 1"}},
                         "set": {"params": {"to": "int"}, "effect": {"units": "to"}}}}
            """);
    assertEquals(json("{\"units\":10}"), type.render(EntityState.ABSENT));
    assertEquals(
        new Applied(List.of(new Increment("units", -1))),
        invoke(type, EntityState.ABSENT, "take", "{}"));
    EntityState state = run(type, EntityState.ABSENT, "take", "{}");
    assertEquals(json("9"), type.renderValue("units", state));
    // Two concurrent takes from the same state both apply as increments: 10 - 2.
    ActionOutcome concurrent = invoke(type, EntityState.ABSENT, "take", "{}");
    state = state.apply(((Applied) concurrent).operations(), state.version() + 1, DC + 1);
    assertEquals(json("8"), type.renderValue("units", state));
    state = run(type, state, "set", "{\"to\": 0}");
    assertEquals(json("0"), type.renderValue("units", state));
    PreconditionFailed empty =
        assertInstanceOf(PreconditionFailed.class, invoke(type, state, "take", "{}"));
    assertEquals("units > 0", empty.precondition());
  }

  @Test
  void counterOverflowIsRejected() {
    CompiledType type =
        compile(
            "Meter",
            """
            {"keys": {"reading": {"kind": "counter", "default": -10}},
             "actions": {"set": {"params": {"to": "int"}, "effect": {"reading": "to"}},
                         "bump": {"params": {"by": "int"}, "effect": {"reading": "reading + by"}}}}
            """);
    // The stored total would be to - default = MAX + 10.
    TroupeException error =
        invalid(() -> invoke(type, EntityState.ABSENT, "set", "{\"to\": 9223372036854775807}"));
    assertTrue(
        error.getMessage().startsWith("actions.set.effect.reading `to`: "), error.getMessage());
    assertTrue(error.getMessage().contains("overflows 64 bits"), error.getMessage());
    // Overflow inside the expression is reported the same way.
    TroupeException inExpression =
        invalid(
            () ->
                invoke(type, EntityState.ABSENT, "bump", "{\"by\": -9223372036854775807}"));
    assertTrue(
        inExpression.getMessage().startsWith("actions.bump.effect.reading `reading + by`: "),
        inExpression.getMessage());
  }

  // ---- sets ----

  @Test
  void setEffectsBecomeAddsAndRemoves() {
    long transaction = nextTransaction;
    assertEquals(
        new Applied(List.of(new AddElement("tags", json("\"gold\""), new Tag(DC, transaction, 0)))),
        invoke(ACCOUNT_TYPE, EntityState.ABSENT, "tag", "{\"tag\": \"gold\"}"));

    EntityState state = run(ACCOUNT_TYPE, EntityState.ABSENT, "tag", "{\"tag\": \"gold\"}");
    assertEquals(
        new Applied(List.of()),
        invoke(ACCOUNT_TYPE, state, "tag", "{\"tag\": \"gold\"}"),
        "adding a present element changes nothing");
    state = run(ACCOUNT_TYPE, state, "tag", "{\"tag\": \"silver\"}");
    assertEquals(json("[\"gold\",\"silver\"]"), ACCOUNT_TYPE.renderValue("tags", state));

    Set<Tag> goldTags = ((SetValue) state.get("tags")).tagsOf(json("\"gold\""));
    assertEquals(1, goldTags.size());
    assertEquals(
        new Applied(List.of(new RemoveElement("tags", json("\"gold\""), goldTags))),
        invoke(ACCOUNT_TYPE, state, "untag", "{\"tag\": \"gold\"}"));
    state = run(ACCOUNT_TYPE, state, "untag", "{\"tag\": \"gold\"}");
    assertEquals(json("[\"silver\"]"), ACCOUNT_TYPE.renderValue("tags", state));
  }

  @Test
  void replacingASetEmitsUniquelyTaggedAddsAndRemoves() {
    EntityState state = run(ACCOUNT_TYPE, EntityState.ABSENT, "retag", "{\"all\": [\"a\", \"b\"]}");
    long transaction = nextTransaction;
    ActionOutcome outcome =
        invoke(ACCOUNT_TYPE, state, "retag", "{\"all\": [\"d\", \"b\", \"c\", \"d\"]}");
    Set<Tag> aTags = ((SetValue) state.get("tags")).tagsOf(json("\"a\""));
    assertEquals(
        new Applied(
            List.of(
                new AddElement("tags", json("\"d\""), new Tag(DC, transaction, 0)),
                new AddElement("tags", json("\"c\""), new Tag(DC, transaction, 1)),
                new RemoveElement("tags", json("\"a\""), aTags))),
        outcome);
    state = state.apply(((Applied) outcome).operations(), state.version() + 1, DC);
    assertEquals(json("[\"b\",\"c\",\"d\"]"), ACCOUNT_TYPE.renderValue("tags", state));
  }

  @Test
  void setElementsMayBeAnyJson() {
    EntityState state =
        run(
            ACCOUNT_TYPE,
            EntityState.ABSENT,
            "retag",
            "{\"all\": [1, {\"k\": [true, null]}, 1, 2.5]}");
    assertEquals(json("[1,2.5,{\"k\":[true,null]}]"), ACCOUNT_TYPE.renderValue("tags", state));
  }

  @Test
  void aSetDefaultIsStoredByTheFirstEffect() {
    CompiledType type =
        compile(
            "Cart",
            """
            {"keys": {"items": {"kind": "set", "default": ["gift-wrap"]}},
             "actions": {"add": {"params": {"item": "string"}, "effect": {"items": "items + [item]"}},
                         "drop": {"params": {"item": "string"},
                                  "effect": {"items": "items.filter(i, i != item)"}}}}
            """);
    assertEquals(json("{\"items\":[\"gift-wrap\"]}"), type.render(EntityState.ABSENT));
    EntityState added = run(type, EntityState.ABSENT, "add", "{\"item\": \"book\"}");
    assertEquals(json("[\"book\",\"gift-wrap\"]"), type.renderValue("items", added));
    // Emptying a set that shows its default must store an empty set: one addition, removed.
    long transaction = nextTransaction;
    Tag tag = new Tag(DC, transaction, 0);
    assertEquals(
        new Applied(
            List.of(
                new AddElement("items", json("\"gift-wrap\""), tag),
                new RemoveElement("items", json("\"gift-wrap\""), Set.of(tag)))),
        invoke(type, EntityState.ABSENT, "drop", "{\"item\": \"gift-wrap\"}"));
    EntityState dropped = run(type, EntityState.ABSENT, "drop", "{\"item\": \"gift-wrap\"}");
    assertEquals(json("[]"), type.renderValue("items", dropped), "an emptied set stays empty");
    assertTrue(dropped.exists());
  }

  // ---- arguments ----

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '^',
      textBlock =
          """
          string for int      | {"amount": "5"}            | parameter 'amount' of Account.deposit must be an int
          fraction for int    | {"amount": 5.5}            | parameter 'amount' of Account.deposit must be an int
          5.0 for int         | {"amount": 5.0}            | parameter 'amount' of Account.deposit must be an int
          null for int        | {"amount": null}           | parameter 'amount' of Account.deposit must be an int
          missing             | {}                         | missing parameter 'amount' (int) of Account.deposit
          extra               | {"amount": 1, "memo": "x"} | Account.deposit has no parameter 'memo'
          not an object       | [1]                        | the arguments of Account.deposit must be a JSON object
          """)
  void badArgumentsAreRejected(String problem, String params, String expected) {
    EntityState open = run(ACCOUNT_TYPE, EntityState.ABSENT, "open", "{\"initial\": 1}");
    TroupeException error = invalid(() -> invoke(ACCOUNT_TYPE, open, "deposit", params));
    assertTrue(error.getMessage().contains(expected), problem + ": " + error.getMessage());
  }

  @Test
  void integersBeyond64BitsAreNotInts() {
    // Json refuses such numbers in text; a caller building trees could still pass one.
    ObjectNode params = Json.NODES.objectNode();
    params.set("amount", Json.NODES.numberNode(java.math.BigInteger.ONE.shiftLeft(63)));
    EntityState open = run(ACCOUNT_TYPE, EntityState.ABSENT, "open", "{\"initial\": 1}");
    TroupeException error =
        invalid(() -> ACCOUNT_TYPE.invoke("deposit", params, open, 1, DC));
    assertTrue(
        error.getMessage().contains("parameter 'amount' of Account.deposit must be an int"),
        error.getMessage());
  }

  @Test
  void argumentsOfEveryType() {
    CompiledType type =
        compile(
            "Box",
            """
            {"keys": {"value": {"kind": "register"}},
             "actions": {"put": {"params": {"i": "int", "d": "double", "s": "string", "b": "bool",
                                            "l": "list", "m": "map", "a": "any"},
                                 "pre": ["i + 1 > i", "d * 2.0 == d + d", "size(s) >= 0", "b || !b",
                                         "size(l) >= 0", "size(m) >= 0"],
                                 "effect": {"value": "[i, d, s, b, l, m, a]"}}}}
            """);
    String params =
        "{\"i\": 7, \"d\": 2, \"s\": \"x\", \"b\": false, \"l\": [1, \"y\"],"
            + " \"m\": {\"k\": null}, \"a\": null}";
    assertEquals(
        new Applied(
            List.of(
                new Assign(
                    "value", json("[7, 2.0, \"x\", false, [1, \"y\"], {\"k\": null}, null]")))),
        invoke(type, EntityState.ABSENT, "put", params));
    TroupeException notFinite =
        invalid(
            () ->
                invoke(
                    type,
                    EntityState.ABSENT,
                    "put",
                    params.replace("\"d\": 2", "\"d\": 1e400")));
    // Refused when the arguments are parsed: JSON has no infinity.
    assertTrue(notFinite.getMessage().contains("out of range"), notFinite.getMessage());
    TroupeException notMap =
        invalid(
            () ->
                invoke(
                    type,
                    EntityState.ABSENT,
                    "put",
                    params.replace("\"m\": {\"k\": null}", "\"m\": []")));
    assertTrue(notMap.getMessage().contains("parameter 'm' of Box.put must be a map"));
  }

  @Test
  void unknownActionIsItsOwnError() {
    TroupeException error =
        assertThrows(
            TroupeException.class, () -> invoke(ACCOUNT_TYPE, EntityState.ABSENT, "close", "{}"));
    assertEquals(ErrorCode.UNKNOWN_ACTION, error.code());
    assertEquals("type Account has no action 'close'", error.getMessage());
    assertEquals(
        ErrorCode.UNKNOWN_ACTION,
        assertThrows(
                TroupeException.class,
                () -> ACCOUNT_TYPE.synchronizedCalls("close", json("{}")))
            .code());
  }

  // ---- compilation ----

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '^',
      textBlock =
          """
          undeclared variable     | "pre": ["amont > 0"]             | actions.a.pre[0]: column 1: undeclared reference to 'amont'
          syntax error            | "pre": ["amount >"]              | actions.a.pre[0]: column
          second precondition     | "pre": ["true", "amount +"]      | actions.a.pre[1]:
          ill-typed operands      | "pre": ["amount + 'x' > 0"]      | actions.a.pre[0]: column 8: found no matching overload for '_+_'
          non-bool precondition   | "pre": ["amount + 1"]            | actions.a.pre[0]: a precondition must be a bool, but `amount + 1` is of type int
          string for counter      | "effect": {"hits": "'many'"}     | actions.a.effect.hits: an effect on a counter must be an int
          int for set             | "effect": {"labels": "amount"}   | actions.a.effect.labels: an effect on a set must be a list
          bad register effect     | "effect": {"note": "note +"}     | actions.a.effect.note: column
          state in sync argument  | "sync": [{"entity": "A/x", "action": "b", "args": {"n": "note"}}] | actions.a.sync[0].args.n: column 1: undeclared reference to 'note'
          """)
  void celCompileErrorsRejectTheSpec(String problem, String action, String expected) {
    TypeSpec spec =
        parse(
            "Thing",
            "{\"keys\": {\"note\": {\"kind\": \"register\"}, \"hits\": {\"kind\": \"counter\"},"
                + " \"labels\": {\"kind\": \"set\"}},"
                + " \"actions\": {\"a\": {\"params\": {\"amount\": \"int\"}, "
                + action
                + "}}}");
    TroupeException error = invalid(() -> CompiledType.compile(spec));
    assertTrue(error.getMessage().startsWith(expected), problem + ": " + error.getMessage());
  }

  // ---- expressions ----

  @Test
  void stateAndParamsMapsAreUsable() {
    CompiledType type =
        compile(
            "Account",
            """
            {"keys": {"balance": {"kind": "register", "default": 5}, "visits": {"kind": "counter"},
                      "tags": {"kind": "set", "default": ["a"]}},
             "actions": {"check": {"params": {"amount": "int", "note": "any"},
                                   "pre": ["state.balance >= params.amount",
                                           "has(state.visits) && !has(state.missing)",
                                           "params.size() == 2 && state.size() == 3",
                                           "state.tags == ['a'] && 'a' in state.tags",
                                           "params.note == null"],
                                   "effect": {"balance": "state['balance'] - params['amount']"}}}}
            """);
    assertEquals(
        new Applied(List.of(new Assign("balance", json("2")))),
        invoke(type, EntityState.ABSENT, "check", "{\"amount\": 3, \"note\": null}"));
    PreconditionFailed tooMuch =
        assertInstanceOf(
            PreconditionFailed.class,
            invoke(type, EntityState.ABSENT, "check", "{\"amount\": 6, \"note\": null}"));
    assertEquals("state.balance >= params.amount", tooMuch.precondition());
    PreconditionFailed noteSet =
        assertInstanceOf(
            PreconditionFailed.class,
            invoke(type, EntityState.ABSENT, "check", "{\"amount\": 1, \"note\": \"x\"}"));
    assertEquals("params.note == null", noteSet.precondition());
  }

  @Test
  void resultsRoundTripToJson() {
    CompiledType type =
        compile(
            "Doc",
            """
            {"keys": {"text": {"kind": "register", "default": "hello"}, "list": {"kind": "register"},
                      "map": {"kind": "register"}, "bytes": {"kind": "register"},
                      "unsigned": {"kind": "register"}, "data": {"kind": "register"},
                      "when": {"kind": "register"}, "nothing": {"kind": "register", "default": 1}},
             "actions": {"build": {"params": {"suffix": "string", "value": "any"},
                                   "effect": {"text": "text + ', ' + suffix",
                                              "list": "[1, 'a', true, null, 2.5, [3]]",
                                              "map": "{'a': 1, 'b': [true], 'c': {'d': 'e'}, 4: 'int key'}",
                                              "bytes": "b'hi'",
                                              "unsigned": "5u",
                                              "data": "value",
                                              "when": "timestamp('2024-05-01T12:00:00Z')",
                                              "nothing": "null"}}}}
            """);
    String value =
        "{\"nested\": [1, {\"deep\": null}, \"x\", 1.5, false], \"big\": 9223372036854775807}";
    Applied applied =
        assertInstanceOf(
            Applied.class,
            invoke(
                type,
                EntityState.ABSENT,
                "build",
                "{\"suffix\": \"world\", \"value\": " + value + "}"));
    EntityState state = EntityState.ABSENT.apply(applied.operations(), 1, DC);
    assertEquals(
        json(
            "{\"text\": \"hello, world\", \"list\": [1, \"a\", true, null, 2.5, [3]],"
                + " \"map\": {\"a\": 1, \"b\": [true], \"c\": {\"d\": \"e\"}, \"4\": \"int key\"},"
                + " \"bytes\": \"aGk=\", \"unsigned\": 5,"
                + " \"data\": "
                + value
                + ", \"when\": \"2024-05-01T12:00:00Z\", \"nothing\": null}"),
        type.render(state));
    // Stored values read back into expressions unchanged: assigning a key to itself is a no-op.
    CompiledType copy =
        compile(
            "Doc",
            """
            {"keys": {"data": {"kind": "register"}},
             "actions": {"same": {"pre": ["data == data"], "effect": {"data": "data"}}}}
            """);
    assertEquals(
        new Applied(List.of(new Assign("data", json(value)))),
        invoke(copy, state, "same", "{}"));
  }

  @Test
  void effectsSeeTheStateBeforeTheAction() {
    CompiledType type =
        compile(
            "Pair",
            """
            {"keys": {"left": {"kind": "register", "default": "L"},
                      "right": {"kind": "register", "default": "R"}},
             "actions": {"swap": {"effect": {"left": "right", "right": "left"}}}}
            """);
    assertEquals(
        new Applied(List.of(new Assign("left", json("\"R\"")), new Assign("right", json("\"L\"")))),
        invoke(type, EntityState.ABSENT, "swap", "{}"));
  }

  @Test
  void preconditionsThatCannotBeEvaluatedFailTheAction() {
    CompiledType type =
        compile(
            "Calc",
            """
            {"keys": {"value": {"kind": "register", "default": 10}},
             "actions": {"divide": {"params": {"by": "int"}, "pre": ["value / by > 0"],
                                    "effect": {"value": "value / by"}},
                         "lookup": {"params": {"key": "string"}, "pre": ["state[key] != null"]},
                         "truthy": {"pre": ["value"]},
                         "nested": {"params": {"items": "list"},
                                  "pre": ["items.all(i, items.all(j, items.all(k, true)))"]}}}
            """);
    PreconditionFailed divisionByZero =
        assertInstanceOf(
            PreconditionFailed.class, invoke(type, EntityState.ABSENT, "divide", "{\"by\": 0}"));
    assertEquals("value / by > 0", divisionByZero.precondition());
    assertTrue(
        divisionByZero.message().contains("could not be evaluated"), divisionByZero.message());
    assertTrue(divisionByZero.message().contains("by zero"), divisionByZero.message());

    PreconditionFailed noSuchKey =
        assertInstanceOf(
            PreconditionFailed.class,
            invoke(type, EntityState.ABSENT, "lookup", "{\"key\": \"nope\"}"));
    assertTrue(noSuchKey.message().contains("nope"), noSuchKey.message());
    assertInstanceOf(
        Applied.class, invoke(type, EntityState.ABSENT, "lookup", "{\"key\": \"value\"}"));

    PreconditionFailed notBool =
        assertInstanceOf(
            PreconditionFailed.class, invoke(type, EntityState.ABSENT, "truthy", "{}"));
    assertTrue(
        notBool.message().contains("does not evaluate to a bool but to an int"), notBool.message());

    String items =
        IntStream.range(0, 60).mapToObj(Integer::toString).collect(Collectors.joining(","));
    PreconditionFailed tooLong =
        assertInstanceOf(
            PreconditionFailed.class,
            invoke(type, EntityState.ABSENT, "nested", "{\"items\": [" + items + "]}"));
    assertTrue(tooLong.message().contains("could not be evaluated"), tooLong.message());
    assertInstanceOf(
        Applied.class, invoke(type, EntityState.ABSENT, "nested", "{\"items\": [1, 2, 3]}"));
  }

  @Test
  void effectsThatCannotBeEvaluatedAreInvalid() {
    EntityState open = run(ACCOUNT_TYPE, EntityState.ABSENT, "open", "{\"initial\": 1}");
    TroupeException error =
        invalid(() -> invoke(ACCOUNT_TYPE, open, "deposit", "{\"amount\": 9223372036854775807}"));
    assertTrue(
        error.getMessage().startsWith("actions.deposit.effect.balance `balance + amount`: "),
        error.getMessage());
    assertTrue(error.getMessage().contains("overflow"), error.getMessage());

    CompiledType type =
        compile(
            "Odd",
            """
            {"keys": {"ratio": {"kind": "register"}, "tags": {"kind": "set"}},
             "actions": {"infinite": {"effect": {"ratio": "1.0 / 0.0"}},
                         "huge": {"effect": {"ratio": "18446744073709551615u"}},
                         "wrong": {"params": {"x": "any"}, "effect": {"tags": "x"}}}}
            """);
    assertTrue(
        invalid(() -> invoke(type, EntityState.ABSENT, "infinite", "{}"))
            .getMessage()
            .contains("not a finite number"));
    assertTrue(
        invalid(() -> invoke(type, EntityState.ABSENT, "huge", "{}"))
            .getMessage()
            .contains("beyond the 64-bit signed range"));
    assertTrue(
        invalid(() -> invoke(type, EntityState.ABSENT, "wrong", "{\"x\": 5}"))
            .getMessage()
            .startsWith(
                "actions.wrong.effect.tags `x`: a set effect must evaluate to a list, got an int"));
  }

  // ---- rendering and kinds ----

  @Test
  void kindsAndSingleKeys() {
    assertEquals(KeyKind.REGISTER, ACCOUNT_TYPE.kindOf("balance"));
    assertEquals(KeyKind.COUNTER, ACCOUNT_TYPE.kindOf("visits"));
    assertEquals(KeyKind.SET, ACCOUNT_TYPE.kindOf("tags"));
    assertNull(ACCOUNT_TYPE.kindOf("owner"));
    assertNull(ACCOUNT_TYPE.renderValue("owner", EntityState.ABSENT));
    assertEquals(json("\"new\""), ACCOUNT_TYPE.renderValue("status", EntityState.ABSENT));
    assertEquals("Account", ACCOUNT_TYPE.name());
    assertEquals(ACCOUNT_TYPE.spec(), parse("Account", ACCOUNT));
  }

  @Test
  void storedValuesOfAnotherKindReadAsAbsent() {
    // Left by an earlier definition in which "visits" was a register and "status" a counter.
    EntityState state =
        EntityState.ABSENT.apply(
            List.of(new Assign("visits", json("\"lots\"")), new Increment("status", 4)), 1, DC);
    assertEquals(json("0"), ACCOUNT_TYPE.renderValue("visits", state));
    assertEquals(json("\"new\""), ACCOUNT_TYPE.renderValue("status", state));
    assertEquals(
        new Applied(List.of(new Increment("visits", 1))),
        invoke(ACCOUNT_TYPE, state, "visit", "{}"));
    EntityState visited = run(ACCOUNT_TYPE, state, "visit", "{}");
    assertEquals(json("1"), ACCOUNT_TYPE.renderValue("visits", visited));
    assertInstanceOf(CounterValue.class, visited.get("visits"));
  }

  @Test
  void renderedValuesAreCopies() {
    EntityState state =
        EntityState.ABSENT.apply(List.of(new Assign("balance", json("{\"eur\": 1}"))), 1, DC);
    ObjectNode rendered = ACCOUNT_TYPE.render(state);
    ((ObjectNode) rendered.get("balance")).put("eur", 1000);
    assertEquals(json("{\"eur\": 1}"), ((RegisterValue) state.get("balance")).value());
  }

  @Test
  void schemalessTypes() {
    CompiledType usertable = CompiledType.schemaless("usertable");
    assertTrue(usertable.isSchemaless());
    assertEquals(KeyKind.REGISTER, usertable.kindOf("field0"));
    assertEquals(json("{}"), usertable.render(EntityState.ABSENT));
    EntityState state =
        EntityState.ABSENT.apply(
            List.of(new Assign("field1", json("\"b\"")), new Assign("field0", json("\"a\""))),
            1,
            DC);
    assertEquals(
        "{\"field0\":\"a\",\"field1\":\"b\"}", Json.write(usertable.render(state)), "key order");
    assertEquals(json("\"a\""), usertable.renderValue("field0", state));
    assertNull(usertable.renderValue("field9", state));
    TroupeException error =
        assertThrows(TroupeException.class, () -> invoke(usertable, state, "anything", "{}"));
    assertEquals(ErrorCode.UNKNOWN_ACTION, error.code());
    assertEquals(usertable.spec(), CompiledType.compile(TypeSpec.schemaless("usertable")).spec());
  }

  // ---- sync ----

  @Test
  void syncCallsAreResolvedFromTheArguments() {
    CompiledType transfer =
        CompiledType.compile(
            SpecParser.parseAll(
                    SpecParserTest.DESIGN_EXAMPLE_YAML.getBytes(StandardCharsets.UTF_8), true)
                .get(1));
    String params = "{\"from\": \"alice\", \"to\": \"bob\", \"amount\": 5}";
    assertEquals(
        List.of(
            new SyncInvocation(
                new EntityId("Account", "alice"), "withdraw", (ObjectNode) json("{\"amount\": 5}")),
            new SyncInvocation(
                new EntityId("Account", "bob"), "deposit", (ObjectNode) json("{\"amount\": 5}"))),
        transfer.synchronizedCalls("book", json(params)));
    assertEquals(
        new Applied(List.of()),
        invoke(transfer, EntityState.ABSENT, "book", params),
        "the action itself has no effects");
    TroupeException badTarget =
        invalid(
            () ->
                transfer.synchronizedCalls(
                    "book", json("{\"from\": \"a/b\", \"to\": \"bob\", \"amount\": 5}")));
    assertTrue(
        badTarget.getMessage().startsWith("actions.book.sync[0].entity: "), badTarget.getMessage());
    TroupeException badArgument =
        invalid(() -> transfer.synchronizedCalls("book", json("{\"from\": \"a\", \"to\": \"b\"}")));
    assertTrue(badArgument.getMessage().contains("missing parameter 'amount'"));
    assertEquals(List.of(), ACCOUNT_TYPE.synchronizedCalls("visit", json("{}")));
  }

  @Test
  void syncArgumentsAreExpressions() {
    CompiledType type =
        compile(
            "Order",
            """
            {"actions": {"place": {"params": {"shop": "int", "items": "list"},
                                   "sync": [{"entity": "Shop/{shop}", "action": "reserve",
                                             "args": {"count": "size(items)", "first": "items[0]",
                                                      "all": "params"}}]}}}
            """);
    List<SyncInvocation> calls =
        type.synchronizedCalls("place", json("{\"shop\": 42, \"items\": [\"x\", \"y\"]}"));
    assertEquals(
        List.of(
            new SyncInvocation(
                new EntityId("Shop", "42"),
                "reserve",
                (ObjectNode)
                    json(
                        "{\"count\": 2, \"first\": \"x\","
                            + " \"all\": {\"shop\": 42, \"items\": [\"x\", \"y\"]}}"))),
        calls);
    TroupeException failing =
        invalid(() -> type.synchronizedCalls("place", json("{\"shop\": 1, \"items\": []}")));
    assertTrue(
        failing.getMessage().startsWith("actions.place.sync[0].args.first `items[0]`: "),
        failing.getMessage());
  }

  @Test
  void compiledTypesAreSafeToShareBetweenThreads() throws InterruptedException {
    EntityState open = run(ACCOUNT_TYPE, EntityState.ABSENT, "open", "{\"initial\": 1000}");
    Map<Integer, ActionOutcome> expected = new java.util.concurrent.ConcurrentHashMap<>();
    for (int amount = 1; amount <= 50; amount++) {
      expected.put(
          amount,
          ACCOUNT_TYPE.invoke("withdraw", json("{\"amount\": " + amount + "}"), open, 1, DC));
    }
    List<Throwable> failures = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
    List<Thread> threads = new java.util.ArrayList<>();
    for (int thread = 0; thread < 4; thread++) {
      threads.add(
          Thread.ofPlatform()
              .start(
                  () -> {
                    try {
                      for (int round = 0; round < 20; round++) {
                        for (int amount = 1; amount <= 50; amount++) {
                          ActionOutcome outcome =
                              ACCOUNT_TYPE.invoke(
                                  "withdraw", json("{\"amount\": " + amount + "}"), open, 1, DC);
                          assertEquals(expected.get(amount), outcome);
                        }
                      }
                    } catch (Throwable failure) {
                      failures.add(failure);
                    }
                  }));
    }
    for (Thread thread : threads) {
      thread.join();
    }
    assertEquals(List.of(), failures);
  }
}
