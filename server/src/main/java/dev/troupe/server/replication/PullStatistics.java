package dev.troupe.server.replication;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One peer's puller, counted for {@code /metrics} and {@code troupe status}: pulls answered,
 * entries they brought, failed pulls, and when the last pull succeeded.
 *
 * <p>Concurrency: written by the puller's completions, read by request threads; each figure is
 * atomic on its own (a snapshot may mix two moments, which metrics tolerate).
 */
public final class PullStatistics {
  private final AtomicLong pulls = new AtomicLong();
  private final AtomicLong entries = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();
  private final AtomicLong consecutiveFailures = new AtomicLong();
  private final AtomicLong lastSuccessMillis = new AtomicLong();
  private final AtomicReference<String> lastFailure = new AtomicReference<>("");

  /**
   * The figures at one moment.
   *
   * @param pulls pull requests answered with a batch
   * @param entries replication log entries those batches carried
   * @param failures pulls that failed (unreachable, timed out, refused, bad bytes)
   * @param consecutiveFailures failures since the last success (0: the link works)
   * @param lastSuccessMillis wall-clock time of the last successful round, 0 if none yet
   * @param lastFailure why the last pull failed, empty if none yet
   */
  public record Snapshot(long pulls, long entries, long failures, long consecutiveFailures,
      long lastSuccessMillis, String lastFailure) {}

  void pulled(int entryCount) {
    pulls.incrementAndGet();
    entries.addAndGet(entryCount);
  }

  void succeeded(long nowMillis) {
    consecutiveFailures.set(0);
    lastSuccessMillis.set(nowMillis);
  }

  /** Records a failure; the number of consecutive failures, this one included. */
  long failed(String why) {
    failures.incrementAndGet();
    lastFailure.set(why);
    return consecutiveFailures.incrementAndGet();
  }

  public Snapshot snapshot() {
    return new Snapshot(pulls.get(), entries.get(), failures.get(), consecutiveFailures.get(),
        lastSuccessMillis.get(), lastFailure.get());
  }
}
