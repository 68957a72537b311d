package dev.troupe.model.causal;

import java.util.Collections;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * A vector of timestamps, one entry per data centre (DC id → HLC timestamp); an absent entry is 0.
 * Used as a transaction's dependency vector (which transactions of each DC it may have seen), a
 * DC's received, applied and stable vectors, and a client's causal token.
 *
 * <p>Immutable; entries are never 0 (a 0 entry is simply absent), so equal vectors are equal
 * records. Ordered by DC id for a deterministic encoding.
 */
public record DependencyVector(SortedMap<Integer, Long> entries) {
  public static final DependencyVector EMPTY = new DependencyVector(new TreeMap<>());

  public DependencyVector {
    TreeMap<Integer, Long> copy = new TreeMap<>();
    entries.forEach((dc, timestamp) -> {
      if (timestamp != 0) {
        copy.put(dc, timestamp);
      }
    });
    entries = Collections.unmodifiableSortedMap(copy);
  }

  public static DependencyVector of(Map<Integer, Long> entries) {
    return new DependencyVector(new TreeMap<>(entries));
  }

  /** The entry of {@code dataCentre}, 0 when absent. */
  public long get(int dataCentre) {
    return entries.getOrDefault(dataCentre, 0L);
  }

  /** This vector with {@code dataCentre}'s entry raised to at least {@code timestamp}. */
  public DependencyVector atLeast(int dataCentre, long timestamp) {
    if (get(dataCentre) >= timestamp) {
      return this;
    }
    TreeMap<Integer, Long> next = new TreeMap<>(entries);
    next.put(dataCentre, timestamp);
    return new DependencyVector(next);
  }

  /** The pointwise maximum (least upper bound). */
  public DependencyVector merge(DependencyVector other) {
    TreeMap<Integer, Long> next = new TreeMap<>(entries);
    other.entries.forEach((dc, timestamp) -> next.merge(dc, timestamp, Math::max));
    return new DependencyVector(next);
  }

  /** The pointwise minimum over the union of entries (an absent entry counts as 0). */
  public DependencyVector meet(DependencyVector other) {
    TreeMap<Integer, Long> next = new TreeMap<>();
    entries.forEach((dc, timestamp) -> next.put(dc, Math.min(timestamp, other.get(dc))));
    return new DependencyVector(next);
  }

  /** Whether every entry of {@code other} is at most this vector's entry. */
  public boolean covers(DependencyVector other) {
    for (Map.Entry<Integer, Long> entry : other.entries.entrySet()) {
      if (get(entry.getKey()) < entry.getValue()) {
        return false;
      }
    }
    return true;
  }

  /** Whether every entry of {@code other}, except {@code ignoredDataCentre}'s, is covered. */
  public boolean coversExcept(DependencyVector other, int ignoredDataCentre) {
    for (Map.Entry<Integer, Long> entry : other.entries.entrySet()) {
      if (entry.getKey() != ignoredDataCentre && get(entry.getKey()) < entry.getValue()) {
        return false;
      }
    }
    return true;
  }
}
