package dev.troupe.storage;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Operation;
import dev.troupe.model.SmallPersistentMap;
import dev.troupe.model.dependency.DependencyKeys;
import dev.troupe.model.value.DependencyTable;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * An entity's latest committed state as the object cache holds it: <b>encoded</b> ({@link
 * Codec#encodeState}'s bytes, about 1.1 times the payload, where the decoded objects take about
 * 2.3 times), with the fields a read needs before decoding (version, existence). Issue 20, memory:
 * docs/design/performance.md, "Memory: compact cached states".
 *
 * <p>Invariants: immutable; {@link #state()} decodes to the state whose encoding it holds (the
 * encoding is the stable checkpoint format, so it loses nothing: a state materialized from a
 * checkpoint is this very decoding); a new committed version makes a new object, so a memo keyed
 * by this object's identity (the rendered-state memo) is never stale. {@code weight} is the
 * estimated heap this entry takes in the cache (its bytes, this object, the cache's entry and the
 * key), what the cache's weigher and so the memory budget count; {@code decodedWeight} the
 * estimate of the decoded state ({@link Codec#estimateWeight}, as an active actor holds it), kept
 * up to date by re-weighing only the keys a commit touches.
 *
 * <p>Concurrency: immutable, shared freely; every {@link #state()} call decodes anew (callers that
 * read the same version repeatedly, the rendered-state memo, keep what they derive).
 */
public final class CachedState {
  /**
   * The heap of one entry beyond its encoded bytes and its key's characters, as a class histogram
   * of 50,000 cached YCSB records counted it (JDK 25, compressed references): this object (40),
   * the byte array's header (16), Caffeine's node (40), the map's node and its share of the table
   * (about 42), the key's {@link EntityId} and its id string with its array's header (about 64).
   * {@code bench cached-size} compares the estimate with the heap (docs/BENCHMARKS.md, "Issue 20:
   * bytes per cached record").
   */
  static final int ENTRY_OVERHEAD_BYTES = 200;

  private final byte[] encoded;
  private final long version;
  private final boolean exists;
  private final boolean holdsDependencies;
  private final int weight;
  private final int decodedWeight;

  private CachedState(byte[] encoded, long version, boolean exists, boolean holdsDependencies,
      int weight, int decodedWeight) {
    this.encoded = encoded;
    this.version = version;
    this.exists = exists;
    this.holdsDependencies = holdsDependencies;
    this.weight = weight;
    this.decodedWeight = decodedWeight;
  }

  /** The entry for {@code state} (just materialized), encoding it. */
  public static CachedState of(EntityId entity, EntityState state) {
    return of(entity, state, Codec.estimateWeight(state) + decodedOverhead(entity));
  }

  private static CachedState of(EntityId entity, EntityState state, long decodedWeight) {
    byte[] encoded = Codec.encodeState(state);
    long weight = ENTRY_OVERHEAD_BYTES + ((encoded.length + 7L) & ~7L) + keyBytes(entity);
    return new CachedState(encoded, state.version(), state.exists(), holdsDependencies(state),
        (int) Math.min(Integer.MAX_VALUE, weight),
        (int) Math.max(0, Math.min(Integer.MAX_VALUE, decodedWeight)));
  }

  private static boolean holdsDependencies(EntityState state) {
    for (var entry : state.values().entrySet()) {
      if (entry.getValue() instanceof DependencyTable
          || DependencyKeys.isDependencyKey(entry.getKey())) {
        return true;
      }
    }
    return false;
  }

  /** What a decoded state's cache entry was estimated at beyond the state (before issue 20). */
  private static long decodedOverhead(EntityId entity) {
    return 48 + 2L * (entity.type().length() + entity.id().length());
  }

  /** The key's characters (Latin-1: one byte each; the type's name is usually shared). */
  private static long keyBytes(EntityId entity) {
    return entity.type().length() + entity.id().length();
  }

  /** The commit timestamp of the last record applied (0: never written). */
  public long version() {
    return version;
  }

  /** Whether the entity exists in this state. */
  public boolean exists() {
    return exists;
  }

  /**
   * Whether the state has dependency keys (docs/ARCHITECTURE.md, "Dependencies"): when not, the
   * dependency planner's reconnaissance learns all it reads of it without decoding it.
   */
  public boolean holdsDependencies() {
    return holdsDependencies;
  }

  /** The state, decoded (a new object per call). */
  public EntityState state() {
    return Codec.decodeState(encoded);
  }

  /** The encoding ({@link Codec#encodeState}); the caller must not modify it. */
  byte[] encoded() {
    return encoded;
  }

  /** The estimated heap this cache entry takes (the cache's weigher). */
  int weight() {
    return weight;
  }

  /** The estimated heap of the state decoded (what an active actor holding it takes). */
  int decodedWeight() {
    return decodedWeight;
  }

  /**
   * The entry after {@code operations}: decoded, applied and encoded again (the partition writer,
   * for a cached entity), re-weighing only the keys they touch.
   */
  CachedState apply(EntityId entity, List<Operation> operations, long commitTimestamp,
      int originDc) {
    EntityState state = state();
    EntityState next = state.apply(operations, commitTimestamp, originDc);
    long nextDecodedWeight = decodedWeight;
    boolean small = next.values() instanceof SmallPersistentMap;
    Set<String> touched = new HashSet<>();
    for (Operation operation : operations) {
      // A deletion, or values that moved between a small map and a hash tree (every entry's
      // overhead changes), re-weigh the whole state.
      if (operation.deletesEntity()
          || small != (state.values() instanceof SmallPersistentMap)) {
        return of(entity, next,
            decodedWeight - Codec.estimateWeight(state) + (long) Codec.estimateWeight(next));
      }
      touched.add(operation.key());
    }
    for (String key : touched) {
      nextDecodedWeight += Codec.estimateEntryWeight(key, next.get(key), small)
          - Codec.estimateEntryWeight(key, state.get(key), small);
    }
    return of(entity, next, nextDecodedWeight);
  }
}
