package dev.troupe.txn.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.TroupeException;
import dev.troupe.txn.Mutations;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.coordinator.CoordinatorCore.Effect;
import dev.troupe.txn.coordinator.CoordinatorCore.Input;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The coordinator's two-phase commit with presumed abort, retries and timeouts. */
class CoordinatorCoreTest {
  private static final EntityId A = new EntityId("Account", "a");
  private static final EntityId B = new EntityId("Account", "b");
  private static final CoordinatorCore.Limits LIMITS = new CoordinatorCore.Limits(1000, 2, 5);

  private static CoordinatorCore coordinator() {
    Map<EntityId, CoordinatorCore.Part> parts = new LinkedHashMap<>();
    parts.put(A, new CoordinatorCore.Part(List.of(new Turn.IncrementKey("n", -1)), false));
    parts.put(B, new CoordinatorCore.Part(List.of(new Turn.IncrementKey("n", 1)), true));
    return new CoordinatorCore(parts, LIMITS);
  }

  private static TurnResult yes(long version) {
    return new TurnResult.Done(version, EntityState.ABSENT, true);
  }

  private static TurnResult no(String reason) {
    return new TurnResult.Failed(new TroupeException(ErrorCode.ABORTED, reason, "no"));
  }

  @Test
  void commitIsSentOnlyAfterTheDecisionIsDurableAndAnsweredAfterEveryAcknowledgement() {
    CoordinatorCore core = coordinator();
    List<Effect> started = core.handle(new Input.Started(10));
    assertEquals(List.of(
        new Effect.SendPrepare(A, 10, 10, new CoordinatorCore.Part(List.of(new Turn.IncrementKey("n", -1)), false)),
        new Effect.SendPrepare(B, 10, 10, new CoordinatorCore.Part(List.of(new Turn.IncrementKey("n", 1)), true)),
        new Effect.SchedulePrepareTimeout(10, 1000)), started);
    assertTrue(core.handle(new Input.VoteReceived(A, 10, yes(3))).isEmpty());
    assertEquals(List.of(new Effect.PersistDecision(10, List.of(A, B))),
        core.handle(new Input.VoteReceived(B, 10, yes(4))));
    assertEquals(List.of(new Effect.SendDecision(A, 10, true), new Effect.SendDecision(B, 10, true),
        new Effect.ScheduleDecisionResend(10, 1000)),
        core.handle(new Input.DecisionPersisted(null, false)));
    assertTrue(core.handle(new Input.Acknowledged(A, 10,
        new TurnResult.Done(20, EntityState.ABSENT, true, 3))).isEmpty());
    assertTrue(core.handle(new Input.PrepareTimedOut(10)).isEmpty(), "a late timeout is ignored");
    List<Effect> done = core.handle(new Input.Acknowledged(B, 10, yes(21)));
    assertEquals(new Effect.ForgetDecision(10, List.of(A, B)), done.get(0));
    CoordinatorCore.Outcome.Committed committed = assertInstanceOf(
        CoordinatorCore.Outcome.Committed.class, ((Effect.Reply) done.get(1)).outcome());
    assertEquals(3, committed.results().get(A).readVersion());
    assertEquals(20, committed.results().get(A).version());
    assertEquals(21, committed.results().get(B).version());
    assertInstanceOf(Effect.Finished.class, done.get(2));
  }

  @Test
  void aNoVoteAbortsEverywhereWithoutADecisionRecord() {
    CoordinatorCore core = coordinator();
    core.handle(new Input.Started(10));
    core.handle(new Input.VoteReceived(A, 10, yes(3)));
    List<Effect> aborted = core.handle(new Input.VoteReceived(B, 10,
        new TurnResult.Failed(new TroupeException(ErrorCode.PRECONDITION_FAILED, "balance"))));
    assertEquals(new Effect.SendDecision(A, 10, false), aborted.get(0));
    assertEquals(new Effect.SendDecision(B, 10, false), aborted.get(1));
    TroupeException error = ((CoordinatorCore.Outcome.Failed) ((Effect.Reply) aborted.get(2))
        .outcome()).error();
    assertEquals(ErrorCode.ABORTED, error.code());
    assertEquals(TransactionAbort.PRECONDITION_FAILED, error.reason());
    assertTrue(aborted.stream().noneMatch(effect -> effect instanceof Effect.PersistDecision));
  }

  @Test
  void aLockConflictIsRetriedWithTheSameAgeThenGivenUp() {
    CoordinatorCore core = coordinator();
    core.handle(new Input.Started(10));
    List<Effect> first = core.handle(new Input.VoteReceived(A, 10, no(TransactionAbort.LOCK_CONFLICT)));
    assertEquals(new Effect.ScheduleRetry(5), first.get(first.size() - 1));
    assertTrue(core.handle(new Input.VoteReceived(B, 10, yes(1))).isEmpty(), "stale vote ignored");
    List<Effect> retry = core.handle(new Input.RetryDue(30));
    assertEquals(new Effect.SendPrepare(A, 30, 10, new CoordinatorCore.Part(
        List.of(new Turn.IncrementKey("n", -1)), false)), retry.get(0), "new id, first age");
    List<Effect> second = core.handle(new Input.VoteReceived(B, 30, no(TransactionAbort.LOCK_CONFLICT)));
    assertEquals(new Effect.ScheduleRetry(10), second.get(second.size() - 1), "backoff grows");
    core.handle(new Input.RetryDue(40));
    List<Effect> third = core.handle(new Input.VoteReceived(A, 40, no(TransactionAbort.LOCK_CONFLICT)));
    TroupeException error = ((CoordinatorCore.Outcome.Failed) third.stream()
        .filter(Effect.Reply.class::isInstance).map(Effect.Reply.class::cast).findFirst()
        .orElseThrow().outcome()).error();
    assertEquals(TransactionAbort.LOCK_CONFLICT, error.reason());
    assertEquals(3, core.lockConflicts());
  }

  @Test
  void aMissingVoteTimesOut() {
    CoordinatorCore core = coordinator();
    core.handle(new Input.Started(10));
    core.handle(new Input.VoteReceived(A, 10, yes(1)));
    List<Effect> timedOut = core.handle(new Input.PrepareTimedOut(10));
    TroupeException error = ((CoordinatorCore.Outcome.Failed) ((Effect.Reply) timedOut.get(2))
        .outcome()).error();
    assertEquals(TransactionAbort.TIMEOUT, error.reason());
  }

  @Test
  void anUnknownDecisionWriteIsReportedAsUnknownAndNothingIsSent() {
    CoordinatorCore core = coordinator();
    core.handle(new Input.Started(10));
    core.handle(new Input.VoteReceived(A, 10, yes(1)));
    core.handle(new Input.VoteReceived(B, 10, yes(1)));
    List<Effect> unknown = core.handle(new Input.DecisionPersisted(
        new TroupeException(ErrorCode.OUTCOME_UNKNOWN, "disk"), true));
    assertEquals(2, unknown.size());
    TroupeException error = ((CoordinatorCore.Outcome.Failed) ((Effect.Reply) unknown.get(0))
        .outcome()).error();
    assertEquals(ErrorCode.OUTCOME_UNKNOWN, error.code());
  }

  @Test
  void aReadOnlyTransactionNeedsNoDecisionRecord() {
    Map<EntityId, CoordinatorCore.Part> parts = new LinkedHashMap<>();
    parts.put(A, new CoordinatorCore.Part(List.of(), true));
    CoordinatorCore core = new CoordinatorCore(parts, LIMITS);
    core.handle(new Input.Started(10));
    assertEquals(List.of(new Effect.SendDecision(A, 10, true),
        new Effect.ScheduleDecisionResend(10, 1000)), core.handle(new Input.VoteReceived(
        A, 10, new TurnResult.Done(7, EntityState.ABSENT, false))));
    List<Effect> done = core.handle(new Input.Acknowledged(A, 10,
        new TurnResult.Done(7, EntityState.ABSENT, false)));
    assertInstanceOf(CoordinatorCore.Outcome.Committed.class, ((Effect.Reply) done.get(0)).outcome());
  }

  @Test
  void theDecisionRecordNamesOnlyTheParticipantsThatWrote() {
    // A read-only participant holds no prepared record and commits no journal record: a decision
    // (and a replication log's decision entry) naming it would wait for a part that never comes.
    CoordinatorCore core = coordinator();
    core.handle(new Input.Started(10));
    core.handle(new Input.VoteReceived(A, 10, new TurnResult.Done(3, EntityState.ABSENT, false)));
    assertEquals(List.of(new Effect.PersistDecision(10, List.of(B))),
        core.handle(new Input.VoteReceived(B, 10, yes(4))));
    core.handle(new Input.DecisionPersisted(null, false));
    core.handle(new Input.Acknowledged(A, 10, new TurnResult.Done(3, EntityState.ABSENT, false)));
    List<Effect> done = core.handle(new Input.Acknowledged(B, 10, yes(21)));
    assertEquals(new Effect.ForgetDecision(10, List.of(B)), done.get(0),
        "forgotten where it was persisted: the same participants");
  }

  /** A coordinator whose commit decision is durable and sent, with no acknowledgement yet. */
  private static CoordinatorCore committing() {
    CoordinatorCore core = coordinator();
    core.handle(new Input.Started(10));
    core.handle(new Input.VoteReceived(A, 10, yes(3)));
    core.handle(new Input.VoteReceived(B, 10, yes(4)));
    core.handle(new Input.DecisionPersisted(null, false));
    return core;
  }

  @Test
  void theCommitIsResentToWhoeverHasNotAcknowledgedUntilEveryoneHas() {
    CoordinatorCore core = committing();
    assertEquals(List.of(new Effect.SendDecision(A, 10, true), new Effect.SendDecision(B, 10, true),
        new Effect.ScheduleDecisionResend(10, 1000)),
        core.handle(new Input.DecisionResendDue(10)), "nobody acknowledged: resent to both");
    core.handle(new Input.Acknowledged(A, 10, yes(20)));
    assertEquals(List.of(new Effect.SendDecision(B, 10, true),
        new Effect.ScheduleDecisionResend(10, 1000)),
        core.handle(new Input.DecisionResendDue(10)), "only to the one still silent");
    List<Effect> done = core.handle(new Input.Acknowledged(B, 10, yes(21)));
    assertInstanceOf(Effect.ForgetDecision.class, done.get(0), "forgotten only now");
    assertInstanceOf(CoordinatorCore.Outcome.Committed.class, ((Effect.Reply) done.get(1)).outcome());
    assertTrue(core.handle(new Input.DecisionResendDue(10)).isEmpty(), "the resends stop");
  }

  @Test
  void aCoordinatorBrokenToSkipResendsSchedulesNone() {
    Map<EntityId, CoordinatorCore.Part> parts = new LinkedHashMap<>();
    parts.put(A, new CoordinatorCore.Part(List.of(new Turn.IncrementKey("n", 1)), false));
    CoordinatorCore core = new CoordinatorCore(parts, LIMITS, false,
        java.util.Set.of(Mutations.Mutation.COORDINATOR_SKIPS_DECISION_RESEND));
    core.handle(new Input.Started(10));
    core.handle(new Input.VoteReceived(A, 10, yes(3)));
    assertEquals(List.of(new Effect.SendDecision(A, 10, true)),
        core.handle(new Input.DecisionPersisted(null, false)));
  }

  @Test
  void aDuplicateAcknowledgementCountsOnce() {
    CoordinatorCore core = committing();
    assertTrue(core.handle(new Input.Acknowledged(A, 10, yes(20))).isEmpty());
    assertTrue(core.handle(new Input.Acknowledged(A, 10, yes(20))).isEmpty(),
        "A twice is not A and B");
    assertTrue(core.handle(new Input.Acknowledged(A, 9, yes(20))).isEmpty(), "another attempt's");
    assertEquals(3, core.handle(new Input.Acknowledged(B, 10, yes(21))).size());
  }

  @Test
  void aDuplicateVoteIsIgnoredNotAnInvariantViolation() {
    CoordinatorCore core = coordinator();
    core.handle(new Input.Started(10));
    assertTrue(core.handle(new Input.VoteReceived(A, 10, yes(3))).isEmpty());
    assertTrue(core.handle(new Input.VoteReceived(A, 10, yes(3))).isEmpty(), "duplicate");
    assertTrue(core.handle(new Input.VoteReceived(A, 10, no("late"))).isEmpty(),
        "a second vote of the same round does not count either");
    assertEquals(List.of(new Effect.PersistDecision(10, List.of(A, B))),
        core.handle(new Input.VoteReceived(B, 10, yes(4))));
    assertTrue(core.handle(new Input.VoteReceived(B, 10, yes(4))).isEmpty(), "after the decision");
  }

  @Test
  void aLiveCoordinatorNeverSaysAbortWhileItMayStillCommit() {
    CoordinatorCore core = coordinator();
    assertEquals(CoordinatorCore.Knowledge.NOT_MINE, core.knowledgeOf(10));
    core.handle(new Input.Started(10));
    assertEquals(CoordinatorCore.Knowledge.UNDECIDED, core.knowledgeOf(10));
    core.handle(new Input.VoteReceived(A, 10, yes(3)));
    core.handle(new Input.VoteReceived(B, 10, yes(4)));
    assertEquals(CoordinatorCore.Knowledge.UNDECIDED, core.knowledgeOf(10), "writing the decision");
    core.handle(new Input.DecisionPersisted(null, false));
    assertEquals(CoordinatorCore.Knowledge.COMMITTED, core.knowledgeOf(10));
    assertEquals(CoordinatorCore.Knowledge.NOT_MINE, core.knowledgeOf(11));
  }

  @Test
  void anEarlierAttemptIsKnownAborted() {
    CoordinatorCore core = coordinator();
    core.handle(new Input.Started(10));
    core.handle(new Input.VoteReceived(A, 10, no(TransactionAbort.LOCK_CONFLICT)));
    assertEquals(CoordinatorCore.Knowledge.ABORTED, core.knowledgeOf(10), "waiting to retry");
    core.handle(new Input.RetryDue(30));
    assertEquals(CoordinatorCore.Knowledge.ABORTED, core.knowledgeOf(10));
    assertEquals(CoordinatorCore.Knowledge.UNDECIDED, core.knowledgeOf(30));
  }

  @Test
  void anUnknownDecisionWriteStaysUndecided() {
    CoordinatorCore core = coordinator();
    core.handle(new Input.Started(10));
    core.handle(new Input.VoteReceived(A, 10, yes(1)));
    core.handle(new Input.VoteReceived(B, 10, yes(1)));
    core.handle(new Input.DecisionPersisted(
        new TroupeException(ErrorCode.OUTCOME_UNKNOWN, "disk"), true));
    assertEquals(CoordinatorCore.Knowledge.UNDECIDED, core.knowledgeOf(10));
  }
}
