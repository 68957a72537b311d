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
    final java.util.Map<Runnable, Long> delays = new java.util.IdentityHashMap<>();

    @Override
    public Scheduled schedule(long delayMillis, Runnable action) {
      due.add(action);
      delays.put(action, delayMillis);
      return () -> due.remove(action);
    }

    /** Fires the timers scheduled with at most {@code delayMillis}. */
    void fireUpTo(long delayMillis) {
      List<Runnable> firing = due.stream().filter(action -> delays.get(action) <= delayMillis)
          .toList();
      due.removeAll(firing);
      firing.forEach(Runnable::run);
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

  // ---------------------------------------------------------------- failing over fast

  /** Two partitions: entities "P0/x" in 0, "P1/x" in 1 (by type name). */
  private static int partitionOf(EntityId entity) {
    return entity.type().equals("P1") ? 1 : 0;
  }

  private static final EntityId IN_0 = EntityId.parse("P0/a");
  private static final EntityId IN_1 = EntityId.parse("P1/b");

  /** A table over two partitions whose sends are recorded, probes included. */
  private static final class Failover {
    final ManualTimers timers = new ManualTimers();
    final RemoteReplies replies = new RemoteReplies(100, timers, RemoteRepliesTest::partitionOf,
        2, 10_000, 250, Long.MAX_VALUE, 2);
    final List<String> sent = new ArrayList<>();
    final List<EntityId> probed = new ArrayList<>();

    Failover() {
      replies.useProbe(probed::add);
    }

    CompletableFuture<TurnResult> send(RemoteReplies.Kind kind, long id, EntityId entity) {
      return replies.send(kind, id, entity, 30_000, () -> sent.add(kind + " " + id));
    }

    /** Node 2 hosts partition 0, node 3 partition 1 (they answered). */
    void learnHosts() {
      send(RemoteReplies.Kind.READ, 1000, IN_0);
      send(RemoteReplies.Kind.READ, 1001, IN_1);
      replies.answer(RemoteReplies.Kind.READ, 1000, IN_0, done(1), 2);
      replies.answer(RemoteReplies.Kind.READ, 1001, IN_1, done(1), 3);
      sent.clear();
    }
  }

  @Test
  void aTurnWaitingOnAMemberDeclaredDownIsAnsweredAtOnceAsATimeout() {
    Failover table = new Failover();
    table.learnHosts();
    CompletableFuture<TurnResult> onTheDead = table.send(RemoteReplies.Kind.TURN, 7, IN_0);
    CompletableFuture<TurnResult> onALiveOne = table.send(RemoteReplies.Kind.TURN, 8, IN_1);
    assertEquals(List.of("TURN 7", "TURN 8"), table.sent);
    table.replies.memberDowned(2);
    ExecutionException lost =
        org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class, onTheDead::get);
    // A timeout (the member may have applied it: outcome_unknown), but now, not in 30 s.
    assertInstanceOf(RemoteReplies.MemberLostException.class, lost.getCause());
    assertInstanceOf(TimeoutException.class, lost.getCause());
    assertFalse(onALiveOne.isDone(), "a caller waiting on a live member keeps waiting");
    assertEquals(1, table.replies.answeredAtDowning());
    assertEquals(1, table.replies.pendingCount());
  }

  @Test
  void aReadWaitingOnALostMemberIsSentAgainToTheNewHome() throws Exception {
    Failover table = new Failover();
    table.learnHosts();
    CompletableFuture<TurnResult> read = table.send(RemoteReplies.Kind.READ, 9, IN_0);
    table.replies.memberUnreachable(2);
    table.replies.memberDowned(2);
    assertFalse(read.isDone());
    assertEquals(List.of("READ 9"), table.sent);
    table.replies.memberRemoved(2);
    // The partition moves: reads go (sharding buffers them until the new home runs).
    assertEquals(List.of("READ 9", "READ 9"), table.sent);
    table.replies.answer(RemoteReplies.Kind.READ, 9, IN_0, done(4), 3);
    assertEquals(4, assertInstanceOf(TurnResult.Done.class, read.get()).version());
  }

  @Test
  void aTurnForAPartitionWithoutALiveHomeIsHeldUnsentAndGoesOnceTheNewHomeAnswers()
      throws Exception {
    Failover table = new Failover();
    table.learnHosts();
    table.replies.memberUnreachable(2);
    CompletableFuture<TurnResult> held = table.send(RemoteReplies.Kind.TURN, 7, IN_0);
    CompletableFuture<TurnResult> other = table.send(RemoteReplies.Kind.TURN, 8, IN_1);
    assertEquals(List.of("TURN 8"), table.sent, "only the turn whose partition has a live home");
    table.replies.memberDowned(2);
    assertFalse(held.isDone(), "a held turn was never sent: nothing to answer at the downing");
    table.replies.memberRemoved(2);
    // Moving: the turn still waits, and a read of its entity probes for the new home.
    assertEquals(List.of("TURN 8"), table.sent);
    table.timers.fireUpTo(0);
    assertEquals(List.of(IN_0), table.probed);
    table.timers.fireUpTo(250);
    assertEquals(List.of(IN_0), table.probed, "the tick schedules the next probe");
    table.timers.fireUpTo(0);
    assertEquals(List.of(IN_0, IN_0), table.probed, "probed again while the turn waits");
    table.replies.expect(RemoteReplies.Kind.READ, 77, IN_0, 30_000);
    table.replies.answer(RemoteReplies.Kind.READ, 77, IN_0, done(2), 3);
    assertEquals(List.of("TURN 8", "TURN 7"), table.sent, "the new home answered: the turn goes");
    table.replies.answer(RemoteReplies.Kind.TURN, 7, IN_0, done(5), 3);
    assertEquals(5, assertInstanceOf(TurnResult.Done.class, held.get()).version());
    assertFalse(other.isDone());
    // Settled again: the next turn goes at once.
    table.send(RemoteReplies.Kind.TURN, 10, IN_0);
    assertEquals(List.of("TURN 8", "TURN 7", "TURN 10"), table.sent);
  }

  @Test
  void aTurnHeldPastTheRehomingWaitIsRefusedUnavailableNeverSent() {
    Failover table = new Failover();
    table.learnHosts();
    table.replies.memberUnreachable(2);
    CompletableFuture<TurnResult> held = table.send(RemoteReplies.Kind.TURN, 7, IN_0);
    table.timers.fireAll();
    ExecutionException refusedLater =
        org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class, held::get);
    assertEquals(ErrorCode.UNAVAILABLE,
        assertInstanceOf(TroupeException.class, refusedLater.getCause()).code());
    assertTrue(table.sent.isEmpty());
    assertEquals(1, table.replies.heldTooLong());
    assertEquals(0, table.replies.pendingCount());
  }

  @Test
  void aMemberReachableAgainGetsWhatWaitedForIt() {
    Failover table = new Failover();
    table.learnHosts();
    table.replies.memberUnreachable(2);
    CompletableFuture<TurnResult> held = table.send(RemoteReplies.Kind.TURN, 7, IN_0);
    assertTrue(table.sent.isEmpty());
    table.replies.memberReachable(2);
    assertEquals(List.of("TURN 7"), table.sent);
    assertFalse(held.isDone());
  }

  /**
   * The bench's 30 s failover (kills 1 and 2 of `bench failover`): a survivor that never had an
   * answer from a partition sent writes into the dead member without knowing it, and they waited
   * for the pending-reply timeout. Now, while a member is unreachable, the partitions of such
   * callers are probed: a live home answers (its caller keeps waiting), an unanswered probe marks
   * the partition as the lost member's, and its callers are answered at the downing.
   */
  @Test
  void aTurnSentWithoutKnowingItsHomeIsAnsweredAtTheDowningWhenItsProbeWentUnanswered() {
    Failover table = new Failover();
    CompletableFuture<TurnResult> onTheDead = table.send(RemoteReplies.Kind.TURN, 7, IN_0);
    CompletableFuture<TurnResult> onALiveOne = table.send(RemoteReplies.Kind.TURN, 8, IN_1);
    assertEquals(List.of("TURN 7", "TURN 8"), table.sent, "no member in trouble: sent");
    table.replies.memberUnreachable(2);
    table.timers.fireUpTo(0);
    assertEquals(java.util.Set.of(IN_0, IN_1), java.util.Set.copyOf(table.probed),
        "both homes unknown: both probed");
    table.replies.expect(RemoteReplies.Kind.READ, 78, IN_1, 30_000);
    table.replies.answer(RemoteReplies.Kind.READ, 78, IN_1, done(2), 3);
    table.replies.memberDowned(2);
    ExecutionException lost =
        org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class, onTheDead::get);
    assertInstanceOf(RemoteReplies.MemberLostException.class, lost.getCause());
    assertFalse(onALiveOne.isDone(), "its partition answered from node 3: it waits there");
    assertEquals(1, table.replies.answeredAtDowning());
  }

  /**
   * While a member is in trouble a turn for a partition of unknown home is held (it may be the
   * lost member's) and probed; a live home's answer sends it (a round trip later), and a lost
   * member's partition gets its turns after the removal, once the new home answers a probe.
   */
  @Test
  void whileAMemberIsInTroubleATurnOfUnknownHomeWaitsForAProbesAnswer() throws Exception {
    Failover table = new Failover();
    table.replies.memberUnreachable(2);
    CompletableFuture<TurnResult> live = table.send(RemoteReplies.Kind.TURN, 7, IN_1);
    CompletableFuture<TurnResult> lost = table.send(RemoteReplies.Kind.TURN, 8, IN_0);
    assertTrue(table.sent.isEmpty(), "held, never sent into the member in trouble");
    table.timers.fireUpTo(0);
    assertEquals(List.of(IN_1, IN_0), table.probed);
    table.replies.expect(RemoteReplies.Kind.READ, 77, IN_1, 30_000);
    table.replies.answer(RemoteReplies.Kind.READ, 77, IN_1, done(2), 3);
    assertEquals(List.of("TURN 7"), table.sent, "a live home answered: the turn goes");
    table.replies.memberDowned(2);
    assertFalse(lost.isDone(), "held, never sent: nothing to answer at the downing");
    table.replies.memberRemoved(2);
    assertEquals(List.of("TURN 7"), table.sent, "the unanswered partition moves: still waits");
    table.timers.fireUpTo(250);
    table.timers.fireUpTo(0);
    assertEquals(IN_0, table.probed.get(table.probed.size() - 1), "probed while it waits");
    table.replies.expect(RemoteReplies.Kind.READ, 79, IN_0, 30_000);
    table.replies.answer(RemoteReplies.Kind.READ, 79, IN_0, done(3), 1);
    assertEquals(List.of("TURN 7", "TURN 8"), table.sent, "the new home answered: it goes");
    table.replies.answer(RemoteReplies.Kind.TURN, 8, IN_0, done(4), 1);
    assertEquals(4, assertInstanceOf(TurnResult.Done.class, lost.get()).version());
    assertFalse(live.isDone());
    // Settled: the next turn goes at once.
    table.send(RemoteReplies.Kind.TURN, 10, IN_0);
    assertEquals(List.of("TURN 7", "TURN 8", "TURN 10"), table.sent);
  }

  /** A member reachable again releases the turns of unknown home held while it was unreachable. */
  @Test
  void aMemberReachableAgainReleasesTheTurnsOfUnknownHomeHeldMeanwhile() {
    Failover table = new Failover();
    table.replies.memberUnreachable(2);
    CompletableFuture<TurnResult> held = table.send(RemoteReplies.Kind.TURN, 7, IN_0);
    assertTrue(table.sent.isEmpty());
    table.replies.memberReachable(2);
    assertEquals(List.of("TURN 7"), table.sent, "nobody in trouble: sent through sharding");
    assertFalse(held.isDone());
  }

  /** A member that leaves (no unreachability, nothing probed) answers nobody it cannot have had. */
  @Test
  void aLeaveAnswersNoCallerWhosePartitionsHomeWasNeverLearned() {
    Failover table = new Failover();
    CompletableFuture<TurnResult> unknown = table.send(RemoteReplies.Kind.TURN, 7, IN_0);
    table.replies.memberRemoved(2);
    assertFalse(unknown.isDone(), "not known to wait on the member that left: its timeout applies");
    assertEquals(0, table.replies.answeredAtDowning());
  }

  @Test
  void aTurnRefusedNotOwnerByAHostHandingOffGoesAgainToTheNewHome() throws Exception {
    Failover table = new Failover();
    table.learnHosts();
    CompletableFuture<TurnResult> turn = table.send(RemoteReplies.Kind.TURN, 7, IN_0);
    table.replies.answer(RemoteReplies.Kind.TURN, 7, IN_0, new TurnResult.Failed(
        new TroupeException(ErrorCode.NOT_OWNER, "handed off")), 2);
    assertFalse(turn.isDone(), "not_owner: nothing was done, so it is not the caller's answer");
    table.timers.fireUpTo(0);
    assertEquals(List.of(IN_0), table.probed, "the moving partition is probed");
    table.replies.expect(RemoteReplies.Kind.READ, 77, IN_0, 30_000);
    table.replies.answer(RemoteReplies.Kind.READ, 77, IN_0, done(2), 3);
    assertEquals(List.of("TURN 7", "TURN 7"), table.sent);
    table.replies.answer(RemoteReplies.Kind.TURN, 7, IN_0, done(6), 3);
    assertEquals(6, assertInstanceOf(TurnResult.Done.class, turn.get()).version());
    assertEquals(1, table.replies.rerouted());
  }

  @Test
  void aStepRefusedNotOwnerIsAnsweredNotRerouted() throws Exception {
    Failover table = new Failover();
    table.learnHosts();
    CompletableFuture<TurnResult> step = table.send(RemoteReplies.Kind.STEP, 7, IN_0);
    table.replies.answer(RemoteReplies.Kind.STEP, 7, IN_0, new TurnResult.Failed(
        new TroupeException(ErrorCode.NOT_OWNER, "handed off")), 2);
    assertInstanceOf(TurnResult.Failed.class, step.get());
  }

  @Test
  void aTurnWaitingOnAMemberThatLeftIsAnsweredWhenItIsRemoved() {
    Failover table = new Failover();
    table.learnHosts();
    CompletableFuture<TurnResult> turn = table.send(RemoteReplies.Kind.TURN, 7, IN_0);
    table.replies.memberRemoved(2);
    ExecutionException lost =
        org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class, turn::get);
    assertInstanceOf(RemoteReplies.MemberLostException.class, lost.getCause());
  }

  private static void assertOverloaded(CompletableFuture<TurnResult> future) {
    ExecutionException failed =
        org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class, future::get);
    assertEquals(ErrorCode.OVERLOADED,
        assertInstanceOf(TroupeException.class, failed.getCause()).code());
  }

  /**
   * A read whose answer does not come (sharding dropped it during a hand-off) is sent again every
   * read resend interval until its timeout, and the answer to any send completes it; a turn is
   * never sent twice.
   */
  @Test
  void anUnansweredReadIsSentAgainWithinItsTimeoutATurnIsNot() throws Exception {
    ManualTimers timers = new ManualTimers();
    RemoteReplies replies = new RemoteReplies(100, timers, RemoteRepliesTest::partitionOf, 2,
        10_000, 250, 2_000, 2);
    List<String> sent = new ArrayList<>();
    CompletableFuture<TurnResult> read =
        replies.send(RemoteReplies.Kind.READ, 1, IN_0, 5_000, () -> sent.add("READ 1"));
    CompletableFuture<TurnResult> turn =
        replies.send(RemoteReplies.Kind.TURN, 2, IN_1, 5_000, () -> sent.add("TURN 2"));
    assertEquals(List.of("READ 1", "TURN 2"), sent);
    timers.fireUpTo(2_000);
    assertEquals(List.of("READ 1", "TURN 2", "READ 1"), sent, "the read went again");
    timers.fireUpTo(2_000);
    assertEquals(List.of("READ 1", "TURN 2", "READ 1", "READ 1"), sent);
    assertEquals(2, replies.readsResent());
    assertFalse(read.isDone());
    replies.answer(RemoteReplies.Kind.READ, 1, IN_0, done(5), 2);
    assertEquals(5, assertInstanceOf(TurnResult.Done.class, read.get()).version());
    timers.fireAll();
    assertEquals(4, sent.size(), "the turn was sent once");
    ExecutionException timedOut =
        org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class, turn::get);
    assertInstanceOf(TimeoutException.class, timedOut.getCause());

    // Past its timeout (5 s: two resends at 2 s, then the last 1 s) an unanswered read fails.
    CompletableFuture<TurnResult> lost =
        replies.send(RemoteReplies.Kind.READ, 3, IN_0, 5_000, () -> sent.add("READ 3"));
    timers.fireUpTo(2_000);
    timers.fireUpTo(2_000);
    assertFalse(lost.isDone());
    timers.fireUpTo(1_000);
    ExecutionException gaveUp =
        org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class, lost::get);
    assertInstanceOf(TimeoutException.class, gaveUp.getCause());
    assertEquals(3, sent.stream().filter("READ 3"::equals).count());
  }
}
