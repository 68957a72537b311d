package dev.troupe.txn.entity;

import dev.troupe.model.Invariants;
import dev.troupe.txn.Mutations;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The locks of one entity under strict two-phase locking with wait-die (smsa.txt §3.3.4: key-level
 * concurrency control). Transactions lock keys, or the whole entity, for reading or writing, and
 * keep their locks until their decision; the entity's participant logic ({@link EntityTurnCore})
 * releases them.
 *
 * <p><b>Wait-die.</b> A transaction's age is its start timestamp: a smaller one is older. A request
 * that conflicts with a holder, or with an earlier conflicting waiter, waits only if it is older
 * than every one of them (ties broken by transaction id); otherwise it dies (the transaction
 * aborts, and its coordinator may retry it under a new id but with the same age, so it ages and
 * eventually wins). Every wait edge therefore points from an older to a younger
 * transaction, across all entities, so no cycle and no deadlock can form.
 *
 * <p><b>Invariants</b> (checked by {@code LockTableProperties}): no two holders hold conflicting
 * locks; a waiter is granted in arrival order among the waiters it conflicts with; once every holder
 * releases, every waiter is granted.
 *
 * <p>Single-entity turns do not take locks: they check {@link #conflictsWithHolders} and wait in
 * the entity's turn queue (they hold nothing, so they cannot take part in a deadlock).
 *
 * <p>Pure and single-threaded (owned by one entity's actor). Re-requests by a holder merge into its
 * locks (an upgrade from read to write follows the same wait-die rule against the other holders).
 *
 * <p>Public only for its value types ({@link Mode}, {@link LockSet}): coordinators, planners and
 * the wire name the keys a planned part reserves. The table itself is the entity core's.
 *
 * @param <P> what a waiter carries (the shell's prepare request)
 */
public final class LockTable<P> {

  /** A lock mode: shared or exclusive. */
  public enum Mode {
    READ,
    WRITE;

    boolean conflictsWith(Mode other) {
      return this == WRITE || other == WRITE;
    }

    Mode strongest(Mode other) {
      return this == WRITE || other == WRITE ? WRITE : READ;
    }
  }

  /**
   * The locks one request needs on this entity.
   *
   * @param entityMode a lock on the whole entity (every key, present or not), or {@code null}
   * @param keys per-key locks
   */
  public record LockSet(Mode entityMode, Map<String, Mode> keys) {
    public LockSet {
      keys = Map.copyOf(keys);
    }

    /** Every key, read or written: the lock of the serial admission policy. */
    public static LockSet wholeEntity(Mode mode) {
      return new LockSet(mode, Map.of());
    }

    public boolean isEmpty() {
      return entityMode == null && keys.isEmpty();
    }

    /** Whether this request and {@code other} cannot be held at once. */
    public boolean conflictsWith(LockSet other) {
      if (entityMode != null && other.entityMode != null
          && entityMode.conflictsWith(other.entityMode)) {
        return true;
      }
      if (entityMode != null && conflictsWithAnyKey(entityMode, other.keys)) {
        return true;
      }
      if (other.entityMode != null && conflictsWithAnyKey(other.entityMode, keys)) {
        return true;
      }
      Map<String, Mode> smaller = keys.size() <= other.keys.size() ? keys : other.keys;
      Map<String, Mode> larger = smaller == keys ? other.keys : keys;
      for (Map.Entry<String, Mode> entry : smaller.entrySet()) {
        Mode mode = larger.get(entry.getKey());
        if (mode != null && mode.conflictsWith(entry.getValue())) {
          return true;
        }
      }
      return false;
    }

    /** Whether holding this set already grants everything {@code wanted} asks for. */
    public boolean covers(LockSet wanted) {
      if (wanted.entityMode != null && (entityMode == null
          || entityMode.strongest(wanted.entityMode) != entityMode)) {
        return false;
      }
      for (Map.Entry<String, Mode> key : wanted.keys.entrySet()) {
        Mode held = entityMode != null && entityMode.strongest(key.getValue()) == entityMode
            ? entityMode : keys.get(key.getKey());
        if (held == null || held.strongest(key.getValue()) != held) {
          return false;
        }
      }
      return true;
    }

    /** The union of both lock sets, each key at its strongest mode. */
    public LockSet merge(LockSet other) {
      // Most parts reserve nothing: the union is then this very set (both are immutable).
      if (other.isEmpty()) {
        return this;
      }
      if (isEmpty()) {
        return other;
      }
      Mode entity = entityMode == null ? other.entityMode
          : other.entityMode == null ? entityMode : entityMode.strongest(other.entityMode);
      Map<String, Mode> merged = new LinkedHashMap<>(keys);
      other.keys.forEach((key, mode) -> merged.merge(key, mode, Mode::strongest));
      return new LockSet(entity, merged);
    }

    private static boolean conflictsWithAnyKey(Mode entityMode, Map<String, Mode> keys) {
      for (Mode mode : keys.values()) {
        if (mode.conflictsWith(entityMode)) {
          return true;
        }
      }
      return false;
    }
  }

  /** What a request got. */
  sealed interface Outcome {
    /** The locks are held now. */
    record Granted() implements Outcome {}

    /** The request waits; it is granted later by a {@link #release} or {@link #cancel}. */
    record Waiting() implements Outcome {}

    /**
     * The request conflicts with a transaction at least as old: wait-die kills it.
     *
     * @param conflictingTransaction the oldest transaction it conflicts with
     */
    record Died(long conflictingTransaction) implements Outcome {}
  }

  /** A waiter granted by a release, with what it carried. */
  record Grant<P>(long transactionId, P payload) {}

  private record Waiter<P>(long transactionId, Age age, LockSet locks, P payload,
      boolean mayDie) {}

  private record Held(Age age, LockSet locks, boolean mayDie) {}

  /** Age order: start timestamp, then transaction id. */
  private record Age(long startTimestamp, long transactionId) implements Comparable<Age> {
    @Override
    public int compareTo(Age other) {
      int byStart = Long.compare(startTimestamp, other.startTimestamp);
      return byStart != 0 ? byStart : Long.compare(transactionId, other.transactionId);
    }
  }

  private final Map<Long, Held> holders = new LinkedHashMap<>();
  private final List<Waiter<P>> waiters = new ArrayList<>();

  /**
   * Requests {@code locks} for a transaction; {@code payload} is returned when a wait ends.
   *
   * @param startTimestamp the transaction's age (kept across retries of the same transaction)
   */
  /** Whether {@code transactionId} holds locks covering {@code wanted} (none held: empty only). */
  boolean holds(long transactionId, LockSet wanted) {
    Held held = holders.get(transactionId);
    return wanted.isEmpty() || held != null && held.locks().covers(wanted);
  }

  Outcome request(long transactionId, long startTimestamp, LockSet locks, P payload) {
    return request(transactionId, startTimestamp, locks, payload, true);
  }

  /**
   * As {@link #request(long, long, LockSet, Object)}; with {@code mayDie} false the request waits
   * whatever the ages, except for a younger request that may not die either. For planned
   * transactions: their ages are their positions, below every dynamic transaction's, so a planned
   * request waits for dynamic holders, which never wait for it (a dynamic request that conflicts
   * with it is younger and dies), and for earlier planned ones. One sequencer's requests reach
   * every entity in position order, so a planned request never meets a later planned one; another
   * node's sequencer, or a resent prepare, may bring an earlier one after a later one, and two
   * planned requests waiting for each other on two entities would never end (neither dies). So
   * that earlier one dies (its coordinator retries it with the same position): every wait between
   * requests that may not die points from a younger to an older one, and waits stay acyclic.
   */
  Outcome request(long transactionId, long startTimestamp, LockSet locks, P payload,
      boolean mayDie) {
    Invariants.check(!isWaiting(transactionId),
        "transaction %d requested locks while already waiting for some", transactionId);
    Age age = new Age(startTimestamp, transactionId);
    Held held = holders.get(transactionId);
    LockSet wanted = held == null ? locks : held.locks().merge(locks);
    Age oldestConflict = null;
    long oldestConflictId = 0;
    // A conflicting younger request that may not die either (see above): only when !mayDie.
    long youngerUndying = -1;
    boolean foundYoungerUndying = false;
    for (Map.Entry<Long, Held> holder : holders.entrySet()) {
      if (holder.getKey() != transactionId && holder.getValue().locks().conflictsWith(wanted)) {
        if (oldestConflict == null || holder.getValue().age().compareTo(oldestConflict) < 0) {
          oldestConflict = holder.getValue().age();
          oldestConflictId = holder.getKey();
        }
        if (!holder.getValue().mayDie() && holder.getValue().age().compareTo(age) > 0
            && !foundYoungerUndying) {
          foundYoungerUndying = true;
          youngerUndying = holder.getKey();
        }
      }
    }
    for (Waiter<P> waiter : waiters) {
      if (waiter.locks().conflictsWith(wanted)) {
        if (oldestConflict == null || waiter.age().compareTo(oldestConflict) < 0) {
          oldestConflict = waiter.age();
          oldestConflictId = waiter.transactionId();
        }
        if (!waiter.mayDie() && waiter.age().compareTo(age) > 0 && !foundYoungerUndying) {
          foundYoungerUndying = true;
          youngerUndying = waiter.transactionId();
        }
      }
    }
    if (oldestConflict == null) {
      holders.put(transactionId, new Held(age, wanted, mayDie));
      return new Outcome.Granted();
    }
    if (!mayDie && foundYoungerUndying) {
      return new Outcome.Died(youngerUndying);
    }
    if (!mayDie || age.compareTo(oldestConflict) < 0) {
      waiters.add(new Waiter<>(transactionId, age, wanted, payload, mayDie));
      return new Outcome.Waiting();
    }
    return new Outcome.Died(oldestConflictId);
  }

  /** Releases every lock of a transaction; returns the waiters this grants, in arrival order. */
  List<Grant<P>> release(long transactionId) {
    if (holders.remove(transactionId) == null) {
      return List.of();
    }
    return grantWaiters();
  }

  /**
   * Releases the key locks a transaction holds for reading only, keeping its write locks and any
   * whole-entity lock; returns the waiters this grants. Only the deliberate bug {@link
   * Mutations.Mutation#RELEASE_KEY_LOCK_EARLY} calls it: a correct participant holds every lock
   * until the decision.
   */
  List<Grant<P>> releaseReadKeys(long transactionId) {
    Held held = holders.get(transactionId);
    if (held == null) {
      return List.of();
    }
    Map<String, Mode> written = new LinkedHashMap<>();
    held.locks().keys().forEach((key, mode) -> {
      if (mode == Mode.WRITE) {
        written.put(key, mode);
      }
    });
    if (written.size() == held.locks().keys().size()) {
      return List.of();
    }
    holders.put(transactionId, new Held(held.age(), new LockSet(held.locks().entityMode(),
        written), held.mayDie()));
    return grantWaiters();
  }

  /**
   * Withdraws a waiting request (its transaction aborted while it waited); returns the waiters this
   * grants.
   */
  List<Grant<P>> cancel(long transactionId) {
    boolean removed = waiters.removeIf(waiter -> waiter.transactionId() == transactionId);
    return removed ? grantWaiters() : List.of();
  }

  boolean holds(long transactionId) {
    return holders.containsKey(transactionId);
  }

  boolean isWaiting(long transactionId) {
    for (Waiter<P> waiter : waiters) {
      if (waiter.transactionId() == transactionId) {
        return true;
      }
    }
    return false;
  }

  /** Whether a lock-free turn with this access would conflict with a holder now. */
  boolean conflictsWithHolders(LockSet access) {
    return conflictsWithHoldersOtherThan(Long.MIN_VALUE, access);
  }

  private boolean conflictsWithHoldersOtherThan(long transactionId, LockSet access) {
    for (Map.Entry<Long, Held> holder : holders.entrySet()) {
      if (holder.getKey() != transactionId && holder.getValue().locks().conflictsWith(access)) {
        return true;
      }
    }
    return false;
  }

  /** No holder and no waiter. */
  boolean isEmpty() {
    return holders.isEmpty() && waiters.isEmpty();
  }

  int holderCount() {
    return holders.size();
  }

  int waiterCount() {
    return waiters.size();
  }

  /** The transactions holding locks, in the order they were granted. */
  List<Long> holders() {
    return List.copyOf(holders.keySet());
  }

  /**
   * Grants, in arrival order, each waiter that conflicts neither with a holder nor with an earlier
   * waiter still waiting (so a later reader cannot overtake an earlier writer forever).
   */
  private List<Grant<P>> grantWaiters() {
    List<Grant<P>> granted = new ArrayList<>();
    List<LockSet> stillWaiting = new ArrayList<>();
    Iterator<Waiter<P>> iterator = waiters.iterator();
    while (iterator.hasNext()) {
      Waiter<P> waiter = iterator.next();
      boolean blocked = conflictsWithHoldersOtherThan(waiter.transactionId(), waiter.locks());
      for (int i = 0; !blocked && i < stillWaiting.size(); i++) {
        blocked = stillWaiting.get(i).conflictsWith(waiter.locks());
      }
      if (blocked) {
        stillWaiting.add(waiter.locks());
      } else {
        iterator.remove();
        holders.put(waiter.transactionId(),
            new Held(waiter.age(), waiter.locks(), waiter.mayDie()));
        granted.add(new Grant<>(waiter.transactionId(), waiter.payload()));
      }
    }
    return granted;
  }
}
