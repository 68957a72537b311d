package dev.troupe.txn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.coordinator.CoordinatorCore.Effect;
import dev.troupe.txn.coordinator.CoordinatorCore.Input;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The limits of {@code troupe.limits} hold for what a turn computes, not only for what a client
 * sends: an action's effects, a dependency's forwards, and an increment; and a transaction reports
 * such a refusal as an abort with its reason.
 */
class ComputedLimitsTest {
  private static final EntityId NOTE = EntityId.parse("Note/n");
  private static final CompiledType TYPE = CompiledType.compile(SpecParser.parse("Note", """
      {"keys": {"text": {"kind": "register", "default": "ab"},
                "visits": {"kind": "counter"},
                "tags": {"kind": "set"}},
       "actions": {
         "double": {"effect": {"text": "text + text"}},
         "tagMany": {"params": {"count": "int"},
                     "effect": {"tags": "[1,2,3,4,5,6,7,8,9,10,11,12].filter(i, i <= count)"}},
         "divide": {"params": {"by": "int"}, "effect": {"visits": "10 / by"}},
         "number": {"params": {"n": "int"}, "effect": {"text": "n"}}}}
      """.getBytes(StandardCharsets.UTF_8), false));

  private static EntityState withText(int characters) {
    return EntityState.ABSENT.apply(
        List.of(new Operation.Assign("text", TextNode.valueOf("x".repeat(characters)))), 1, 1);
  }

  private static TroupeException rejected(TurnEvaluator.Decision decision) {
    return assertInstanceOf(TurnEvaluator.Decision.Reject.class, decision).error();
  }

  private static TurnEvaluator.Decision invoke(EntityState state, String action, String params,
      TurnLimits limits) {
    return TurnEvaluator.evaluate(NOTE, TYPE, state,
        new Turn.InvokeAction(action, Json.parse(params)), 7, 1, limits);
  }

  @Test
  void anEffectDoublingAStringIsRefusedOnceTheValueWouldPassTheLimit() {
    // 30,000 characters doubled: 60,002 bytes of JSON, within 65,536.
    TurnEvaluator.Decision within = invoke(withText(30_000), "double", "{}", TurnLimits.DEFAULTS);
    assertInstanceOf(TurnEvaluator.Decision.Write.class, within);
    // 40,000 doubled: 80,002 bytes, refused before anything is written.
    TroupeException error = rejected(invoke(withText(40_000), "double", "{}",
        TurnLimits.DEFAULTS));
    assertEquals(ErrorCode.TOO_LARGE, error.code(), error.getMessage());
    assertEquals(TransactionAbort.TOO_LARGE, error.reason());
  }

  @Test
  void aSetEffectAddingPastTheLimitIsRefusedEvenFromAnEmptySet() {
    TurnLimits tenElements = new TurnLimits(1024, 10, 256, 10_000);
    assertInstanceOf(TurnEvaluator.Decision.Write.class,
        invoke(EntityState.ABSENT, "tagMany", "{\"count\": 10}", tenElements));
    TroupeException error =
        rejected(invoke(EntityState.ABSENT, "tagMany", "{\"count\": 11}", tenElements));
    assertEquals(ErrorCode.TOO_LARGE, error.code(), error.getMessage());
    assertEquals(TransactionAbort.TOO_LARGE, error.reason());
  }

  /**
   * An integer, a boolean or null skips the full check only under a byte limit none of them can
   * pass (20 bytes: {@code -9223372036854775808}); under a smaller one it is measured as before.
   */
  @Test
  void aComputedIntegerSkipsTheFullCheckOnlyWhenNoIntegerCanPassTheByteLimit() {
    TurnLimits sixBytes = new TurnLimits(1024, 10_000, 256, 10_000, 10_000, 1024, 10_000, 8,
        new dev.troupe.model.ValueLimits(6, 64, 65_536, 1_048_576, 100_000));
    assertInstanceOf(TurnEvaluator.Decision.Write.class,
        invoke(EntityState.ABSENT, "number", "{\"n\": -12345}", sixBytes));
    TroupeException error =
        rejected(invoke(EntityState.ABSENT, "number", "{\"n\": 1234567}", sixBytes));
    assertEquals(ErrorCode.TOO_LARGE, error.code(), error.getMessage());
    assertEquals(TransactionAbort.TOO_LARGE, error.reason());
    TurnLimits twentyBytes = new TurnLimits(1024, 10_000, 256, 10_000, 10_000, 1024, 10_000, 8,
        new dev.troupe.model.ValueLimits(20, 64, 65_536, 1_048_576, 100_000));
    assertInstanceOf(TurnEvaluator.Decision.Write.class, invoke(EntityState.ABSENT, "number",
        "{\"n\": " + Long.MIN_VALUE + "}", twentyBytes));
    assertEquals(TurnEvaluator.LONGEST_SCALAR_JSON_BYTES,
        Json.writeBytes(LongNode.valueOf(Long.MIN_VALUE)).length);
    assertEquals(false, TurnEvaluator.certainlyWithin(TextNode.valueOf("x"), twentyBytes.values()));
    assertEquals(false, TurnEvaluator.certainlyWithin(LongNode.valueOf(1), sixBytes.values()));
  }

  @Test
  void aFailingEffectIsAFailedEvaluation() {
    TroupeException error =
        rejected(invoke(EntityState.ABSENT, "divide", "{\"by\": 0}", TurnLimits.DEFAULTS));
    assertEquals(ErrorCode.INVALID_REQUEST, error.code(), error.getMessage());
    assertEquals(TransactionAbort.EVALUATION_FAILED, error.reason());
  }

  @Test
  void anIncrementThatWouldOverflowIsRefusedNotWrapped() {
    EntityState nearlyFull = EntityState.ABSENT.apply(
        List.of(new Operation.Increment("visits", Long.MAX_VALUE - 1)), 1, 1);
    assertInstanceOf(TurnEvaluator.Decision.Write.class, TurnEvaluator.evaluate(NOTE, TYPE,
        nearlyFull, new Turn.IncrementKey("visits", 1), 7, 1, TurnLimits.DEFAULTS));
    TroupeException error = rejected(TurnEvaluator.evaluate(NOTE, TYPE, nearlyFull,
        new Turn.IncrementKey("visits", 2), 7, 1, TurnLimits.DEFAULTS));
    assertEquals(ErrorCode.INVALID_REQUEST, error.code());
    assertEquals(TransactionAbort.EVALUATION_FAILED, error.reason());
  }

  @Test
  void aSumThatOverflowsIsRefusedInsteadOfLosingExactness() {
    assertEquals(LongNode.valueOf(Long.MAX_VALUE),
        DependencyEvaluator.Numbers.add(LongNode.valueOf(Long.MAX_VALUE - 1), LongNode.valueOf(1)));
    TroupeException overflow = assertThrows(TroupeException.class,
        () -> DependencyEvaluator.Numbers.add(LongNode.valueOf(Long.MAX_VALUE), LongNode.valueOf(1)));
    assertEquals(TransactionAbort.EVALUATION_FAILED, overflow.reason());
    TroupeException infinite = assertThrows(TroupeException.class,
        () -> DependencyEvaluator.Numbers.add(DoubleNode.valueOf(1e308), DoubleNode.valueOf(1e308)));
    assertEquals(TransactionAbort.EVALUATION_FAILED, infinite.reason());
  }

  // ---------------------------------------------------------------- the coordinator's report

  private static CoordinatorCore.Outcome.Failed outcomeOfANo(TroupeException vote) {
    Map<EntityId, CoordinatorCore.Part> parts = new LinkedHashMap<>();
    parts.put(NOTE, new CoordinatorCore.Part(List.of(new Turn.InvokeAction("double",
        Json.NODES.objectNode())), false));
    parts.put(EntityId.parse("Note/m"), new CoordinatorCore.Part(List.of(new Turn.InvokeAction(
        "double", Json.NODES.objectNode())), false));
    CoordinatorCore core = new CoordinatorCore(parts, new CoordinatorCore.Limits(1000, 2, 5, 8,
        4, 3), false);
    core.handle(new Input.Started(10));
    for (Effect effect : core.handle(new Input.VoteReceived(NOTE, 10,
        new TurnResult.Failed(vote)))) {
      if (effect instanceof Effect.Reply reply) {
        return assertInstanceOf(CoordinatorCore.Outcome.Failed.class, reply.outcome());
      }
    }
    throw new AssertionError("a no vote must answer at once");
  }

  @Test
  void aTransactionAbortsWithReasonTooLargeWhenAPartIsTooLarge() {
    TroupeException reported = outcomeOfANo(new TroupeException(ErrorCode.TOO_LARGE,
        TransactionAbort.TOO_LARGE, "too big")).error();
    assertEquals(ErrorCode.ABORTED, reported.code());
    assertEquals(TransactionAbort.TOO_LARGE, reported.reason());
  }

  @Test
  void aTransactionAbortsWithReasonEvaluationFailedWhenAnEffectFails() {
    TroupeException reported = outcomeOfANo(new TroupeException(ErrorCode.INVALID_REQUEST,
        TransactionAbort.EVALUATION_FAILED, "division by zero")).error();
    assertEquals(ErrorCode.ABORTED, reported.code());
    assertEquals(TransactionAbort.EVALUATION_FAILED, reported.reason());
  }

  @Test
  void aMalformedOperationStaysAnInvalidRequest() {
    TroupeException reported =
        outcomeOfANo(TroupeException.invalid("type 'Note' has no key 'nope'")).error();
    assertEquals(ErrorCode.INVALID_REQUEST, reported.code());
    assertNull(reported.reason());
  }
}
