package dev.troupe.model;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.value.CounterValue;
import dev.troupe.model.value.Tag;
import java.util.Map;
import java.util.Set;

/**
 * The unit the journal records: one effect on one key of one entity (or on the whole entity).
 * Operations are downstream effects, self-contained and deterministic to apply: an add carries its
 * unique tag, a remove the tags it observed, so replaying the journal in commit order always
 * rebuilds the same state (incremental logging, never whole states). Register timestamps come from
 * the record's commit timestamp at apply time, except for {@link AssignReplicated}, {@link
 * DeleteKeyReplicated} and {@link DeleteEntityReplicated}, which carry the stamp they had at their
 * origin data centre.
 *
 * <p>Deletions converge across data centres (docs/ARCHITECTURE.md, "Deletes across data
 * centres"): a register deletion leaves a tombstone stamped like a write (last writer wins); a
 * counter or set deletion removes exactly what the deleting turn observed ({@link DeleteCounter},
 * {@link DeleteSet}), so increments and additions concurrent with it survive everywhere.
 */
public sealed interface Operation {
  /** The key this operation touches; the empty string for {@link DeleteEntity}. */
  String key();

  /** Whether this operation deletes its key (of whatever kind). */
  default boolean deletesKey() {
    return false;
  }

  /** Whether this operation deletes the whole entity. */
  default boolean deletesEntity() {
    return false;
  }

  /**
   * Register assignment (last writer wins across data centres), stamped with the record's commit
   * timestamp and data centre at apply time.
   */
  record Assign(String key, JsonNode value) implements Operation {}

  /**
   * A register write made in another data centre, applied here with the stamp it had there: the
   * commit timestamp of its journal record at the origin and the origin's id. Merged last writer
   * wins on (timestamp, originDc): the register already present is kept if it wins, so every data
   * centre ends with the same value whatever order concurrent writes arrive in.
   */
  record AssignReplicated(String key, JsonNode value, long timestamp, int originDc)
      implements Operation {}

  /**
   * Deletes a register key: leaves a tombstone stamped with the record's commit timestamp and data
   * centre at apply time, which a write with an older stamp arriving later loses to. On a key of
   * another kind (journals written before observed deletions; dependency records, which are not
   * replicated CRDTs) it removes the key whole, as it always did: the entity's turns are serial, so
   * the local state at apply time is the state the deleting turn observed.
   */
  record DeleteKey(String key) implements Operation {
    @Override
    public boolean deletesKey() {
      return true;
    }
  }

  /**
   * A register deletion made in another data centre, with the stamp it had there (the commit
   * timestamp of its journal record at the origin and the origin's id): removes the register unless
   * it was written later, and leaves a tombstone with that stamp. A counter or set key it finds is
   * left alone (their deletions are {@link DeleteCounter} and {@link DeleteSet}).
   */
  record DeleteKeyReplicated(String key, long timestamp, int originDc) implements Operation {
    @Override
    public boolean deletesKey() {
      return true;
    }
  }

  /**
   * Observed-remove deletion of a counter: removes the per-data-centre contributions the deleting
   * turn observed ({@code observed}: each data centre's whole sums, including what earlier
   * deletions removed), so increments concurrent with it survive (add wins) and concurrent
   * deletions that observed the same contributions remove them once. The key goes once no
   * contribution remains.
   */
  record DeleteCounter(String key, CounterValue observed) implements Operation {
    @Override
    public boolean deletesKey() {
      return true;
    }
  }

  /**
   * Observed-remove deletion of a set: removes the additions (tags) the deleting turn observed, of
   * every element, so additions concurrent with it survive (add wins). The key goes once no
   * element remains.
   */
  record DeleteSet(String key, Set<Tag> observedTags) implements Operation {
    public DeleteSet {
      observedTags = Set.copyOf(observedTags);
    }

    @Override
    public boolean deletesKey() {
      return true;
    }
  }

  /**
   * PN-counter increment; negative values decrement. Counted under the data centre where its record
   * committed (the apply's data centre).
   */
  record Increment(String key, long by) implements Operation {}

  /**
   * An increment made in another data centre, counted under its origin's entry as it is in every
   * data centre: the per-data-centre sums are then the same everywhere, which is what an
   * observed-remove deletion ({@link DeleteCounter}) subtracts.
   */
  record IncrementReplicated(String key, long by, int originDc) implements Operation {}

  /** Add-wins OR-set add, with the unique tag of this addition. */
  record AddElement(String key, JsonNode element, Tag tag) implements Operation {}

  /** OR-set remove of the additions (tags) the turn observed. */
  record RemoveElement(String key, JsonNode element, Set<Tag> observedTags) implements Operation {}

  /**
   * Records (or replaces) one dependency in a hidden dependency key ({@code $out:k} or {@code
   * $in:k}), with the leader's last forwarded value on the follower's side (else null).
   */
  record RecordDependency(String key, dev.troupe.model.dependency.Dependency dependency,
      JsonNode contribution) implements Operation {}

  /** Forgets one dependency of a hidden dependency key; the key goes with its last record. */
  record ForgetDependency(String key, String dependencyId) implements Operation {}

  /**
   * A causal message (TTCC) the sending entity's turn sends: an operation of the sender's
   * transaction, so it exists exactly when that transaction commits, is in its journal record and
   * in the replication log's part of the sender. It changes no state (the materializer skips it,
   * and it does not make the sender exist); the sender's data centre delivers it afterwards as a
   * {@code Turn.DeliverMessage} to {@code receiver} (docs/ARCHITECTURE.md, "Causal messages").
   *
   * @param receiver the entity the message goes to
   * @param action the receiver's action to invoke
   * @param args the action's arguments
   */
  record SendMessage(EntityId receiver, String action, JsonNode args) implements Operation {
    /** Not a key of the sender's state: messages touch none. */
    public static final String KEY = "$message";

    @Override
    public String key() {
      return KEY;
    }
  }

  /**
   * A deletion of the whole entity, local ({@link DeleteEntity}) or from another data centre
   * ({@link DeleteEntityReplicated}): it touches no single key (the empty string) and deletes the
   * entity.
   */
  sealed interface EntityDeletion extends Operation permits DeleteEntity, DeleteEntityReplicated {
    @Override
    default String key() {
      return "";
    }

    @Override
    default boolean deletesEntity() {
      return true;
    }
  }

  /**
   * Deletes the entity: all keys go, the entity no longer exists until written again. Leaves an
   * entity tombstone stamped with the record's commit timestamp and data centre, which every
   * register write and tombstone with an older stamp loses to. The deleting turn's record carries a
   * {@link DeleteCounter} or {@link DeleteSet} before it for each counter and set it observed, which
   * is what its replicated form removes of them.
   *
   * @param observedWrites per data centre, the count of writes that make the entity exist the
   *     deleting turn observed ({@link EntityState#writeCounts}): writes it did not observe keep
   *     the entity existing (add-wins). Null in journals written before it existed: every write
   *     applied when it is (the entity's turns are serial, so that is what the turn observed).
   */
  record DeleteEntity(Map<Integer, Long> observedWrites) implements EntityDeletion {
    public DeleteEntity {
      observedWrites = observedWrites == null ? null : Map.copyOf(observedWrites);
    }

    /** A deletion that observed every write applied when it is (journals before the counts). */
    public DeleteEntity() {
      this(null);
    }
  }

  /**
   * An entity deletion made in another data centre, with its origin's stamp and the write counts it
   * observed (null for a deletion from before the counts: then every write applied here when it
   * arrives, as such a deletion was applied at its origin): removes registers,
   * register tombstones and dependency records not later than the stamp and leaves an entity
   * tombstone; counters and sets lose what the record's {@link DeleteCounter} and {@link DeleteSet}
   * say the deleting turn observed, and keep the rest.
   */
  record DeleteEntityReplicated(long timestamp, int originDc, Map<Integer, Long> observedWrites)
      implements EntityDeletion {
    public DeleteEntityReplicated {
      observedWrites = observedWrites == null ? null : Map.copyOf(observedWrites);
    }
  }
}
