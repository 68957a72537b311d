package dev.troupe.txn.entity;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnLimits;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.entity.EntityTurnCore.Effect;
import dev.troupe.txn.entity.EntityTurnCore.Input;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The participant side of two-phase commit in the entity core: locks, votes, decisions. */
class ParticipantTest {
  private static final EntityId ENTITY = new EntityId("Hot", "h1");
  private static final TurnLimits LIMITS = new TurnLimits(100, 100, 4, 10);

  private static CompiledType type(String admission) {
    return CompiledType.compile(SpecParser.parse("Hot", ("""
        {"admission": "%s", "keys": {"a": {"kind": "counter"}, "b": {"kind": "counter"}},
         "actions": {"takeA": {"params": {"n": "int"}, "pre": ["a >= n"], "effect": {"a": "a - n"}}}}
        """.formatted(admission)).getBytes(StandardCharsets.UTF_8), false));
  }

  private final EntityTurnCore<String> core = new EntityTurnCore<>(ENTITY, EntityState.ABSENT, LIMITS, 1);

  private List<Effect<String>> prepare(long id, CompiledType type, Turn... turns) {
    return core.handle(new Input.PrepareRequested<>(id, id, List.of(turns), false, type, "vote-" + id));
  }

  private static <T> T only(List<Effect<String>> effects, Class<T> kind) {
    return effects.stream().filter(kind::isInstance).map(kind::cast).findFirst()
        .orElseThrow(() -> new AssertionError("no " + kind.getSimpleName() + " in " + effects));
  }

  @Test
  void votesYesOnlyOnceThePreparedRecordIsDurableAndCommitsOnTheDecision() {
    CompiledType serial = type("serial");
    Effect.SubmitPrepare<String> submit =
        only(prepare(5, serial, new Turn.IncrementKey("a", 3)), Effect.SubmitPrepare.class);
    assertEquals(5, submit.transactionId());
    // A turn on the locked entity waits (serial policy).
    assertTrue(core.handle(new Input.TurnRequested<>(new Turn.IncrementKey("b", 1), serial, 6, "turn"))
        .isEmpty());
    Effect.Reply<String> vote = only(core.handle(new Input.PrepareSucceeded<>(5)), Effect.Reply.class);
    assertEquals("vote-5", vote.replyTo());
    assertTrue(((TurnResult.Done) vote.result()).wrote());
    List<Effect<String>> decided = core.handle(new Input.DecisionReceived<>(5, true, "ack"));
    Effect.SubmitCommit<String> commit = only(decided, Effect.SubmitCommit.class);
    assertTrue(commit.resolvesPrepared());
    assertEquals(1, commit.serial());
    // The lock is released at submission: the waiting turn runs right behind the commit.
    assertEquals(2, decided.stream().filter(Effect.SubmitCommit.class::isInstance).count());
    List<Effect<String>> durable = core.handle(new Input.CommitSucceeded<>(1, 100));
    Effect.Reply<String> ack = only(durable, Effect.Reply.class);
    assertEquals("ack", ack.replyTo());
    assertEquals(100, ((TurnResult.Done) ack.result()).version());
    assertEquals(0, core.openTransactions());
  }

  @Test
  void waitDieAcrossTransactionsAndAbortReleases() {
    CompiledType serial = type("serial");
    prepare(10, serial, new Turn.IncrementKey("a", 1));
    core.handle(new Input.PrepareSucceeded<>(10));
    // Younger: dies at once.
    Effect.Reply<String> died = only(prepare(20, serial, new Turn.IncrementKey("a", 1)), Effect.Reply.class);
    TurnResult.Failed failed = assertInstanceOf(TurnResult.Failed.class, died.result());
    assertEquals(TransactionAbort.LOCK_CONFLICT, failed.error().reason());
    // Older: waits, then is granted when 10 aborts.
    assertTrue(prepare(3, serial, new Turn.IncrementKey("a", 1)).isEmpty());
    assertEquals(1, core.lockWaits());
    List<Effect<String>> aborted = core.handle(new Input.DecisionReceived<>(10, false, null));
    only(aborted, Effect.AbandonPrepared.class);
    assertEquals(3, only(aborted, Effect.SubmitPrepare.class).transactionId());
  }

  @Test
  void keyLevelLocksLetDisjointKeysThrough() {
    CompiledType keys = type("keys");
    // Taking 0 writes nothing, so it votes at once, but it holds its locks on a until decided.
    only(prepare(10, keys, new Turn.InvokeAction("takeA", dev.troupe.model.Json.parse("{\"n\": 0}"))),
        Effect.Reply.class);
    assertEquals(1, core.openTransactions());
    // A turn on key b runs while a is locked; a turn on a waits.
    only(core.handle(new Input.TurnRequested<>(new Turn.IncrementKey("b", 1), keys, 11, "b")),
        Effect.SubmitCommit.class);
    assertTrue(core.handle(new Input.TurnRequested<>(new Turn.IncrementKey("a", 1), keys, 12, "a"))
        .isEmpty());
    // Another transaction on b alone is granted too.
    only(prepare(13, keys, new Turn.IncrementKey("b", 2)), Effect.SubmitPrepare.class);
  }

  @Test
  void aPrepareTakesThePlannersLocksOnlyWhenTheyAreForItsTypeAndTurns() {
    CompiledType keys = type("keys");
    List<Turn> turns = List.of(new Turn.IncrementKey("a", 1));
    // Marked locks (the whole entity, more than the turn needs) show which were taken.
    AccessSets.KnownLocks marked = new AccessSets.KnownLocks(keys, turns, false,
        LockTable.LockSet.wholeEntity(LockTable.Mode.WRITE));
    only(core.handle(new Input.PrepareRequested<>(10, 10, turns, false, keys, "vote-10", true,
        List.of(), java.util.Map.of(), marked)), Effect.SubmitPrepare.class);
    assertTrue(core.handle(new Input.TurnRequested<>(new Turn.IncrementKey("b", 1), keys, 11, "b"))
        .isEmpty(), "the carried whole-entity lock holds b too");
    // Locks worked out for another compilation of the type are not taken: b stays free.
    EntityTurnCore<String> other = new EntityTurnCore<>(ENTITY, EntityState.ABSENT, LIMITS, 1);
    only(other.handle(new Input.PrepareRequested<>(10, 10, turns, false, type("keys"), "vote-10",
        true, List.of(), java.util.Map.of(), marked)), Effect.SubmitPrepare.class);
    only(other.handle(new Input.TurnRequested<>(new Turn.IncrementKey("b", 1), keys, 11, "b")),
        Effect.SubmitCommit.class);
  }

  @Test
  void aFailedPreconditionVotesNoAndReleases() {
    CompiledType serial = type("serial");
    List<Effect<String>> effects = prepare(10, serial,
        new Turn.InvokeAction("takeA", dev.troupe.model.Json.parse("{\"n\": 1}")));
    TurnResult.Failed no = assertInstanceOf(TurnResult.Failed.class,
        only(effects, Effect.Reply.class).result());
    assertEquals(ErrorCode.PRECONDITION_FAILED, no.error().code());
    assertEquals(0, core.openTransactions());
    assertTrue(core.isIdle());
  }

  @Test
  void anAbortWhilePreparingDropsTheRecordOnceWritten() {
    CompiledType serial = type("serial");
    prepare(10, serial, new Turn.IncrementKey("a", 1));
    assertTrue(core.handle(new Input.DecisionReceived<>(10, false, null)).isEmpty());
    List<Effect<String>> written = core.handle(new Input.PrepareSucceeded<>(10));
    only(written, Effect.AbandonPrepared.class);
    assertTrue(written.stream().noneMatch(Effect.Reply.class::isInstance), "no vote after abort");
    assertTrue(core.isIdle());
  }

  @Test
  void aPrepareOvertakenByItsAbortIsRefusedAndHoldsNothing() {
    for (String admission : List.of("serial", "keys", "psac")) {
      EntityTurnCore<String> fresh = new EntityTurnCore<>(ENTITY, EntityState.ABSENT,
          new TurnLimits(100, 100, 4, 10, 100, 2), 1);
      CompiledType hot = type(admission);
      // The abort arrives first (nothing is held), then the prepare it overtook.
      assertTrue(fresh.handle(new Input.DecisionReceived<>(10, false, null)).isEmpty());
      List<Effect<String>> late = fresh.handle(new Input.PrepareRequested<>(10, 10,
          List.of(new Turn.IncrementKey("a", 1)), false, hot, "vote-10"));
      TurnResult.Failed no = assertInstanceOf(TurnResult.Failed.class,
          only(late, Effect.Reply.class).result());
      assertEquals(ErrorCode.ABORTED, no.error().code(), admission);
      assertTrue(late.stream().noneMatch(Effect.SubmitPrepare.class::isInstance), admission);
      assertEquals(0, fresh.openTransactions(), admission);
      // Bounded: after two newer aborts the oldest is forgotten (and a prepare is taken again).
      fresh.handle(new Input.DecisionReceived<>(11, false, null));
      fresh.handle(new Input.DecisionReceived<>(12, false, null));
      List<Effect<String>> forgotten = fresh.handle(new Input.PrepareRequested<>(10, 10,
          List.of(new Turn.IncrementKey("a", 1)), false, hot, "vote-10"));
      assertTrue(forgotten.stream().anyMatch(Effect.SubmitPrepare.class::isInstance),
          admission + ": " + forgotten);
    }
  }

  @Test
  void severalTurnsOfOneTransactionSeeEachOther() {
    CompiledType serial = type("serial");
    core.handle(new Input.TurnRequested<>(new Turn.IncrementKey("a", 5), serial, 1, "seed"));
    core.handle(new Input.CommitSucceeded<>(1, 50));
    List<Effect<String>> effects = prepare(10, serial,
        new Turn.InvokeAction("takeA", dev.troupe.model.Json.parse("{\"n\": 3}")),
        new Turn.InvokeAction("takeA", dev.troupe.model.Json.parse("{\"n\": 3}")));
    TurnResult.Failed no = assertInstanceOf(TurnResult.Failed.class,
        only(effects, Effect.Reply.class).result(), "5 - 3 leaves 2, too little for 3");
    assertEquals(ErrorCode.PRECONDITION_FAILED, no.error().code());
  }
}
