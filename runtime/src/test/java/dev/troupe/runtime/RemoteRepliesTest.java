package dev.troupe.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.txn.DependencyEvaluator;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.port.Timers;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/**
 * The node's table of turns and steps awaiting an answer through the transport: bounded, timed
 * out like a local ask, and an answer that comes after its caller gave up is dropped and counted,
 * never delivered to another request.
 */
class RemoteRepliesTest {
  private static final EntityId ENTITY = EntityId.parse("Account/a");

  /** Timers fired by the test. */
  private static final class ManualTimers implements Timers {
    final List<Runnable> due = new ArrayList<>();

    @Override
    public Scheduled schedule(long delayMillis, Runnable action) {
      due.add(action);
      return () -> due.remove(action);
    }

    void fireAll() {
      new ArrayList<>(due).forEach(Runnable::run);
      due.clear();
    }
  }

  private static TurnResult done(long version) {
    return new TurnResult.Done(version, EntityState.ABSENT, true, version - 1,
        DependencyEvaluator.Forwarding.NONE);
  }

  @Test
  void anAnswerCompletesItsCallerAndCancelsItsTimer() throws Exception {
    ManualTimers timers = new ManualTimers();
    RemoteReplies replies = new RemoteReplies(10, timers);
    CompletableFuture<TurnResult> caller = replies.expect(RemoteReplies.Kind.TURN, 7, ENTITY, 100);
    assertEquals(1, replies.pendingCount());
    replies.answer(RemoteReplies.Kind.TURN, 7, ENTITY, done(3));
    assertEquals(3, assertInstanceOf(TurnResult.Done.class, caller.get()).version());
    assertEquals(0, replies.pendingCount());
    assertTrue(timers.due.isEmpty(), "the timer was cancelled");
  }

  @Test
  void aLateAnswerIsDroppedAndCountedNeverGivenToTheNextRequest() throws Exception {
    ManualTimers timers = new ManualTimers();
    RemoteReplies replies = new RemoteReplies(10, timers);
    CompletableFuture<TurnResult> gaveUp =
        replies.expect(RemoteReplies.Kind.TURN, 7, ENTITY, 100);
    timers.fireAll();
    ExecutionException timedOut =
        org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class, gaveUp::get);
    assertInstanceOf(TimeoutException.class, timedOut.getCause(),
        "the caller sees a timeout exactly as when a local ask times out");
    // The same entity's next step under another transaction must not receive the old answer.
    CompletableFuture<TurnResult> next = replies.expect(RemoteReplies.Kind.STEP, 8, ENTITY, 100);
    replies.answer(RemoteReplies.Kind.TURN, 7, ENTITY, done(3));
    assertFalse(next.isDone());
    assertEquals(1, replies.lateAnswers());
    assertEquals(1, replies.timedOut());
    // A duplicate of an answer already delivered is dropped the same way.
    replies.answer(RemoteReplies.Kind.STEP, 8, ENTITY, done(4));
    replies.answer(RemoteReplies.Kind.STEP, 8, ENTITY, done(4));
    assertEquals(4, assertInstanceOf(TurnResult.Done.class, next.get()).version());
    assertEquals(2, replies.lateAnswers());
  }

  @Test
  void theTableIsBoundedAndAKeyInFlightIsNotReused() {
    RemoteReplies replies = new RemoteReplies(2, new ManualTimers());
    replies.expect(RemoteReplies.Kind.TURN, 1, ENTITY, 100);
    CompletableFuture<TurnResult> twice = replies.expect(RemoteReplies.Kind.TURN, 1, ENTITY, 100);
    assertOverloaded(twice);
    replies.expect(RemoteReplies.Kind.TURN, 2, ENTITY, 100);
    assertOverloaded(replies.expect(RemoteReplies.Kind.TURN, 3, ENTITY, 100));
    assertEquals(2, replies.pendingCount());
    assertEquals(2, replies.refused());
  }

  private static void assertOverloaded(CompletableFuture<TurnResult> future) {
    ExecutionException failed =
        org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class, future::get);
    assertEquals(ErrorCode.OVERLOADED,
        assertInstanceOf(TroupeException.class, failed.getCause()).code());
  }
}
