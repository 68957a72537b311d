package dev.troupe.runtime;

import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.KeyReference;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Dependencies that transactions in progress are registering, by leader key, counted (two
 * transactions may register the same one; one fails). Read by planned transactions'
 * reconnaissance ({@code DependencyPlanner}); a registration is counted from before its
 * transaction is planned until its outcome is known, so every planned transaction ordered after
 * it sees it, committed or not. Thread-safe; bounded by the transactions in progress.
 */
final class PendingRegistrations {
  private final Map<KeyReference, Map<Dependency, Integer>> byLeader = new ConcurrentHashMap<>();

  void add(Dependency dependency) {
    byLeader.compute(dependency.leader(), (leader, pending) -> {
      Map<Dependency, Integer> counted = pending == null ? new ConcurrentHashMap<>() : pending;
      counted.merge(dependency, 1, Integer::sum);
      return counted;
    });
  }

  void remove(Dependency dependency) {
    byLeader.computeIfPresent(dependency.leader(), (leader, pending) -> {
      pending.computeIfPresent(dependency, (ignored, count) -> count == 1 ? null : count - 1);
      return pending.isEmpty() ? null : pending;
    });
  }

  /** The dependencies being registered on {@code leader}. */
  List<Dependency> of(KeyReference leader) {
    Map<Dependency, Integer> pending = byLeader.get(leader);
    return pending == null ? List.of() : List.copyOf(pending.keySet());
  }
}
