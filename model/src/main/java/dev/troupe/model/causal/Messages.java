package dev.troupe.model.causal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import dev.troupe.model.Json;

/**
 * The receiving side of causal messages (TTCC; docs/ARCHITECTURE.md, "Causal messages"): the
 * hidden <b>delivered marker</b> {@code $delivered:<originDc>} of a receiving entity holds
 * {@code [messageTimestamp, messageIndex, outcome]} of the last message of that data centre's
 * replication log delivered to it. A data centre delivers its messages to one receiver one at a
 * time in log order, so a message at or below the marker was delivered before (a re-delivery after
 * a crash) and is skipped: delivery is exactly once. The outcome is {@link #DELIVERED} when the
 * receiving action ran, else the error code (wire name) that consumed the message without effect.
 *
 * <p>A marker does not make an entity exist, and a deletion keeps it ({@code EntityState.apply}).
 */
public final class Messages {
  /** The hidden key prefix of delivered markers; followed by the origin DC id in decimal. */
  public static final String DELIVERED_PREFIX = "$delivered:";

  /** The outcome of a message whose action ran. */
  public static final String DELIVERED = "delivered";

  /**
   * The reason of the {@code conflict} a delivery in a transaction (an action with sync calls)
   * is rejected with when the marker shows the message delivered before: nothing runs again.
   */
  public static final String ALREADY_DELIVERED = "already_delivered";

  private Messages() {}

  public static String deliveredMarkerKey(int originDc) {
    return DELIVERED_PREFIX + originDc;
  }

  public static boolean isDeliveredMarkerKey(String key) {
    // The first character first, as ReplicaApplication.isMarkerKey.
    return !key.isEmpty() && key.charAt(0) == '$' && key.startsWith(DELIVERED_PREFIX);
  }

  /** The marker's value for a message and its outcome. */
  public static JsonNode markerValue(long messageTimestamp, int messageIndex, String outcome) {
    ArrayNode value = Json.NODES.arrayNode();
    value.add(messageTimestamp);
    value.add(messageIndex);
    value.add(outcome);
    return value;
  }

  /**
   * Whether a marker value (null when absent) shows the message (timestamp, index) delivered: the
   * marker is at or above it in log order.
   */
  public static boolean covers(JsonNode marker, long messageTimestamp, int messageIndex) {
    if (marker == null || !marker.isArray() || marker.size() < 2) {
      return false;
    }
    long timestamp = marker.get(0).asLong();
    return timestamp > messageTimestamp
        || (timestamp == messageTimestamp && marker.get(1).asInt() >= messageIndex);
  }

  /** The outcome a marker value records, or null when it is not a marker. */
  public static String outcome(JsonNode marker) {
    return marker != null && marker.isArray() && marker.size() >= 3 ? marker.get(2).asText()
        : null;
  }
}
