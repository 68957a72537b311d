package dev.troupe.txn.planned;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.TroupeException;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyKeys;
import dev.troupe.model.dependency.DependencyKind;
import dev.troupe.model.dependency.KeyReference;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.value.DependencyTable;
import dev.troupe.txn.Turn;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.entity.AccessSets;
import dev.troupe.txn.entity.LockTable;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * A planned transaction's reconnaissance (Calvin's OLLP, and what SmSa-X asks of PACTs: "the
 * declaration of actors and keys accessed ... including the ones accessed during the dependency
 * management process", smsa.txt §3.3): from recent states of its entities, the entities and keys
 * its forwards will reach, so they can be ordered up front as parts that reserve those keys'
 * locks. The forwards themselves are still computed when the parts run; a part asked to apply a
 * forward its reservation does not cover gives the planned attempt up ({@code
 * dependencies_involved}) and the transaction runs again dynamic. So a stale guess costs time,
 * never correctness.
 *
 * <p>Predicted: the followers of every key a part writes (their follower key, written), along
 * update chains and delete cascades; the leaders of every key a part deletes (their key reserved
 * for writing: a leader forgets a deleted follower's dependency under its lock); for a registration (explicit, or one a
 * type declares for a key written), its follower or leader. An entity whose state is not at hand
 * (not cached) is assumed to keep no dependency. Unpredictable, so the transaction runs dynamic:
 * a registration whose walk would visit other entities, a chain longer than the limit.
 *
 * <p>Pure: states come from the caller.
 */
public final class DependencyPlanner {
  private DependencyPlanner() {}

  /** A follower key a forward changes, or deletes (then its other leaders take part). */
  private record Reach(EntityId entity, String key, boolean deleted) {}

  /**
   * The parts to order: the client's, with reservations added, then the predicted followers and
   * leaders (each an empty part reserving its keys); empty when the transaction must run dynamic.
   *
   * @param types every part's type
   * @param cached an entity's recent state, empty when it is not at hand
   * @param pending the dependencies on a leader key that transactions in progress register (they
   *     may commit before this transaction reaches the leader, and are planned for)
   */
  public static Optional<Map<EntityId, CoordinatorCore.Part>> plan(
      Map<EntityId, CoordinatorCore.Part> parts, Map<EntityId, CompiledType> types,
      Function<EntityId, Optional<EntityState>> cached,
      Function<KeyReference, List<Dependency>> pending, int maxChain) {
    Map<EntityId, Map<String, LockTable.Mode>> reserved = new LinkedHashMap<>();
    Map<EntityId, AccessSets.KnownLocks> known = new HashMap<>();
    ArrayDeque<Reach> changed = new ArrayDeque<>();
    for (Map.Entry<EntityId, CoordinatorCore.Part> part : parts.entrySet()) {
      EntityId entity = part.getKey();
      if (!direct(entity, types.get(entity), stateOf(entity, cached), part.getValue(), pending,
          reserved, changed, known)) {
        return Optional.empty();
      }
    }
    // Follow what the forwards change in turn: update chains and delete cascades.
    Map<Reach, Integer> depth = new HashMap<>();
    changed.forEach(reach -> depth.put(reach, 1));
    while (!changed.isEmpty()) {
      Reach reach = changed.poll();
      int level = depth.get(reach);
      if (level > maxChain + 1) {
        return Optional.empty();
      }
      List<Reach> next = new ArrayList<>();
      reach(reach.entity(), stateOf(reach.entity(), cached), reach.key(), true, reach.deleted(),
          pending, reserved, next);
      for (Reach further : next) {
        if (depth.putIfAbsent(further, level + 1) == null) {
          changed.add(further);
        }
      }
    }
    Map<EntityId, CoordinatorCore.Part> planned = new LinkedHashMap<>();
    // Each client part carries the locks worked out here, so its participant takes them as they
    // are (AccessSets.KnownLocks says why that is exact).
    parts.forEach((entity, part) -> planned.put(entity, part.reserving(
        reserved.getOrDefault(entity, Map.of())).knowing(known.get(entity))));
    reserved.forEach((entity, keys) -> planned.computeIfAbsent(entity,
        ignored -> new CoordinatorCore.Part(List.of(), false, List.of(), keys)));
    return Optional.of(planned);
  }

  /**
   * What changing ({@code written}) or deleting {@code key} of an entity in {@code state} reaches:
   * the followers of its update dependencies (their keys change), when deleted those of its delete
   * dependencies (their keys go too) and its own leaders (they forget it).
   */
  private static void reach(EntityId entity, EntityState state, String key, boolean written,
      boolean deleted, Function<KeyReference, List<Dependency>> pending,
      Map<EntityId, Map<String, LockTable.Mode>> reserved, List<Reach> reached) {
    List<Dependency> leads = new ArrayList<>();
    table(state, DependencyKeys.outgoing(key)).all().forEach(entry ->
        leads.add(entry.dependency()));
    leads.addAll(pending.apply(new KeyReference(entity, key)));
    for (Dependency dependency : leads) {
      if (dependency.kind() == DependencyKind.UPDATE ? written || deleted : deleted) {
        reached.add(follower(dependency, dependency.kind() == DependencyKind.DELETE, reserved));
      }
    }
    if (deleted) {
      for (DependencyTable.Entry entry : table(state, DependencyKeys.incoming(key)).all()) {
        // It forgets the dependency under its key's lock (see Forward.needsNoLock).
        reserve(entry.dependency().leader().entity(), entry.dependency().leader().key(),
            LockTable.Mode.WRITE, reserved);
      }
    }
  }

  /**
   * One part's direct reach, on its entity's state: false when it cannot be predicted. Adds the
   * followers whose keys change to {@code changed}, and the part's own locks to {@code known}.
   */
  private static boolean direct(EntityId entity, CompiledType type, EntityState state,
      CoordinatorCore.Part part, Function<KeyReference, List<Dependency>> pending,
      Map<EntityId, Map<String, LockTable.Mode>> reserved, ArrayDeque<Reach> changed,
      Map<EntityId, AccessSets.KnownLocks> known) {
    int replicaApplications = 0;
    for (Turn turn : part.turns()) {
      if (turn instanceof Turn.ApplyReplicated) {
        replicaApplications++;
      }
    }
    if (replicaApplications > 0) {
      // A remote transaction's part forwards nothing (DependencyEvaluator.evaluate), so it
      // reaches no other entity; mixed with other turns its evaluation refuses it: run dynamic.
      return replicaApplications == part.turns().size();
    }
    AccessSets.KnownLocks locks = AccessSets.known(type, part.turns(), part.readsState());
    known.put(entity, locks);
    LockTable.LockSet access = locks.locks();
    boolean wholeEntity = access.entityMode() == LockTable.Mode.WRITE;
    boolean clears = false;
    Set<String> deletedKeys = new HashSet<>();
    for (Turn turn : part.turns()) {
      switch (turn) {
        case Turn.DeleteEntity ignored -> clears = true;
        case Turn.DeleteKey delete -> deletedKeys.add(delete.key());
        case Turn.RegisterDependency register -> {
          if (!registrationStaysHere(register.dependency(), state)) {
            return false;
          }
          changed.add(follower(register.dependency(), false, reserved));
        }
        case Turn.DeregisterDependency deregister -> {
          try {
            Dependency.Ends ends = Dependency.parseId(deregister.dependencyId());
            reserve(ends.follower().entity(), ends.follower().key(), LockTable.Mode.WRITE,
                reserved);
          } catch (TroupeException unparsable) {
            // the part's evaluation refuses it
          }
        }
        default -> {}
      }
    }
    // The keys it may change: those it locks for writing (their records, and registrations in
    // progress on them, are looked up directly), or every key with records when it writes the
    // whole entity. Not a scan of every entity in every planned transaction.
    Set<String> keys = new TreeSet<>();
    if (wholeEntity || clears) {
      for (String stored : state.values().keySet()) {
        if (DependencyKeys.isDependencyKey(stored)) {
          keys.add(DependencyKeys.describedKey(stored));
        }
      }
    }
    access.keys().forEach((key, mode) -> {
      if (mode == LockTable.Mode.WRITE) {
        keys.add(key);
      }
    });
    List<Reach> reached = new ArrayList<>();
    for (String key : keys) {
      boolean deleted = clears || deletedKeys.contains(key);
      boolean written = wholeEntity || access.keys().get(key) == LockTable.Mode.WRITE;
      reach(entity, state, key, written, deleted, pending, reserved, reached);
    }
    changed.addAll(reached);
    // Dependencies the type declares for the keys the part writes: the leader registers them.
    if (!type.spec().dependencies().isEmpty()) {
      for (Map.Entry<String, LockTable.Mode> key : access.keys().entrySet()) {
        if (key.getValue() != LockTable.Mode.WRITE) {
          continue;
        }
        List<Dependency> declared;
        try {
          declared = type.declaredDependencies(entity, key.getKey());
        } catch (TroupeException unusable) {
          return false;
        }
        for (Dependency dependency : declared) {
          if (table(state, DependencyKeys.incoming(key.getKey())).get(dependency.id()) == null) {
            if (!table(state, DependencyKeys.outgoing(key.getKey())).isEmpty()) {
              return false; // its walk would go down from here
            }
            reserve(dependency.leader().entity(), dependency.leader().key(),
                LockTable.Mode.WRITE, reserved);
          }
        }
      }
      if (wholeEntity) {
        return false; // which declared keys it writes is not known before it runs
      }
    }
    return true;
  }

  /** A registration whose walk stays on its two ends: its leader follows nothing of its kind. */
  private static boolean registrationStaysHere(Dependency dependency, EntityState leader) {
    for (DependencyTable.Entry entry :
        table(leader, DependencyKeys.incoming(dependency.leader().key())).all()) {
      if (entry.dependency().kind() == dependency.kind()) {
        return false;
      }
    }
    return true;
  }

  private static Reach follower(Dependency dependency, boolean deleted,
      Map<EntityId, Map<String, LockTable.Mode>> reserved) {
    reserve(dependency.follower().entity(), dependency.follower().key(), LockTable.Mode.WRITE,
        reserved);
    return new Reach(dependency.follower().entity(), dependency.follower().key(), deleted);
  }

  private static void reserve(EntityId entity, String key, LockTable.Mode mode,
      Map<EntityId, Map<String, LockTable.Mode>> reserved) {
    reserved.computeIfAbsent(entity, ignored -> new LinkedHashMap<>())
        .merge(key, mode, (a, b) -> a == LockTable.Mode.WRITE || b == LockTable.Mode.WRITE
            ? LockTable.Mode.WRITE : LockTable.Mode.READ);
  }

  /**
   * An entity's recent state; one not at hand is assumed to keep no dependency (most do not, and
   * a new entity cannot): if it does, the planned attempt gives up and runs dynamic.
   */
  private static EntityState stateOf(EntityId entity,
      Function<EntityId, Optional<EntityState>> cached) {
    return cached.apply(entity).orElse(EntityState.ABSENT);
  }

  private static DependencyTable table(EntityState state, String key) {
    return state.get(key) instanceof DependencyTable table ? table : DependencyTable.EMPTY;
  }
}
