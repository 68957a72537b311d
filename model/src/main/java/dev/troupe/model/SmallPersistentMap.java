package dev.troupe.model;

import java.util.AbstractSet;
import java.util.Arrays;
import java.util.Collection;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Set;
import java.util.function.BiConsumer;
import org.pcollections.AbstractUnmodifiableMap;
import org.pcollections.PMap;

/**
 * A persistent map of the few keys most entities hold, as two arrays sorted by key: what an entity
 * state keeps its values in until it holds more than {@link #MAX_SIZE} keys, when {@link #plus}
 * answers a {@link LargePersistentMap} instead (issue 20, memory: for a record of ten keys a hash
 * tree cost ~650 bytes more than a {@code HashMap}, a fifth of a cached 1 KB record;
 * docs/BENCHMARKS.md, "bytes per cached record").
 *
 * <p>Invariants: immutable; keys non-null, distinct and strictly ascending; values non-null; at
 * most {@link #MAX_SIZE} entries. Changes copy the arrays, which for so few entries costs less than
 * a trie's path copy; a state with many keys (a key family's members) lives in a trie, whose
 * changes cost its depth, not its size.
 *
 * <p>Iteration is in key order. Nothing may depend on a state's iteration order (rendering sorts,
 * or follows the declaration), but a deterministic one keeps encodings and simulations repeatable.
 */
public final class SmallPersistentMap<V> extends AbstractUnmodifiableMap<String, V>
    implements PMap<String, V> {
  /** Entries past which {@link #plus} answers a {@link LargePersistentMap}. */
  public static final int MAX_SIZE = 16;

  private static final SmallPersistentMap<?> EMPTY =
      new SmallPersistentMap<>(new String[0], new Object[0]);

  private final String[] keys;
  private final Object[] values;

  private SmallPersistentMap(String[] keys, Object[] values) {
    this.keys = keys;
    this.values = values;
  }

  @SuppressWarnings("unchecked")
  public static <V> SmallPersistentMap<V> empty() {
    return (SmallPersistentMap<V>) EMPTY;
  }

  /**
   * A persistent map of {@code map}'s entries: a small one when they are few, else a trie. A
   * persistent map is answered as it is.
   */
  @SuppressWarnings("unchecked")
  public static <V> PMap<String, V> from(Map<String, ? extends V> map) {
    if (map instanceof PMap<?, ?> persistent) {
      return (PMap<String, V>) persistent;
    }
    if (map.size() > MAX_SIZE) {
      return LargePersistentMap.from(map);
    }
    String[] keys = new String[map.size()];
    int index = 0;
    for (String key : map.keySet()) {
      keys[index++] = Objects.requireNonNull(key, "key");
    }
    Arrays.sort(keys);
    Object[] values = new Object[keys.length];
    for (int i = 0; i < keys.length; i++) {
      values[i] = Objects.requireNonNull(map.get(keys[i]), "value");
    }
    return keys.length == 0 ? empty() : new SmallPersistentMap<>(keys, values);
  }

  private int indexOf(Object key) {
    return key instanceof String name ? Arrays.binarySearch(keys, name) : -1;
  }

  @Override
  public int size() {
    return keys.length;
  }

  @Override
  public boolean containsKey(Object key) {
    return indexOf(key) >= 0;
  }

  @Override
  @SuppressWarnings("unchecked")
  public V get(Object key) {
    int index = indexOf(key);
    return index >= 0 ? (V) values[index] : null;
  }

  @Override
  @SuppressWarnings("unchecked")
  public void forEach(BiConsumer<? super String, ? super V> action) {
    for (int i = 0; i < keys.length; i++) {
      action.accept(keys[i], (V) values[i]);
    }
  }

  @Override
  public PMap<String, V> plus(String key, V value) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(value, "value");
    int index = Arrays.binarySearch(keys, key);
    if (index >= 0) {
      if (values[index] == value) {
        return this;
      }
      Object[] changed = values.clone();
      changed[index] = value;
      return new SmallPersistentMap<>(keys, changed);
    }
    if (keys.length == MAX_SIZE) {
      return LargePersistentMap.<V>from(this).plus(key, value);
    }
    int insertion = -index - 1;
    String[] moreKeys = new String[keys.length + 1];
    Object[] moreValues = new Object[keys.length + 1];
    System.arraycopy(keys, 0, moreKeys, 0, insertion);
    System.arraycopy(values, 0, moreValues, 0, insertion);
    moreKeys[insertion] = key;
    moreValues[insertion] = value;
    System.arraycopy(keys, insertion, moreKeys, insertion + 1, keys.length - insertion);
    System.arraycopy(values, insertion, moreValues, insertion + 1, keys.length - insertion);
    return new SmallPersistentMap<>(moreKeys, moreValues);
  }

  @Override
  public PMap<String, V> plusAll(Map<? extends String, ? extends V> map) {
    PMap<String, V> result = this;
    for (Map.Entry<? extends String, ? extends V> entry : map.entrySet()) {
      result = result.plus(entry.getKey(), entry.getValue());
    }
    return result;
  }

  @Override
  public PMap<String, V> minus(Object key) {
    int index = indexOf(key);
    if (index < 0) {
      return this;
    }
    if (keys.length == 1) {
      return empty();
    }
    String[] fewerKeys = new String[keys.length - 1];
    Object[] fewerValues = new Object[keys.length - 1];
    System.arraycopy(keys, 0, fewerKeys, 0, index);
    System.arraycopy(values, 0, fewerValues, 0, index);
    System.arraycopy(keys, index + 1, fewerKeys, index, keys.length - index - 1);
    System.arraycopy(values, index + 1, fewerValues, index, keys.length - index - 1);
    return new SmallPersistentMap<>(fewerKeys, fewerValues);
  }

  @Override
  public PMap<String, V> minusAll(Collection<?> removed) {
    PMap<String, V> result = this;
    for (Object key : removed) {
      result = result.minus(key);
    }
    return result;
  }

  @Override
  public Set<Map.Entry<String, V>> entrySet() {
    return new AbstractSet<>() {
      @Override
      public int size() {
        return keys.length;
      }

      @Override
      public Iterator<Map.Entry<String, V>> iterator() {
        return new Iterator<>() {
          private int next;

          @Override
          public boolean hasNext() {
            return next < keys.length;
          }

          @Override
          @SuppressWarnings("unchecked")
          public Map.Entry<String, V> next() {
            if (next >= keys.length) {
              throw new NoSuchElementException();
            }
            int index = next++;
            return new SimpleImmutableEntry<>(keys[index], (V) values[index]);
          }
        };
      }
    };
  }
}
