package dev.troupe.txn.entity;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.TroupeException;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.time.TransactionIds;
import dev.troupe.txn.Mutations;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnLimits;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.entity.EntityTurnCore.Effect;
import dev.troupe.txn.entity.EntityTurnCore.Input;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The participant side of two-phase commit over a network that loses, duplicates and reorders:
 * duplicate prepares, forwards and decisions, and parts in doubt that ask.
 */
class ParticipantOverANetworkTest {
  private static final EntityId ENTITY = new EntityId("Hot", "h1");
  private static final TurnLimits LIMITS = new TurnLimits(100, 100, 4, 10);
  private static final EntityTurnCore.ParticipantLimits PARTICIPANT =
      new EntityTurnCore.ParticipantLimits(100, 2);
  private static final CompiledType SERIAL = CompiledType.compile(SpecParser.parse("Hot", """
      {"admission": "serial", "keys": {"a": {"kind": "counter"}}}
      """.getBytes(StandardCharsets.UTF_8), false));
  /** A transaction id issued by node 5. */
  private static final long ID = (1L << 16) | 5;

  private static EntityTurnCore<String> core(Mutations.Mutation... mutations) {
    return new EntityTurnCore<>(ENTITY, EntityState.ABSENT, LIMITS, PARTICIPANT, 1,
        Set.of(mutations));
  }

  private static List<Effect<String>> prepare(EntityTurnCore<String> core, long id) {
    return core.handle(new Input.PrepareRequested<>(id, id,
        List.of(new Turn.IncrementKey("a", 3)), false, SERIAL, "vote-" + id));
  }

  /** Prepared, voted yes. */
  private static EntityTurnCore<String> prepared(Mutations.Mutation... mutations) {
    EntityTurnCore<String> core = core(mutations);
    prepare(core, ID);
    List<Effect<String>> voted = core.handle(new Input.PrepareSucceeded<>(ID));
    assertEquals(new Effect.ScheduleInDoubtQuery<String>(ID, 100), only(voted,
        Effect.ScheduleInDoubtQuery.class), "a part that voted yes watches for its decision");
    return core;
  }

  private static <T> List<T> all(List<Effect<String>> effects, Class<T> kind) {
    return effects.stream().filter(kind::isInstance).map(kind::cast).toList();
  }

  private static <T> T only(List<Effect<String>> effects, Class<T> kind) {
    List<T> found = all(effects, kind);
    assertEquals(1, found.size(), kind.getSimpleName() + " in " + effects);
    return found.get(0);
  }

  @Test
  void aDuplicatePrepareIsAnsweredWithTheSameVoteNotARefusal() {
    EntityTurnCore<String> core = prepared();
    Effect.Reply<String> again = only(prepare(core, ID), Effect.Reply.class);
    assertEquals("vote-" + ID, again.replyTo());
    TurnResult.Done yes = assertInstanceOf(TurnResult.Done.class, again.result());
    assertTrue(yes.wrote());
    assertEquals(1, core.openTransactions(), "still one part");
  }

  @Test
  void aDuplicatePrepareBeforeTheVoteIsIgnored() {
    EntityTurnCore<String> core = core();
    prepare(core, ID);
    assertTrue(prepare(core, ID).isEmpty(), "its vote is still to come");
    only(core.handle(new Input.PrepareSucceeded<>(ID)), Effect.Reply.class);
  }

  @Test
  void aDuplicateCommitIsAcknowledgedAgainAndAppliedOnce() {
    EntityTurnCore<String> core = prepared();
    List<Effect<String>> decided = core.handle(new Input.DecisionReceived<>(ID, true, "ack"));
    only(decided, Effect.SubmitCommit.class);
    // A duplicate before the commit is durable: no second commit, answered once it is.
    assertTrue(core.handle(new Input.DecisionReceived<>(ID, true, "ack")).isEmpty());
    List<Effect<String>> durable = core.handle(new Input.CommitSucceeded<>(1, 100));
    List<Effect.Reply> acknowledgements = all(durable, Effect.Reply.class);
    assertEquals(2, acknowledgements.size());
    TurnResult first = acknowledgements.get(0).result();
    assertEquals(first, acknowledgements.get(1).result());
    assertEquals(100, ((TurnResult.Done) first).version());
    // A resend after that: the same acknowledgement at once, nothing applied.
    List<Effect<String>> resent = core.handle(new Input.DecisionReceived<>(ID, true, "ack"));
    assertTrue(all(resent, Effect.SubmitCommit.class).isEmpty());
    assertEquals(first, only(resent, Effect.Reply.class).result());
  }

  @Test
  void aForgottenCommitIsAcknowledgedAsUnknownNeverAppliedNorAnInvariantViolation() {
    EntityTurnCore<String> core = core();
    List<Effect<String>> effects = core.handle(new Input.DecisionReceived<>(ID, true, "ack"));
    assertTrue(all(effects, Effect.SubmitCommit.class).isEmpty());
    TurnResult.Failed unknown =
        assertInstanceOf(TurnResult.Failed.class, only(effects, Effect.Reply.class).result());
    assertEquals(ErrorCode.OUTCOME_UNKNOWN, unknown.error().code());
  }

  @Test
  void theMemoryOfCommitsIsBounded() {
    EntityTurnCore<String> core = core();
    long serial = 0;
    for (long id = 10; id < 13; id++) {
      prepare(core, id);
      core.handle(new Input.PrepareSucceeded<>(id));
      core.handle(new Input.DecisionReceived<>(id, true, "ack"));
      core.handle(new Input.CommitSucceeded<>(++serial, 100 + id));
    }
    // Two remembered (the limit): the oldest is forgotten, and acknowledged as unknown.
    assertInstanceOf(TurnResult.Done.class, only(core.handle(
        new Input.DecisionReceived<>(12, true, "ack")), Effect.Reply.class).result());
    assertInstanceOf(TurnResult.Failed.class, only(core.handle(
        new Input.DecisionReceived<>(10, true, "ack")), Effect.Reply.class).result());
  }

  @Test
  void aBrokenParticipantAppliesADuplicateCommitTwice() {
    EntityTurnCore<String> core = prepared(Mutations.Mutation.APPLY_DUPLICATE_DECISION);
    core.handle(new Input.DecisionReceived<>(ID, true, "ack"));
    core.handle(new Input.CommitSucceeded<>(1, 100));
    only(core.handle(new Input.DecisionReceived<>(ID, true, "ack")), Effect.SubmitCommit.class);
  }

  @Test
  void aPrepareOfACommittedTransactionIsRefused() {
    EntityTurnCore<String> core = prepared();
    core.handle(new Input.DecisionReceived<>(ID, true, "ack"));
    core.handle(new Input.CommitSucceeded<>(1, 100));
    List<Effect<String>> late = prepare(core, ID);
    assertTrue(all(late, Effect.SubmitPrepare.class).isEmpty(), "never prepared twice");
    assertInstanceOf(TurnResult.Failed.class, only(late, Effect.Reply.class).result());
    assertEquals(0, core.openTransactions());
  }

  @Test
  void anAbortOfACommittedTransactionIsAViolation() {
    EntityTurnCore<String> core = prepared();
    core.handle(new Input.DecisionReceived<>(ID, true, "ack"));
    assertThrows(Invariants.InvariantViolation.class,
        () -> core.handle(new Input.DecisionReceived<>(ID, false, null)));
  }

  @Test
  void aDuplicateAbortIsAcknowledgedAgain() {
    EntityTurnCore<String> core = prepared();
    only(core.handle(new Input.DecisionReceived<>(ID, false, "ack")), Effect.AbandonPrepared.class);
    List<Effect<String>> again = core.handle(new Input.DecisionReceived<>(ID, false, "ack"));
    assertTrue(all(again, Effect.AbandonPrepared.class).isEmpty());
    only(again, Effect.Reply.class);
  }

  @Test
  void aPartInDoubtAsksTheCoordinatorsNodeUntilItHearsTheDecision() {
    EntityTurnCore<String> core = prepared();
    List<Effect<String>> due = core.handle(new Input.InDoubtQueryDue<>(ID));
    assertEquals(new Effect.QueryDecision<String>(ID, 5), only(due, Effect.QueryDecision.class));
    assertEquals(5, TransactionIds.nodeOf(ID));
    only(due, Effect.ScheduleInDoubtQuery.class); // "undecided": it asks again
    // The answer: abort, learned by asking (nobody to acknowledge to).
    assertTrue(core.awaitsDecision(ID));
    List<Effect<String>> answered = core.handle(new Input.DecisionAnswered<>(ID, false));
    only(answered, Effect.AbandonPrepared.class);
    assertTrue(!core.awaitsDecision(ID));
    assertTrue(all(answered, Effect.Reply.class).isEmpty());
    assertTrue(core.handle(new Input.InDoubtQueryDue<>(ID)).isEmpty(), "decided: no more questions");
  }

  @Test
  void aCommitLearnedByAskingIsAppliedAndItsResendAcknowledged() {
    EntityTurnCore<String> core = prepared();
    List<Effect<String>> answered = core.handle(new Input.DecisionAnswered<>(ID, true));
    only(answered, Effect.SubmitCommit.class);
    assertTrue(all(core.handle(new Input.CommitSucceeded<>(1, 100)), Effect.Reply.class).isEmpty(),
        "nobody awaits a commit learned by asking");
    assertInstanceOf(TurnResult.Done.class, only(core.handle(
        new Input.DecisionReceived<>(ID, true, "ack")), Effect.Reply.class).result());
  }

  /**
   * Found by the shared-store simulator: a commit learned by asking that the store then refuses
   * (a fenced partition: {@code not_owner}) or fails answers nobody, as when it succeeds; before
   * the fix the core emitted a reply to nobody, which the actor's shell could not deliver.
   */
  @Test
  void aCommitLearnedByAskingThatTheStoreRefusesOrFailsAnswersNobody() {
    for (boolean refusedBeforeWrite : new boolean[] {true, false}) {
      EntityTurnCore<String> core = prepared();
      only(core.handle(new Input.DecisionAnswered<>(ID, true)), Effect.SubmitCommit.class);
      List<Effect<String>> failed = core.handle(new Input.CommitFailed<>(1,
          new TroupeException(ErrorCode.NOT_OWNER, "fenced"), refusedBeforeWrite));
      for (Effect.Reply<?> reply : all(failed, Effect.Reply.class)) {
        assertNotNull(reply.replyTo(), "a reply to nobody in " + failed);
      }
    }
  }

  /**
   * Cluster simulator seed 331: the question crossed the commit; the coordinator was acknowledged
   * by every participant, forgot the decision, and its node presumed abort. The answer is stale:
   * the part committed here stays committed (before the fix the core tripped its invariant "abort
   * ... which committed here"), and asks nothing more.
   */
  @Test
  void aPresumedAbortAnswerThatCrossedTheCommitIsIgnored() {
    EntityTurnCore<String> core = prepared();
    only(core.handle(new Input.InDoubtQueryDue<>(ID)), Effect.QueryDecision.class);
    only(core.handle(new Input.DecisionReceived<>(ID, true, "ack")), Effect.SubmitCommit.class);
    core.handle(new Input.CommitSucceeded<>(1, 100));
    assertTrue(!core.awaitsDecision(ID));
    assertTrue(core.handle(new Input.DecisionAnswered<>(ID, false)).isEmpty(),
        "a stale presumed abort changes nothing");
    assertTrue(core.handle(new Input.DecisionAnswered<>(ID, true)).isEmpty());
    assertInstanceOf(TurnResult.Done.class, only(core.handle(
        new Input.DecisionReceived<>(ID, true, "ack")), Effect.Reply.class).result(),
        "still remembered as committed");
    // A real abort decision of the committed part is still a violation.
    assertThrows(Invariants.InvariantViolation.class,
        () -> core.handle(new Input.DecisionReceived<>(ID, false, null)));
  }

  @Test
  void anAnswerAboutAPartUnknownHereIsIgnored() {
    EntityTurnCore<String> core = core();
    assertTrue(core.handle(new Input.DecisionAnswered<>(ID, false)).isEmpty());
    // Not remembered as aborted either: nothing was decided here.
    assertEquals(0, all(prepare(core, ID), Effect.Reply.class).size());
  }

  @Test
  void aBrokenParticipantPresumesCommitInsteadOfAsking() {
    EntityTurnCore<String> core = prepared(Mutations.Mutation.PRESUME_COMMIT_IN_DOUBT);
    List<Effect<String>> due = core.handle(new Input.InDoubtQueryDue<>(ID));
    assertTrue(all(due, Effect.QueryDecision.class).isEmpty());
    only(due, Effect.SubmitCommit.class);
  }

  @Test
  void aDuplicateOrStaleForwardsIsNotEvaluatedAgain() {
    EntityTurnCore<String> core = prepared();
    // Round 2: evaluate again with the forwards (none here), prepare again, vote.
    List<Effect<String>> round2 = core.handle(
        new Input.ForwardsReceived<>(ID, List.of(), "vote2-" + ID, 2));
    only(round2, Effect.SubmitPrepare.class);
    assertTrue(core.handle(new Input.ForwardsReceived<>(ID, List.of(), "vote2-" + ID, 2))
        .isEmpty(), "a duplicate while it prepares again: its vote is still to come");
    only(core.handle(new Input.PrepareSucceeded<>(ID)), Effect.Reply.class);
    assertEquals("vote2-" + ID, only(core.handle(
        new Input.ForwardsReceived<>(ID, List.of(), "vote2-" + ID, 2)), Effect.Reply.class)
        .replyTo(), "a duplicate after it voted: the same vote again");
    assertTrue(core.handle(new Input.ForwardsReceived<>(ID, List.of(), "vote1-" + ID, 1))
        .isEmpty(), "an older round: nothing");
  }

  @Test
  void aPartRecoveredInDoubtHoldsTheEntityAsksAndAppliesItsDecision() {
    EntityTurnCore<String> core = core();
    List<dev.troupe.model.Operation> operations =
        List.of(new dev.troupe.model.Operation.Increment("a", 5));
    List<Effect<String>> adopted =
        core.handle(new Input.PreparedPartRecovered<>(ID, operations, SERIAL));
    only(adopted, Effect.ScheduleInDoubtQuery.class);
    assertEquals(1, core.openTransactions());
    assertTrue(core.handle(new Input.TurnRequested<>(new Turn.IncrementKey("a", 1), SERIAL, 99,
        "turn")).isEmpty(), "a turn waits: the part holds the entity");
    only(core.handle(new Input.InDoubtQueryDue<>(ID)), Effect.QueryDecision.class);
    List<Effect<String>> committed = core.handle(new Input.DecisionReceived<>(ID, true, null));
    List<Effect.SubmitCommit> commits = all(committed, Effect.SubmitCommit.class);
    assertEquals(2, commits.size(), "its commit, then the waiting turn");
    assertEquals(operations, commits.get(0).operations());
    assertTrue(commits.get(0).resolvesPrepared());
  }

  @Test
  void aPartRecoveredInDoubtIsAbandonedOnAbort() {
    EntityTurnCore<String> core = core();
    core.handle(new Input.PreparedPartRecovered<>(ID,
        List.of(new dev.troupe.model.Operation.Increment("a", 5)), SERIAL));
    only(core.handle(new Input.DecisionReceived<>(ID, false, null)), Effect.AbandonPrepared.class);
    assertEquals(0, core.openTransactions());
  }
}
