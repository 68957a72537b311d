package dev.troupe.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import com.fasterxml.jackson.databind.node.LongNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.TroupeException;
import dev.troupe.model.ValueLimits;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.request.RequestCore;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** The simulator's shell of the request core runs its effects and feeds their answers back. */
class SimulatedRequestsTest {
  private static final EntityId PRODUCT = EntityId.parse("Thing/product");
  private static final Turn SET_PRICE =
      new Turn.AssignKeys(Map.of("price", LongNode.valueOf(2)));

  /** Machinery whose answers the test gives, in order, as the simulator's messages would. */
  private final ArrayDeque<Runnable> deliveries = new ArrayDeque<>();
  private final List<String> ran = new ArrayList<>();

  private final SimulatedRequests requests = new SimulatedRequests(new RequestCore.Limits(100,
      10, 4, 1, ValueLimits.DEFAULTS, 8, new CoordinatorCore.Limits(1000, 5, 10), 1000),
      entity -> CompiledType.schemaless(entity.type()), entity -> Optional.empty(),
      new SimulatedRequests.Machinery() {
        @Override
        public void runTurn(String request, EntityId entity, CompiledType type, Turn turn,
            long transactionId, Consumer<TurnResult> answer) {
          ran.add("turn " + entity);
          deliveries.add(() -> answer.accept(new TurnResult.Failed(new TroupeException(
              ErrorCode.ABORTED, TransactionAbort.NEEDS_TRANSACTION, "dependencies"))));
        }

        @Override
        public void runStep(String request, long transactionId, EntityId entity,
            CompiledType type, Turn turn, Consumer<TurnResult> answer) {
          ran.add("step " + transactionId);
          deliveries.add(() -> answer.accept(new TurnResult.Failed(new TroupeException(
              ErrorCode.ABORTED, TransactionAbort.LOCK_CONFLICT, "died"))));
        }

        @Override
        public void startCoordinator(String request, RequestCore.Effect.StartCoordinator start,
            Consumer<CoordinatorCore.Outcome> answer) {
          ran.add("coordinator " + start.start());
          boolean first = ran.stream().filter(what -> what.startsWith("coordinator")).count() == 1;
          deliveries.add(() -> answer.accept(first
              ? new CoordinatorCore.Outcome.Failed(new TroupeException(ErrorCode.ABORTED,
                  TransactionAbort.DEPENDENCIES_INVOLVED, "beyond its plan"))
              : new CoordinatorCore.Outcome.Committed(9, Map.of(PRODUCT,
                  new CoordinatorCore.ParticipantResult(1, 9, EntityState.ABSENT, true)))));
        }

        @Override
        public void abortInteractive(long transactionId) {
          ran.add("abort " + transactionId);
        }
      });

  private void deliverAll() {
    while (!deliveries.isEmpty()) {
      deliveries.poll().run();
    }
  }

  @Test
  void aTurnThatNeedsATransactionIsPlannedThenReplannedAndAnsweredAsATurn() {
    List<RequestCore.Effect> replies = new ArrayList<>();
    requests.turn("request", PRODUCT, SET_PRICE, 0, replies::add);
    deliverAll();
    assertEquals(List.of("turn Thing/product", "coordinator PLANNED", "coordinator PLANNED"), ran);
    assertEquals(9, assertInstanceOf(RequestCore.Effect.ReplyTurn.class, replies.getFirst())
        .version());
    assertEquals(1, requests.replanned());
  }

  @Test
  void aStepKilledByWaitDieAbortsItsTransactionBeforeTheAnswer() {
    List<RequestCore.Effect> replies = new ArrayList<>();
    requests.step("request", 7, PRODUCT, SET_PRICE, reply -> {
      ran.add("reply");
      replies.add(reply);
    });
    deliverAll();
    assertEquals(List.of("step 7", "abort 7", "reply"), ran);
    assertEquals(ErrorCode.ABORTED, assertInstanceOf(RequestCore.Effect.ReplyFailure.class,
        replies.getFirst()).error().code());
  }
}
