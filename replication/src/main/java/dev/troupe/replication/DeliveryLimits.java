package dev.troupe.replication;

import dev.troupe.model.Invariants;

/**
 * The settings {@link DeliveryCore} obeys; the runtime parses them once from {@code
 * troupe.messages} in reference.conf.
 *
 * @param maxDelivering most messages in flight (emitted for delivery, not yet reported) at once,
 *     each to a different receiver
 * @param readBatchMaxEntries most replication log entries one read asks for
 * @param maxPendingMessages read no further while this many messages read are not yet delivered
 *     (bounds the core's memory when receivers are slow)
 * @param retryDelayMillis how long after a failed delivery (the receiving turn did not run: the
 *     node overloaded, unavailable) the message is emitted again
 * @param watermarkRecordIntervalMillis least time between two records of the delivered
 *     watermark (each is a durable write; a crash re-delivers what was delivered after the last
 *     one, and the receivers' markers skip it)
 */
public record DeliveryLimits(int maxDelivering, int readBatchMaxEntries, int maxPendingMessages,
    long retryDelayMillis, long watermarkRecordIntervalMillis) {
  public DeliveryLimits {
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
