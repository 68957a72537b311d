package dev.troupe.runtime;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.port.Timers;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * The node's table of turns, steps and reads it sent to entities through the {@link
 * dev.troupe.txn.port.Transport} and whose answer ({@code TurnAnswer}, {@code StepAnswer}, {@code
 * ReadAnswer}) has not arrived: each caller's future by (kind, transaction or read id, entity).
 * The answers of coordinators' messages need no table here: a vote or an acknowledgement names
 * its transaction attempt, whose live {@link TransactionRun} the {@link DecisionDirectory} finds.
 *
 * <p><b>Bounds.</b> At most {@code troupe.transport.max-pending-replies} entries (past it a new
 * one is refused at once with {@code overloaded}); each waits at most its timeout, then its caller
 * fails with a {@link TimeoutException} exactly as a local turn whose ask timed out, and the entry
 * is removed. An answer that finds no entry (after the timeout, or a duplicate) is dropped and
 * counted ({@link #lateAnswers}): it is never delivered to another request, since an entry is
 * removed before its future completes and a key in flight is never reused (a second message
 * under the same key is refused, not queued behind the first).
 *
 * <p>Thread-safe: callers register from request threads, answers arrive on the transport's
 * delivering thread, timeouts on the timers' thread.
 */
public final class RemoteReplies {
  /** What a pending reply answers (a read's "transaction id" is the asking node's read id). */
  enum Kind { TURN, STEP, READ }

  private record Key(Kind kind, long transactionId, EntityId entity) {}

  private final ConcurrentHashMap<Key, CompletableFuture<TurnResult>> pending =
      new ConcurrentHashMap<>();
  private final AtomicInteger size = new AtomicInteger();
  private final int maxPendingReplies;
  private final Timers timers;
  private final LongAdder lateAnswers = new LongAdder();
  private final LongAdder timedOut = new LongAdder();
  private final LongAdder refused = new LongAdder();

  RemoteReplies(int maxPendingReplies, Timers timers) {
    this.maxPendingReplies = maxPendingReplies;
    this.timers = timers;
  }

  /**
   * Registers a caller before its message is sent: the future completes with the answer, or
   * fails with a {@link TimeoutException} after {@code timeoutMillis}, or at once with {@code
   * overloaded} when the table is full or a message under the same key is still unanswered.
   */
  CompletableFuture<TurnResult> expect(Kind kind, long transactionId, EntityId entity,
      long timeoutMillis) {
    if (size.incrementAndGet() > maxPendingReplies) {
      size.decrementAndGet();
      refused.increment();
      return CompletableFuture.failedFuture(new TroupeException(ErrorCode.OVERLOADED,
          "too many turns waiting for an answer from other nodes"
              + " (troupe.transport.max-pending-replies); retry"));
    }
    Key key = new Key(kind, transactionId, entity);
    CompletableFuture<TurnResult> future = new CompletableFuture<>();
    if (pending.putIfAbsent(key, future) != null) {
      size.decrementAndGet();
      refused.increment();
      return CompletableFuture.failedFuture(new TroupeException(ErrorCode.OVERLOADED,
          "a " + kind.name().toLowerCase() + " of transaction " + transactionId + " on " + entity
              + " is still waiting for its answer; retry"));
    }
    Timers.Scheduled timer = timers.schedule(timeoutMillis, () -> {
      if (remove(key, future)) {
        timedOut.increment();
        future.completeExceptionally(new TimeoutException("no answer from " + entity
            + " within " + timeoutMillis + " ms"));
      }
    });
    future.whenComplete((ignored, failure) -> timer.cancel());
    return future;
  }

  /** An answer arrived: completes its caller, or drops and counts it when nobody waits. */
  void answer(Kind kind, long transactionId, EntityId entity, TurnResult result) {
    Key key = new Key(kind, transactionId, entity);
    CompletableFuture<TurnResult> future = pending.get(key);
    if (future == null || !remove(key, future)) {
      lateAnswers.increment();
      return;
    }
    future.complete(result);
  }

  private boolean remove(Key key, CompletableFuture<TurnResult> future) {
    if (pending.remove(key, future)) {
      size.decrementAndGet();
      return true;
    }
    return false;
  }

  /** Callers waiting now. */
  public int pendingCount() {
    return size.get();
  }

  /** Answers dropped because nobody waited for them any more (late or duplicated). */
  public long lateAnswers() {
    return lateAnswers.sum();
  }

  /** Callers that got no answer within their timeout. */
  public long timedOut() {
    return timedOut.sum();
  }

  /** Callers refused at once (table full, or their key still in flight). */
  public long refused() {
    return refused.sum();
  }
}
