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
   * The per-data-centre sums of this counter and {@code other}, whichever is larger in each entry:
   * the contributions deleted so far when both were deleted (sums of a data centre only grow, and a
   * deletion observes a prefix of each data centre's increments, delivered in order).
   */
  public CounterValue atLeast(CounterValue other) {
    return new CounterValue(maximum(increments, other.increments),
        maximum(decrements, other.decrements));
  }

  /**
   * This counter after the deleted contributions grew from {@code deletedBefore} to {@code
   * deletedAfter}: each entry loses the growth (never below zero: nothing is left to remove),
   * entries at zero are dropped, so the result does not depend on the order of the operations
   * that led to it. {@link #isEmpty} then says the key holds nothing any more.
   */
  public CounterValue withoutGrowth(CounterValue deletedBefore, CounterValue deletedAfter) {
    return new CounterValue(
        reduce(increments, deletedBefore.increments, deletedAfter.increments),
        reduce(decrements, deletedBefore.decrements, deletedAfter.decrements));
  }

  /** Whether no data centre contributes anything (what a deletion of every contribution leaves). */
  public boolean isEmpty() {
    return increments.isEmpty() && decrements.isEmpty();
  }

  private static Map<Integer, Long> maximum(Map<Integer, Long> first, Map<Integer, Long> second) {
    Map<Integer, Long> next = new HashMap<>(first);
    second.forEach((dc, sum) -> next.merge(dc, sum, Math::max));
    return next;
  }

  private static Map<Integer, Long> reduce(Map<Integer, Long> sums, Map<Integer, Long> before,
      Map<Integer, Long> after) {
    Map<Integer, Long> next = new HashMap<>(sums);
    after.forEach((dc, deleted) -> {
      long growth = deleted - before.getOrDefault(dc, 0L);
      long remaining = Math.max(0, next.getOrDefault(dc, 0L) - growth);
      if (remaining == 0) {
        next.remove(dc);
      } else {
        next.put(dc, remaining);
      }
    });
    return next;
  }

  /** The per-data-centre sums of both counters added (what a turn observes of a deleted one). */
  public CounterValue plus(CounterValue other) {
    Map<Integer, Long> nextIncrements = new HashMap<>(increments);
    other.increments.forEach((dc, sum) -> nextIncrements.merge(dc, sum, Long::sum));
    Map<Integer, Long> nextDecrements = new HashMap<>(decrements);
    other.decrements.forEach((dc, sum) -> nextDecrements.merge(dc, sum, Long::sum));
    return new CounterValue(nextIncrements, nextDecrements);
  }
}
