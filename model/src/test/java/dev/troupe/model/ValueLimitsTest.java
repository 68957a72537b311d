package dev.troupe.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.troupe.model.spec.ActionOutcome;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.DependencyExpression;
import dev.troupe.model.spec.SpecParser;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The limits on one value ({@link ValueLimits}), the numbers JSON parsing refuses, and the budget
 * that bounds what one CEL evaluation may build.
 */
class ValueLimitsTest {
  /** Small limits: 100 bytes, 3 levels, strings of 40, 200 characters built, lists of 50. */
  private static final ValueLimits SMALL = new ValueLimits(100, 3, 40, 200, 50);

  private static final CompiledType NOTES = CompiledType.compile(SpecParser.parse("Note", """
      {"keys": {"text": {"kind": "register", "default": "ab"},
                "n": {"kind": "register", "default": 0}},
       "actions": {
         "double": {"effect": {"text": "text + text"}},
         "copies": {"params": {"count": "int"},
                    "effect": {"n": "[1,2,3,4,5,6,7,8,9,10].map(i, text + string(i)).size()"}},
         "long": {"effect": {"n": "[1,2,3,4,5,6,7,8,9,10].map(i, [1,2,3,4,5,6,7,8,9,10].map(j, j)).size()"}},
         "divide": {"params": {"by": "int"}, "effect": {"n": "10 / by"}},
         "guarded": {"pre": ["size(text + text + text) > 0"], "effect": {"n": "1"}}}}
      """.getBytes(StandardCharsets.UTF_8), false));

  private static void assertRefused(ErrorCode code, String reason, Runnable action) {
    TroupeException error = assertThrows(TroupeException.class, action::run);
    assertEquals(code, error.code(), error.getMessage());
    assertEquals(reason, error.reason(), error.getMessage());
  }

  @Test
  void aValueWithinEveryLimitPasses() {
    JsonNode value = Json.parse("{\"a\": [1, 2.5, \"text\", {\"b\": null}]}");
    assertSame(value, SMALL.check(value, "the value"));
  }

  @Test
  void aValueOverTheByteLimitIsTooLarge() {
    // 99 characters plus quotes: 101 bytes of JSON.
    assertRefused(ErrorCode.TOO_LARGE, TransactionAbort.TOO_LARGE,
        () -> new ValueLimits(100, 3, 1000, 200, 50).check(TextNode.valueOf("x".repeat(99)), "v"));
    new ValueLimits(100, 3, 1000, 200, 50).check(TextNode.valueOf("x".repeat(98)), "v");
  }

  /**
   * Values whose size is known without serializing them (integers, booleans, null, strings of
   * printable ASCII and DEL) and those Jackson serializes meet the byte limit at the same length:
   * their compact JSON's.
   */
  @Test
  void theByteLimitIsTheCompactJsonLengthForEveryKindOfValue() {
    for (JsonNode value : List.of(TextNode.valueOf("a\"b\\c\u007f"), TextNode.valueOf(""),
        TextNode.valueOf("caf\u00e9"), TextNode.valueOf("line\nbreak"),
        Json.NODES.numberNode(-1234567890123L), Json.NODES.numberNode(7),
        Json.NODES.booleanNode(false), Json.NODES.booleanNode(true), Json.NODES.nullNode(),
        Json.NODES.numberNode(2.5), Json.parse("[\"x\",{\"y\":1}]"))) {
      int length = Json.writeBytes(value).length;
      new ValueLimits(length, 3, 1000, 200, 50).check(value, "v");
      if (length > 1) {
        assertRefused(ErrorCode.TOO_LARGE, TransactionAbort.TOO_LARGE,
            () -> new ValueLimits(length - 1, 3, 1000, 200, 50).check(value, "v"));
      }
    }
  }

  @Test
  void aValueOfManyCopiesIsRefusedWithoutSerializingItWhole() {
    // A list of a million references to one string: 64 GB of JSON if written out. The check stops
    // at the limit instead (the test would run out of memory otherwise).
    String big = "x".repeat(65_536);
    var array = Json.NODES.arrayNode();
    for (int i = 0; i < 1_000_000; i++) {
      array.add(big);
    }
    assertRefused(ErrorCode.TOO_LARGE, TransactionAbort.TOO_LARGE,
        () -> ValueLimits.DEFAULTS.check(array, "the value"));
  }

  @Test
  void nestingDeeperThanTheLimitIsTooLarge() {
    SMALL.check(Json.parse("[[[1]]]"), "v");
    assertRefused(ErrorCode.TOO_LARGE, TransactionAbort.TOO_LARGE,
        () -> SMALL.check(Json.parse("[[[[1]]]]"), "v"));
    assertRefused(ErrorCode.TOO_LARGE, TransactionAbort.TOO_LARGE,
        () -> SMALL.check(Json.parse("{\"a\":{\"b\":{\"c\":{}}}}"), "v"));
  }

  @Test
  void aStringOrFieldNameLongerThanTheLimitIsTooLarge() {
    SMALL.check(TextNode.valueOf("y".repeat(40)), "v");
    assertRefused(ErrorCode.TOO_LARGE, TransactionAbort.TOO_LARGE,
        () -> SMALL.check(TextNode.valueOf("y".repeat(41)), "v"));
    assertRefused(ErrorCode.TOO_LARGE, TransactionAbort.TOO_LARGE,
        () -> SMALL.check(Json.parse("{\"" + "k".repeat(41) + "\": 1}"), "v"));
  }

  @Test
  void aNonFiniteComputedNumberIsAFailedEvaluation() {
    assertRefused(ErrorCode.INVALID_REQUEST, TransactionAbort.EVALUATION_FAILED,
        () -> SMALL.check(DoubleNode.valueOf(Double.POSITIVE_INFINITY), "v"));
    assertRefused(ErrorCode.INVALID_REQUEST, TransactionAbort.EVALUATION_FAILED,
        () -> SMALL.check(Json.NODES.arrayNode().add(Double.NaN), "v"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"1e400", "-1e400", "[1, 1e309]", "{\"a\": 99999999999999999999}",
      "-9223372036854775809"})
  void parsingRefusesNumbersNoValueCanHold(String text) {
    TroupeException error = assertThrows(TroupeException.class, () -> Json.parse(text));
    assertEquals(ErrorCode.INVALID_REQUEST, error.code());
    assertTrue(error.getMessage().contains("out of range"), error.getMessage());
    assertThrows(TroupeException.class,
        () -> Json.parse(text.getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void parsingKeepsTheExtremesThatFit() {
    assertEquals(Long.MIN_VALUE, Json.parse("-9223372036854775808").longValue());
    assertEquals(Long.MAX_VALUE, Json.parse("9223372036854775807").longValue());
    assertEquals(1.7976931348623157e308, Json.parse("1.7976931348623157e308").doubleValue());
  }

  @Test
  void anEffectBuildingAStringPastTheLimitStopsWhileEvaluating() {
    EntityState state = EntityState.ABSENT.apply(
        java.util.List.of(new Operation.Assign("text", TextNode.valueOf("z".repeat(30)))), 1, 1);
    // 60 characters, more than max-string-length 40: refused by the budget, not afterwards.
    assertRefused(ErrorCode.TOO_LARGE, TransactionAbort.TOO_LARGE,
        () -> NOTES.invoke("double", null, state, 1, 1, SMALL));
    // Within the defaults the same effect applies (the turn core then checks the value).
    assertInstanceOf(ActionOutcome.Applied.class,
        NOTES.invoke("double", null, state, 1, 1, ValueLimits.DEFAULTS));
  }

  @Test
  void stringsBuiltPerIterationCountTogether() {
    EntityState state = EntityState.ABSENT.apply(
        java.util.List.of(new Operation.Assign("text", TextNode.valueOf("z".repeat(30)))), 1, 1);
    // Ten strings of 31 and 32 characters, each within 40, together more than 200.
    assertRefused(ErrorCode.TOO_LARGE, TransactionAbort.TOO_LARGE,
        () -> NOTES.invoke("copies", Json.parse("{\"count\": 1}"), state, 1, 1, SMALL));
    assertInstanceOf(ActionOutcome.Applied.class,
        NOTES.invoke("copies", Json.parse("{\"count\": 1}"), state, 1, 1, ValueLimits.DEFAULTS));
  }

  @Test
  void aListPastTheCollectionLimitStopsWhileEvaluating() {
    // The inner lists have 10 elements, but the comprehensions' results reach 10 lists of 10:
    // within 50. A limit of 9 refuses the first inner list.
    assertInstanceOf(ActionOutcome.Applied.class,
        NOTES.invoke("long", null, EntityState.ABSENT, 1, 1, SMALL));
    assertRefused(ErrorCode.TOO_LARGE, TransactionAbort.TOO_LARGE,
        () -> NOTES.invoke("long", null, EntityState.ABSENT, 1, 1,
            new ValueLimits(100, 3, 40, 200, 9)));
  }

  @Test
  void aPreconditionBuildingTooMuchIsTooLargeNotAFailedPrecondition() {
    EntityState state = EntityState.ABSENT.apply(
        java.util.List.of(new Operation.Assign("text", TextNode.valueOf("z".repeat(30)))), 1, 1);
    assertRefused(ErrorCode.TOO_LARGE, TransactionAbort.TOO_LARGE,
        () -> NOTES.invoke("guarded", null, state, 1, 1, SMALL));
  }

  @Test
  void aFailingEffectIsAFailedEvaluation() {
    assertRefused(ErrorCode.INVALID_REQUEST, TransactionAbort.EVALUATION_FAILED,
        () -> NOTES.invoke("divide", Json.parse("{\"by\": 0}"), EntityState.ABSENT, 1, 1,
            ValueLimits.DEFAULTS));
  }

  @Test
  void aDependencyFunctionIsBoundedAndItsFailuresAreFailedEvaluations() {
    DependencyExpression doubling = DependencyExpression.compile("new_value + new_value");
    JsonNode thirty = TextNode.valueOf("q".repeat(30));
    assertEquals(TextNode.valueOf("q".repeat(60)),
        doubling.evaluate(null, thirty, null, "a", "b", ValueLimits.DEFAULTS));
    assertRefused(ErrorCode.TOO_LARGE, TransactionAbort.TOO_LARGE,
        () -> doubling.evaluate(null, thirty, null, "a", "b", SMALL));
    DependencyExpression dividing = DependencyExpression.compile("1 / new_value");
    assertRefused(ErrorCode.INVALID_REQUEST, TransactionAbort.EVALUATION_FAILED,
        () -> dividing.evaluate(null, Json.parse("0"), null, "a", "b", SMALL));
    DependencyExpression overflowing = DependencyExpression.compile("new_value * 2.0 * 1e308");
    assertRefused(ErrorCode.INVALID_REQUEST, TransactionAbort.EVALUATION_FAILED,
        () -> overflowing.evaluate(null, Json.parse("10"), null, "a", "b", SMALL));
  }
}
