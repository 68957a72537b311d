package dev.troupe.model;

import dev.troupe.model.Operation.AddElement;
import dev.troupe.model.Operation.Assign;
import dev.troupe.model.Operation.AssignReplicated;
import dev.troupe.model.Operation.DeleteEntity;
import dev.troupe.model.Operation.DeleteKey;
import dev.troupe.model.Operation.ForgetDependency;
import dev.troupe.model.Operation.RecordDependency;
import dev.troupe.model.value.DependencyTable;
import dev.troupe.model.Operation.Increment;
import dev.troupe.model.Operation.RemoveElement;
import dev.troupe.model.causal.Messages;
import dev.troupe.model.causal.ReplicaApplication;
import dev.troupe.model.value.CounterValue;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.model.value.SetValue;
import dev.troupe.model.value.Value;
import java.util.List;
import java.util.Map;
import org.pcollections.HashTreePMap;
import org.pcollections.PMap;

/**
 * The materialized state of one entity at one version: its keys' CRDT values.
 *
 * <p>Invariants: immutable; {@code version} is the commit timestamp of the last record applied (0
 * for an entity never written); versions only grow through {@link #apply}. An entity exists once
 * written and until deleted; a deleted entity has no keys but its replication markers ({@link
 * ReplicaApplication}: they must outlive a deletion, or a part applied before it would be applied
 * again after a crash, resurrecting its writes or deleting later ones).
 *
 * <p>Applying the journal's records in commit-timestamp order from any checkpoint always yields the
 * same state: this is the materializer (AntidoteDB's "materializer", antidote-cache.txt §3).
 */
public record EntityState(Map<String, Value> values, long version, boolean exists) {
  public static final EntityState ABSENT = new EntityState(HashTreePMap.empty(), 0, false);

  public EntityState {
    // A persistent (structure-sharing) map: applying a record costs its operations, not the
    // entity's size, so entities with many keys (key families) stay cheap to change. Evaluation
    // makes tentative states per turn, so this is on every commit's path.
    values = values instanceof PMap<String, Value> persistent
        ? persistent
        : HashTreePMap.from(values);
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
    PMap<String, Value> next = (PMap<String, Value>) values;
    boolean nowExists = exists;
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
        case Assign assign -> next = mergeRegister(next, assign.key(),
            new RegisterValue(assign.value(), commitTimestamp, originDc));
        case AssignReplicated assign -> next = mergeRegister(next, assign.key(),
            new RegisterValue(assign.value(), assign.timestamp(), assign.originDc()));
        case DeleteKey delete -> next = next.minus(delete.key());
        case Increment increment -> {
          Value current = next.get(increment.key());
          CounterValue counter = current instanceof CounterValue c ? c : CounterValue.ZERO;
          next = next.plus(increment.key(), counter.increment(increment.by(), originDc));
        }
        case AddElement add -> {
          Value current = next.get(add.key());
          SetValue set = current instanceof SetValue s ? s : SetValue.EMPTY;
          next = next.plus(add.key(), set.add(add.element(), add.tag()));
        }
        case RemoveElement remove -> {
          Value current = next.get(remove.key());
          if (current instanceof SetValue set) {
            next = next.plus(remove.key(), set.remove(remove.element(), remove.observedTags()));
          }
        }
        case RecordDependency record -> {
          Value current = next.get(record.key());
          DependencyTable table = current instanceof DependencyTable t ? t : DependencyTable.EMPTY;
          next = next.plus(record.key(), table.with(record.dependency(), record.contribution()));
        }
        case ForgetDependency forget -> {
          if (next.get(forget.key()) instanceof DependencyTable table) {
            DependencyTable remaining = table.without(forget.dependencyId());
            next = remaining.isEmpty()
                ? next.minus(forget.key())
                : next.plus(forget.key(), remaining);
          }
        }
        case DeleteEntity ignored -> {
          next = replicationMarkers(next);
          nowExists = false;
        }
        // A message changes nothing of its sender (docs/ARCHITECTURE.md, "Causal messages").
        case Operation.SendMessage ignored -> {}
      }
      if (!(operation instanceof DeleteEntity) && !(operation instanceof DeleteKey)
          && !(operation instanceof ForgetDependency)
          && !(operation instanceof Operation.SendMessage)
          && !Messages.isDeliveredMarkerKey(operation.key())) {
        // Neither sending a message nor consuming one (a delivered marker written alone when
        // the receiving action fails) brings an entity into existence.
        nowExists = true;
      }
    }
    return new EntityState(next, commitTimestamp, nowExists);
  }

  /**
   * The replication and delivered markers among the values: what a deletion keeps (a message
   * delivered before the deletion and re-delivered after a crash stays delivered once).
   */
  private static PMap<String, Value> replicationMarkers(PMap<String, Value> values) {
    PMap<String, Value> markers = HashTreePMap.empty();
    for (Map.Entry<String, Value> entry : values.entrySet()) {
      if (ReplicaApplication.isMarkerKey(entry.getKey())
          || Messages.isDeliveredMarkerKey(entry.getKey())) {
        markers = markers.plus(entry.getKey(), entry.getValue());
      }
    }
    return markers;
  }

  /**
   * Last writer wins: the written register replaces the key unless the present one is strictly
   * later. An equal stamp is a later operation of the same record (an action's effects, a
   * transaction's turns on one key: one commit timestamp) or the same write again, so the written
   * one replaces it.
   */
  private static PMap<String, Value> mergeRegister(
      PMap<String, Value> values, String key, RegisterValue written) {
    if (values.get(key) instanceof RegisterValue present && present.supersedes(written)
        && !(ModelMutations.registerMergeWithoutTieBreak
            && present.timestamp() == written.timestamp())) {
      return values;
    }
    return values.plus(key, written);
  }
}
