package dev.troupe.model;

import dev.troupe.model.value.CounterValue;
import dev.troupe.model.value.SetValue;
import dev.troupe.model.value.Value;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The operations that delete what a turn observed (docs/ARCHITECTURE.md, "Deletes across data
 * centres"): a register by a tombstone ({@link Operation.DeleteKey}), a counter or a set by
 * removing exactly the contributions or additions the turn saw ({@link Operation.DeleteCounter},
 * {@link Operation.DeleteSet}), so that increments and additions made concurrently in other data
 * centres survive the deletion in every data centre, whatever order they arrive in.
 *
 * <p>Stateless and pure.
 */
public final class Deletions {
  private Deletions() {}

  /**
   * The deletion of {@code key} of the entity state the turn observed. A counter's deletion
   * observes each data centre's whole sums: what is left of them plus what earlier deletions
   * removed ({@link EntityState#deletedCounters}), so that two concurrent deletions that observed
   * the same contributions remove them once.
   */
  public static Operation ofKey(EntityState observed, String key) {
    return switch (observed.get(key)) {
      case CounterValue counter -> new Operation.DeleteCounter(key,
          counter.plus(observed.deletedCounters().getOrDefault(key, CounterValue.ZERO)));
      case SetValue set -> new Operation.DeleteSet(key, set.allTags());
      case null, default -> new Operation.DeleteKey(key);
    };
  }

  /**
   * The deletion of the entity whose state the turn observed: one observed-remove deletion per
   * counter and set (in key order, so the journal record is the same whatever the map's order),
   * then {@link Operation.DeleteEntity}.
   */
  public static List<Operation> ofEntity(EntityState observed) {
    List<Operation> operations = new ArrayList<>();
    for (Map.Entry<String, Value> entry : new TreeMap<>(observed.values()).entrySet()) {
      if (entry.getValue() instanceof CounterValue || entry.getValue() instanceof SetValue) {
        operations.add(ofKey(observed, entry.getKey()));
      }
    }
    operations.add(new Operation.DeleteEntity(observed.writeCounts()));
    return operations;
  }
}
