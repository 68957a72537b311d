package dev.troupe.replication;

import dev.troupe.model.Invariants;

/**
 * The settings {@link ReceiverCore} obeys; the runtime parses them once from {@code
 * troupe.replication} in reference.conf.
 *
 * @param maxApplyingTransactions most applications in flight (emitted, not yet reported applied)
 *     at once in this DC, over all origins; an application counts as one whatever it holds (at
 *     most one per origin is in flight)
 * @param forwardAfterMillis how long an origin's received entry may stand still before this DC
 *     also pulls that origin's entries from another peer (transitive forwarding)
 * @param retryDelayMillis how long after a failed application the transaction is emitted again
 * @param appliedRecordIntervalMillis least time between two records of the applied vector (each
 *     is a durable write; recovery re-feeds what was applied after the last one, idempotently)
 * @param truncateIntervalMillis least time between two truncations of the replication log
 * @param maxTransactionsPerApplication most consecutive transactions of one origin applied
 *     together as one application (batched application; 1 applies them one by one)
 * @param maxEntitiesPerApplication most distinct entities one application touches, unless its
 *     first transaction alone touches more (a transaction is never split)
 */
public record ReceiverLimits(int maxApplyingTransactions, long forwardAfterMillis,
    long retryDelayMillis, long appliedRecordIntervalMillis, long truncateIntervalMillis,
    int maxTransactionsPerApplication, int maxEntitiesPerApplication) {
  /** Limits that apply one transaction per application (no batching). */
  public ReceiverLimits(int maxApplyingTransactions, long forwardAfterMillis,
      long retryDelayMillis, long appliedRecordIntervalMillis, long truncateIntervalMillis) {
    this(maxApplyingTransactions, forwardAfterMillis, retryDelayMillis,
        appliedRecordIntervalMillis, truncateIntervalMillis, 1, 1);
  }

  public ReceiverLimits {
    Invariants.check(maxTransactionsPerApplication > 0,
        "max-transactions-per-application must be positive, was %s",
        maxTransactionsPerApplication);
    Invariants.check(maxEntitiesPerApplication > 0,
        "max-entities-per-application must be positive, was %s", maxEntitiesPerApplication);
    Invariants.check(maxApplyingTransactions > 0,
        "max-applying-transactions must be positive, was %s", maxApplyingTransactions);
    Invariants.check(forwardAfterMillis > 0, "forward-after-millis must be positive, was %s",
        forwardAfterMillis);
    Invariants.check(retryDelayMillis >= 0, "the retry delay must not be negative, was %s",
        retryDelayMillis);
    Invariants.check(appliedRecordIntervalMillis >= 0,
        "applied-record-interval-millis must not be negative, was %s",
        appliedRecordIntervalMillis);
    Invariants.check(truncateIntervalMillis >= 0,
        "truncate-interval-millis must not be negative, was %s", truncateIntervalMillis);
  }
}
