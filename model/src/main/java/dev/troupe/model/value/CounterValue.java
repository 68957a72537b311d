package dev.troupe.model.value;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.LongNode;
import java.util.HashMap;
import java.util.Map;

/**
 * PN-counter: per data centre, the sum of increments and the sum of decrements (both non-negative).
 * The value is the difference of the totals. Sums wrap around in two's complement on purpose: the
 * difference is then still exact modulo 2^64, and the turn evaluator refuses any increment whose
 * resulting value would leave the signed 64-bit range, so the value read is always exact.
 */
public record CounterValue(Map<Integer, Long> increments, Map<Integer, Long> decrements)
    implements Value {
  public static final CounterValue ZERO = new CounterValue(Map.of(), Map.of());

  public CounterValue {
    increments = Map.copyOf(increments);
    decrements = Map.copyOf(decrements);
  }

  @Override
  public KeyKind kind() {
    return KeyKind.COUNTER;
  }

  public long total() {
    long sum = 0;
    for (long v : increments.values()) {
      sum += v;
    }
    for (long v : decrements.values()) {
      sum -= v;
    }
    return sum;
  }

  @Override
  public JsonNode toJson() {
    return LongNode.valueOf(total());
  }

  public CounterValue increment(long by, int originDc) {
    if (by >= 0) {
      Map<Integer, Long> next = new HashMap<>(increments);
      next.merge(originDc, by, Long::sum);
      return new CounterValue(next, decrements);
    }
    Map<Integer, Long> next = new HashMap<>(decrements);
    next.merge(originDc, -by, Long::sum);
    return new CounterValue(increments, next);
  }


}
