package dev.troupe.txn.interactive;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.txn.Turn;
import dev.troupe.txn.coordinator.CoordinatorCore;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The interactive transactions' lifecycle: steps, commit parts, abort, idle timeout, limits. */
class InteractiveCoreTest {
  private static final CompiledType TYPE = CompiledType.schemaless("Thing");
  private static final EntityId A = new EntityId("Thing", "a");
  private static final EntityId B = new EntityId("Thing", "b");
  private static final EntityId C = new EntityId("Thing", "c");
  private static final Turn WRITE = new Turn.IncrementKey("n", 1);

  private final InteractiveCore core = new InteractiveCore(new InteractiveCore.Limits(2, 2, 100));

  private static ErrorCode code(Runnable request) {
    return assertThrows(TroupeException.class, request::run).code();
  }

  @Test
  void succeededStepsBecomeOnePartPerEntityAndFailedOnesAreLeftOut() {
    core.begin(1, 0);
    core.stepStarted(1, A, TYPE, 1);
    core.stepFinished(1, A, WRITE, true, 2);
    core.stepStarted(1, B, TYPE, 3);
    core.stepFinished(1, B, null, true, 4); // a read of B's whole state
    core.stepStarted(1, A, TYPE, 5);
    core.stepFinished(1, A, new Turn.DeleteKey("n"), false, 6); // failed: not part of it
    InteractiveCore.Commit commit = core.commit(1);
    assertEquals(Map.of(A, new CoordinatorCore.Part(List.of(WRITE), false),
        B, new CoordinatorCore.Part(List.of(), true)), commit.parts());
    assertEquals(List.of(A, B), List.copyOf(commit.types().keySet()));
    assertFalse(core.isOpen(1));
    assertEquals(ErrorCode.NOT_FOUND, code(() -> core.commit(1)));
    assertEquals(ErrorCode.NOT_FOUND, code(() -> core.stepStarted(1, A, TYPE, 7)));
    assertEquals(Optional.empty(), core.abort(1));
  }

  @Test
  void oneStepAtATimeAndNoCommitWhileAStepIsInProgress() {
    core.begin(1, 0);
    core.stepStarted(1, A, TYPE, 1);
    assertEquals(ErrorCode.INVALID_REQUEST, code(() -> core.stepStarted(1, B, TYPE, 2)));
    assertEquals(ErrorCode.INVALID_REQUEST, code(() -> core.commit(1)));
    assertTrue(core.isOpen(1));
    core.stepFinished(1, A, WRITE, true, 3);
    core.stepStarted(1, B, TYPE, 4);
  }

  @Test
  void limitsOnOpenTransactionsAndParticipants() {
    core.begin(1, 0);
    core.begin(2, 0);
    assertEquals(ErrorCode.OVERLOADED, code(() -> core.begin(3, 0)));
    core.stepStarted(1, A, TYPE, 1);
    core.stepFinished(1, A, WRITE, true, 1);
    core.stepStarted(1, B, TYPE, 1);
    core.stepFinished(1, B, WRITE, true, 1);
    assertEquals(ErrorCode.TOO_LARGE, code(() -> core.stepStarted(1, C, TYPE, 1)));
    core.stepStarted(1, A, TYPE, 1); // an entity it already touched is fine
    assertEquals(Optional.of(List.of(A, B)), core.abort(1));
    core.begin(3, 0); // room again
  }

  @Test
  void theIdleTimeoutEndsAnIdleTransactionButNeverOneWithAStepInProgress() {
    core.begin(1, 0);
    assertEquals(Optional.of(100L), core.idleDeadlineMillis(1));
    assertEquals(Optional.empty(), core.expireIfIdle(1, 99));
    core.stepStarted(1, A, TYPE, 50);
    // The step takes long: past the deadline, but in progress.
    assertEquals(Optional.empty(), core.expireIfIdle(1, 500));
    core.stepFinished(1, A, WRITE, true, 600);
    assertEquals(Optional.of(700L), core.idleDeadlineMillis(1));
    assertEquals(Optional.empty(), core.expireIfIdle(1, 699));
    assertEquals(Optional.of(List.of(A)), core.expireIfIdle(1, 700));
    assertFalse(core.isOpen(1));
    assertEquals(Optional.empty(), core.idleDeadlineMillis(1));
    // A step that answers after the transaction ended changes nothing.
    core.stepFinished(1, A, WRITE, true, 800);
    assertFalse(core.isOpen(1));
  }
}
