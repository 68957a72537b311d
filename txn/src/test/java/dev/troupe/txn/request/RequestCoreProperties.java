package dev.troupe.txn.request;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.TroupeException;
import dev.troupe.model.ValueLimits;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.KeyReference;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.request.RequestCore.Effect;
import dev.troupe.txn.request.RequestCore.Input;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * Whatever its turns and coordinators answer, a request ends: it replies exactly once, runs at
 * most {@code maxReplans + 2} coordinators one after the other (planned, replanned, then one
 * dynamic) and withdraws every registration it announced before its reply.
 */
class RequestCoreProperties {
  private static final EntityId PRODUCT = EntityId.parse("Thing/product");
  private static final EntityId CART = EntityId.parse("Thing/cart");
  private static final CoordinatorCore.Limits COORDINATOR =
      new CoordinatorCore.Limits(1000, 5, 10, 64, 32, 8);
  private static final String[] REASONS = {TransactionAbort.DEPENDENCIES_INVOLVED,
      TransactionAbort.NEEDS_TRANSACTION, TransactionAbort.LOCK_CONFLICT,
      TransactionAbort.PRECONDITION_FAILED, TransactionAbort.TOO_LARGE, null};

  @Property(tries = 500)
  void everyRequestRepliesOnceAfterBoundedCoordinators(
      @ForAll @IntRange(min = 0, max = 4) int maxReplans,
      @ForAll @IntRange(min = 0, max = 2) int kind,
      @ForAll @Size(max = 12) List<@IntRange(min = 0, max = 6) Integer> answers) {
    RequestCore core = new RequestCore(new RequestCore.Limits(100, 10, 4, maxReplans,
        ValueLimits.DEFAULTS, 8, COORDINATOR, 1000), new RequestCore.Lookups() {
          @Override
          public CompiledType typeOf(EntityId entity) {
            return CompiledType.schemaless(entity.type());
          }

          @Override
          public Optional<EntityState> cachedState(EntityId entity) {
            return Optional.empty();
          }

          @Override
          public List<Dependency> pendingRegistrations(KeyReference leader) {
            return List.of();
          }
        });
    Dependency dependency = Dependency.fromJson(Json.parse("{\"kind\":\"update\",\"leader\":"
        + "{\"entity\":\"Thing/product\",\"key\":\"price\"},\"follower\":{\"entity\":"
        + "\"Thing/cart\",\"key\":\"item\"},\"function\":\"replicate\"}"));
    Turn turn = switch (kind) {
      case 0 -> new Turn.AssignKeys(Map.of("price", Json.parse("1")));
      case 1 -> new Turn.RegisterDependency(dependency);
      default -> new Turn.DeleteKey("price");
    };
    List<Effect> effects = new java.util.ArrayList<>(core.handle(kind == 2
        ? new Input.TransactionRequested(List.of(new RequestCore.Operation(PRODUCT, turn)),
            List.of(CART), RequestCore.Scheduling.AUTO)
        : new Input.TurnRequested(PRODUCT, turn, 0)));
    int coordinators = 0;
    int next = 0;
    while (!core.answered()) {
      Effect last = effects.getLast();
      Input answer;
      int choice = next < answers.size() ? answers.get(next++) : 6;
      String reason = REASONS[Math.min(choice, REASONS.length - 1)];
      if (last instanceof Effect.StartCoordinator) {
        coordinators++;
        answer = reason == null
            ? new Input.CoordinatorAnswered(new CoordinatorCore.Outcome.Committed(9, Map.of(
                PRODUCT, new CoordinatorCore.ParticipantResult(1, 9, EntityState.ABSENT, true))))
            : new Input.CoordinatorAnswered(new CoordinatorCore.Outcome.Failed(
                new TroupeException(ErrorCode.ABORTED, reason, reason)));
      } else {
        answer = reason == null
            ? new Input.TurnAnswered(new TurnResult.Done(9, EntityState.ABSENT, true))
            : new Input.TurnAnswered(new TurnResult.Failed(
                new TroupeException(ErrorCode.ABORTED, reason, reason)));
      }
      effects.addAll(core.handle(answer));
    }
    assertTrue(coordinators <= maxReplans + 2, coordinators + " coordinators");
    long replies = effects.stream().filter(effect -> effect instanceof Effect.ReplyTurn
        || effect instanceof Effect.ReplyTransaction || effect instanceof Effect.ReplyFailure)
        .count();
    assertEquals(1, replies);
    assertTrue(effects.getLast() instanceof Effect.ReplyTurn
        || effects.getLast() instanceof Effect.ReplyTransaction
        || effects.getLast() instanceof Effect.ReplyFailure, "the reply comes last");
    long announced = effects.stream().filter(Effect.AnnounceRegistrations.class::isInstance)
        .count();
    long withdrawn = effects.stream().filter(Effect.WithdrawRegistrations.class::isInstance)
        .count();
    assertEquals(announced, withdrawn);
    // Planned and dynamic attempts retry lock-conflict deaths (a planned part dies rather than
    // wait for a later planned one of another node, and is retried at its position); only an
    // interactive commit, whose locks are held already, never retries.
    effects.stream().filter(Effect.StartCoordinator.class::isInstance)
        .map(Effect.StartCoordinator.class::cast)
        .forEach(start -> assertEquals(
            start.start() == RequestCore.Start.INTERACTIVE_COMMIT ? 0 : 5,
            start.limits().maxLockConflictRetries()));
  }
}
