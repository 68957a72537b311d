package dev.troupe.model;

import dev.troupe.model.Operation.AddElement;
import dev.troupe.model.Operation.Assign;
import dev.troupe.model.Operation.AssignReplicated;
import dev.troupe.model.Operation.DeleteCounter;
import dev.troupe.model.Operation.DeleteEntity;
import dev.troupe.model.Operation.DeleteEntityReplicated;
import dev.troupe.model.Operation.DeleteKey;
import dev.troupe.model.Operation.DeleteKeyReplicated;
import dev.troupe.model.Operation.DeleteSet;
import dev.troupe.model.Operation.ForgetDependency;
import dev.troupe.model.Operation.RecordDependency;
import dev.troupe.model.value.DependencyTable;
import dev.troupe.model.Operation.Increment;
import dev.troupe.model.Operation.IncrementReplicated;
import dev.troupe.model.Operation.RemoveElement;
import dev.troupe.model.causal.Messages;
import dev.troupe.model.causal.ReplicaApplication;
import dev.troupe.model.value.CounterValue;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.model.value.SetValue;
import dev.troupe.model.value.Stamp;
import dev.troupe.model.value.Value;
import java.util.List;
import java.util.Map;
import org.pcollections.PMap;

/**
 * The materialized state of one entity at one version: its keys' CRDT values, and the tombstones
 * its deletions left.
 *
 * <p>Invariants: immutable; {@code version} is the commit timestamp of the last record applied (0
 * for an entity never written); versions only grow through {@link #apply}. An entity exists once
 * written and until deleted; a deleted entity has no keys but its replication markers ({@link
 * ReplicaApplication}: they must outlive a deletion, or a part applied before it would be applied
 * again after a crash, resurrecting its writes or deleting later ones).
 *
 * <p>Tombstones (docs/ARCHITECTURE.md, "Deletes across data centres"): {@code tombstones} maps a
 * deleted register key to the stamp of its latest deletion, {@code entityTombstone} is the stamp of
 * the entity's latest deletion (null if none). They are outside {@code values}, so no read,
 * listing, key count, limit or existence check sees them; they only make a register write with an
 * older stamp, arriving after the deletion from another data centre, lose to it. A key tombstone
 * is kept only while it is later than the key's register and the entity tombstone, so the
 * tombstones, like the values, do not depend on the order concurrent operations arrived in. {@link
 * #withoutTombstonesUpTo} drops those no write can arrive under any more. {@code deletedCounters}
 * holds, per deleted counter key, the per-data-centre sums its deletions removed (the largest each
 * observed): a deletion concurrent with another that observed the same increments removes only
 * what that one did not ({@link Operation.DeleteCounter}).
 *
 * <p>Existence is add-wins too, so that it converges: {@code writeCounts} counts, per origin data
 * centre, the operations that make an entity exist (writes, increments, additions) applied here;
 * {@code deletedWriteCounts} the largest counts an entity deletion observed. The entity exists
 * while some data centre has a write no deletion observed (a write concurrent with the deletion
 * keeps the entity, even when its register loses to the deletion's stamp). A state without counts
 * (read from a checkpoint written before them) keeps its {@code exists} until its next write or
 * deletion.
 *
 * <p>Applying the journal's records in commit-timestamp order from any checkpoint always yields the
 * same state: this is the materializer (AntidoteDB's "materializer", antidote-cache.txt §3).
 */
public record EntityState(Map<String, Value> values, long version, boolean exists,
    Map<String, Stamp> tombstones, Stamp entityTombstone,
    Map<String, CounterValue> deletedCounters, Map<Integer, Long> writeCounts,
    Map<Integer, Long> deletedWriteCounts) {
  public static final EntityState ABSENT =
      new EntityState(SmallPersistentMap.empty(), 0, false);

  public EntityState {
    // A persistent (structure-sharing) map: applying a record costs its operations, not the
    // entity's size, so entities with many keys (key families) stay cheap to change. Evaluation
    // makes tentative states per turn, so this is on every commit's path. Few keys (most
    // entities) live in a SmallPersistentMap, which takes a fraction of a trie's memory and
    // becomes a LargePersistentMap when it grows past its size (issue 20, memory and CPU).
    values = SmallPersistentMap.from(values);
    tombstones = SmallPersistentMap.from(tombstones);
    deletedCounters = SmallPersistentMap.from(deletedCounters);
    writeCounts = Map.copyOf(writeCounts);
    deletedWriteCounts = Map.copyOf(deletedWriteCounts);
  }

  /** A state without tombstones. */
  public EntityState(Map<String, Value> values, long version, boolean exists) {
    this(values, version, exists, SmallPersistentMap.empty(), null, SmallPersistentMap.empty(),
        Map.of(), Map.of());
  }

  public Value get(String key) {
    return values.get(key);
  }

  /**
   * Applies one committed record's operations for this entity.
   *
   * @param commitTimestamp the record's commit timestamp; must exceed {@link #version()}
   * @param originDc the data centre where the record committed
   */
  public EntityState apply(List<Operation> operations, long commitTimestamp, int originDc) {
    Invariants.check(
        commitTimestamp > version,
        "records apply in commit order: %d after version %d",
        commitTimestamp,
        version);
    Application next = new Application(this);
    Stamp recordStamp = new Stamp(commitTimestamp, originDc);
    for (Operation operation : operations) {
      switch (operation) {
        // A local Assign merges like a remote one. The replication shell advances the clock past
        // every received timestamp before applying, so a local commit's timestamp exceeds every
        // stamp already applied and the local write always wins: the merge changes nothing then.
        // Were the clock ever behind a received stamp, overwriting would make this data centre
        // keep its value while every other one keeps the remote write (they merge it as an
        // AssignReplicated with this commit's stamp): merging keeps the replicas convergent, the
        // last-writer-wins meaning of a register. In a single data centre every register's stamp
        // is an earlier commit of this entity or this record's (an equal stamp, which the written
        // one replaces), so a local Assign always replaces it.
        case Assign assign -> next.writeRegister(assign.key(),
            new RegisterValue(assign.value(), commitTimestamp, originDc));
        case AssignReplicated assign -> next.writeRegister(assign.key(),
            new RegisterValue(assign.value(), assign.timestamp(), assign.originDc()));
        case DeleteKey delete -> next.deleteKey(delete.key(), recordStamp, true);
        case DeleteKeyReplicated delete -> next.deleteKey(delete.key(),
            new Stamp(delete.timestamp(), delete.originDc()), false);
        case DeleteCounter delete -> next.deleteCounter(delete.key(), delete.observed());
        case DeleteSet delete -> {
          if (next.values.get(delete.key()) instanceof SetValue set) {
            SetValue remaining = set.withoutTags(delete.observedTags());
            next.values = remaining.size() == 0
                ? next.values.minus(delete.key())
                : next.values.plus(delete.key(), remaining);
          }
        }
        case Increment increment -> next.increment(increment.key(), increment.by(), originDc);
        case IncrementReplicated increment ->
            next.increment(increment.key(), increment.by(), increment.originDc());
        case AddElement add -> {
          Value current = next.values.get(add.key());
          SetValue set = current instanceof SetValue s ? s : SetValue.EMPTY;
          next.values = next.values.plus(add.key(), set.add(add.element(), add.tag()));
        }
        case RemoveElement remove -> {
          Value current = next.values.get(remove.key());
          if (current instanceof SetValue set) {
            next.values = next.values.plus(remove.key(),
                set.remove(remove.element(), remove.observedTags()));
          }
        }
        case RecordDependency record -> {
          Value current = next.values.get(record.key());
          DependencyTable table = current instanceof DependencyTable t ? t : DependencyTable.EMPTY;
          next.values = next.values.plus(record.key(),
              table.with(record.dependency(), record.contribution()));
        }
        case ForgetDependency forget -> {
          if (next.values.get(forget.key()) instanceof DependencyTable table) {
            DependencyTable remaining = table.without(forget.dependencyId());
            next.values = remaining.isEmpty()
                ? next.values.minus(forget.key())
                : next.values.plus(forget.key(), remaining);
          }
        }
        case DeleteEntity delete ->
            next.deleteEntity(recordStamp, true, delete.observedWrites());
        case DeleteEntityReplicated delete -> next.deleteEntity(
            new Stamp(delete.timestamp(), delete.originDc()), false, delete.observedWrites());
        // A message changes nothing of its sender (docs/ARCHITECTURE.md, "Causal messages").
        case Operation.SendMessage ignored -> {}
      }
      if (makesExist(operation)) {
        next.wrote(writer(operation, originDc));
      }
    }
    return new EntityState(next.values, commitTimestamp, next.exists, next.tombstones,
        next.entityTombstone, next.deletedCounters, next.writeCounts, next.deletedWriteCounts);
  }

  /**
   * This state without the tombstones stamped at or before {@code stableTimestamp}: the smallest
   * entry of the stable vector, below which every data centre's operations have all been applied
   * here. Any write still to arrive from a data centre is later than its entry, so later than such
   * a tombstone, and would win over it anyway: dropping it changes no future outcome.
   */
  public EntityState withoutTombstonesUpTo(long stableTimestamp) {
    PMap<String, Stamp> kept = (PMap<String, Stamp>) tombstones;
    for (Map.Entry<String, Stamp> tombstone : tombstones.entrySet()) {
      if (tombstone.getValue().timestamp() <= stableTimestamp) {
        kept = kept.minus(tombstone.getKey());
      }
    }
    Stamp entity = entityTombstone != null && entityTombstone.timestamp() <= stableTimestamp
        ? null
        : entityTombstone;
    return kept == tombstones && entity == entityTombstone
        ? this
        : new EntityState(values, version, exists, kept, entity, deletedCounters, writeCounts,
            deletedWriteCounts);
  }

  /** The data centre where an operation that makes the entity exist was made. */
  private static int writer(Operation operation, int recordDc) {
    return switch (operation) {
      case AssignReplicated assign -> assign.originDc();
      case IncrementReplicated increment -> increment.originDc();
      case AddElement add -> add.tag().originDc();
      default -> recordDc;
    };
  }

  /**
   * Whether an operation makes the entity exist (counted whatever its outcome: a register write
   * that loses to a tombstone here won at its origin, and every data centre must count alike). Neither sending a message nor
   * consuming one (a delivered marker written alone when the receiving action fails), nor a
   * replication marker (written with every remote part, even one whose writes all lose to a
   * tombstone), nor any removal brings an entity into existence: existence must not depend on the
   * order concurrent operations arrive in.
   */
  private static boolean makesExist(Operation operation) {
    return switch (operation) {
      case Assign assign -> !isMarker(assign.key());
      case AssignReplicated assign -> !isMarker(assign.key());
      case Increment increment -> !isMarker(increment.key());
      case IncrementReplicated increment -> !isMarker(increment.key());
      case AddElement add -> !isMarker(add.key());
      case RecordDependency record -> !isMarker(record.key());
      case DeleteKey ignored -> false;
      case DeleteKeyReplicated ignored -> false;
      case DeleteCounter ignored -> false;
      case DeleteSet ignored -> false;
      case RemoveElement ignored -> false;
      case ForgetDependency ignored -> false;
      case DeleteEntity ignored -> false;
      case DeleteEntityReplicated ignored -> false;
      case Operation.SendMessage ignored -> false;
    };
  }

  /** The replication and delivered markers: never deleted, never tombstoned. */
  private static boolean isMarker(String key) {
    return ReplicaApplication.isMarkerKey(key) || Messages.isDeliveredMarkerKey(key);
  }

  /** One record's application in progress: the maps it changes, persistent. */
  private static final class Application {
    PMap<String, Value> values;
    PMap<String, Stamp> tombstones;
    Stamp entityTombstone;
    PMap<String, CounterValue> deletedCounters;
    Map<Integer, Long> writeCounts;
    boolean writeCountsCopied;
    Map<Integer, Long> deletedWriteCounts;
    boolean exists;

    Application(EntityState from) {
      values = (PMap<String, Value>) from.values;
      tombstones = (PMap<String, Stamp>) from.tombstones;
      deletedCounters = (PMap<String, CounterValue>) from.deletedCounters;
      entityTombstone = from.entityTombstone;
      exists = from.exists;
      writeCounts = from.writeCounts;
      deletedWriteCounts = from.deletedWriteCounts;
    }

    /**
     * Observed-remove: the deleted sums grow to at least {@code observed}, and the counter loses
     * that growth, so what it keeps is exactly the increments no deletion observed.
     */
    void deleteCounter(String key, CounterValue observed) {
      CounterValue before = deletedCounters.getOrDefault(key, CounterValue.ZERO);
      CounterValue after = before.atLeast(observed);
      deletedCounters = deletedCounters.plus(key, after);
      if (values.get(key) instanceof CounterValue counter) {
        CounterValue remaining = counter.withoutGrowth(before, after);
        values = remaining.isEmpty() ? values.minus(key) : values.plus(key, remaining);
      }
    }

    void wrote(int dataCentre) {
      exists = true;
      if (!writeCountsCopied) {
        Long written = writeCounts.size() == 1 ? writeCounts.get(dataCentre) : null;
        if (written != null || writeCounts.isEmpty()) {
          // Every write so far from this one data centre (the single data centre's case): the
          // next immutable one-entry map, which the new state keeps as it is, instead of a hash
          // map copied and copied again (issue 20: 2.7 % of the embedded SmallBank mix's samples).
          writeCounts = Map.of(dataCentre, (written == null ? 0L : written) + 1);
          return;
        }
        // Copied once per record, not per operation: the state's map is immutable, this copy is
        // the application's own until the new state copies it.
        writeCounts = new java.util.HashMap<>(writeCounts);
        writeCountsCopied = true;
      }
      writeCounts.merge(dataCentre, 1L, Long::sum);
    }

    void increment(String key, long by, int dataCentre) {
      CounterValue counter = values.get(key) instanceof CounterValue c ? c : CounterValue.ZERO;
      values = values.plus(key, counter.increment(by, dataCentre));
    }

    /**
     * Last writer wins, deletions included: the written register replaces the key unless the
     * present register, the key's tombstone or the entity's tombstone is strictly later. An equal
     * stamp is a later operation of the same record (an action's effects, a transaction's turns on
     * one key: one commit timestamp) or the same write again, so the written one replaces it.
     */
    void writeRegister(String key, RegisterValue written) {
      Stamp stamp = written.stamp();
      if (!isMarker(key)) {
        Stamp keyTombstone = tombstones.get(key);
        if ((entityTombstone != null && entityTombstone.isAfter(stamp))
            || (keyTombstone != null && keyTombstone.isAfter(stamp))) {
          return;
        }
      }
      if (values.get(key) instanceof RegisterValue present && present.supersedes(written)
          && !(ModelMutations.registerMergeWithoutTieBreak
              && present.timestamp() == written.timestamp())) {
        return;
      }
      values = values.plus(key, written);
      tombstones = tombstones.minus(key);
    }

    /**
     * A register deletion with {@code stamp}: removes the register unless it was written later,
     * and keeps the latest deletion's stamp as the key's tombstone unless the register or the
     * entity tombstone covers it. A key of another kind: removed whole by a local deletion (see
     * {@link DeleteKey}); of a replicated one, only a dependency table (not a replicated CRDT).
     */
    void deleteKey(String key, Stamp stamp, boolean local) {
      Value present = values.get(key);
      switch (present) {
        case RegisterValue register -> {
          if (register.stamp().isAfter(stamp) && !isMarker(key)) {
            return;
          }
          values = values.minus(key);
        }
        case DependencyTable ignored -> values = values.minus(key);
        case null -> {}
        default -> {
          if (local) {
            values = values.minus(key);
          }
        }
      }
      if (isMarker(key) || ModelMutations.deleteWithoutTombstone
          || (entityTombstone != null && !stamp.isAfter(entityTombstone))) {
        return;
      }
      tombstones = tombstones.plus(key, stamp.latest(tombstones.get(key)));
    }

    /**
     * An entity deletion with {@code stamp}: registers, key tombstones and dependency tables not
     * later than it go; counters and sets go whole if {@code local} (the deleting turn observed
     * them all: an entity's turns are serial), else keep what the record's observed deletions left;
     * replication and delivered markers stay. The entity exists afterwards only if a write the
     * deletion did not observe ({@code observedWrites}, per data centre; null: everything applied
     * here, a local deletion's) was applied, which every data centre concludes alike whatever the
     * order.
     */
    void deleteEntity(Stamp stamp, boolean local, Map<Integer, Long> observedWrites) {
      PMap<String, Value> kept = values;
      for (Map.Entry<String, Value> entry : values.entrySet()) {
        String key = entry.getKey();
        if (isMarker(key)) {
          continue;
        }
        boolean keep = switch (entry.getValue()) {
          case RegisterValue register -> register.stamp().isAfter(stamp);
          case CounterValue ignored -> !local;
          case SetValue ignored -> !local;
          case DependencyTable ignored -> false;
        };
        if (!keep) {
          kept = kept.minus(key);
        }
      }
      values = kept;
      if (!ModelMutations.deleteWithoutTombstone) {
        entityTombstone = stamp.latest(entityTombstone);
        PMap<String, Stamp> remaining = tombstones;
        for (Map.Entry<String, Stamp> tombstone : tombstones.entrySet()) {
          if (!tombstone.getValue().isAfter(entityTombstone)) {
            remaining = remaining.minus(tombstone.getKey());
          }
        }
        tombstones = remaining;
      }
      Map<Integer, Long> deleted = new java.util.HashMap<>(deletedWriteCounts);
      (observedWrites == null ? writeCounts : observedWrites)
          .forEach((dc, count) -> deleted.merge(dc, count, Math::max));
      deletedWriteCounts = deleted;
      exists = false;
      for (Map.Entry<Integer, Long> count : writeCounts.entrySet()) {
        if (count.getValue() > deleted.getOrDefault(count.getKey(), 0L)) {
          exists = true;
        }
      }
    }
  }
}
