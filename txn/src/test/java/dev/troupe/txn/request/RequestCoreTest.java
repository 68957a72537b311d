package dev.troupe.txn.request;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.LongNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.TroupeException;
import dev.troupe.model.ValueLimits;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyKeys;
import dev.troupe.model.dependency.KeyReference;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.request.RequestCore.Effect;
import dev.troupe.txn.request.RequestCore.Input;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Every decision the request core takes, each with the answer the broken decision would miss. */
class RequestCoreTest {
  private static final CompiledType ACCOUNT = type("Account", """
      {"admission": "serial",
       "keys": {"balance": {"kind": "register", "default": 0}},
       "actions": {
         "withdraw": {"params": {"amount": "int"}, "pre": ["balance - amount >= 0"],
                      "effect": {"balance": "balance - amount"}},
         "deposit": {"params": {"amount": "int"}, "effect": {"balance": "balance + amount"}}}}
      """);
  private static final CompiledType TRANSFER = type("Transfer", """
      {"actions": {"book": {"params": {"from": "string", "to": "string", "amount": "int"},
                            "sync": [{"entity": "Account/{from}", "action": "withdraw",
                                      "args": {"amount": "amount"}},
                                     {"entity": "Account/{to}", "action": "deposit",
                                      "args": {"amount": "amount"}}]}}}
      """);
  /** An action that calls itself: only the depth limit ends its expansion. */
  private static final CompiledType CHAIN = type("Chain", """
      {"actions": {"hop": {"params": {"n": "int"},
                           "sync": [{"entity": "Chain/next", "action": "hop",
                                     "args": {"n": "n + 1"}}]}}}
      """);
  /** A sync argument that fails to evaluate for an empty list. */
  private static final CompiledType ORDER = type("Order", """
      {"actions": {"place": {"params": {"items": "list"},
                             "sync": [{"entity": "Account/shop", "action": "deposit",
                                       "args": {"amount": "items[0]"}}]}}}
      """);
  private static final CompiledType THING = type("Thing", """
      {"admission": "keys", "keys": {"price": {"kind": "register"},
                                     "item": {"kind": "register"}}}
      """);

  private static final EntityId BOOKING = EntityId.parse("Transfer/t1");
  private static final EntityId ALICE = EntityId.parse("Account/alice");
  private static final EntityId BOB = EntityId.parse("Account/bob");
  private static final EntityId PRODUCT = EntityId.parse("Thing/product");
  private static final EntityId CART = EntityId.parse("Thing/cart");
  private static final Turn BOOK = new Turn.InvokeAction("book",
      Json.parse("{\"from\": \"alice\", \"to\": \"bob\", \"amount\": 5}"));
  private static final Turn WITHDRAW =
      new Turn.InvokeAction("withdraw", Json.parse("{\"amount\": 5}"));
  private static final Turn SET_PRICE =
      new Turn.AssignKeys(Map.of("price", LongNode.valueOf(2)));
  private static final CoordinatorCore.Limits COORDINATOR =
      new CoordinatorCore.Limits(1000, 5, 10, 64, 32, 8);

  private final Map<EntityId, EntityState> cache = new HashMap<>();
  private final Map<KeyReference, List<Dependency>> pending = new HashMap<>();

  private static CompiledType type(String name, String json) {
    return CompiledType.compile(SpecParser.parse(name, json.getBytes(StandardCharsets.UTF_8),
        false));
  }

  private static RequestCore.Limits limits(int maxOperations, int maxParticipants,
      int maxSyncDepth, int maxReplans) {
    return new RequestCore.Limits(maxOperations, maxParticipants, maxSyncDepth, maxReplans,
        ValueLimits.DEFAULTS, 8, COORDINATOR, 2500);
  }

  private RequestCore core(RequestCore.Limits limits) {
    return new RequestCore(limits, new RequestCore.Lookups() {
      @Override
      public CompiledType typeOf(EntityId entity) {
        return switch (entity.type()) {
          case "Account" -> ACCOUNT;
          case "Transfer" -> TRANSFER;
          case "Chain" -> CHAIN;
          case "Order" -> ORDER;
          case "Thing" -> THING;
          default -> {
            if (entity.type().startsWith("$")) {
              throw TroupeException.invalid("reserved: " + entity.type());
            }
            yield CompiledType.schemaless(entity.type());
          }
        };
      }

      @Override
      public Optional<EntityState> cachedState(EntityId entity) {
        return Optional.ofNullable(cache.get(entity));
      }

      @Override
      public List<Dependency> pendingRegistrations(KeyReference leader) {
        return pending.getOrDefault(leader, List.of());
      }
    });
  }

  private RequestCore core() {
    return core(limits(100, 10, 4, 2));
  }

  private static TroupeException failure(List<Effect> effects) {
    return assertInstanceOf(Effect.ReplyFailure.class, effects.getLast()).error();
  }

  private static Effect.StartCoordinator started(List<Effect> effects) {
    return assertInstanceOf(Effect.StartCoordinator.class, effects.getLast());
  }

  private static Input transaction(RequestCore.Scheduling scheduling, EntityId entity,
      Turn turn) {
    return new Input.TransactionRequested(List.of(new RequestCore.Operation(entity, turn)),
        List.of(), scheduling);
  }

  private static Input aborted(String reason) {
    return new Input.CoordinatorAnswered(new CoordinatorCore.Outcome.Failed(
        new TroupeException(ErrorCode.ABORTED, reason, "aborted: " + reason)));
  }

  private static CoordinatorCore.Outcome.Committed committed(EntityId entity, long version) {
    return new CoordinatorCore.Outcome.Committed(version, Map.of(entity,
        new CoordinatorCore.ParticipantResult(1, version, EntityState.ABSENT, true)));
  }

  private static Dependency update(EntityId leader, EntityId follower) {
    return Dependency.fromJson(Json.parse(("{\"kind\":\"update\",\"leader\":{\"entity\":\"%s\","
        + "\"key\":\"price\"},\"follower\":{\"entity\":\"%s\",\"key\":\"item\"},"
        + "\"function\":\"replicate\"}").formatted(leader, follower)));
  }

  // ---------------------------------------------------------------- sync expansion

  @Test
  void syncCallsExpandDepthFirstIntoParticipantsInPlanOrder() {
    RequestCore core = core();
    Effect.StartCoordinator start = started(core.handle(transaction(
        RequestCore.Scheduling.AUTO, BOOKING, BOOK)));
    assertEquals(List.of(BOOKING, ALICE, BOB), List.copyOf(start.types().keySet()));
    assertEquals(List.of(BOOKING, ALICE, BOB), List.copyOf(start.parts().keySet()).subList(0, 3));
    assertEquals(List.of(BOOK), start.parts().get(BOOKING).turns());
    assertEquals(List.of(new Turn.InvokeAction("withdraw", Json.parse("{\"amount\": 5}"))),
        start.parts().get(ALICE).turns());
    assertEquals(RequestCore.Start.PLANNED, start.start());
  }

  @Test
  void operationsPastTheLimitAreTooLargeSyncCallsIncludedAndNothingStarts() {
    List<Effect> effects = core(limits(2, 10, 4, 2)).handle(
        transaction(RequestCore.Scheduling.AUTO, BOOKING, BOOK));
    assertEquals(1, effects.size());
    TroupeException error = failure(effects);
    assertEquals(ErrorCode.TOO_LARGE, error.code());
    assertTrue(error.getMessage().contains("at most 2 operations"), error.getMessage());
  }

  @Test
  void participantsPastTheLimitAreTooLarge() {
    TroupeException error = failure(core(limits(100, 2, 4, 2)).handle(
        transaction(RequestCore.Scheduling.AUTO, BOOKING, BOOK)));
    assertEquals(ErrorCode.TOO_LARGE, error.code());
    assertTrue(error.getMessage().contains("at most 2 entities"), error.getMessage());
    // Reads count as participants too.
    TroupeException reads = failure(core(limits(100, 1, 4, 2)).handle(
        new Input.TransactionRequested(List.of(), List.of(ALICE, BOB),
            RequestCore.Scheduling.AUTO)));
    assertEquals(ErrorCode.TOO_LARGE, reads.code());
  }

  @Test
  void syncCallsNestedPastTheDepthAreInvalid() {
    TroupeException error = failure(core(limits(100, 10, 3, 2)).handle(transaction(
        RequestCore.Scheduling.AUTO, EntityId.parse("Chain/first"),
        new Turn.InvokeAction("hop", Json.parse("{\"n\": 0}")))));
    assertEquals(ErrorCode.INVALID_REQUEST, error.code());
    assertTrue(error.getMessage().contains("deeper than 3 levels"), error.getMessage());
  }

  @Test
  void aSyncArgumentThatFailsToEvaluateAbortsTheTransactionWithItsReason() {
    Turn emptyOrder = new Turn.InvokeAction("place", Json.parse("{\"items\": []}"));
    TroupeException error = failure(core().handle(transaction(RequestCore.Scheduling.AUTO,
        EntityId.parse("Order/o1"), emptyOrder)));
    assertEquals(ErrorCode.ABORTED, error.code());
    assertEquals(TransactionAbort.EVALUATION_FAILED, error.reason());
    // The same as a single turn answers like a turn: invalid_request, with the reason.
    TroupeException asTurn = failure(core().handle(
        new Input.TurnRequested(EntityId.parse("Order/o1"), emptyOrder, 0)));
    assertEquals(ErrorCode.INVALID_REQUEST, asTurn.code());
    assertEquals(TransactionAbort.EVALUATION_FAILED, asTurn.reason());
  }

  @Test
  void aTransactionWithNothingInItIsInvalidAndAReservedTypeIsRefused() {
    assertEquals(ErrorCode.INVALID_REQUEST, failure(core().handle(new Input.TransactionRequested(
        List.of(), List.of(), RequestCore.Scheduling.AUTO))).code());
    assertEquals(ErrorCode.INVALID_REQUEST, failure(core().handle(new Input.TurnRequested(
        EntityId.parse("$system/types"), SET_PRICE, 0))).code());
  }

  // ---------------------------------------------------------------- single turns

  @Test
  void aPlainTurnRunsOnItsEntityAloneUnderTheGivenId() {
    RequestCore core = core();
    List<Effect> effects = core.handle(new Input.TurnRequested(ALICE, WITHDRAW, 77));
    assertEquals(List.of(new Effect.RunTurn(ALICE, ACCOUNT, WITHDRAW, 77)), effects);
    Effect.ReplyTurn reply = assertInstanceOf(Effect.ReplyTurn.class, core.handle(
        new Input.TurnAnswered(new TurnResult.Done(9, EntityState.ABSENT, true))).getLast());
    assertEquals(9, reply.version());
    assertTrue(core.answered());
  }

  @Test
  void aTurnWhoseEntityAnswersAFailureIsAnsweredWithIt() {
    RequestCore core = core();
    core.handle(new Input.TurnRequested(ALICE, WITHDRAW, 0));
    TroupeException precondition = new TroupeException(ErrorCode.PRECONDITION_FAILED, "no");
    assertEquals(List.of(new Effect.ReplyFailure(precondition)), core.handle(
        new Input.TurnAnswered(new TurnResult.Failed(precondition))));
  }

  @Test
  void aTurnWithSyncCallsStartsAsATransactionAndIsAnsweredWithItsOwnEntitysResult() {
    RequestCore core = core();
    Effect.StartCoordinator start = started(core.handle(new Input.TurnRequested(BOOKING, BOOK, 0)));
    assertEquals(List.of(BOOKING, ALICE, BOB), List.copyOf(start.types().keySet()));
    CoordinatorCore.Outcome.Committed committed = new CoordinatorCore.Outcome.Committed(40,
        Map.of(BOOKING, new CoordinatorCore.ParticipantResult(1, 40, EntityState.ABSENT, false),
            ALICE, new CoordinatorCore.ParticipantResult(1, 41, EntityState.ABSENT, true)));
    Effect.ReplyTurn reply = assertInstanceOf(Effect.ReplyTurn.class,
        core.handle(new Input.CoordinatorAnswered(committed)).getLast());
    assertEquals(40, reply.version());
    assertEquals(TRANSFER, reply.type());
  }

  @Test
  void aMessagesDeliveryToAnActionWithSyncCallsRunsAsItsInvocationsTransaction() {
    RequestCore core = core();
    dev.troupe.txn.Turn.DeliverMessage delivery = new dev.troupe.txn.Turn.DeliverMessage(3, 100,
        0, new EntityId("Sender", "s"), "book", ((Turn.InvokeAction) BOOK).params());
    Effect.StartCoordinator start =
        started(core.handle(new Input.TurnRequested(BOOKING, delivery, 0)));
    // The calls are those of the invocation; the receiver's part is the delivery (its marker).
    assertEquals(List.of(BOOKING, ALICE, BOB), List.copyOf(start.types().keySet()));
    assertEquals(List.of(delivery), start.parts().get(BOOKING).turns());
    // A consumed message is the marker alone: one turn on the receiver, no calls.
    RequestCore consumed = core();
    List<Effect> effects = consumed.handle(
        new Input.TurnRequested(BOOKING, delivery.consumed("precondition_failed"), 0));
    assertInstanceOf(Effect.RunTurn.class, effects.getLast());
  }

  @Test
  void aTurnThatNeedsATransactionIsRunAgainAsOne() {
    RequestCore core = core();
    core.handle(new Input.TurnRequested(PRODUCT, SET_PRICE, 0));
    Effect.StartCoordinator start = started(core.handle(new Input.TurnAnswered(
        new TurnResult.Failed(new TroupeException(ErrorCode.ABORTED,
            TransactionAbort.NEEDS_TRANSACTION, "dependencies")))));
    assertEquals(List.of(SET_PRICE), start.parts().get(PRODUCT).turns());
    assertEquals(RequestCore.Start.PLANNED, start.start());
    // Another abort of the turn is its answer.
    RequestCore other = core();
    other.handle(new Input.TurnRequested(PRODUCT, SET_PRICE, 0));
    assertEquals(TransactionAbort.LOCK_CONFLICT, failure(other.handle(new Input.TurnAnswered(
        new TurnResult.Failed(new TroupeException(ErrorCode.ABORTED,
            TransactionAbort.LOCK_CONFLICT, "conflict"))))).reason());
  }

  @Test
  void aSingleTurnRunAsATransactionFailsLikeATurn() {
    Map<String, ErrorCode> expected = Map.of(
        TransactionAbort.PRECONDITION_FAILED, ErrorCode.PRECONDITION_FAILED,
        TransactionAbort.TOO_LARGE, ErrorCode.TOO_LARGE,
        TransactionAbort.EVALUATION_FAILED, ErrorCode.INVALID_REQUEST,
        TransactionAbort.LOCK_CONFLICT, ErrorCode.ABORTED);
    expected.forEach((reason, code) -> {
      RequestCore core = core();
      core.handle(new Input.TurnRequested(BOOKING, BOOK, 0));
      assertEquals(code, failure(core.handle(aborted(reason))).code(), reason);
      // A client's transaction keeps the abort and its reason.
      RequestCore transaction = core();
      transaction.handle(transaction(RequestCore.Scheduling.AUTO, BOOKING, BOOK));
      TroupeException error = failure(transaction.handle(aborted(reason)));
      assertEquals(ErrorCode.ABORTED, error.code(), reason);
      assertEquals(reason, error.reason());
    });
  }

  @Test
  void aRegistrationIsATransactionWhoseDependencyIsAnnouncedUntilItsAnswer() {
    Dependency dependency = update(PRODUCT, CART);
    RequestCore core = core();
    List<Effect> effects =
        core.handle(new Input.TurnRequested(PRODUCT, new Turn.RegisterDependency(dependency), 0));
    assertEquals(new Effect.AnnounceRegistrations(List.of(dependency)), effects.getFirst());
    started(effects);
    List<Effect> answer = core.handle(new Input.CoordinatorAnswered(committed(PRODUCT, 5)));
    assertEquals(new Effect.WithdrawRegistrations(List.of(dependency)), answer.getFirst());
    assertInstanceOf(Effect.ReplyTurn.class, answer.getLast());
    // Withdrawn on a failure as well (here: no outcome in time).
    RequestCore failing = core();
    failing.handle(new Input.TurnRequested(PRODUCT, new Turn.RegisterDependency(dependency), 0));
    List<Effect> unknown = failing.handle(new Input.CoordinatorUnanswered());
    assertEquals(new Effect.WithdrawRegistrations(List.of(dependency)), unknown.getFirst());
    assertEquals(ErrorCode.OUTCOME_UNKNOWN, failure(unknown).code());
  }

  @Test
  void aTurnWithoutAnAnswerHasAnUnknownOutcome() {
    RequestCore core = core();
    core.handle(new Input.TurnRequested(ALICE, WITHDRAW, 0));
    TroupeException error = failure(core.handle(new Input.TurnUnanswered(true, null)));
    assertEquals(ErrorCode.OUTCOME_UNKNOWN, error.code());
    assertTrue(error.getMessage().contains("2500 ms"), error.getMessage());
  }

  // ---------------------------------------------------------------- planned, replanned, dynamic

  @Test
  void aPlannedTransactionAbortedForDependenciesIsReplannedThenRunDynamic() {
    RequestCore core = core(limits(100, 10, 4, 2));
    Effect.StartCoordinator first = started(core.handle(
        transaction(RequestCore.Scheduling.PLANNED, PRODUCT, SET_PRICE)));
    assertEquals(RequestCore.Start.PLANNED, first.start());
    assertEquals(5, first.limits().maxLockConflictRetries(),
        "planned retries too: in a cluster the participant rule may kill it");
    List<Effect> second = core.handle(aborted(TransactionAbort.DEPENDENCIES_INVOLVED));
    assertEquals(new Effect.CountPlanning(true), second.getFirst());
    assertEquals(RequestCore.Start.PLANNED, started(second).start());
    List<Effect> third = core.handle(aborted(TransactionAbort.DEPENDENCIES_INVOLVED));
    assertEquals(RequestCore.Start.PLANNED, started(third).start());
    List<Effect> dynamic = core.handle(aborted(TransactionAbort.DEPENDENCIES_INVOLVED));
    assertEquals(new Effect.CountPlanning(false), dynamic.getFirst());
    Effect.StartCoordinator last = started(dynamic);
    assertEquals(RequestCore.Start.DYNAMIC, last.start());
    assertEquals(5, last.limits().maxLockConflictRetries(), "dynamic retries wait-die deaths");
    // A dynamic one's abort is the answer, whatever the reason.
    assertEquals(TransactionAbort.DEPENDENCIES_INVOLVED,
        failure(core.handle(aborted(TransactionAbort.DEPENDENCIES_INVOLVED))).reason());
  }

  @Test
  void aPlannedTransactionsOtherAbortIsItsAnswer() {
    RequestCore core = core();
    core.handle(transaction(RequestCore.Scheduling.AUTO, PRODUCT, SET_PRICE));
    assertEquals(TransactionAbort.TIMEOUT,
        failure(core.handle(aborted(TransactionAbort.TIMEOUT))).reason());
  }

  @Test
  void aTransactionThePlannerCannotPredictRunsDynamic() {
    // The leader follows a dependency of the registration's kind: the walk leaves the two ends.
    cache.put(PRODUCT, EntityState.ABSENT.apply(List.of(
        new Operation.Assign("price", LongNode.valueOf(1)),
        new Operation.RecordDependency(DependencyKeys.incoming("price"),
            update(EntityId.parse("Thing/supplier"), PRODUCT), null)), 1, 0));
    List<Effect> effects = core().handle(transaction(RequestCore.Scheduling.AUTO, PRODUCT,
        new Turn.RegisterDependency(update(PRODUCT, CART))));
    assertTrue(effects.contains(new Effect.CountPlanning(false)), effects.toString());
    assertEquals(RequestCore.Start.DYNAMIC, started(effects).start());
  }

  @Test
  void aPlannedTransactionReservesTheFollowersItsDependenciesReach() {
    Dependency dependency = update(PRODUCT, CART);
    cache.put(PRODUCT, EntityState.ABSENT.apply(List.of(
        new Operation.Assign("price", LongNode.valueOf(1)),
        new Operation.RecordDependency(DependencyKeys.outgoing("price"), dependency, null)), 1, 0));
    Effect.StartCoordinator start = started(core().handle(
        transaction(RequestCore.Scheduling.AUTO, PRODUCT, SET_PRICE)));
    assertEquals(List.of(PRODUCT, CART), List.copyOf(start.parts().keySet()));
  }

  @Test
  void aDynamicRequestSkipsThePlanner() {
    Effect.StartCoordinator start = started(core().handle(
        transaction(RequestCore.Scheduling.DYNAMIC, PRODUCT, SET_PRICE)));
    assertEquals(RequestCore.Start.DYNAMIC, start.start());
    assertEquals(COORDINATOR, start.limits());
  }

  @Test
  void aTransactionWithoutAnOutcomeInTimeHasAnUnknownOutcome() {
    RequestCore core = core();
    core.handle(transaction(RequestCore.Scheduling.AUTO, PRODUCT, SET_PRICE));
    assertEquals(ErrorCode.OUTCOME_UNKNOWN,
        failure(core.handle(new Input.CoordinatorUnanswered())).code());
  }

  // ---------------------------------------------------------------- interactive transactions

  @Test
  void aStepRunsUnderItsTransactionAndAnswersTheEntityAsTheTransactionSeesIt() {
    RequestCore core = core();
    assertEquals(List.of(new Effect.RunStep(7, ALICE, ACCOUNT, WITHDRAW)),
        core.handle(new Input.StepRequested(7, ALICE, WITHDRAW)));
    assertEquals(List.of(new Effect.ReplyView(ALICE, ACCOUNT, EntityState.ABSENT, 3)),
        core.handle(new Input.TurnAnswered(new TurnResult.Done(3, EntityState.ABSENT, true))));
  }

  @Test
  void aStepAbortedByWaitDieEndsTheTransactionBeforeTheAnswer() {
    RequestCore core = core();
    core.handle(new Input.StepRequested(7, ALICE, WITHDRAW));
    TroupeException died = new TroupeException(ErrorCode.ABORTED, TransactionAbort.LOCK_CONFLICT,
        "died");
    assertEquals(List.of(new Effect.AbortInteractive(7), new Effect.ReplyFailure(died)),
        core.handle(new Input.TurnAnswered(new TurnResult.Failed(died))));
  }

  @Test
  void aStepThatFailsOtherwiseLeavesTheTransactionOpen() {
    RequestCore core = core();
    core.handle(new Input.StepRequested(7, ALICE, WITHDRAW));
    TroupeException precondition = new TroupeException(ErrorCode.PRECONDITION_FAILED, "no");
    assertEquals(List.of(new Effect.ReplyFailure(precondition)),
        core.handle(new Input.TurnAnswered(new TurnResult.Failed(precondition))));
  }

  @Test
  void aStepWithoutAnAnswerAbortsTheTransactionAndIsUnknown() {
    RequestCore core = core();
    core.handle(new Input.StepRequested(7, ALICE, null));
    List<Effect> effects = core.handle(new Input.TurnUnanswered(true, null));
    assertEquals(new Effect.AbortInteractive(7), effects.getFirst());
    assertEquals(ErrorCode.OUTCOME_UNKNOWN, failure(effects).code());
  }

  @Test
  void aStepInvokingAnActionWithSyncCallsIsRefusedWithoutRunning() {
    List<Effect> effects = core().handle(new Input.StepRequested(7, BOOKING, BOOK));
    assertEquals(1, effects.size());
    assertEquals(ErrorCode.INVALID_REQUEST, failure(effects).code());
  }

  @Test
  void aCommitRunsTheCoordinatorUnderTheTransactionsIdWithoutRetries() {
    Map<EntityId, CoordinatorCore.Part> parts =
        Map.of(ALICE, new CoordinatorCore.Part(List.of(WITHDRAW), false));
    Effect.StartCoordinator start = started(core().handle(
        new Input.InteractiveCommitRequested(7, parts, Map.of(ALICE, ACCOUNT))));
    assertEquals(RequestCore.Start.INTERACTIVE_COMMIT, start.start());
    assertEquals(7, start.transactionId());
    assertEquals(0, start.limits().maxLockConflictRetries());
    // Nothing touched: committed at once, no coordinator.
    assertEquals(List.of(new Effect.ReplyTransaction(
            new CoordinatorCore.Outcome.Committed(8, Map.of()))),
        core().handle(new Input.InteractiveCommitRequested(8, Map.of(), Map.of())));
  }

  @Test
  void aRequestTakesNoInputAfterItsAnswer() {
    RequestCore core = core();
    core.handle(new Input.TurnRequested(ALICE, WITHDRAW, 0));
    core.handle(new Input.TurnUnanswered(true, null));
    assertThrows(Invariants.InvariantViolation.class,
        () -> core.handle(
            new Input.TurnAnswered(new TurnResult.Done(1, EntityState.ABSENT, true))));
  }
}
