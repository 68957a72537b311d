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

  /**
   * This counter without the contributions a deletion observed ({@code observed}, per data centre):
   * what stays is exactly what the deleting turn had not seen (increments concurrent with the
   * deletion), so a deletion commutes with every increment it did not observe. Entries that fall
   * to zero are dropped, so the result is the same whatever order those operations arrived in;
   * {@link #isEmpty} then says the key holds nothing any more.
   */
  public CounterValue without(CounterValue observed) {
    return new CounterValue(subtract(increments, observed.increments),
        subtract(decrements, observed.decrements));
  }

  /** Whether no data centre contributes anything (what a deletion of every contribution leaves). */
  public boolean isEmpty() {
    return increments.isEmpty() && decrements.isEmpty();
  }

  private static Map<Integer, Long> subtract(Map<Integer, Long> sums, Map<Integer, Long> observed) {
    Map<Integer, Long> next = new HashMap<>(sums);
    observed.forEach((dc, sum) -> {
      long remaining = next.getOrDefault(dc, 0L) - sum;
      if (remaining == 0) {
        next.remove(dc);
      } else {
        next.put(dc, remaining);
      }
    });
    return next;
  }
}
