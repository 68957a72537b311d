package dev.troupe.runtime.messages;

import com.typesafe.config.Config;
import dev.troupe.replication.DeliveryLimits;

/**
 * The {@code troupe.messages} settings (reference.conf documents each), parsed once.
 *
 * @param maxPerTurn most messages one action may declare ({@code send}); checked when a type is
 *     defined
 * @param limits what the delivery core obeys
 * @param pollIntervalMillis how often delivery reads the log for new messages, and ticks
 */
public record MessageSettings(int maxPerTurn, DeliveryLimits limits, long pollIntervalMillis) {
  public static MessageSettings fromConfig(Config troupe) {
    Config messages = troupe.getConfig("messages");
    return new MessageSettings(
        positive(messages, "max-per-turn"),
        new DeliveryLimits(
            positive(messages, "max-delivering"),
            positive(messages, "read-batch-max-entries"),
            positive(messages, "max-pending"),
            messages.getLong("retry-delay-millis"),
            messages.getLong("watermark-record-interval-millis"),
            messages.getLong("max-retry-delay-millis")),
        Math.max(1, messages.getLong("poll-interval-millis")));
  }

  private static int positive(Config config, String path) {
    int value = config.getInt(path);
    if (value <= 0) {
      throw new IllegalArgumentException("troupe.messages." + path + " must be positive, was "
          + value);
    }
    return value;
  }
}
