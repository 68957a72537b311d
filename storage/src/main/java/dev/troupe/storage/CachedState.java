package dev.troupe.storage;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Operation;
import dev.troupe.model.SmallPersistentMap;
import dev.troupe.model.codec.EncodedStates;
import dev.troupe.model.dependency.DependencyKeys;
import dev.troupe.model.value.DependencyTable;
import dev.troupe.model.value.RegisterValue;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * An entity's latest committed state as the object cache holds it (issue 20, memory:
 * docs/design/performance.md, "Memory: compact cached states"), in one of two forms:
 *
 * <ul>
 *   <li><b>encoded</b>: {@link Codec#encodeState}'s bytes (the checkpoint format), about 1.2 times
 *       the payload where the decoded objects take about 2.3 times. A state of at most 16 keys
 *       ({@link #heldEncoded}) loaded into the cache (materialized) is held so, and so is a
 *       written one once a checkpoint round has encoded it ({@link #encodedAs}). Larger states,
 *       dear to decode, are always held decoded, and so are states with dependency records (the
 *       planner's reconnaissance reads those on every planned transaction that names them).
 *   <li><b>decoded</b>: the {@link EntityState} itself. A commit applied to a cached entry leaves
 *       it decoded: the partition writer applies a record to a decoded state in well under a
 *       microsecond, where decoding and encoding a 1 KB record costs about ten (a 200-member
 *       branch, about a hundred). So the entities written since the last checkpoint round are
 *       decoded, the rest encoded.
 * </ul>
 *
 * <p>Beside the form: the version and existence (what a read needs before decoding) and whether
 * the state has dependency keys (what the planner's reconnaissance needs).
 *
 * <p>Invariants: immutable; {@link #state()} is the state (an encoded form decodes to it: the
 * format loses nothing, a state materialized from a checkpoint is this very decoding); a new
 * committed version or a change of form makes a new object, so a memo keyed by this object's
 * identity (the rendered-state memo) is never stale. {@code weight} is the estimated heap this
 * entry takes in its form (the cache's weigher, so the memory budget, counts it); {@code
 * decodedWeight} the estimate of the state decoded ({@link Codec#estimateWeight}, what an active
 * actor holding it takes), kept up to date by re-weighing only the keys a commit touches.
 *
 * <p>Concurrency: immutable, shared freely. An encoded entry decodes anew on every {@link
 * #state()} call (callers that read the same version repeatedly, the rendered-state memo, keep
 * what they derive).
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

  /** The encoded form; null when decoded. */
  private final byte[] encoded;
  /** The decoded form; null when encoded. */
  private final EntityState decoded;
  private final long version;
  private final boolean exists;
  private final boolean holdsDependencies;
  private final int weight;
  private final int decodedWeight;

  private CachedState(byte[] encoded, EntityState decoded, long version, boolean exists,
      boolean holdsDependencies, int weight, int decodedWeight) {
    this.encoded = encoded;
    this.decoded = decoded;
    this.version = version;
    this.exists = exists;
    this.holdsDependencies = holdsDependencies;
    this.weight = weight;
    this.decodedWeight = decodedWeight;
  }

  /**
   * The entry for {@code state} (just materialized): encoded when {@link #heldEncoded}, else
   * decoded.
   */
  public static CachedState of(EntityId entity, EntityState state) {
    long decodedWeight = Codec.estimateWeight(state) + decodedOverhead(entity);
    return heldEncoded(state)
        ? encoded(entity, state, Codec.encodeState(state), decodedWeight)
        : decoded(state, decodedWeight, holdsDependencies(state));
  }

  /**
   * The entry for the state a checkpoint's bytes encode, as read from disk: exactly {@code
   * of(entity, Codec.decodeState(checkpoint))} (the same form, version, existence, weights and
   * bytes), made without decoding the state when its outline is plain ({@link
   * Codec#outlineState}): the bytes are then the very encoding {@link #of} would make, cached as
   * they are, and the decoded weight is summed from the outline. Anything else is decoded. Why: a
   * cache miss decoded the checkpoint, encoded the state again into the same bytes and walked it
   * to weigh it, about a quarter of the server's CPU under YCSB C over a cache smaller than the
   * data (docs/BENCHMARKS.md, "Issue 20: a cache miss served from its checkpoint's bytes (fifth
   * session)").
   *
   * @throws CorruptDataException when the bytes fail their checksum or do not decode: nothing is
   *     made of them, so nothing damaged is cached
   */
  static CachedState ofCheckpoint(EntityId entity, byte[] checkpoint) {
    EncodedStates.Outline outline = Codec.outlineState(checkpoint); // verifies the checksum
    if (outline == null || outline.valueCount() > SmallPersistentMap.MAX_SIZE
        || outline.holdsDependencyKeys()) {
      return of(entity, Codec.decodeState(checkpoint));
    }
    // As encoded(...) weighs it; a plain state has no dependency records (heldEncoded).
    long decodedWeight = Codec.estimateWeight(outline) + decodedOverhead(entity);
    long weight = ENTRY_OVERHEAD_BYTES + ((checkpoint.length + 7L) & ~7L) + keyBytes(entity);
    return new CachedState(checkpoint, null, outline.version(), outline.exists(), false,
        clamp(weight), clamp(decodedWeight));
  }

  /**
   * Whether a state is held encoded: at most {@link SmallPersistentMap#MAX_SIZE} keys, a record
   * such as YCSB's, which decodes in a few microseconds. A larger state (a SmallBank branch of 200
   * members decodes in 61-66 µs) stays decoded: every read of a key, projection and activation of
   * an encoded entry would decode it again. The memory goal concerns records of YCSB's shape.
   *
   * <p>A state with dependency records stays decoded too: the planner's reconnaissance decodes
   * every such state a planned transaction names (the others it reads as absent without decoding
   * them), and a record's dependencies decode from JSON (a marketplace cart or product about as
   * dear as a branch; in the declared marketplace's profile, 4 % of the CPU samples were that
   * decoding).
   */
  static boolean heldEncoded(EntityState state) {
    return state.values().size() <= SmallPersistentMap.MAX_SIZE && !holdsDependencies(state);
  }

  private static CachedState encoded(EntityId entity, EntityState state, byte[] encoded,
      long decodedWeight) {
    long weight = ENTRY_OVERHEAD_BYTES + ((encoded.length + 7L) & ~7L) + keyBytes(entity);
    return new CachedState(encoded, null, state.version(), state.exists(),
        holdsDependencies(state), clamp(weight), clamp(decodedWeight));
  }

  private static CachedState decoded(EntityState state, long decodedWeight,
      boolean holdsDependencies) {
    // Weighed as before the encoded form existed: the state's estimate and the entry's.
    return new CachedState(null, state, state.version(), state.exists(),
        holdsDependencies, clamp(decodedWeight), clamp(decodedWeight));
  }

  private static int clamp(long weight) {
    return (int) Math.max(0, Math.min(Integer.MAX_VALUE, weight));
  }

  private static boolean holdsDependencies(EntityState state) {
    for (var entry : state.values().entrySet()) {
      if (isDependencyEntry(entry.getKey(), entry.getValue())) {
        return true;
      }
    }
    return false;
  }

  private static boolean isDependencyEntry(String key, Object value) {
    return value instanceof DependencyTable || DependencyKeys.isDependencyKey(key);
  }

  /**
   * Whether {@code next}, {@code state} after {@code operations}, has dependency keys: this
   * entry's answer unless an operation touched a dependency entry (before or after) or deleted the
   * entity, when the state is looked over again. A commit so costs the keys it touches, not the
   * whole state (looking over a 200-member branch on every commit took 15 % of the embedded
   * SmallBank mix's CPU samples).
   */
  private boolean holdsDependenciesAfter(EntityState state, EntityState next,
      List<Operation> operations) {
    for (Operation operation : operations) {
      String key = operation.key();
      if (operation.deletesEntity() || isDependencyEntry(key, state.get(key))
          || isDependencyEntry(key, next.get(key))) {
        return holdsDependencies(next);
      }
    }
    return holdsDependencies;
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

  /** The state: the decoded form itself, or the encoded one decoded (a new object per call). */
  public EntityState state() {
    return decoded != null ? decoded : Codec.decodeState(encoded);
  }

  /**
   * The JSON a schemaless type renders of this state ({@code CompiledType.render}, then {@code
   * Json.writeBytes}: the same bytes), made from the encoded form without decoding it ({@link
   * Codec#renderSchemaless}); null when the entry is decoded or its state is not plain (registers
   * of plain JSON values under ASCII keys), when the caller renders {@link #state()}. A fresh
   * array owned by the caller. Why: a read of an encoded YCSB record spent most of its own CPU
   * decoding it, building a JSON tree and writing that through Jackson (docs/BENCHMARKS.md, "Issue
   * 20: the write path over REST (fourth session)").
   */
  public byte[] renderedSchemaless() {
    return encoded == null ? null : Codec.renderSchemaless(encoded);
  }

  /** Whether the entry holds its state encoded. */
  public boolean isEncoded() {
    return encoded != null;
  }

  /** The encoded form's bytes ({@link Codec#encodeState}), null when decoded; not to be modified. */
  byte[] encoded() {
    return encoded;
  }

  /**
   * This entry in the encoded form, given its state's encoding (a checkpoint round's, which
   * encodes it anyway); itself when already encoded.
   */
  CachedState encodedAs(EntityId entity, byte[] encoding) {
    if (encoded != null || holdsDependencies || !heldEncoded(decoded)) {
      return this;
    }
    return encoded(entity, decoded, encoding, decodedWeight);
  }

  /**
   * The entry after a record that only assigns existing registers, encoded, made from the
   * encoding without decoding it ({@link Codec#applyInPlace}: the very bytes {@link
   * Codec#encodeState} writes for the state decoded and applied); null when the record or the state
   * is not that simple. Why: decoding the ten values of a YCSB record to apply one, and encoding
   * them again at the next checkpoint round, was a third of the partition writer's CPU under YCSB
   * A (docs/BENCHMARKS.md, "Issue 20: the write path over REST (fourth session)"); in place the
   * record costs a copy of the bytes, the round writes them as they are, and the entry stays
   * compact. The decoded weight moves by the replaced registers' estimates, as {@link #apply}'s
   * does.
   */
  private CachedState applyInPlace(EntityId entity, List<Operation> operations,
      long commitTimestamp, int originDc) {
    Codec.AppliedInPlace applied;
    try {
      applied = Codec.applyInPlace(encoded, operations, commitTimestamp, originDc);
    } catch (RuntimeException e) {
      return null; // damage: decoding the entry reports it
    }
    if (applied == null) {
      return null;
    }
    long nextDecodedWeight = decodedWeight;
    for (EncodedStates.Replaced replaced : applied.replaced()) {
      JsonNode written = null;
      for (Operation operation : operations) {
        if (operation.key().equals(replaced.key())) {
          written = ((Operation.Assign) operation).value();
        }
      }
      // A held-encoded state has at most SmallPersistentMap.MAX_SIZE keys: a small map decoded.
      nextDecodedWeight += Codec.estimateEntryWeight(replaced.key(),
          new RegisterValue(written, commitTimestamp, originDc), true)
          - Codec.estimateEntryWeight(replaced.key(),
              new RegisterValue(replaced.value(), 0, 0), true);
    }
    long weight = ENTRY_OVERHEAD_BYTES + ((applied.encoded().length + 7L) & ~7L)
        + keyBytes(entity);
    return new CachedState(applied.encoded(), null, commitTimestamp, true, holdsDependencies,
        clamp(weight), clamp(nextDecodedWeight));
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
   * The entry after {@code operations} (the partition writer, for a cached entity), re-weighing
   * only the keys they touch: an encoded entry stays encoded when the record only assigns
   * existing registers of a plain state ({@link #applyInPlace}), else it is decoded once and the
   * entry stays decoded until the next checkpoint round.
   */
  CachedState apply(EntityId entity, List<Operation> operations, long commitTimestamp,
      int originDc) {
    if (encoded != null) {
      CachedState inPlace = applyInPlace(entity, operations, commitTimestamp, originDc);
      if (inPlace != null) {
        return inPlace;
      }
    }
    EntityState state = state();
    EntityState next = state.apply(operations, commitTimestamp, originDc);
    long nextDecodedWeight = decodedWeight;
    boolean small = next.values() instanceof SmallPersistentMap;
    Set<String> touched = new HashSet<>();
    for (Operation operation : operations) {
      // A deletion, or values that moved between a small map and a large one (every entry's
      // overhead changes), re-weigh the whole state.
      if (operation.deletesEntity()
          || small != (state.values() instanceof SmallPersistentMap)) {
        return decoded(next,
            decodedWeight - Codec.estimateWeight(state) + (long) Codec.estimateWeight(next),
            holdsDependencies(next));
      }
      touched.add(operation.key());
    }
    for (String key : touched) {
      nextDecodedWeight += Codec.estimateEntryWeight(key, next.get(key), small)
          - Codec.estimateEntryWeight(key, state.get(key), small);
    }
    return decoded(next, nextDecodedWeight, holdsDependenciesAfter(state, next, operations));
  }
}
