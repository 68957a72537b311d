package dev.troupe.runtime.cluster;

import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A member's drain before it leaves on SIGTERM (docs/ARCHITECTURE.md, "Failing over fast"): once
 * its REST server takes no more requests, it waits until the transactions it started have ended
 * (none open), at most {@code troupe.cluster.drain-timeout-millis}, so that leaving (the hand-off
 * of its partitions, the end of its actor system) does not cut a coordinator off between its
 * votes and its decision: the clients of those transactions get their answer instead of {@code
 * 409 aborted} or {@code 500 outcome_unknown}. Past the bound it leaves anyway (a transaction
 * still open is then ended by the coordinator fence, as after a crash).
 */
public final class Drain {
  private static final Logger log = LoggerFactory.getLogger(Drain.class);
  private static final long POLL_MILLIS = 20;

  private Drain() {}

  /**
   * Waits until {@code openTransactions} reads 0 or {@code timeoutMillis} passed; answers the
   * milliseconds it waited. Blocks its caller (a shutdown hook's thread).
   */
  public static long awaitNoOpenTransactions(LongSupplier openTransactions, long timeoutMillis) {
    long start = System.nanoTime();
    long deadline = start + timeoutMillis * 1_000_000;
    long open = openTransactions.getAsLong();
    while (open > 0 && System.nanoTime() < deadline) {
      try {
        Thread.sleep(POLL_MILLIS);
      } catch (InterruptedException interrupted) {
        Thread.currentThread().interrupt();
        break;
      }
      open = openTransactions.getAsLong();
    }
    long waitedMillis = (System.nanoTime() - start) / 1_000_000;
    if (open > 0) {
      log.warn("drain: {} transactions still open after {} ms (troupe.cluster.drain-timeout-millis);"
          + " leaving anyway", open, waitedMillis);
    } else {
      log.info("drain: no transaction open after {} ms; leaving the cluster", waitedMillis);
    }
    return waitedMillis;
  }
}
