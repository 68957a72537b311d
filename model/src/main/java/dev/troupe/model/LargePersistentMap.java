package dev.troupe.model;

import io.vavr.Tuple2;
import io.vavr.collection.HashMap;
import java.util.AbstractSet;
import java.util.Collection;
import java.util.Iterator;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.BiConsumer;
import org.pcollections.AbstractUnmodifiableMap;
import org.pcollections.PMap;

/**
 * A persistent map of an entity state's many keys (more than {@link SmallPersistentMap#MAX_SIZE}:
 * a key family's members, a SmallBank branch's 200), as Vavr's hash array mapped trie behind the
 * {@link PMap} interface the rest of the model speaks.
 *
 * <p>Why not pcollections' {@code HashTreePMap}, what large states used before: it is a balanced
 * binary tree keyed by hash with a list per bucket, so a lookup in a 200-key state follows about
 * eight nodes and a change copies as many. A JFR profile of SmallBank over REST (issue 20,
 * docs/BENCHMARKS.md "Issue 20: persistent maps of large states") found 13 % of the server's CPU
 * samples in it, all of it reads and writes of branch members; the trie is two levels deep for
 * such states, and in a micro-benchmark of a 200-key state took half the time per lookup and a
 * quarter to a half per change.
 *
 * <p>Invariants: immutable; keys and values non-null. {@link #size} is constant-time. Iteration
 * follows the trie (by the keys' hashes), deterministic for a given set of keys; nothing may depend
 * on it (see {@link SmallPersistentMap}). A map that shrinks to few keys stays a trie, as the hash
 * tree did: entities rarely shrink, and a form that flips back and forth would cost more.
 */
public final class LargePersistentMap<V> extends AbstractUnmodifiableMap<String, V>
    implements PMap<String, V> {
  private final HashMap<String, V> entries;

  private LargePersistentMap(HashMap<String, V> entries) {
    this.entries = entries;
  }

  /** A map of {@code map}'s entries (keys and values non-null). */
  public static <V> LargePersistentMap<V> from(Map<String, ? extends V> map) {
    return new LargePersistentMap<>(withAll(HashMap.empty(), map));
  }

  @Override
  public int size() {
    return entries.size();
  }

  @Override
  public boolean isEmpty() {
    return entries.isEmpty();
  }

  @Override
  public boolean containsKey(Object key) {
    return get(key) != null;
  }

  @Override
  public V get(Object key) {
    // getOrElse, not get: Vavr's get answers an Option, an allocation per lookup.
    return key instanceof String name ? entries.getOrElse(name, null) : null;
  }

  @Override
  public void forEach(BiConsumer<? super String, ? super V> action) {
    for (Tuple2<String, V> entry : entries) {
      action.accept(entry._1, entry._2);
    }
  }

  @Override
  public PMap<String, V> plus(String key, V value) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(value, "value");
    if (entries.getOrElse(key, null) == value) {
      return this;
    }
    return new LargePersistentMap<>(entries.put(key, value));
  }

  @Override
  public PMap<String, V> plusAll(Map<? extends String, ? extends V> map) {
    HashMap<String, V> result = withAll(entries, map);
    return result == entries ? this : new LargePersistentMap<>(result);
  }

  private static <V> HashMap<String, V> withAll(HashMap<String, V> entries,
      Map<? extends String, ? extends V> map) {
    HashMap<String, V> result = entries;
    for (Map.Entry<? extends String, ? extends V> entry : map.entrySet()) {
      result = result.put(Objects.requireNonNull(entry.getKey(), "key"),
          Objects.requireNonNull(entry.getValue(), "value"));
    }
    return result;
  }

  @Override
  public PMap<String, V> minus(Object key) {
    if (!containsKey(key)) {
      return this;
    }
    return new LargePersistentMap<>(entries.remove((String) key));
  }

  @Override
  public PMap<String, V> minusAll(Collection<?> removed) {
    HashMap<String, V> result = entries;
    for (Object key : removed) {
      if (key instanceof String name) {
        result = result.remove(name);
      }
    }
    return result == entries ? this : new LargePersistentMap<>(result);
  }

  @Override
  public Set<Map.Entry<String, V>> entrySet() {
    return new AbstractSet<>() {
      @Override
      public int size() {
        return entries.size();
      }

      @Override
      public Iterator<Map.Entry<String, V>> iterator() {
        Iterator<Tuple2<String, V>> trie = entries.iterator();
        return new Iterator<>() {
          @Override
          public boolean hasNext() {
            return trie.hasNext();
          }

          @Override
          public Map.Entry<String, V> next() {
            Tuple2<String, V> entry = trie.next();
            return new SimpleImmutableEntry<>(entry._1, entry._2);
          }
        };
      }
    };
  }
}
