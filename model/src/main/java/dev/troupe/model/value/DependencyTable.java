package dev.troupe.model.value;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import dev.troupe.model.Json;
import dev.troupe.model.dependency.Dependency;
import java.util.Collection;
import java.util.TreeMap;
import org.pcollections.HashTreePMap;
import org.pcollections.PMap;

/**
 * The dependency records one key keeps in a hidden key ({@code $out:k} for those it leads, {@code
 * $in:k} for those it follows; see {@code DependencyKeys}): dependency id to record. A follower's
 * records carry the leader's last forwarded value (its contribution to an aggregate). Immutable and
 * persistent, so recording one dependency costs O(log n) whatever the key's fan-out.
 *
 * <p>Not a CRDT yet: one node owns every entity until replication (issue 7) gives it merge rules.
 */
public record DependencyTable(PMap<String, Entry> entries) implements Value {
  public static final DependencyTable EMPTY = new DependencyTable(HashTreePMap.empty());

  /** One dependency and, on the follower's side, the leader's last forwarded value. */
  public record Entry(Dependency dependency, JsonNode contribution) {}

  public DependencyTable with(Dependency dependency, JsonNode contribution) {
    return new DependencyTable(entries.plus(dependency.id(), new Entry(dependency, contribution)));
  }

  public DependencyTable without(String dependencyId) {
    return new DependencyTable(entries.minus(dependencyId));
  }

  public Entry get(String dependencyId) {
    return entries.get(dependencyId);
  }

  public boolean isEmpty() {
    return entries.isEmpty();
  }

  public int size() {
    return entries.size();
  }

  public Collection<Entry> all() {
    return entries.values();
  }

  @Override
  public KeyKind kind() {
    return KeyKind.DEPENDENCIES;
  }

  /** The records in id order (for listings and tests; states never render hidden keys). */
  @Override
  public JsonNode toJson() {
    ArrayNode array = Json.NODES.arrayNode();
    new TreeMap<>(entries).values().forEach(entry -> array.add(entry.dependency().toJson()));
    return array;
  }
}
