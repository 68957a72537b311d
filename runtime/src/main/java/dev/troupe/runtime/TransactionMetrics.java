package dev.troupe.runtime;

import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * Counters of multi-entity transactions: outcomes, abort reasons, lock waits, wait-die retries,
 * what recovery resolved, and the latency histogram. Thread-safe; cheap to record.
 */
public final class TransactionMetrics {
  private final LongAdder committed = new LongAdder();
  private final Map<String, LongAdder> failedByReason = new ConcurrentHashMap<>();
  private final LongAdder lockWaits = new LongAdder();
  private final LongAdder psacDelays = new LongAdder();
  private final LongAdder lockConflictRetries = new LongAdder();
  private final LongAdder open = new LongAdder();
  private final LongAdder replanned = new LongAdder();
  private final LongAdder ranDynamic = new LongAdder();
  private volatile long recoveredCommitted;
  private volatile long recoveredAborted;
  private final Recorder latencyMicros = new Recorder(3);
  private final Histogram cumulativeLatencyMicros = new Histogram(3);
  /** The last outcomes themselves, for people looking at the node (the console). */
  private final RecentTransactions recent;

  TransactionMetrics(RecentTransactions recent) {
    this.recent = recent;
  }

  /** The last transactions' outcomes ({@code GET /v1/transactions/recent}). */
  public RecentTransactions recent() {
    return recent;
  }

  void recordStarted() {
    open.increment();
  }

  void recordCommitted(long nanos, int lockConflicts) {
    open.decrement();
    committed.increment();
    lockConflictRetries.add(lockConflicts);
    latencyMicros.recordValue(Math.max(0, nanos / 1000));
  }

  /** A failed transaction, by abort reason, or by error code when it was not an abort. */
  void recordFailed(TroupeException error, int lockConflicts) {
    open.decrement();
    lockConflictRetries.add(lockConflicts);
    String reason = error.code() == ErrorCode.ABORTED && error.reason() != null
        ? error.reason() : error.code().wireName();
    failedByReason.computeIfAbsent(reason, ignored -> new LongAdder()).increment();
  }

  void recordLockWaits(long count) {
    if (count > 0) {
      lockWaits.add(count);
    }
  }

  /** An interactive transaction aborted by its client or its idle timeout. */
  void recordAbortedInteractive() {
    failedByReason.computeIfAbsent(dev.troupe.model.TransactionAbort.INTERACTIVE_ABORTED, ignored -> new LongAdder()).increment();
  }

  void recordPsacDelays(long count) {
    if (count > 0) {
      psacDelays.add(count);
    }
  }

  /**
   * A planned attempt whose forwards reached beyond its plan was planned again ({@code
   * replanned}), or a planned transaction ran dynamic because its dependencies could not be
   * planned or kept reaching beyond its plan.
   */
  void recordDependencyPlanning(boolean replannedAttempt) {
    (replannedAttempt ? replanned : ranDynamic).increment();
  }

  /** Planned attempts planned again because their forwards reached beyond their plan. */
  public long replanned() {
    return replanned.sum();
  }

  /** Planned transactions that ran dynamic because of their dependencies. */
  public long plannedRanDynamic() {
    return ranDynamic.sum();
  }

  /** Transaction parts a PSAC gate delayed (dependent on an action in progress). */
  public long psacDelays() {
    return psacDelays.sum();
  }

  void recordRecovery(int committedParts, int abortedParts) {
    recoveredCommitted = committedParts;
    recoveredAborted = abortedParts;
  }

  public long committed() {
    return committed.sum();
  }

  /** Failed transactions by abort reason (or error code), sorted by name. */
  public Map<String, Long> failedByReason() {
    Map<String, Long> result = new TreeMap<>();
    failedByReason.forEach((reason, count) -> result.put(reason, count.sum()));
    return result;
  }

  /** Prepare requests that waited for a lock held by an older transaction. */
  public long lockWaits() {
    return lockWaits.sum();
  }

  /** Attempts killed by wait-die and retried (or given up on). */
  public long lockConflictRetries() {
    return lockConflictRetries.sum();
  }

  /** Transactions started and not yet answered. */
  public long open() {
    return open.sum();
  }

  /** Prepared parts the last start-up committed because their decision was durable. */
  public long recoveredCommitted() {
    return recoveredCommitted;
  }

  /** Prepared parts the last start-up aborted (presumed abort: no decision). */
  public long recoveredAborted() {
    return recoveredAborted;
  }

  /** Latencies of committed transactions since start, in microseconds (a copy). */
  public synchronized Histogram latencyHistogramMicros() {
    cumulativeLatencyMicros.add(latencyMicros.getIntervalHistogram());
    return cumulativeLatencyMicros.copy();
  }
}
