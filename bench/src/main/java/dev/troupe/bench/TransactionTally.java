package dev.troupe.bench;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;

/**
 * What one contender of a transactional benchmark (SmallBank, Marketplace) counted in its
 * measured rounds: transactions committed, refused by their own logic ({@code rejected}) and
 * given up on ({@code aborted}), and per transaction type how many and how long. Reports them with
 * the completed rate: the harness's throughput times the share that completed (committed or
 * refused). Thread-safe: workers record concurrently.
 */
final class TransactionTally {
  /** How one transaction ended, as the benchmarks count it. */
  enum Result {
    COMMITTED,
    /** Its own logic refused it: it changed nothing, by design. */
    REJECTED,
    /** The system gave up on it: it changed nothing. */
    ABORTED;

    /** A benchmark's own outcome enum, whose constants bear these names. */
    static Result of(Enum<?> outcome) {
      return valueOf(outcome.name());
    }
  }

  private final LongAdder committed = new LongAdder();
  private final LongAdder rejected = new LongAdder();
  private final LongAdder aborted = new LongAdder();
  private final Map<String, Histogram> latencyByTransaction = new ConcurrentHashMap<>();
  private final Map<String, LongAdder> countByTransaction = new ConcurrentHashMap<>();

  void record(Result result, String transaction, long latencyNanos) {
    switch (result) {
      case COMMITTED -> committed.increment();
      case REJECTED -> rejected.increment();
      case ABORTED -> aborted.increment();
    }
    latencyByTransaction.computeIfAbsent(transaction, ignored -> new ConcurrentHistogram(3))
        .recordValue(latencyNanos);
    countByTransaction.computeIfAbsent(transaction, ignored -> new LongAdder()).increment();
  }

  /**
   * Adds {@code completed_per_second}, the three counts and their rates, and per transaction type
   * its count and p50/p95/p99; {@code extra} figures come after the counts. Returns the completed
   * rate.
   */
  double report(BenchReport report, String name, AlternatingComparison.Outcome outcome,
      Map<String, Double> extra) {
    long answered = committed.sum() + rejected.sum() + aborted.sum();
    double completedShare = answered == 0 ? 0
        : (double) (committed.sum() + rejected.sum()) / answered;
    double completedPerSecond = outcome.medianThroughput() * completedShare;
    report.result(name, "completed_per_second", completedPerSecond);
    report.result(name, "committed", committed.sum());
    report.result(name, "rejected", rejected.sum());
    report.result(name, "aborted", aborted.sum());
    extra.forEach((figure, value) -> report.result(name, figure, value));
    report.result(name, "abort_rate", answered == 0 ? 0 : (double) aborted.sum() / answered);
    report.result(name, "rejection_rate",
        answered == 0 ? 0 : (double) rejected.sum() / answered);
    new TreeMap<>(latencyByTransaction).forEach((transaction, latency) -> {
      report.result(name, transaction + "_count", countByTransaction.get(transaction).sum());
      for (int percentile : new int[] {50, 95, 99}) {
        report.result(name, transaction + "_p" + percentile + "_milliseconds",
            latency.getValueAtPercentile(percentile) / 1e6);
      }
    });
    return completedPerSecond;
  }
}
