package dev.troupe.replication;

import dev.troupe.model.Invariants;

/**
 * The settings {@link DeliveryCore} obeys; the runtime parses them once from {@code
 * troupe.messages} in reference.conf.
 *
 * @param maxDelivering most messages in flight (emitted for delivery, not yet reported) at once,
 *     each to a different receiver
 * @param readBatchMaxEntries most replication log entries one read asks for
 * @param maxPendingMessages read no further from one origin while this many of its messages read
 *     are not yet delivered (bounds the core's memory when receivers are slow)
 * @param retryDelayMillis how long after a failed delivery (the receiving turn did not run: the
 *     node overloaded, unavailable) the message is emitted again
 * @param watermarkRecordIntervalMillis least time between two records of the delivered
 *     watermark (each is a durable write; a crash re-delivers what was delivered after the last
 *     one, and the receivers' markers skip it)
 * @param maxRetryDelayMillis the longest delay between two attempts of one message: each failed
 *     attempt doubles the delay from {@code retryDelayMillis} up to this (a receiving transaction
 *     aborted by contention again and again backs off)
 */
public record DeliveryLimits(int maxDelivering, int readBatchMaxEntries, int maxPendingMessages,
    long retryDelayMillis, long watermarkRecordIntervalMillis, long maxRetryDelayMillis) {
  /** Limits whose retries do not back off (every delay {@code retryDelayMillis}). */
  public DeliveryLimits(int maxDelivering, int readBatchMaxEntries, int maxPendingMessages,
      long retryDelayMillis, long watermarkRecordIntervalMillis) {
    this(maxDelivering, readBatchMaxEntries, maxPendingMessages, retryDelayMillis,
        watermarkRecordIntervalMillis, retryDelayMillis);
  }

  public DeliveryLimits {
    Invariants.check(maxRetryDelayMillis >= retryDelayMillis,
        "max-retry-delay-millis (%s) must not be below retry-delay-millis (%s)",
        maxRetryDelayMillis, retryDelayMillis);
    Invariants.check(maxDelivering > 0, "max-delivering must be positive, was %s", maxDelivering);
    Invariants.check(readBatchMaxEntries > 0, "read-batch-max-entries must be positive, was %s",
        readBatchMaxEntries);
    Invariants.check(maxPendingMessages > 0, "max-pending must be positive, was %s",
        maxPendingMessages);
    Invariants.check(retryDelayMillis >= 0, "retry-delay-millis must not be negative, was %s",
        retryDelayMillis);
    Invariants.check(watermarkRecordIntervalMillis >= 0,
        "watermark-record-interval-millis must not be negative, was %s",
        watermarkRecordIntervalMillis);
  }
}
