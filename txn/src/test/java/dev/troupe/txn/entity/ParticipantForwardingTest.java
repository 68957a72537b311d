package dev.troupe.txn.entity;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.LongNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyKeys;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.txn.Forward;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnLimits;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.entity.EntityTurnCore.Effect;
import dev.troupe.txn.entity.EntityTurnCore.Input;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The participant side of dependency enforcement: a prepared part asked to evaluate again with
 * forwarded operations, its locks, its prepared record, and single turns that must become
 * transactions.
 */
class ParticipantForwardingTest {
  private static final EntityId CART = EntityId.parse("Cart/c");
  private static final Dependency ITEM = Dependency.fromJson(Json.parse(
      "{\"kind\":\"update\",\"leader\":{\"entity\":\"Product/p\",\"key\":\"price\"},"
          + "\"follower\":{\"entity\":\"Cart/c\",\"key\":\"item\"},\"function\":\"replicate\"}"));
  private static final CompiledType KEYS = CompiledType.compile(SpecParser.parse("Cart",
      ("{\"admission\": \"keys\", \"keys\": {\"item\": {\"kind\": \"register\"},"
          + " \"note\": {\"kind\": \"register\"}}}").getBytes(StandardCharsets.UTF_8), false));

  private final EntityTurnCore<String> core =
      new EntityTurnCore<>(CART, EntityState.ABSENT, TurnLimits.DEFAULTS, 1);

  private static <T> T only(List<Effect<String>> effects, Class<T> kind) {
    return effects.stream().filter(kind::isInstance).map(kind::cast).findFirst()
        .orElseThrow(() -> new AssertionError("no " + kind.getSimpleName() + " in " + effects));
  }

  private List<Effect<String>> prepare(long id, Turn turn) {
    return core.handle(new Input.PrepareRequested<>(id, id, List.of(turn), false, KEYS,
        "vote-" + id));
  }

  @Test
  void aPreparedPartEvaluatesAgainWithForwardsAndReplacesItsPreparedRecord() {
    prepare(5, new Turn.AssignKeys(Map.of("note", Json.parse("\"hi\""))));
    only(core.handle(new Input.PrepareSucceeded<>(5)), Effect.Reply.class);
    Forward registered = new Forward.Registered(ITEM, LongNode.valueOf(7));
    Effect.SubmitPrepare<String> amended = only(core.handle(
        new Input.ForwardsReceived<>(5, List.of(registered), "again")), Effect.SubmitPrepare.class);
    assertTrue(amended.operations().contains(new Operation.Assign("item", LongNode.valueOf(7))),
        amended.operations().toString());
    assertTrue(amended.operations().contains(new Operation.Assign("note", Json.parse("\"hi\""))),
        "the client's own operations are evaluated again with the forwards");
    Effect.Reply<String> vote = only(core.handle(new Input.PrepareSucceeded<>(5)),
        Effect.Reply.class);
    assertEquals("again", vote.replyTo());
    Effect.SubmitCommit<String> commit = only(core.handle(new Input.DecisionReceived<>(5, true,
        "ack")), Effect.SubmitCommit.class);
    assertEquals(amended.operations(), commit.operations());
  }

  @Test
  void anAmendmentWaitsForTheForwardedKeysLockAndAnAbortThenDropsTheRecord() {
    // Transaction 3 (older) holds the item key; transaction 5's part is prepared on the note.
    prepare(3, new Turn.AssignKeys(Map.of("item", LongNode.valueOf(1))));
    core.handle(new Input.PrepareSucceeded<>(3));
    prepare(5, new Turn.AssignKeys(Map.of("note", Json.parse("\"hi\""))));
    core.handle(new Input.PrepareSucceeded<>(5));
    Forward registered = new Forward.Registered(ITEM, LongNode.valueOf(7));
    List<Effect<String>> waiting =
        core.handle(new Input.ForwardsReceived<>(5, List.of(registered), "again"));
    // Younger than the holder: wait-die kills it at once; its earlier record is dropped.
    Effect.Reply<String> died = only(waiting, Effect.Reply.class);
    assertEquals(TransactionAbort.LOCK_CONFLICT,
        assertInstanceOf(TurnResult.Failed.class, died.result()).error().reason());
    only(waiting, Effect.AbandonPrepared.class);
    assertEquals(1, core.openTransactions());
  }

  @Test
  void anOlderAmendmentWaitsAndRunsWhenTheHolderCommits() {
    prepare(7, new Turn.AssignKeys(Map.of("item", LongNode.valueOf(1))));
    core.handle(new Input.PrepareSucceeded<>(7));
    prepare(5, new Turn.AssignKeys(Map.of("note", Json.parse("\"hi\""))));
    core.handle(new Input.PrepareSucceeded<>(5));
    Forward registered = new Forward.Registered(ITEM, LongNode.valueOf(7));
    assertTrue(core.handle(new Input.ForwardsReceived<>(5, List.of(registered), "again"))
        .stream().noneMatch(Effect.SubmitPrepare.class::isInstance), "waits for the item lock");
    List<Effect<String>> committed = core.handle(new Input.DecisionReceived<>(7, true, "ack7"));
    Effect.SubmitPrepare<String> amended = only(committed, Effect.SubmitPrepare.class);
    assertEquals(5, amended.transactionId());
  }

  /**
   * Cluster simulator seed 509: a registration (transaction 7) committed at the cart and is still
   * only prepared at the product when the removal that followed it at the cart (transaction 5)
   * asks the product to forget the dependency. Forgetting it there without a lock saw no record
   * yet and forgot nothing, and the registration then committed a record the cart no longer had.
   * It must wait for the registration's lock and forget the record once it is committed.
   */
  @Test
  void aLeaderForgetsADeletedFollowerOnlyAfterAPreparedRegistrationOfItCommits() {
    CompiledType product = CompiledType.compile(SpecParser.parse("Product",
        "{\"admission\": \"keys\", \"keys\": {\"price\": {\"kind\": \"register\"}}}"
            .getBytes(StandardCharsets.UTF_8), false));
    EntityTurnCore<String> leader = new EntityTurnCore<>(EntityId.parse("Product/p"),
        EntityState.ABSENT.apply(List.of(new Operation.Assign("price", LongNode.valueOf(1))), 1,
            1), TurnLimits.DEFAULTS, 1);
    leader.handle(new Input.PrepareRequested<>(7, 7, List.of(), false, product, "vote-7", false,
        List.of(new Forward.RegistrationRequested(ITEM)), Map.of()));
    only(leader.handle(new Input.PrepareSucceeded<>(7)), Effect.Reply.class);
    List<Effect<String>> forget = leader.handle(new Input.PrepareRequested<>(5, 5, List.of(),
        false, product, "vote-5", false, List.of(new Forward.FollowerDeleted(ITEM)), Map.of()));
    assertTrue(forget.stream().noneMatch(Effect.Reply.class::isInstance),
        "waits for the registration's lock: " + forget);
    Effect.SubmitPrepare<String> forgotten = only(
        leader.handle(new Input.DecisionReceived<>(7, true, "ack7")), Effect.SubmitPrepare.class);
    assertEquals(5, forgotten.transactionId());
    assertEquals(List.of(new Operation.ForgetDependency(DependencyKeys.outgoing("price"), ITEM.id())),
        forgotten.operations());
  }

  @Test
  void aSingleTurnOnALeaderKeyIsSentBackToRunAsATransaction() {
    EntityState leading = EntityState.ABSENT.apply(List.of(
        new Operation.Assign("price", LongNode.valueOf(1)),
        new Operation.RecordDependency("$out:price", ITEM, null)), 1, 1);
    EntityTurnCore<String> product =
        new EntityTurnCore<>(EntityId.parse("Product/p"), leading, TurnLimits.DEFAULTS, 1);
    CompiledType schemaless = CompiledType.schemaless("Product");
    Effect.Reply<String> reply = only(product.handle(new Input.TurnRequested<>(
        new Turn.AssignKeys(Map.of("price", LongNode.valueOf(2))), schemaless, 9, "client")),
        Effect.Reply.class);
    assertEquals(TransactionAbort.NEEDS_TRANSACTION,
        assertInstanceOf(TurnResult.Failed.class, reply.result()).error().reason());
    List<Effect<String>> other = product.handle(new Input.TurnRequested<>(
        new Turn.AssignKeys(Map.of("name", LongNode.valueOf(2))), schemaless, 10, "client"));
    only(other, Effect.SubmitCommit.class);
  }

  @Test
  void aPlannedPartAppliesForwardsOnlyOnTheKeysItReserved() {
    Forward registered = new Forward.Registered(ITEM, LongNode.valueOf(7));
    // Reserved: prepared in its order holding the item key, it applies the forward at once.
    core.handle(new Input.PrepareRequested<>(5, 1, List.of(), false, KEYS, "vote", true,
        List.of(), Map.of("item", LockTable.Mode.WRITE)));
    only(core.handle(new Input.ForwardsReceived<>(5, List.of(registered), "again")),
        Effect.SubmitPrepare.class);
    // Not reserved: it gives the planned attempt up rather than wait outside its order.
    EntityTurnCore<String> other =
        new EntityTurnCore<>(CART, EntityState.ABSENT, TurnLimits.DEFAULTS, 1);
    other.handle(new Input.PrepareRequested<>(6, 2, List.of(), false, KEYS, "vote", true,
        List.of(), Map.of("note", LockTable.Mode.WRITE)));
    Effect.Reply<String> refused = only(other.handle(
        new Input.ForwardsReceived<>(6, List.of(registered), "again")), Effect.Reply.class);
    assertEquals(TransactionAbort.DEPENDENCIES_INVOLVED,
        assertInstanceOf(TurnResult.Failed.class, refused.result()).error().reason());
  }

  private static <T> List<T> all(List<Effect<String>> effects, Class<T> kind) {
    return effects.stream().filter(kind::isInstance).map(kind::cast).toList();
  }

  /** A planned part that reserved the item key for forwards it may receive. */
  private List<Effect<String>> prepareReserving(long id) {
    return core.handle(new Input.PrepareRequested<>(id, id,
        List.of(new Turn.AssignKeys(Map.of("note", Json.parse("\"hi\"")))), false, KEYS,
        "vote-" + id, true, List.of(), Map.of("item", LockTable.Mode.WRITE)));
  }

  @Test
  void aReservingPartReportsWhilePreparingAndTakesForwardsBeforeItsRecordIsDurable() {
    List<Effect<String>> prepared = prepareReserving(5);
    only(prepared, Effect.SubmitPrepare.class);
    assertEquals(new Effect.ReportForwards<String>("vote-5", List.of()),
        only(prepared, Effect.ReportForwards.class));
    Forward registered = new Forward.Registered(ITEM, LongNode.valueOf(7));
    List<Effect<String>> amended = core.handle(
        new Input.ForwardsReceived<>(5, List.of(registered), "again", 2));
    Effect.SubmitPrepare<String> record = only(amended, Effect.SubmitPrepare.class);
    assertTrue(record.operations().contains(new Operation.Assign("item", LongNode.valueOf(7))),
        record.operations().toString());
    assertEquals(new Effect.ReportForwards<String>("again", List.of()),
        only(amended, Effect.ReportForwards.class));
    assertTrue(core.handle(new Input.ForwardsReceived<>(5, List.of(registered), "again", 2))
        .isEmpty(), "a duplicate of the round is ignored");
    assertTrue(all(core.handle(new Input.PrepareSucceeded<>(5)), Effect.Reply.class).isEmpty(),
        "no vote while the replacement is still being written");
    Effect.Reply<String> vote = only(core.handle(new Input.PrepareSucceeded<>(5)),
        Effect.Reply.class);
    assertEquals("again", vote.replyTo());
    assertInstanceOf(TurnResult.Done.class, vote.result());
    Effect.SubmitCommit<String> commit = only(core.handle(new Input.DecisionReceived<>(5, true,
        "ack")), Effect.SubmitCommit.class);
    assertEquals(record.operations(), commit.operations());
  }

  @Test
  void forwardsThatNeedALockWhilePreparingAreTakenOnceTheRecordIsDurable() {
    prepare(5, new Turn.AssignKeys(Map.of("note", Json.parse("\"hi\""))));
    Forward registered = new Forward.Registered(ITEM, LongNode.valueOf(7));
    assertTrue(core.handle(new Input.ForwardsReceived<>(5, List.of(registered), "again", 2))
        .isEmpty(), "kept: the item key is not locked yet");
    List<Effect<String>> durable = core.handle(new Input.PrepareSucceeded<>(5));
    assertTrue(all(durable, Effect.Reply.class).isEmpty(), "the first round is not voted");
    only(durable, Effect.SubmitPrepare.class);
    assertEquals("again", only(core.handle(new Input.PrepareSucceeded<>(5)), Effect.Reply.class)
        .replyTo());
  }

  @Test
  void anAbortWhileTwoRecordsAreInFlightAbandonsThemOnceBothAreWritten() {
    prepareReserving(5);
    core.handle(new Input.ForwardsReceived<>(5,
        List.of(new Forward.Registered(ITEM, LongNode.valueOf(7))), "again", 2));
    core.handle(new Input.DecisionReceived<>(5, false, "ack"));
    assertTrue(all(core.handle(new Input.PrepareSucceeded<>(5)), Effect.AbandonPrepared.class)
        .isEmpty());
    only(core.handle(new Input.PrepareSucceeded<>(5)), Effect.AbandonPrepared.class);
    // Its locks are released: another transaction prepares the item key at once.
    only(prepare(6, new Turn.AssignKeys(Map.of("item", LongNode.valueOf(1)))),
        Effect.SubmitPrepare.class);
  }

  @Test
  void aFailedFirstRecordVotesNoOnceTheReplacementIsWritten() {
    prepareReserving(5);
    core.handle(new Input.ForwardsReceived<>(5,
        List.of(new Forward.Registered(ITEM, LongNode.valueOf(7))), "again", 2));
    assertTrue(core.handle(new Input.PrepareFailed<>(5, new dev.troupe.model.TroupeException(
        dev.troupe.model.ErrorCode.UNAVAILABLE, "disk"))).isEmpty());
    List<Effect<String>> answered = core.handle(new Input.PrepareSucceeded<>(5));
    Effect.Reply<String> vote = only(answered, Effect.Reply.class);
    assertEquals("again", vote.replyTo());
    assertInstanceOf(TurnResult.Failed.class, vote.result());
    only(answered, Effect.AbandonPrepared.class);
  }
}
