package dev.troupe.txn.entity;

import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import dev.troupe.model.causal.ReplicaApplication;
import dev.troupe.model.dependency.DependencyKeys;
import dev.troupe.model.spec.AdmissionPolicy;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.txn.Forward;
import dev.troupe.txn.Turn;
import dev.troupe.txn.entity.LockTable.LockSet;
import dev.troupe.txn.entity.LockTable.Mode;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The locks a turn or a transaction's part on one entity needs, by the type's admission policy:
 * the whole entity under {@link AdmissionPolicy#SERIAL}, the keys it touches under {@link
 * AdmissionPolicy#KEYS}. Known before the turn runs, from the request and the type alone.
 *
 * <p>Pure; thread-safe (stateless).
 *
 * <p>Public because the dependency planner ({@code txn.planned}) works out the locks a planned
 * transaction reserves with it, and the dependency evaluator the keys a transaction writes; the
 * entity core takes the same locks.
 */
public final class AccessSets {
  private AccessSets() {}

  /** Whether the action is declared and has no effects (only preconditions and sync calls). */
  private static boolean readsOnly(CompiledType type, String action) {
    return !type.isSchemaless() && type.spec().actions().containsKey(action)
        && !type.writes(action);
  }

  /**
   * A part's own locks ({@link #forTransaction}) worked out ahead, by the planned transaction's
   * reconnaissance ({@code DependencyPlanner}), with what they were worked out from, so that the
   * participant takes them without working them out again (issue 20: a SmallBank transaction
   * worked them out twice, binding every action's arguments each time).
   *
   * <p>Why carrying them is exact: {@link #forTransaction} is a pure function of the type, the
   * turns and {@code readsState} alone (an action's access depends on its arguments, never on the
   * entity's state: {@code CompiledType#access}), and all three are immutable (a compiled type is
   * never changed, only replaced by a new one; a part's turns are an unmodifiable list of records
   * whose arguments nothing writes after the request was parsed). So the participant uses them
   * only when its prepare names the very same type and turns ({@link #appliesTo}, by identity:
   * a type redefined meanwhile, or a part rebuilt on the way, is worked out again), and then they
   * are what it would work out itself ({@code TurnCodecAndAccessTest} and {@code ParticipantTest}
   * check both).
   */
  public record KnownLocks(CompiledType type, List<Turn> turns, boolean readsState,
      LockSet locks) {
    /** Whether these locks were worked out from exactly these inputs. */
    public boolean appliesTo(CompiledType type, List<Turn> turns, boolean readsState) {
      return this.type == type && this.turns == turns && this.readsState == readsState;
    }

    /** The locks only: the inputs are the part's own, printed with it. */
    @Override
    public String toString() {
      return "KnownLocks[" + locks + "]";
    }
  }

  /** A part's own locks worked out now, kept with their inputs (see {@link KnownLocks}). */
  public static KnownLocks known(CompiledType type, List<Turn> turns, boolean readsState) {
    return new KnownLocks(type, turns, readsState, forTransaction(type, turns, readsState));
  }

  /** The locks of one single-entity turn. */
  public static LockSet forTurn(CompiledType type, Turn turn) {
    return forTransaction(type, List.of(turn), false);
  }

  /**
   * The locks of a transaction's part: its operations' and those the forwards to it need (the
   * key each forward writes, or reads for a registration's walk). A dependency's hidden records
   * are locked as the key they describe, so a forward and a write of its key conflict.
   */
  public static LockSet forPart(CompiledType type, List<Turn> turns, boolean readsState,
      List<Forward> forwards) {
    return forPart(type, turns, readsState, forwards, null);
  }

  /**
   * {@link #forPart(CompiledType, List, boolean, List)}, taking the part's own locks from {@code
   * known} when they were worked out from the same inputs ({@link KnownLocks#appliesTo}).
   *
   * @param known the part's own locks worked out ahead, or null
   */
  public static LockSet forPart(CompiledType type, List<Turn> turns, boolean readsState,
      List<Forward> forwards, KnownLocks known) {
    // A part with no operations of its own (a follower a dependency brought in) locks only what
    // its forwards need.
    LockSet base = turns.isEmpty() && !readsState ? new LockSet(null, Map.of())
        : known != null && known.appliesTo(type, turns, readsState) ? known.locks()
        : forTransaction(type, turns, readsState);
    boolean locking = false;
    for (Forward forward : forwards) {
      locking |= !forward.needsNoLock();
    }
    if (!locking) {
      return base;
    }
    if (type.spec().admission() != AdmissionPolicy.KEYS) {
      boolean writes = base.entityMode() == Mode.WRITE;
      for (Forward forward : forwards) {
        writes |= !forward.readsOnly() && !forward.needsNoLock();
      }
      return LockSet.wholeEntity(writes ? Mode.WRITE : Mode.READ);
    }
    Map<String, Mode> keys = new HashMap<>(base.keys());
    for (Forward forward : forwards) {
      if (forward.needsNoLock()) {
        continue;
      }
      if (forward.readsOnly()) {
        keys.putIfAbsent(forward.keyAtTarget(), Mode.READ);
      } else {
        keys.put(forward.keyAtTarget(), Mode.WRITE);
      }
    }
    return new LockSet(base.entityMode(), keys);
  }

  /** The locks a part reserves for forwards it may receive, by the type's admission policy. */
  public static LockSet reservation(CompiledType type, Map<String, Mode> keys) {
    if (keys.isEmpty()) {
      return new LockSet(null, Map.of());
    }
    if (type.spec().admission() != AdmissionPolicy.KEYS) {
      return LockSet.wholeEntity(keys.containsValue(Mode.WRITE) ? Mode.WRITE : Mode.READ);
    }
    return new LockSet(null, keys);
  }

  /**
   * The locks of a transaction's operations on one entity.
   *
   * @param readsState whether the transaction also reads the entity's whole state
   */
  public static LockSet forTransaction(CompiledType type, List<Turn> turns, boolean readsState) {
    if (type.spec().admission() != AdmissionPolicy.KEYS) {
      // serial (psac types never reach the lock table: their gate admits instead)
      boolean writes = false;
      for (Turn turn : turns) {
        writes |= !(turn instanceof Turn.InvokeAction invoke && readsOnly(type, invoke.action()));
      }
      return LockSet.wholeEntity(writes ? Mode.WRITE : Mode.READ);
    }
    Mode entityMode = readsState ? Mode.READ : null;
    Map<String, Mode> keys = new HashMap<>();
    for (Turn turn : turns) {
      switch (turn) {
        case Turn.AssignKeys assign ->
            assign.assignments().keySet().forEach(key -> keys.put(key, Mode.WRITE));
        case Turn.DeleteKey delete -> keys.put(delete.key(), Mode.WRITE);
        case Turn.IncrementKey increment -> keys.put(increment.key(), Mode.WRITE);
        case Turn.AddElement add -> keys.put(add.key(), Mode.WRITE);
        case Turn.RemoveElement remove -> keys.put(remove.key(), Mode.WRITE);
        case Turn.DeleteEntity ignored -> entityMode = Mode.WRITE;
        case Turn.DiscardHiddenValues ignored -> entityMode = Mode.WRITE;
        case Turn.RegisterDependency register ->
            keys.put(register.dependency().leader().key(), Mode.WRITE);
        case Turn.DeregisterDependency deregister -> keys.put(deregister.leaderKey(), Mode.WRITE);
        case Turn.ApplyReplicated replicated -> {
          // Its own lock key for the marker ($replicated:<dc> describes no other key), so two
          // parts of one origin on disjoint keys still conflict on it: applied one at a time.
          keys.put(ReplicaApplication.markerKey(replicated.originDc()), Mode.WRITE);
          for (Operation operation : replicated.operations()) {
            if (operation.deletesEntity()) {
              entityMode = Mode.WRITE;
            } else {
              keys.put(DependencyKeys.describedKey(operation.key()), Mode.WRITE);
            }
          }
        }
        // A delivery's action is known only when it runs (it may be consumed instead), and it
        // writes its marker: the whole entity, as an action it cannot resolve.
        case Turn.DeliverMessage ignored -> entityMode = Mode.WRITE;
        case Turn.InvokeAction invoke -> {
          if (type.isSchemaless() || !type.spec().actions().containsKey(invoke.action())) {
            // Evaluation rejects it; lock the whole entity meanwhile rather than guess.
            entityMode = Mode.WRITE;
            continue;
          }
          CompiledType.ActionAccess access;
          try {
            access = type.access(invoke.action(), invoke.params());
          } catch (TroupeException badArguments) {
            // Evaluation rejects them with the same message; lock the whole entity meanwhile.
            entityMode = Mode.WRITE;
            continue;
          }
          if (access.readsWholeState() && entityMode != Mode.WRITE) {
            entityMode = Mode.READ;
          }
          access.reads().forEach(key -> keys.putIfAbsent(key, Mode.READ));
          access.writes().forEach(key -> keys.put(key, Mode.WRITE));
        }
      }
    }
    return new LockSet(entityMode, keys);
  }
}
