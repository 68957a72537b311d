package dev.troupe.txn.entity;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.TextNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnLimits;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.entity.EntityTurnCore.Effect;
import dev.troupe.txn.entity.EntityTurnCore.Input;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class EntityTurnCoreTest {
  private static final EntityId ENTITY = new EntityId("Counter", "c1");
  private static final CompiledType COUNTER_TYPE = CompiledType.compile(SpecParser.parse("Counter",
      """
      {"keys": {"hits": {"kind": "counter"}, "tags": {"kind": "set"}, "name": {"kind": "register"}}}
      """.getBytes(StandardCharsets.UTF_8), false));
  private static final TurnLimits LIMITS = new TurnLimits(100, 100, 4, 3);

  private final EntityTurnCore<String> core =
      new EntityTurnCore<>(ENTITY, EntityState.ABSENT, LIMITS, 1);
  private long transactionIds = 1000;

  private List<Effect<String>> request(Turn turn, String replyTo) {
    return core.handle(new Input.TurnRequested<>(turn, COUNTER_TYPE, transactionIds++, replyTo));
  }

  private static Turn increment(long by) {
    return new Turn.IncrementKey("hits", by);
  }

  @Test
  void aWriteIsAnsweredOnlyOnceDurable() {
    List<Effect<String>> effects = request(increment(5), "client");
    assertEquals(1, effects.size());
    Effect.SubmitCommit<String> submit = assertInstanceOf(Effect.SubmitCommit.class, effects.get(0));
    assertEquals(1, submit.serial());

    List<Effect<String>> answered = core.handle(new Input.CommitSucceeded<>(1, 77));
    Effect.Reply<String> reply = assertInstanceOf(Effect.Reply.class, answered.get(0));
    assertEquals("client", reply.replyTo());
    TurnResult.Done done = assertInstanceOf(TurnResult.Done.class, reply.result());
    assertEquals(77, done.version());
    assertTrue(done.wrote());
    assertEquals(5, COUNTER_TYPE.render(done.state()).get("hits").asLong());
  }

  @Test
  void aHotEntityPipelinesCommitsAndAnswersInOrder() {
    assertInstanceOf(Effect.SubmitCommit.class, request(increment(1), "a").get(0));
    assertInstanceOf(Effect.SubmitCommit.class, request(increment(2), "b").get(0));
    assertInstanceOf(Effect.SubmitCommit.class, request(increment(3), "c").get(0));

    List<Effect<String>> first = core.handle(new Input.CommitSucceeded<>(1, 10));
    assertEquals(List.of("a"), repliedTo(first));
    List<Effect<String>> rest = core.handle(new Input.CommitSucceeded<>(2, 11));
    rest.addAll(core.handle(new Input.CommitSucceeded<>(3, 12)));
    assertEquals(List.of("b", "c"), repliedTo(rest));
    TurnResult.Done last = (TurnResult.Done) ((Effect.Reply<String>) rest.get(1)).result();
    assertEquals(6, COUNTER_TYPE.render(last.state()).get("hits").asLong());
    assertEquals(12, last.version());
    assertTrue(core.isIdle());
  }

  @Test
  void aTurnThatChangesNothingStillWaitsForTheStateItObserved() {
    request(increment(1), "writer");
    List<Effect<String>> noop = request(new Turn.RemoveElement("tags", TextNode.valueOf("x")), "reader");
    assertTrue(noop.isEmpty(), "the no-op observed an uncommitted write, so it must wait");
    List<Effect<String>> after = core.handle(new Input.CommitSucceeded<>(1, 50));
    assertEquals(List.of("writer", "reader"), repliedTo(after));
    TurnResult.Done done = (TurnResult.Done) ((Effect.Reply<String>) after.get(1)).result();
    assertFalse(done.wrote());
    assertEquals(50, done.version());
  }

  @Test
  void aRejectionChangesNothingAndWaitsLikeAnyReply() {
    request(increment(1), "writer");
    List<Effect<String>> wrongKind =
        request(new Turn.AssignKeys(Map.of("hits", Json.NODES.numberNode(3))), "bad");
    assertTrue(wrongKind.isEmpty());
    List<Effect<String>> after = core.handle(new Input.CommitSucceeded<>(1, 5));
    TurnResult.Failed failed = (TurnResult.Failed) ((Effect.Reply<String>) after.get(1)).result();
    assertEquals(ErrorCode.INVALID_REQUEST, failed.error().code());
    assertTrue(core.isIdle());
  }

  @Test
  void aRefusedCommitRollsBackItAndEverythingThatObservedIt() {
    request(increment(1), "a");
    request(increment(10), "b");
    request(increment(100), "c");
    TroupeException overloaded = new TroupeException(ErrorCode.OVERLOADED, "queue full");
    List<Effect<String>> refused = core.handle(new Input.CommitFailed<>(2, overloaded, true));
    assertEquals(List.of("b", "c"), repliedTo(refused));
    core.handle(new Input.CommitSucceeded<>(1, 20));
    // The next turn sees only the first increment.
    List<Effect<String>> next = request(increment(1000), "d");
    assertInstanceOf(Effect.SubmitCommit.class, next.get(0));
    List<Effect<String>> done = core.handle(new Input.CommitSucceeded<>(2, 21));
    TurnResult.Done result = (TurnResult.Done) ((Effect.Reply<String>) done.get(0)).result();
    assertEquals(1001, COUNTER_TYPE.render(result.state()).get("hits").asLong());
  }

  @Test
  void anUnknownOutcomeFailsDependentTurnsAndStops() {
    request(increment(1), "a");
    request(increment(2), "b");
    List<Effect<String>> failed = core.handle(new Input.CommitFailed<>(1,
        new TroupeException(ErrorCode.OUTCOME_UNKNOWN, "disk"), false));
    assertEquals(List.of("a", "b"), repliedTo(failed));
    for (Effect<String> effect : failed) {
      if (effect instanceof Effect.Reply<String> reply) {
        assertEquals(ErrorCode.OUTCOME_UNKNOWN,
            ((TurnResult.Failed) reply.result()).error().code());
      }
    }
    assertInstanceOf(Effect.Stop.class, failed.get(failed.size() - 1));
  }

  @Test
  void turnsBeyondTheInFlightLimitWaitAndBeyondTheQueueAreRefused() {
    for (int i = 0; i < 4; i++) {
      assertEquals(1, request(increment(1), "in-flight-" + i).size());
    }
    for (int i = 0; i < 3; i++) {
      assertTrue(request(increment(1), "queued-" + i).isEmpty());
    }
    List<Effect<String>> refused = request(increment(1), "too-many");
    TurnResult.Failed failed = (TurnResult.Failed) ((Effect.Reply<String>) refused.get(0)).result();
    assertEquals(ErrorCode.OVERLOADED, failed.error().code());

    List<Effect<String>> afterOne = core.handle(new Input.CommitSucceeded<>(1, 100));
    long submitted = afterOne.stream().filter(e -> e instanceof Effect.SubmitCommit).count();
    assertEquals(1, submitted, "one slot freed, one queued turn submitted");
  }

  @Test
  void passivationWaitsUntilIdle() {
    request(increment(1), "a");
    assertTrue(core.handle(new Input.PassivationRequested<>()).isEmpty());
    List<Effect<String>> drained = core.handle(new Input.CommitSucceeded<>(1, 9));
    assertInstanceOf(Effect.Stop.class, drained.get(drained.size() - 1));
  }

  @Test
  void anEntityOffersPassivationOnlyAfterAWholeIdlePeriod() {
    request(increment(1), "a");
    assertTrue(core.handle(new Input.IdleCheckElapsed<>()).isEmpty(), "a turn arrived");
    assertTrue(core.handle(new Input.IdleCheckElapsed<>()).isEmpty(), "a commit is in flight");
    core.handle(new Input.CommitSucceeded<>(1, 3));
    assertTrue(core.handle(new Input.IdleCheckElapsed<>()).isEmpty(), "a commit just completed");
    assertEquals(List.of(new Effect.OfferPassivation<String>()),
        core.handle(new Input.IdleCheckElapsed<>()));
  }

  @Test
  void anEntityAskedWhetherItIsIdleOffersPassivationOnlyWhenIdle() {
    request(increment(1), "a");
    assertTrue(core.handle(new Input.IdlenessAsked<>()).isEmpty(), "a commit is in flight");
    core.handle(new Input.CommitSucceeded<>(1, 3));
    // No whole idle period is needed: the registry asks only after the once-used delay.
    assertEquals(List.of(new Effect.OfferPassivation<String>()),
        core.handle(new Input.IdlenessAsked<>()));
    // Asking does not count as activity: the periodic check still sees the entity idle.
    core.handle(new Input.IdleCheckElapsed<>());
    assertEquals(List.of(new Effect.OfferPassivation<String>()),
        core.handle(new Input.IdleCheckElapsed<>()));
    core.handle(new Input.PassivationRequested<>());
  }

  @Test
  void commitsMustSucceedInOrder() {
    request(increment(1), "a");
    request(increment(1), "b");
    assertThrows(Invariants.InvariantViolation.class,
        () -> core.handle(new Input.CommitSucceeded<>(2, 9)));
  }

  @Test
  void deletingAnAbsentEntityIsNotFound() {
    List<Effect<String>> effects = request(new Turn.DeleteEntity(), "a");
    TurnResult.Failed failed = (TurnResult.Failed) ((Effect.Reply<String>) effects.get(0)).result();
    assertEquals(ErrorCode.NOT_FOUND, failed.error().code());
  }

  private static List<String> repliedTo(List<Effect<String>> effects) {
    return effects.stream()
        .filter(e -> e instanceof Effect.Reply<String>)
        .map(e -> ((Effect.Reply<String>) e).replyTo())
        .collect(java.util.stream.Collectors.toCollection(java.util.ArrayList::new));
  }
}
