package dev.troupe.runtime;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.storage.DurableStore;
import dev.troupe.storage.IdempotencyRecord;
import dev.troupe.storage.StoreHealth;
import dev.troupe.txn.interactive.InteractiveCore;
import dev.troupe.txn.Turn;
import dev.troupe.txn.port.Timers;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The shell of the interactive transactions' lifecycle ({@link InteractiveCore}, guarded by its
 * own monitor) and of their idle timers. Steps and commits run as requests ({@link RequestShell},
 * whose core decides how a failed step ends the transaction); this class begins, aborts, expires
 * and releases. The contracts are {@link Troupe}'s interactive methods'.
 */
final class InteractiveShell implements RequestShell.Interactive {
  private final InteractiveCore interactive;
  private final DurableStore store;
  /** Runs the idle checks (the core's deadlines) through the node's {@link Timers}. */
  private final Timers timers;
  /** Reaches the entities whose parts an abort releases, here or on another node. */
  private final EntityRouter router;
  private final TransactionMetrics transactionMetrics;
  private final RequestShell requests;
  /** Per open interactive transaction, the timer that checks it for idleness. */
  private final Map<Long, Timers.Scheduled> idleTimers = new ConcurrentHashMap<>();

  InteractiveShell(RuntimeSettings.TransactionSettings settings, DurableStore store,
      Timers timers, EntityRouter router,
      TransactionMetrics transactionMetrics, RequestShell requests) {
    this.interactive = new InteractiveCore(new InteractiveCore.Limits(
        settings.maxInteractiveTransactions(), settings.maxParticipants(),
        settings.interactiveIdleTimeoutMillis()));
    this.store = store;
    this.timers = timers;
    this.router = router;
    this.transactionMetrics = transactionMetrics;
    this.requests = requests;
    requests.useInteractive(this);
  }

  /** Monotonic milliseconds for idle timeouts (the shell's clock; the core only compares). */
  private static long nowMillis() {
    return System.nanoTime() / 1_000_000;
  }

  long begin() {
    StoreHealth storage = store.health();
    if (!storage.accepting()) {
      // A failed store no longer raises its durable clock ceiling, so an id issued now could be
      // issued again after the restart, and a client holding it across the restart would act on
      // another client's transaction (found by the simulator). Nothing could commit anyway.
      throw new TroupeException(ErrorCode.UNAVAILABLE,
          "storage failed and accepts no more commits: " + storage.failure());
    }
    long transactionId = store.newTransactionId();
    synchronized (interactive) {
      interactive.begin(transactionId, nowMillis());
    }
    scheduleIdleCheck(transactionId);
    return transactionId;
  }

  CompletableFuture<EntityView> step(long transactionId, EntityId entity, Turn turn) {
    try {
      synchronized (interactive) {
        interactive.requireOpen(transactionId);
      }
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return requests.step(transactionId, entity, turn);
  }

  @Override
  public void stepStarted(long transactionId, EntityId entity, CompiledType type) {
    synchronized (interactive) {
      interactive.stepStarted(transactionId, entity, type, nowMillis());
    }
  }

  @Override
  public void stepFinished(long transactionId, EntityId entity, Turn turn, boolean succeeded) {
    synchronized (interactive) {
      interactive.stepFinished(transactionId, entity, turn, succeeded, nowMillis());
    }
    scheduleIdleCheck(transactionId);
  }

  CompletableFuture<TransactionOutcome> commit(long transactionId,
      IdempotencyRecord idempotency) {
    InteractiveCore.Commit commit;
    try {
      synchronized (interactive) {
        commit = interactive.commit(transactionId);
      }
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    }
    cancelIdleCheck(transactionId);
    return requests.commitInteractive(transactionId, commit.parts(), commit.types(), idempotency);
  }

  @Override
  public void abort(long transactionId) {
    Optional<List<EntityId>> touched;
    synchronized (interactive) {
      touched = interactive.abort(transactionId);
    }
    touched.ifPresent(entities -> release(transactionId, entities, new TroupeException(
        ErrorCode.ABORTED, TransactionAbort.INTERACTIVE_ABORTED, "aborted by its client")));
  }

  boolean isOpen(long transactionId) {
    synchronized (interactive) {
      return interactive.isOpen(transactionId);
    }
  }

  /** An ended-by-abort transaction: count it and release its parts in the entities it touched. */
  private void release(long transactionId, List<EntityId> touched, TroupeException why) {
    cancelIdleCheck(transactionId);
    transactionMetrics.recordAbortedInteractive();
    // Its duration is not tracked here; 0 says unknown.
    transactionMetrics.recent().failed(transactionId, RecentTransactions.Kind.INTERACTIVE, why,
        touched, System.currentTimeMillis(), 0);
    for (EntityId entity : touched) {
      router.tell(entity, new EntityActor.Decide(transactionId, false, null));
    }
  }

  /**
   * (Re)schedules the idle check of an open transaction at its idle deadline. A check that finds
   * the transaction active again (or a step in progress) does nothing: the activity scheduled a
   * later check.
   */
  private void scheduleIdleCheck(long transactionId) {
    Timers.Scheduled previous;
    // Under the lock: an abort or commit ends the transaction under it and cancels its timer
    // afterwards, so a timer is never registered for a transaction already over.
    synchronized (interactive) {
      Optional<Long> deadline = interactive.idleDeadlineMillis(transactionId);
      if (deadline.isEmpty()) {
        return;
      }
      // The check feeds the core under its monitor, like every other input (the port's contract).
      Timers.Scheduled timer = timers.schedule(deadline.get() - nowMillis(), () -> {
        Optional<List<EntityId>> expired;
        synchronized (interactive) {
          expired = interactive.expireIfIdle(transactionId, nowMillis());
        }
        expired.ifPresent(entities -> release(transactionId, entities, new TroupeException(
            ErrorCode.ABORTED, TransactionAbort.TIMEOUT, "no request within its idle timeout")));
      });
      previous = idleTimers.put(transactionId, timer);
    }
    if (previous != null) {
      previous.cancel();
    }
  }

  private void cancelIdleCheck(long transactionId) {
    Timers.Scheduled timer = idleTimers.remove(transactionId);
    if (timer != null) {
      timer.cancel();
    }
  }
}
