package dev.troupe.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.Operation.AddElement;
import dev.troupe.model.Operation.Assign;
import dev.troupe.model.Operation.Increment;
import dev.troupe.model.spec.ActionOutcome.Applied;
import dev.troupe.model.spec.ActionOutcome.PreconditionFailed;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.spec.StateProjection;
import dev.troupe.model.spec.TypeSpec;
import dev.troupe.model.value.KeyKind;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Key families: one declaration standing for many member keys, reached through bindings. */
class KeyFamilyTest {
  private static final String BRANCH = """
      type: Branch
      admission: keys
      keys:
        name:     {kind: register, default: ""}
        checking: {kind: register, default: 100, family: true}
        visits:   {kind: counter, family: true}
        tags:     {kind: set, family: true}
      actions:
        deposit:
          params: {customer: string, amount: int}
          members: {checking: "checking[customer]"}
          pre: ["amount > 0"]
          effect: {checking: "checking + amount"}
        pay:
          params: {from: string, to: string, amount: int}
          members: {source: "checking[from]", target: "checking[to]"}
          pre: ["source >= amount"]
          effect: {source: "source - amount", target: "target + amount"}
        visit:
          params: {customer: int}
          members: {visits: "visits[customer]"}
          effect: {visits: "visits + 2"}
        tag:
          params: {customer: string, tag: string}
          members: {tags: "tags[customer]"}
          effect: {tags: "tags + [tag]"}
        rename:
          params: {to: string}
          effect: {name: "to"}
      """;

  private static final CompiledType TYPE = CompiledType.compile(parse(BRANCH));

  private static TypeSpec parse(String yaml) {
    return SpecParser.parse("Branch", yaml.getBytes(StandardCharsets.UTF_8), true);
  }

  private static Applied apply(EntityState state, String action, String params) {
    return assertInstanceOf(Applied.class,
        TYPE.invoke(action, Json.parse(params), state, 7, 1));
  }

  @Test
  void anEffectOnABindingWritesTheMemberItsArgumentNames() {
    Applied deposit = apply(EntityState.ABSENT, "deposit", "{\"customer\":\"c17\",\"amount\":5}");
    // The member reads as the family's default (100) while the entity holds nothing for it.
    assertEquals(List.of(new Assign("checking[c17]", Json.parse("105"))), deposit.operations());
  }

  @Test
  void twoBindingsOfOneFamilyReadAndWriteTheirOwnMembers() {
    EntityState state = EntityState.ABSENT.apply(
        apply(EntityState.ABSENT, "deposit", "{\"customer\":\"a\",\"amount\":50}").operations(),
        1, 1);
    Applied pay = apply(state, "pay", "{\"from\":\"a\",\"to\":\"b\",\"amount\":120}");
    assertEquals(List.of(new Assign("checking[a]", Json.parse("30")),
        new Assign("checking[b]", Json.parse("220"))), pay.operations());
    assertInstanceOf(PreconditionFailed.class, TYPE.invoke("pay",
        Json.parse("{\"from\":\"b\",\"to\":\"a\",\"amount\":101}"), state, 8, 1));
  }

  @Test
  void twoVariablesThatNameOneAssignedMemberAreRefused() {
    // Simultaneous assignment would let one write win: paying oneself would create money.
    TroupeException error = assertThrows(TroupeException.class, () -> TYPE.invoke("pay",
        Json.parse("{\"from\":\"a\",\"to\":\"a\",\"amount\":1}"), EntityState.ABSENT, 1, 1));
    assertEquals(ErrorCode.INVALID_REQUEST, error.code());
    assertTrue(error.getMessage().contains("both name checking[a]"), error.getMessage());
  }

  @Test
  void counterAndSetFamiliesProduceTheirKindsOperationsOnTheMember() {
    assertEquals(List.of(new Increment("visits[42]", 2)),
        apply(EntityState.ABSENT, "visit", "{\"customer\":42}").operations());
    Applied tag = apply(EntityState.ABSENT, "tag", "{\"customer\":\"c1\",\"tag\":\"vip\"}");
    AddElement added = assertInstanceOf(AddElement.class, tag.operations().getFirst());
    assertEquals("tags[c1]", added.key());
  }

  @Test
  void membersRenderUnderTheirFamilyAndOneByOne() {
    EntityState state = EntityState.ABSENT;
    state = state.apply(apply(state, "deposit", "{\"customer\":\"c2\",\"amount\":1}").operations(),
        1, 1);
    state = state.apply(apply(state, "visit", "{\"customer\":9}").operations(), 2, 1);
    assertEquals(Json.parse("{\"name\":\"\",\"checking\":{\"c2\":101},\"visits\":{\"9\":2},"
        + "\"tags\":{}}"), TYPE.render(state));
    assertEquals(Json.parse("101"), TYPE.renderValue("checking[c2]", state));
    assertEquals(Json.parse("100"), TYPE.renderValue("checking[never]", state));
    assertNull(TYPE.renderValue("checking", state));
  }

  @Test
  void aProjectionRendersOnlyTheKeysItNamesInTheWholeStatesShape() {
    EntityState state = EntityState.ABSENT;
    state = state.apply(apply(state, "deposit", "{\"customer\":\"c2\",\"amount\":1}").operations(),
        1, 1);
    state = state.apply(apply(state, "deposit", "{\"customer\":\"c3\",\"amount\":2}").operations(),
        2, 1);
    state = state.apply(apply(state, "visit", "{\"customer\":9}").operations(), 3, 1);
    // Members nest under their family; an unset member shows its default, as GET of the key does.
    assertEquals(Json.parse("{\"checking\":{\"c3\":102,\"never\":100},\"visits\":{\"9\":2}}"),
        TYPE.render(state, new StateProjection(
            List.of("checking[c3]", "checking[never]", "visits[9]"))));
    // A family named by itself has all its members; a plain key renders as in the whole state.
    assertEquals(Json.parse("{\"name\":\"\",\"checking\":{\"c2\":101,\"c3\":102}}"),
        TYPE.render(state, new StateProjection(List.of("name", "checking"))));
    assertEquals(Json.parse("{}"), TYPE.render(state, StateProjection.NONE));
    // The whole state is every declared key projected.
    assertEquals(TYPE.render(state), TYPE.render(state,
        new StateProjection(List.of("name", "checking", "visits", "tags"))));
  }

  @Test
  void aProjectionNamesOnlyKeysOfTheTypeAndEachOnce() {
    TypeSpec spec = parse(BRANCH);
    new StateProjection(List.of("name", "checking", "checking[c1]", "tags[x y]")).checkAgainst(spec);
    for (String key : List.of("nope", "name[c1]", "checking[]", "checking[a[b]]", "checking[c1")) {
      TroupeException refused = assertThrows(TroupeException.class,
          () -> new StateProjection(List.of(key)).checkAgainst(spec), key);
      assertEquals(ErrorCode.INVALID_REQUEST, refused.code());
      assertTrue(refused.getMessage().contains("has no key '" + key + "'"), refused.getMessage());
    }
    assertThrows(TroupeException.class, () -> new StateProjection(List.of("a", "a")));
    // A schemaless type takes any key; one its entity does not hold is left out.
    TypeSpec schemaless = SpecParser.parse("Free", "{\"schemaless\":true}".getBytes(StandardCharsets.UTF_8), false);
    new StateProjection(List.of("anything[1]")).checkAgainst(schemaless);
    CompiledType free = CompiledType.schemaless("Free");
    EntityState held = EntityState.ABSENT.apply(List.of(new Assign("a,b", Json.parse("1")),
        new Assign("c[1]", Json.parse("2"))), 1, 1);
    assertEquals(Json.parse("{\"c[1]\":2,\"a,b\":1}"),
        free.render(held, new StateProjection(List.of("c[1]", "missing", "a,b"))));
  }

  @Test
  void membersHaveTheFamilysKindAndFamiliesThemselvesAreNoKeys() {
    assertEquals(KeyKind.REGISTER, TYPE.kindOf("checking[x]"));
    assertEquals(KeyKind.COUNTER, TYPE.kindOf("visits[1]"));
    assertNull(TYPE.kindOf("checking"));
    assertNull(TYPE.kindOf("checking[]"));
    assertNull(TYPE.kindOf("name[x]"));
    assertNull(TYPE.kindOf("other[x]"));
  }

  @Test
  void theAccessOfAnActionNamesTheMembersOfItsArguments() {
    CompiledType.ActionAccess access =
        TYPE.access("pay", Json.parse("{\"from\":\"a\",\"to\":\"b\",\"amount\":1}"));
    assertEquals(Set.of("checking[a]", "checking[b]"), access.writes());
    assertEquals(Set.of("checking[a]", "checking[b]"), access.reads());
    assertEquals(Set.of("name"),
        TYPE.access("rename", Json.parse("{\"to\":\"x\"}")).writes());
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "'{\"customer\":\"\",\"amount\":1}'|1 to 128 characters",
      "'{\"customer\":\"a]b\",\"amount\":1}'|no brackets",
      "'{\"customer\":\"a\\u0001\",\"amount\":1}'|control characters"})
  void anArgumentThatNamesNoValidMemberIsRefused(String params, String expected) {
    TroupeException error = assertThrows(TroupeException.class,
        () -> TYPE.invoke("deposit", Json.parse(params), EntityState.ABSENT, 1, 1));
    assertEquals(ErrorCode.INVALID_REQUEST, error.code());
    assertTrue(error.getMessage().contains(expected), error.getMessage());
  }

  @Test
  void theSpecRoundTripsThroughItsCanonicalForm() {
    TypeSpec spec = parse(BRANCH);
    assertEquals(spec, SpecParser.parse("Branch",
        Json.write(spec.toJson()).getBytes(StandardCharsets.UTF_8), false));
    assertTrue(spec.toJson().at("/keys/checking/family").booleanValue());
    assertTrue(spec.toJson().at("/keys/name/family").isMissingNode());
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      // a binding of a plain key
      "'members: {n: \"name[customer]\"}\n    effect: {n: \"customer\"}'|'name' is not a key family",
      // a binding whose parameter is not declared
      "'members: {checking: \"checking[nobody]\"}\n    effect: {checking: \"1\"}'|names no parameter",
      // a binding through a double
      "'members: {checking: \"checking[share]\"}\n    effect: {checking: \"1\"}'|must be a string or int",
      // a malformed binding
      "'members: {checking: \"checking(customer)\"}\n    effect: {checking: \"1\"}'|must look like family[parameter]",
      // an effect on the family itself
      "'effect: {checking: \"1\"}'|is a key family",
      // the family used as a variable without a binding
      "'pre: [\"checking > 0\"]'|undeclared reference to 'checking'",
      // a binding named like another key
      "'members: {name: \"checking[customer]\"}\n    effect: {name: \"1\"}'|has the name of key 'name'",
      // a binding named like a parameter
      "'members: {customer: \"checking[customer]\"}\n    effect: {customer: \"1\"}'|a parameter has this name"})
  void badFamiliesAndBindingsAreRefusedWithTheirPath(String action, String expected) {
    String yaml = """
        type: Branch
        keys:
          name:     {kind: register}
          checking: {kind: register, family: true}
        actions:
          act:
            params: {customer: string, share: double}
            %s
        """.formatted(action);
    TroupeException error = assertThrows(TroupeException.class,
        () -> CompiledType.compile(parse(yaml)));
    assertEquals(ErrorCode.INVALID_REQUEST, error.code());
    assertTrue(error.getMessage().contains(expected), error.getMessage());
    assertTrue(error.getMessage().startsWith("actions.act"), error.getMessage());
  }
}
