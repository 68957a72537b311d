package dev.troupe.replication;

import dev.troupe.model.Invariants;

/**
 * The settings {@link ReceiverCore} obeys; the runtime parses them once from {@code
 * troupe.replication} in reference.conf.
 *
 * @param maxApplyingTransactions most remote transactions in flight (emitted for application,
 *     not yet reported applied) at once in this DC, over all origins; a multi-entity transaction
 *     counts as one
 * @param forwardAfterMillis how long an origin's received entry may stand still before this DC
 *     also pulls that origin's entries from another peer (transitive forwarding)
 * @param retryDelayMillis how long after a failed application the transaction is emitted again
 * @param appliedRecordIntervalMillis least time between two records of the applied vector (each
 *     is a durable write; recovery re-feeds what was applied after the last one, idempotently)
 * @param truncateIntervalMillis least time between two truncations of the replication log
 */
public record ReceiverLimits(int maxApplyingTransactions, long forwardAfterMillis,
    long retryDelayMillis, long appliedRecordIntervalMillis, long truncateIntervalMillis) {
  public ReceiverLimits {
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
