package dev.troupe.txn.entity;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.LongNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.causal.ReplicaApplication;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyKeys;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.model.value.Tag;
import dev.troupe.txn.DependencyEvaluator;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnCodec;
import dev.troupe.txn.TurnEvaluator;
import dev.troupe.txn.TurnLimits;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.entity.EntityTurnCore.Effect;
import dev.troupe.txn.entity.EntityTurnCore.Input;
import dev.troupe.txn.entity.LockTable.LockSet;
import dev.troupe.txn.entity.LockTable.Mode;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Applying a remote transaction's part (docs/ARCHITECTURE.md, "Applying a remote transaction")
 * through the entity core: once per transaction (the replication marker), register writes merged
 * last writer wins on their origin stamp, as a single turn and as a transaction's part, under
 * every admission policy, and never forwarding to a dependency's follower.
 */
class ReplicaApplicationTest {
  private static final int LOCAL_DC = 1;
  private static final int ORIGIN_DC = 7;
  private static final String MARKER = ReplicaApplication.markerKey(ORIGIN_DC);
  private static final EntityId PRODUCT = EntityId.parse("Product/p");
  private static final Dependency PRICE_TO_CART = Dependency.fromJson(Json.parse(
      "{\"kind\":\"update\",\"leader\":{\"entity\":\"Product/p\",\"key\":\"price\"},"
          + "\"follower\":{\"entity\":\"Cart/c\",\"key\":\"item\"},\"function\":\"replicate\"}"));
  private static final List<String> ADMISSIONS = List.of("serial", "keys", "psac");

  private long serials;
  private long transactionIds = 1000;

  private static CompiledType type(String admission) {
    return CompiledType.compile(SpecParser.parse("Product", ("""
        {"admission": "%s", "keys": {"price": {"kind": "register"}, "name": {"kind": "register"},
          "hits": {"kind": "counter"}, "tags": {"kind": "set"}}}
        """.formatted(admission)).getBytes(StandardCharsets.UTF_8), false));
  }

  private static Turn.ApplyReplicated replicated(long transactionTimestamp, long stamp,
      Operation... operations) {
    return new Turn.ApplyReplicated(ORIGIN_DC, transactionTimestamp, stamp, List.of(operations));
  }

  private static <T> T only(List<Effect<String>> effects, Class<T> kind) {
    return effects.stream().filter(kind::isInstance).map(kind::cast).findFirst()
        .orElseThrow(() -> new AssertionError("no " + kind.getSimpleName() + " in " + effects));
  }

  /** Runs one single-entity turn to its answer, committing it at {@code commitTimestamp}. */
  private TurnResult.Done turn(EntityTurnCore<String> core, CompiledType type, Turn turn,
      long commitTimestamp) {
    List<Effect<String>> effects =
        core.handle(new Input.TurnRequested<>(turn, type, transactionIds++, "client"));
    if (effects.stream().anyMatch(Effect.SubmitCommit.class::isInstance)) {
      Effect.SubmitCommit<String> submit = only(effects, Effect.SubmitCommit.class);
      effects = core.handle(new Input.CommitSucceeded<>(submit.serial(), commitTimestamp));
    }
    return assertInstanceOf(TurnResult.Done.class, only(effects, Effect.Reply.class).result());
  }

  @Test
  void evaluationWritesTheMarkerFirstAndStampsRegisterWrites() {
    Tag tag = new Tag(ORIGIN_DC, 55, 0);
    Turn.ApplyReplicated part = replicated(100, 105,
        new Operation.Assign("name", Json.parse("\"remote\"")),
        new Operation.Increment("hits", 2),
        new Operation.AddElement("tags", Json.parse("\"red\""), tag));
    TurnEvaluator.Decision decision = TurnEvaluator.evaluate(PRODUCT, type("serial"),
        EntityState.ABSENT, part, 1, LOCAL_DC, TurnLimits.DEFAULTS);
    assertEquals(new TurnEvaluator.Decision.Write(List.of(
        new Operation.Assign(MARKER, LongNode.valueOf(100)),
        new Operation.AssignReplicated("name", Json.parse("\"remote\""), 105, ORIGIN_DC),
        // Counted under its origin, as in every data centre (a counter's deletion observes it).
        new Operation.IncrementReplicated("hits", 2, ORIGIN_DC),
        new Operation.AddElement("tags", Json.parse("\"red\""), tag))), decision);
    assertTrue(ReplicaApplication.isReplicaApplication(
        ((TurnEvaluator.Decision.Write) decision).operations()));
    // In a sequence of several turns its additions keep the origin's tags.
    TurnEvaluator.Sequence sequence = TurnEvaluator.evaluateSequence(PRODUCT, type("serial"),
        EntityState.ABSENT, List.of(part, replicated(101, 106)), 1, LOCAL_DC,
        TurnLimits.DEFAULTS);
    assertTrue(sequence.operations().contains(
        new Operation.AddElement("tags", Json.parse("\"red\""), tag)), sequence.toString());
  }

  /**
   * A batched application's segments: those the marker covers are skipped (applied before,
   * whichever run they were in), the others applied in order, each with its own stamp, and the
   * marker ends at the last applied; the wire and the persisted turns carry them.
   */
  @Test
  void segmentsAtOrBelowTheMarkerAreSkippedAndTheMarkerEndsAtTheLast() {
    Turn.ApplyReplicated batch = new Turn.ApplyReplicated(ORIGIN_DC, List.of(
        new Turn.ApplyReplicated.Segment(100, 101, List.of(new Operation.Increment("hits", 1))),
        new Turn.ApplyReplicated.Segment(110, 112,
            List.of(new Operation.Assign("name", Json.parse("\"b\"")))),
        new Turn.ApplyReplicated.Segment(120, 121, List.of(new Operation.Increment("hits", 4)))));
    TurnEvaluator.Decision fresh = TurnEvaluator.evaluate(PRODUCT, type("serial"),
        EntityState.ABSENT, batch, 1, LOCAL_DC, TurnLimits.DEFAULTS);
    assertEquals(new TurnEvaluator.Decision.Write(List.of(
        new Operation.Assign(MARKER, LongNode.valueOf(120)),
        new Operation.IncrementReplicated("hits", 1, ORIGIN_DC),
        new Operation.AssignReplicated("name", Json.parse("\"b\""), 112, ORIGIN_DC),
        new Operation.IncrementReplicated("hits", 4, ORIGIN_DC))), fresh);
    // A crash after the segment at 110 was applied (in another run): 100 and 110 are skipped.
    EntityState applied = EntityState.ABSENT.apply(List.of(
        new Operation.Assign(MARKER, LongNode.valueOf(110)),
        new Operation.Increment("hits", 1)), 1, LOCAL_DC);
    assertEquals(new TurnEvaluator.Decision.Write(List.of(
        new Operation.Assign(MARKER, LongNode.valueOf(120)),
        new Operation.IncrementReplicated("hits", 4, ORIGIN_DC))), TurnEvaluator.evaluate(PRODUCT, type("serial"),
        applied, batch, 1, LOCAL_DC, TurnLimits.DEFAULTS));
    EntityState all = applied.apply(List.of(new Operation.Assign(MARKER, LongNode.valueOf(120))),
        2, LOCAL_DC);
    assertEquals(new TurnEvaluator.Decision.Write(List.of()), TurnEvaluator.evaluate(PRODUCT,
        type("serial"), all, batch, 1, LOCAL_DC, TurnLimits.DEFAULTS));
    assertEquals(List.of(batch), TurnCodec.decode(TurnCodec.encode(List.of(batch))));
  }

  /**
   * On a DC bootstrapped from the origin, the installed marker says which of the origin's own
   * parts the installed state holds: a part is skipped exactly when its stamp (its journal
   * record's commit timestamp at the origin) is at or below the marker, also when a transaction
   * with an earlier transaction timestamp committed later on the entity (PSAC's out-of-order
   * commits), and the marker of another origin has no say.
   */
  @Test
  void anInstalledStateSkipsExactlyThePartsItContains() {
    EntityState installed = EntityState.ABSENT.apply(List.of(
        new Operation.Assign(ReplicaApplication.installedKey(ORIGIN_DC), LongNode.valueOf(500)),
        new Operation.Increment("hits", 3)), 600, LOCAL_DC);
    Operation increment = new Operation.Increment("hits", 1);
    // Contained: its record was at or below the installed version.
    assertEquals(new TurnEvaluator.Decision.Write(List.of()), TurnEvaluator.evaluate(PRODUCT,
        type("serial"), installed, replicated(480, 500, increment), 1, LOCAL_DC,
        TurnLimits.DEFAULTS));
    // Decided before the installed version but committed on this entity after it: applied.
    TurnEvaluator.Decision later = TurnEvaluator.evaluate(PRODUCT, type("psac"), installed,
        replicated(490, 501, increment), 1, LOCAL_DC, TurnLimits.DEFAULTS);
    assertEquals(new TurnEvaluator.Decision.Write(List.of(
        new Operation.Assign(MARKER, LongNode.valueOf(490)),
        new Operation.IncrementReplicated("hits", 1, ORIGIN_DC))), later);
    // Another origin's parts are decided by their own replication markers only.
    TurnEvaluator.Decision other = TurnEvaluator.evaluate(PRODUCT, type("serial"), installed,
        new Turn.ApplyReplicated(ORIGIN_DC + 1, 100, 100, List.of(increment)), 1, LOCAL_DC,
        TurnLimits.DEFAULTS);
    assertEquals(2, assertInstanceOf(TurnEvaluator.Decision.Write.class, other)
        .operations().size());
  }

  @Test
  void noTypeChecksAndNoLimits() {
    // A register write to a key declared as a counter, an undeclared key, more keys than allowed:
    // the origin committed them, so they are applied.
    TurnLimits oneKey = new TurnLimits(100, 1, 4, 3);
    TurnEvaluator.Decision decision = TurnEvaluator.evaluate(PRODUCT, type("keys"),
        EntityState.ABSENT, replicated(100, 100,
            new Operation.Assign("hits", Json.parse("1")),
            new Operation.Assign("undeclared", Json.parse("2"))), 1, LOCAL_DC, oneKey);
    assertEquals(3, assertInstanceOf(TurnEvaluator.Decision.Write.class, decision)
        .operations().size());
  }

  @Test
  void theMarkerIsHiddenLockedOnItsOwnAndNeverDiscarded() {
    CompiledType keys = type("keys");
    EntityState state = EntityState.ABSENT.apply(List.of(
        new Operation.Assign(MARKER, LongNode.valueOf(100)),
        new Operation.AssignReplicated("price", LongNode.valueOf(3), 100, ORIGIN_DC)), 5, LOCAL_DC);
    assertFalse(keys.render(state).has(MARKER), keys.render(state).toString());
    assertEquals(new TurnEvaluator.Decision.Write(List.of()), TurnEvaluator.evaluate(PRODUCT,
        keys, state, new Turn.DiscardHiddenValues(), 2, LOCAL_DC, TurnLimits.DEFAULTS));
    assertEquals(new LockSet(null, Map.of(MARKER, Mode.WRITE, "price", Mode.WRITE,
            "item", Mode.WRITE)),
        AccessSets.forTurn(keys, replicated(200, 200,
            new Operation.Assign("price", LongNode.valueOf(4)),
            new Operation.RecordDependency(DependencyKeys.incoming("item"), PRICE_TO_CART,
                null))));
    assertEquals(Mode.WRITE, AccessSets.forTurn(keys,
        replicated(200, 200, new Operation.DeleteEntity())).entityMode());
    assertEquals(LockSet.wholeEntity(Mode.WRITE),
        AccessSets.forTurn(type("serial"), replicated(200, 200)));
  }

  @Test
  void theTurnCodecKeepsIt() {
    List<Turn> turns = List.of(replicated(100, 105,
        new Operation.Assign("name", Json.parse("{\"a\": [1]}")),
        new Operation.RemoveElement("tags", Json.parse("3"), java.util.Set.of(new Tag(7, 1, 2))),
        new Operation.DeleteEntity()));
    assertEquals(turns, TurnCodec.decode(TurnCodec.encode(turns)));
  }

  @Test
  void aPartIsAppliedOnceAndLaterOnesAfterIt() {
    for (String admission : ADMISSIONS) {
      CompiledType type = type(admission);
      EntityTurnCore<String> core =
          new EntityTurnCore<>(PRODUCT, EntityState.ABSENT, TurnLimits.DEFAULTS, LOCAL_DC);
      Turn.ApplyReplicated first = replicated(100, 105,
          new Operation.Assign("name", Json.parse("\"remote\"")),
          new Operation.Increment("hits", 2));
      TurnResult.Done applied = turn(core, type, first, 200);
      assertTrue(applied.wrote(), admission);
      assertEquals(200, applied.version(), admission);
      assertEquals(Json.parse("{\"name\": \"remote\", \"hits\": 2, \"price\": null,"
          + " \"tags\": []}"), type.render(applied.state()), admission);

      TurnResult.Done again = turn(core, type, first, 201);
      assertFalse(again.wrote(), admission + ": already applied");
      assertEquals(200, again.version(), admission);
      assertEquals(2, type.render(again.state()).get("hits").asLong(), admission);

      TurnResult.Done later = turn(core, type, replicated(150, 150,
          new Operation.Increment("hits", 3)), 210);
      assertTrue(later.wrote(), admission);
      assertEquals(5, type.render(later.state()).get("hits").asLong(), admission);
      assertEquals(LongNode.valueOf(150), later.state().get(MARKER).toJson(), admission);
      // The marker keeps no dependency: local turns, a deletion of the entity too, still run
      // alone (not sent back to run as transactions).
      assertTrue(turn(core, type, new Turn.AssignKeys(Map.of("name", Json.parse("\"x\""))), 220)
          .wrote(), admission);
      assertFalse(DependencyEvaluator.hasDependencies(later.state()), admission);
      assertTrue(turn(core, type, new Turn.DeleteEntity(), 230).wrote(), admission);
      assertTrue(core.isIdle(), admission);
    }
  }

  @Test
  void aRemoteDeletionIsNotAppliedAgainOverLaterWrites() {
    CompiledType type = type("serial");
    EntityTurnCore<String> core =
        new EntityTurnCore<>(PRODUCT, EntityState.ABSENT, TurnLimits.DEFAULTS, LOCAL_DC);
    turn(core, type, replicated(100, 100, new Operation.Assign("name", Json.parse("\"a\""))),
        200);
    TurnResult.Done deleted = turn(core, type, replicated(150, 150, new Operation.DeleteEntity()),
        210);
    assertFalse(deleted.state().exists());
    turn(core, type, new Turn.AssignKeys(Map.of("name", Json.parse("\"local\""))), 220);
    // Re-fed after a crash: the markers outlived the deletion, so neither part applies again.
    assertFalse(turn(core, type, replicated(150, 150, new Operation.DeleteEntity()), 230).wrote());
    TurnResult.Done last = turn(core, type, replicated(100, 100,
        new Operation.Assign("name", Json.parse("\"a\""))), 240);
    assertFalse(last.wrote());
    assertEquals("local", type.render(last.state()).get("name").asText());
  }

  @Test
  void anOlderStampKeepsTheNewerLocalValue() {
    for (String admission : ADMISSIONS) {
      CompiledType type = type(admission);
      EntityTurnCore<String> core =
          new EntityTurnCore<>(PRODUCT, EntityState.ABSENT, TurnLimits.DEFAULTS, LOCAL_DC);
      turn(core, type, new Turn.AssignKeys(Map.of("name", Json.parse("\"local\""))), 300);
      // Written at the origin at 160, concurrently with the local write at 300: the local wins.
      TurnResult.Done stale = turn(core, type, replicated(160, 160,
          new Operation.Assign("name", Json.parse("\"old\""))), 310);
      assertTrue(stale.wrote(), admission + ": the marker is written");
      assertEquals("local", type.render(stale.state()).get("name").asText(), admission);
      // A later stamp wins over it.
      TurnResult.Done newer = turn(core, type, replicated(400, 400,
          new Operation.Assign("name", Json.parse("\"new\""))), 410);
      assertEquals("new", type.render(newer.state()).get("name").asText(), admission);
    }
  }

  @Test
  void aTransactionPartIsPreparedVotedAndCommittedOnce() {
    for (String admission : ADMISSIONS) {
      CompiledType type = type(admission);
      EntityTurnCore<String> core =
          new EntityTurnCore<>(PRODUCT, EntityState.ABSENT, TurnLimits.DEFAULTS, LOCAL_DC);
      Turn.ApplyReplicated part = replicated(100, 104,
          new Operation.Assign("price", LongNode.valueOf(9)));
      List<Effect<String>> prepared = core.handle(new Input.PrepareRequested<>(10, 10,
          List.of(part), false, type, "vote-10"));
      Effect.SubmitPrepare<String> record = only(prepared, Effect.SubmitPrepare.class);
      List<Operation> expected = List.of(new Operation.Assign(MARKER, LongNode.valueOf(100)),
          new Operation.AssignReplicated("price", LongNode.valueOf(9), 104, ORIGIN_DC));
      if (admission.equals("psac")) {
        // PSAC persists the turns, evaluated when the decided part is applied.
        assertEquals(List.of(part), record.redoTurns(), admission);
      } else {
        assertEquals(expected, record.operations(), admission);
      }
      TurnResult.Done vote = assertInstanceOf(TurnResult.Done.class,
          only(core.handle(new Input.PrepareSucceeded<>(10)), Effect.Reply.class).result());
      assertEquals(DependencyEvaluator.Forwarding.NONE, vote.forwarding(), admission);
      Effect.SubmitCommit<String> commit = only(core.handle(
          new Input.DecisionReceived<>(10, true, "ack")), Effect.SubmitCommit.class);
      assertEquals(expected, commit.operations(), admission);
      core.handle(new Input.CommitSucceeded<>(commit.serial(), 200));

      // The same part again (a re-application after a crash): prepared with nothing to write.
      List<Effect<String>> again = core.handle(new Input.PrepareRequested<>(11, 11,
          List.of(part), false, type, "vote-11"));
      for (Effect<String> effect : again) {
        if (effect instanceof Effect.SubmitPrepare<String> submit) {
          assertEquals(List.of(), submit.operations(), admission);
        }
      }
    }
  }

  @Test
  void aLeaderForwardsNothingForARemotePart() {
    for (String admission : ADMISSIONS) {
      CompiledType type = type(admission);
      EntityState leads = EntityState.ABSENT.apply(List.of(
          new Operation.Assign("price", LongNode.valueOf(1)),
          new Operation.RecordDependency(DependencyKeys.outgoing("price"), PRICE_TO_CART, null)),
          50, LOCAL_DC);
      EntityTurnCore<String> core =
          new EntityTurnCore<>(PRODUCT, leads, TurnLimits.DEFAULTS, LOCAL_DC);
      // As a single turn: committed directly, not sent back to run as a transaction.
      TurnResult.Done single = turn(core, type, replicated(100, 100,
          new Operation.Assign("price", LongNode.valueOf(2))), 200);
      assertTrue(single.wrote(), admission);
      assertEquals(2, type.render(single.state()).get("price").asLong(), admission);
      // As a part: its yes vote forwards nothing.
      core.handle(new Input.PrepareRequested<>(10, 10, List.of(replicated(101, 101,
          new Operation.Assign("price", LongNode.valueOf(3)))), false, type, "vote"));
      TurnResult.Done vote = assertInstanceOf(TurnResult.Done.class,
          only(core.handle(new Input.PrepareSucceeded<>(10)), Effect.Reply.class).result());
      assertEquals(List.of(), vote.forwarding().forwards(), admission);
      // A local write of the same key in a part does forward (the contrast).
      Effect.SubmitCommit<String> commit = only(core.handle(
          new Input.DecisionReceived<>(10, true, "ack")), Effect.SubmitCommit.class);
      core.handle(new Input.CommitSucceeded<>(commit.serial(), 300));
      core.handle(new Input.PrepareRequested<>(11, 11,
          List.of(new Turn.AssignKeys(Map.of("price", LongNode.valueOf(4)))), false, type,
          "vote"));
      TurnResult.Done local = assertInstanceOf(TurnResult.Done.class,
          only(core.handle(new Input.PrepareSucceeded<>(11)), Effect.Reply.class).result());
      assertEquals(1, local.forwarding().forwards().size(), admission);
    }
  }

  @Test
  void aReplicaApplicationMixedWithOtherTurnsIsRefused() {
    DependencyEvaluator.Evaluation evaluation = DependencyEvaluator.evaluate(PRODUCT,
        type("serial"), EntityState.ABSENT, List.of(replicated(100, 100),
            new Turn.IncrementKey("hits", 1)), List.of(), 1, LOCAL_DC, TurnLimits.DEFAULTS);
    assertEquals(ErrorCode.INVALID_REQUEST, evaluation.error().code());
  }
}
