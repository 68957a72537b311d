package dev.troupe.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.spec.CausalPreconditions;
import dev.troupe.model.spec.Consistency;
import dev.troupe.model.spec.HomeRule;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.spec.TypeSpec;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code consistency} and {@code home} in a spec, and the rule for a causal type's preconditions. */
class StrongTypesTest {
  private static final String ACCOUNT_KEYS =
      "\"keys\": {\"balance\": {\"kind\": \"register\", \"default\": 0},"
          + " \"limit\": {\"kind\": \"register\", \"default\": 100}},";
  private static final String WITHDRAW =
      "\"actions\": {\"withdraw\": {\"params\": {\"amount\": \"int\"},"
          + " \"pre\": [\"amount > 0\", \"balance - amount >= 0\"],"
          + " \"effect\": {\"balance\": \"balance - amount\"}}}";

  private static TypeSpec parse(String json) {
    return SpecParser.parse("Account", json.getBytes(StandardCharsets.UTF_8), false);
  }

  private static String invalid(String json) {
    TroupeException e = assertThrows(TroupeException.class, () -> parse(json));
    assertEquals(ErrorCode.INVALID_REQUEST, e.code());
    return e.getMessage();
  }

  @Test
  void strongWithHomeIsParsedRenderedAndReadBack() {
    TypeSpec spec = parse("{\"consistency\": \"strong\", \"home\": \"a\", " + ACCOUNT_KEYS
        + WITHDRAW + "}");
    assertEquals(Consistency.strongAt("a"), spec.consistency());
    assertEquals("strong", spec.toJson().get("consistency").asText());
    assertEquals("a", spec.toJson().get("home").asText());
    assertEquals(spec, SpecParser.fromJson("Account", spec.toJson()));
  }

  @Test
  void causalIsTheDefaultAndNotRendered() {
    TypeSpec spec = parse("{" + ACCOUNT_KEYS + WITHDRAW + "}");
    assertEquals(Consistency.CAUSAL, spec.consistency());
    assertFalse(spec.toJson().has("consistency"));
    assertFalse(spec.toJson().has("home"));
    assertEquals(Consistency.CAUSAL,
        parse("{\"consistency\": \"causal\", " + ACCOUNT_KEYS + WITHDRAW + "}").consistency());
  }

  @Test
  void aPerEntityHomeRuleIsParsedRenderedAndEvaluated() {
    TypeSpec spec = parse("{\"consistency\": \"strong\", \"home\": {\"rule\":"
        + " \"id.startsWith('eu-') ? 'paris' : 'oslo'\"}, " + ACCOUNT_KEYS + WITHDRAW + "}");
    assertEquals(Consistency.strongByRule("id.startsWith('eu-') ? 'paris' : 'oslo'"),
        spec.consistency());
    assertEquals("id.startsWith('eu-') ? 'paris' : 'oslo'",
        spec.toJson().path("home").path("rule").asText());
    assertEquals(spec, SpecParser.fromJson("Account", spec.toJson()));
    HomeRule rule = HomeRule.compile(spec.consistency().homeRule());
    assertEquals("paris", rule.homeOf("eu-17"));
    assertEquals("oslo", rule.homeOf("us-3"));
    // A rule that gives no DC name refuses the write it was asked about.
    TroupeException notADc = assertThrows(TroupeException.class,
        () -> HomeRule.compile("id + ' x'").homeOf("a"));
    assertTrue(notADc.getMessage().contains("not a data centre name"), notADc.getMessage());
    assertTrue(invalid("{\"consistency\": \"strong\", \"home\": {\"rule\": \"size(id)\"}, "
        + ACCOUNT_KEYS + WITHDRAW + "}").startsWith("home.rule: must give a data centre name"));
    assertTrue(invalid("{\"consistency\": \"strong\", \"home\": {\"rule\": \"idd\"}, "
        + ACCOUNT_KEYS + WITHDRAW + "}").startsWith("home.rule: "));
    assertTrue(invalid("{\"consistency\": \"strong\", \"home\": {\"rules\": \"id\"}, "
        + ACCOUNT_KEYS + WITHDRAW + "}").startsWith("home.rules"));
    // Strong by a rule, the withdrawal's precondition is safe.
    assertEquals(List.of(), CausalPreconditions.violations(spec));
  }

  @Test
  void badConsistencyOrHomeIsRefusedWithItsPath() {
    assertTrue(invalid("{\"consistency\": \"strong\", " + ACCOUNT_KEYS + WITHDRAW + "}")
        .startsWith("consistency: a strong type names its home"));
    assertTrue(invalid("{\"home\": \"a\", " + ACCOUNT_KEYS + WITHDRAW + "}")
        .startsWith("home: only a strong type"));
    assertTrue(invalid("{\"consistency\": \"causal\", \"home\": \"a\", " + ACCOUNT_KEYS
        + WITHDRAW + "}").startsWith("home: only a strong type"));
    assertTrue(invalid("{\"consistency\": \"linearizable\", " + ACCOUNT_KEYS + WITHDRAW + "}")
        .startsWith("consistency: unknown consistency 'linearizable'"));
    assertTrue(invalid("{\"consistency\": \"strong\", \"home\": \"a b\", " + ACCOUNT_KEYS
        + WITHDRAW + "}").startsWith("home: 'a b' is not a data centre name"));
    assertTrue(invalid("{\"consistency\": \"strong\", \"home\": 7, " + ACCOUNT_KEYS
        + WITHDRAW + "}").startsWith("home: must be a string"));
  }

  @Test
  void aCausalWithdrawalIsRefusedNamingActionPreconditionAndKey() {
    List<String> violations = CausalPreconditions.violations(parse("{" + ACCOUNT_KEYS + WITHDRAW
        + "}"));
    assertEquals(1, violations.size(), violations.toString());
    assertTrue(violations.get(0).startsWith("actions.withdraw.pre[1]: `balance - amount >= 0`"
        + " reads key 'balance', which action 'withdraw' writes"), violations.get(0));
    // Strong, the same type passes.
    assertEquals(List.of(), CausalPreconditions.violations(parse(
        "{\"consistency\": \"strong\", \"home\": \"a\", " + ACCOUNT_KEYS + WITHDRAW + "}")));
  }

  @Test
  void preconditionsOverParametersAndUnwrittenKeysPass() {
    // `limit` is read but no action writes it; `amount` is a parameter.
    TypeSpec spec = parse("{" + ACCOUNT_KEYS + "\"actions\": {\"deposit\": {\"params\":"
        + " {\"amount\": \"int\"}, \"pre\": [\"amount > 0\", \"amount <= limit\"],"
        + " \"effect\": {\"balance\": \"balance + amount\"}}}}");
    assertEquals(List.of(), CausalPreconditions.violations(spec));
  }

  @Test
  void anotherActionsWriteCountsToo() {
    TypeSpec spec = parse("{" + ACCOUNT_KEYS + "\"actions\": {"
        + "\"check\": {\"pre\": [\"limit > 10\"]},"
        + "\"lower\": {\"params\": {\"to\": \"int\"}, \"effect\": {\"limit\": \"to\"}}}}");
    List<String> violations = CausalPreconditions.violations(spec);
    assertEquals(1, violations.size(), violations.toString());
    assertTrue(violations.get(0).contains("actions.check.pre[0]"), violations.get(0));
    assertTrue(violations.get(0).contains("which action 'lower' writes"), violations.get(0));
  }

  @Test
  void wholeStateAndMemberBindingsAreReads() {
    TypeSpec wholeState = parse("{" + ACCOUNT_KEYS + "\"actions\": {"
        + "\"check\": {\"pre\": [\"size(state) > 0\"]},"
        + "\"reset\": {\"effect\": {\"balance\": \"0\"}}}}");
    List<String> violations = CausalPreconditions.violations(wholeState);
    assertEquals(1, violations.size(), violations.toString());
    assertTrue(violations.get(0).contains("reads key 'balance'"), violations.get(0));

    TypeSpec branch = parse("{\"keys\": {\"checking\": {\"kind\": \"register\", \"default\": 0,"
        + " \"family\": true}}, \"actions\": {\"withdraw\": {\"params\": {\"customer\":"
        + " \"string\", \"amount\": \"int\"}, \"members\": {\"account\": \"checking[customer]\"},"
        + " \"pre\": [\"account >= amount\"], \"effect\": {\"account\": \"account - amount\"}}}}");
    violations = CausalPreconditions.violations(branch);
    assertEquals(1, violations.size(), violations.toString());
    assertTrue(violations.get(0).contains("reads key 'checking'"), violations.get(0));
  }

  @Test
  void schemalessAndActionlessTypesPass() {
    assertEquals(List.of(), CausalPreconditions.violations(TypeSpec.schemaless("Notes")));
    assertEquals(List.of(), CausalPreconditions.violations(parse("{" + ACCOUNT_KEYS
        .substring(0, ACCOUNT_KEYS.length() - 1) + "}")));
  }
}
