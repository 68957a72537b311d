package dev.troupe.txn.check;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Builds the {@link History} that {@link SerializabilityChecker} checks at the granularity the
 * admission policy locks at, from what a node reports per entity.
 *
 * <p><b>Why.</b> Under {@code keys} admission two transactions that touch disjoint keys of one
 * entity hold no common lock, run concurrently and may commit in either order on each entity: one
 * can commit first on cart 1 and second on cart 2. Ordering their writes per entity then draws
 * write-write edges both ways, a G0 "cycle" between transactions that never conflicted (the
 * finding of issue 16: 35 false alarms in 9,000 runs with per-connection mailboxes). A checker at
 * a coarser granularity than the locks reports false alarms, and a checker that reports false
 * alarms gets switched off, so it hides real ones. Here each object is what one lock covers: the
 * entity under {@code serial} admission, each key (each key-family member, a dependency's hidden
 * records counted as the key they describe) under {@code keys}.
 *
 * <p><b>How.</b> Per entity a transaction reports the version it read (the entity's version just
 * before its commit for a writer: its locks were held from its read to its commit, so nothing it
 * read changed in between) and the version its commit produced, plus which keys it read and wrote.
 * For a per-key entity, key {@code k} read at entity version {@code r} is read at the latest
 * version of {@code k} not after {@code r} (versions are commit timestamps, ordered per entity); a
 * whole-entity access (a delete, a read of the whole state) touches every key of the entity that
 * the history names, and a pseudo-key {@link #WHOLE_ENTITY} so two whole-entity writes order too:
 * a whole-entity lock conflicts with every key lock, and keys nobody names cannot close a cycle.
 *
 * <p>Pure; deterministic for a given input.
 */
public final class LockLevelHistory {
  /** The pseudo-key a whole-entity access of a per-key entity touches besides every named key. */
  public static final String WHOLE_ENTITY = "*";

  private LockLevelHistory() {}

  /**
   * What one transaction did on one entity.
   *
   * @param entity the entity's name (unique per entity in the history)
   * @param locksPerKey whether its type's admission locks keys ({@code keys}) rather than the
   *     whole entity ({@code serial})
   * @param readVersion the entity version it read, or -1 if it read nothing there
   * @param keysRead the keys it read (ignored if {@code readsWholeEntity})
   * @param readsWholeEntity whether it read every key
   * @param writtenVersion the version its commit produced there, or 0 if it wrote nothing
   * @param keysWritten the keys it wrote (ignored if {@code writesWholeEntity})
   * @param writesWholeEntity whether its write touched every key (a delete of the entity)
   */
  public record EntityAccess(String entity, boolean locksPerKey, long readVersion,
      Set<String> keysRead, boolean readsWholeEntity, long writtenVersion,
      Set<String> keysWritten, boolean writesWholeEntity) {
    public EntityAccess {
      Objects.requireNonNull(entity, "entity");
      keysRead = Set.copyOf(keysRead);
      keysWritten = Set.copyOf(keysWritten);
    }

    boolean reads() {
      return readVersion >= 0;
    }

    boolean writes() {
      return writtenVersion > 0;
    }
  }

  /** One transaction: its id, outcome and what it did per entity. */
  public record Transaction(String id, RecordedTransaction.Outcome outcome,
      List<EntityAccess> accesses) {
    public Transaction {
      Objects.requireNonNull(id, "id");
      Objects.requireNonNull(outcome, "outcome");
      accesses = List.copyOf(accesses);
    }
  }

  /** The history at lock granularity; object ids are {@code entity} or {@code entity#key}. */
  public static History of(List<Transaction> transactions) {
    // Every key the history names per per-key entity, and each key's written versions in order.
    Map<String, Set<String>> namedKeys = new HashMap<>();
    for (Transaction transaction : transactions) {
      for (EntityAccess access : transaction.accesses()) {
        if (access.locksPerKey()) {
          Set<String> keys = namedKeys.computeIfAbsent(access.entity(), entity -> new TreeSet<>());
          keys.add(WHOLE_ENTITY);
          keys.addAll(access.keysRead());
          keys.addAll(access.keysWritten());
        }
      }
    }
    Map<String, TreeMap<Long, Boolean>> writtenVersions = new HashMap<>();
    for (Transaction transaction : transactions) {
      for (EntityAccess access : transaction.accesses()) {
        if (access.locksPerKey() && access.writes()) {
          for (String key : writtenKeys(access, namedKeys)) {
            writtenVersions
                .computeIfAbsent(object(access.entity(), key), ignored -> new TreeMap<>())
                .put(access.writtenVersion(), true);
          }
        }
      }
    }
    List<RecordedTransaction> recorded = new ArrayList<>();
    for (Transaction transaction : transactions) {
      Map<String, Long> reads = new LinkedHashMap<>();
      Map<String, Long> writes = new LinkedHashMap<>();
      for (EntityAccess access : transaction.accesses()) {
        if (!access.locksPerKey()) {
          if (access.reads()) {
            reads.put(access.entity(), access.readVersion());
          }
          if (access.writes()) {
            writes.put(access.entity(), access.writtenVersion());
          }
          continue;
        }
        if (access.reads()) {
          Set<String> keys = access.readsWholeEntity()
              ? namedKeys.get(access.entity()) : access.keysRead();
          for (String key : keys) {
            TreeMap<Long, Boolean> versions = writtenVersions.get(object(access.entity(), key));
            Long seen = versions == null ? null : versions.floorKey(access.readVersion());
            reads.put(object(access.entity(), key), seen == null ? 0 : seen);
          }
        }
        if (access.writes()) {
          for (String key : writtenKeys(access, namedKeys)) {
            writes.put(object(access.entity(), key), access.writtenVersion());
          }
        }
      }
      recorded.add(new RecordedTransaction(transaction.id(), transaction.outcome(), reads,
          writes));
    }
    return new History(recorded);
  }

  private static Set<String> writtenKeys(EntityAccess access, Map<String, Set<String>> named) {
    return access.writesWholeEntity() ? named.get(access.entity()) : access.keysWritten();
  }

  private static String object(String entity, String key) {
    return entity + "#" + key;
  }
}
