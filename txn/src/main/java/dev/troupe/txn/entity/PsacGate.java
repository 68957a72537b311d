package dev.troupe.txn.entity;

import dev.troupe.model.EntityState;
import dev.troupe.model.Invariants;
import dev.troupe.model.TroupeException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.function.BiFunction;

/**
 * The Path-Sensitive Atomic Commit gate of one entity (psac.txt §2.3, Fig. 3 and 4): instead of
 * locking the entity for a transaction in progress, it admits every new action whose preconditions
 * hold in <i>every</i> possible outcome of the actions in progress, rejects one whose
 * preconditions hold in none, and delays the rest until an action in progress is decided.
 *
 * <p><b>Outcome tree.</b> Starting from the entity's current state, each undecided action in
 * progress branches into "it aborts" (state unchanged) and "it commits" (its effects applied); a
 * committed one not yet applied only applies. The leaves are every state the entity can be in once
 * the actions in progress are resolved. An action whose preconditions fail on a branch cannot have
 * been admitted, so that branch only arises for aborted ones.
 *
 * <p><b>Order.</b> Effects are applied in admission order (the paper's arrival order; a delayed
 * action counts as arriving when a retry admits it): an action that commits before an earlier one
 * waits in progress, committed, until everything before it is decided ({@link #pollApplicable}).
 * So the state each action's effects meet is one of the leaves it was admitted against, and its
 * preconditions hold there: the schedule is serializable in admission order, as under 2PC.
 *
 * <p><b>Across entities.</b> Each entity orders its actions by admission, and two entities may
 * order two transactions oppositely; the paper's bank actions commute, so that is harmless there,
 * but a blind write or a whole-state read would make the history non-serializable. So a writer is
 * admitted beside actions in progress only if it commutes with them (see {@code
 * writerIsIndependent}), and a reader of the whole state only when every outcome is the same, with
 * later writers delayed until it is decided (it behaves like a read lock). Checked by the
 * serializability checker in {@code TransactionRestTest}.
 *
 * <p><b>Bounds.</b> At most {@code maxInFlight} undecided actions are in progress (the tree has at
 * most {@code 2^maxInFlight} leaves), and at most as many committed ones waiting to be applied
 * after an earlier undecided one; with {@code maxInFlight = 1} the gate is plain 2PC: one undecided
 * action at a time, the others delayed. The paper leaves fairness open (§5.1.3): an independent newcomer may
 * overtake a delayed action forever. Here, once a delayed action has been overtaken {@code
 * maxOvertakes} times, newcomers are delayed behind it.
 *
 * <p><b>Deadlock.</b> A delayed transaction waits for others, possibly on several entities. To keep
 * waits acyclic the gate applies wait-die: a transaction may be delayed only if it is older than
 * every undecided transaction in progress and every transaction delayed before it; otherwise it
 * dies and its coordinator retries it with the same age. Single-entity turns never die: they hold
 * nothing elsewhere, so no cycle runs through them.
 *
 * <p><b>Exclusive actions.</b> An action that keeps declared dependencies must know at prepare
 * the operations it forwards, which depend on the state its effects meet; so it is admitted only
 * when nothing is in progress, and nothing is admitted beside it until it is applied or aborted
 * (for it, the gate is plain 2PC). Its operations computed at admission are then exactly those
 * applied. Whether an action is exclusive is decided on the state it is admitted against, not the
 * one it arrived on: a dependency recorded meanwhile makes a delayed action exclusive.
 *
 * <p>Pure and single-threaded (owned by the entity core); the evaluator must be deterministic.
 *
 * @param <T> an action: a transaction's part or a single turn
 */
final class PsacGate<T> {

  /** The gate's bounds, from the type spec. */
  record Limits(int maxInFlight, int maxOvertakes) {
    public Limits {
      Invariants.check(maxInFlight >= 1 && maxOvertakes >= 0, "bad PSAC limits %d, %d",
          maxInFlight, maxOvertakes);
    }
  }

  /** An action's evaluation on one state. */
  sealed interface Evaluation {
    /** Its preconditions hold; {@code after} is the state with its effects applied. */
    record Holds(EntityState after) implements Evaluation {}

    record Fails(TroupeException error) implements Evaluation {}
  }

  /** What the gate decided about an offered action. */
  sealed interface Decision<T> {
    T item();

    /** Independent: start it (prepare and vote yes, or for a turn, commit). */
    record Admitted<T>(T item) implements Decision<T> {}

    /** Its preconditions hold in no possible outcome. */
    record Rejected<T>(T item, TroupeException error) implements Decision<T> {}

    /** Dependent on an action in progress: it waits in the gate. */
    record Delayed<T>(T item) implements Decision<T> {}

    /** Wait-die: it would wait for an older transaction; abort it (it may be retried). */
    record Died<T>(T item) implements Decision<T> {}
  }

  private static final class Entry<T> {
    final T item;
    final long age;
    final boolean mayDie;
    final boolean readsState;
    final boolean planned;
    /** Decided when it is admitted. */
    boolean exclusive;
    boolean committed;
    int overtakes;

    Entry(T item, long age, boolean mayDie, boolean readsState, boolean planned) {
      this.item = item;
      this.age = age;
      this.mayDie = mayDie;
      this.readsState = readsState;
      this.planned = planned;
    }
  }

  private final Limits limits;
  private final BiFunction<T, EntityState, Evaluation> evaluator;
  private final java.util.function.BiPredicate<T, EntityState> exclusive;
  private final List<Entry<T>> inProgress = new ArrayList<>();
  private final List<Entry<T>> delayed = new ArrayList<>();

  /** @param evaluator evaluates an action on a state (deterministic, no side effects) */
  PsacGate(Limits limits, BiFunction<T, EntityState, Evaluation> evaluator) {
    this(limits, evaluator, (item, state) -> false);
  }

  /**
   * @param exclusive whether an action must be admitted alone, judged on the state it would be
   *     admitted against (deterministic, no side effects)
   */
  PsacGate(Limits limits, BiFunction<T, EntityState, Evaluation> evaluator,
      java.util.function.BiPredicate<T, EntityState> exclusive) {
    this.limits = limits;
    this.evaluator = evaluator;
    this.exclusive = exclusive;
  }

  /**
   * Offers a newly arrived action.
   *
   * @param age its transaction's age for wait-die (smaller is older)
   * @param mayDie whether wait-die may abort it (false for single-entity turns)
   * @param readsState whether it reads the whole state: then it is independent only when every
   *     outcome leaves the state the same
   */
  Decision<T> offer(T item, long age, boolean mayDie, boolean readsState,
      EntityState current) {
    return offer(item, age, mayDie, readsState, false, current);
  }

  /**
   * As above, for a planned transaction when {@code planned}: it never dies for a dynamic one and
   * never overtakes an earlier planned transaction that is delayed here. One sequencer's planned
   * transactions reach every entity in their global order; were a later one admitted past an
   * earlier delayed one, each could end up waiting for the other on two entities. So the oldest
   * undecided planned transaction is never kept waiting by a younger planned one, and always
   * progresses. An earlier one arriving after a later one (another node's sequencer, a resent
   * prepare) dies instead of waiting for it.
   */
  Decision<T> offer(T item, long age, boolean mayDie, boolean readsState,
      boolean planned, EntityState current) {
    Entry<T> entry = new Entry<>(item, age, mayDie && !planned, readsState, planned);
    boolean fairnessHolds = true;
    for (Entry<T> waiting : delayed) {
      fairnessHolds &= waiting.overtakes < limits.maxOvertakes();
    }
    Decision<T> decision = fairnessHolds ? decide(entry, current) : delayOrDie(entry);
    if (decision instanceof Decision.Admitted<T>) {
      for (Entry<T> waiting : delayed) {
        waiting.overtakes++;
      }
    }
    return decision;
  }

  /** The transaction of an admitted action committed; its effects wait for their turn. */
  void commit(T item) {
    Entry<T> entry = find(inProgress, item);
    Invariants.check(entry != null && !entry.committed, "commit of %s, which is not undecided in"
        + " progress", item);
    entry.committed = true;
  }

  /**
   * An action aborted (or its turn was withdrawn): removes it wherever it is. Returns whether it
   * was in progress (its prepared state may need dropping) rather than delayed or unknown.
   */
  boolean abort(T item) {
    Entry<T> entry = find(inProgress, item);
    if (entry != null) {
      Invariants.check(!entry.committed, "abort of committed %s", item);
      inProgress.remove(entry);
      return true;
    }
    Entry<T> waiting = find(delayed, item);
    if (waiting != null) {
      delayed.remove(waiting);
    }
    return false;
  }

  /**
   * The oldest action in progress if it is committed: the caller applies its effects to the
   * current state now (in arrival order) and must then {@link #retryDelayed}. Null otherwise.
   */
  T pollApplicable() {
    if (inProgress.isEmpty() || !inProgress.get(0).committed) {
      return null;
    }
    return inProgress.remove(0).item;
  }

  /**
   * Re-offers every delayed action, in arrival order, after the actions in progress changed.
   * Returns the decisions that moved an action out of the delayed list.
   */
  List<Decision<T>> retryDelayed(EntityState current) {
    List<Decision<T>> changed = new ArrayList<>();
    List<Entry<T>> retry = new ArrayList<>(delayed);
    delayed.clear();
    for (Entry<T> entry : retry) {
      Decision<T> decision = decide(entry, current);
      if (!(decision instanceof Decision.Delayed<T>)) {
        changed.add(decision);
      }
    }
    return changed;
  }

  /**
   * The actions in progress that branch the outcome tree: the undecided ones. {@code maxInFlight}
   * bounds these, not the committed ones waiting for an earlier undecided action to be applied
   * after it (they always apply, so they add no leaf). Counting those too let one slow decision
   * fill the gate: between nodes a booking's decision waits for its other account, and every
   * later booking admitted here, decided meanwhile, held a slot until it, so newcomers were
   * delayed, holding their other accounts' slots in turn (issue 18, {@code bench bank --nodes 3
   * --scenario sync10}). At most as many committed ones again may wait, so evaluating a leaf
   * stays bounded by {@code 2 * maxInFlight} actions.
   */
  private int undecidedInProgress() {
    int undecided = 0;
    for (Entry<T> entry : inProgress) {
      if (!entry.committed) {
        undecided++;
      }
    }
    return undecided;
  }

  boolean isEmpty() {
    return inProgress.isEmpty() && delayed.isEmpty();
  }

  int inProgressCount() {
    return inProgress.size();
  }

  int delayedCount() {
    return delayed.size();
  }

  /** Delayed actions, in arrival order (to fail them all). */
  List<T> delayedItems() {
    return delayed.stream().map(entry -> entry.item).toList();
  }

  /** Whether an action in progress was admitted alone (see the class comment). */
  boolean isExclusive(T item) {
    Entry<T> entry = find(inProgress, item);
    return entry != null && entry.exclusive;
  }

  /** Actions in progress, in arrival order. */
  List<T> inProgressItems() {
    return inProgress.stream().map(entry -> entry.item).toList();
  }

  private Decision<T> decide(Entry<T> entry, EntityState current) {
    if (undecidedInProgress() >= limits.maxInFlight()
        || inProgress.size() >= 2 * limits.maxInFlight()) {
      return delayOrDie(entry);
    }
    for (Entry<T> other : inProgress) {
      if (other.exclusive) {
        return delayOrDie(entry); // its operations were computed on the state without this one
      }
    }
    entry.exclusive = exclusive.test(entry.item, current);
    if (entry.exclusive && !inProgress.isEmpty()) {
      return delayOrDie(entry);
    }
    if (entry.planned) {
      for (Entry<T> waiting : delayed) {
        if (waiting.planned) {
          return delayOrDie(entry);
        }
      }
    }
    List<EntityState> leaves = outcomes(current, true);
    List<EntityState> afters = new ArrayList<>(leaves.size());
    int possible = 0;
    int holds = 0;
    TroupeException firstFailure = null;
    EntityState firstLeaf = null;
    boolean allSame = true;
    for (EntityState leaf : leaves) {
      if (leaf == null) {
        afters.add(null);
        continue;
      }
      possible++;
      switch (evaluator.apply(entry.item, leaf)) {
        case Evaluation.Holds held -> {
          holds++;
          afters.add(held.after());
          if (firstLeaf == null) {
            firstLeaf = leaf;
          } else if (!sameContent(firstLeaf, leaf)) {
            allSame = false;
          }
        }
        case Evaluation.Fails failed -> {
          afters.add(null);
          if (firstFailure == null) {
            firstFailure = failed.error();
          }
        }
      }
    }
    if (holds == 0) {
      return new Decision.Rejected<>(entry.item, firstFailure);
    }
    if (holds < possible) {
      return delayOrDie(entry);
    }
    // A part that reads the whole state and also writes is a reader and a writer: every outcome
    // must be the same (its view) and, as a writer, it must not change the view of an undecided
    // reader in progress. Checking only the first admitted such a part beside a reader whose part
    // on another entity had read before it: a write skew (issue 16, found by the register check).
    boolean independent = entry.readsState
        ? allSame && (!changesState(leaves, afters) || writerIsIndependent(entry, current, afters))
        : writerIsIndependent(entry, current, afters);
    if (!independent) {
      return delayOrDie(entry);
    }
    inProgress.add(entry);
    return new Decision.Admitted<>(entry.item);
  }

  /**
   * Whether a writer whose preconditions hold in every outcome may also be ordered anywhere among
   * the actions in progress, so that every entity may order it differently without breaking
   * serializability (the paper's arrival order is per entity; two entities could otherwise order
   * two transactions oppositely). It may, when no undecided reader of the whole state is in
   * progress (a reader's view must not change under it), and it commutes with the actions in
   * progress: applied <i>first</i>, every action in progress still holds in every outcome, and each
   * outcome equals the one where it is applied last. Effects re-evaluated when applied (like
   * {@code balance - amount}) commute; blind assignments of different values do not.
   */
  private boolean writerIsIndependent(Entry<T> entry, EntityState current,
      List<EntityState> afters) {
    if (inProgress.isEmpty()) {
      return true;
    }
    for (Entry<T> other : inProgress) {
      if (other.readsState && !other.committed) {
        return false;
      }
    }
    if (!(evaluator.apply(entry.item, current) instanceof Evaluation.Holds first)) {
      return false;
    }
    List<EntityState> firstLeaves = outcomes(first.after(), false);
    if (firstLeaves == null) {
      return false;
    }
    for (int i = 0; i < afters.size(); i++) {
      EntityState last = afters.get(i);
      EntityState applied = firstLeaves.get(i);
      if ((last == null) != (applied == null)
          || (last != null && !sameContent(last, applied))) {
        return false;
      }
    }
    return true;
  }

  /** Whether an action changes the content of any outcome it holds on (so it writes). */
  private static boolean changesState(List<EntityState> leaves, List<EntityState> afters) {
    for (int i = 0; i < leaves.size(); i++) {
      if (afters.get(i) != null && !sameContent(leaves.get(i), afters.get(i))) {
        return true;
      }
    }
    return false;
  }

  private Decision<T> delayOrDie(Entry<T> entry) {
    if (entry.planned && waitsForLaterPlanned(entry)) {
      return new Decision.Died<>(entry.item);
    }
    if (entry.mayDie) {
      // Older than everything it would wait for, or it dies. Entries that never die (turns,
      // planned transactions) count too: a planned one may be waiting on another entity for a
      // transaction that would otherwise wait here for it.
      for (Entry<T> other : inProgress) {
        if (!other.committed && other.age <= entry.age) {
          return new Decision.Died<>(entry.item);
        }
      }
      for (Entry<T> other : delayed) {
        if (other.age <= entry.age) {
          return new Decision.Died<>(entry.item);
        }
      }
    }
    delayed.add(entry);
    return new Decision.Delayed<>(entry.item);
  }

  /**
   * Whether a planned action would wait for an undecided planned one with a later position (a
   * younger age). One sequencer's planned actions arrive in position order and never do; another
   * node's sequencer or a resent prepare may bring the earlier one second, and then the two could
   * wait for each other on two entities, never dying: the earlier one dies instead (its coordinator
   * retries it with the same position), as in {@link LockTable}.
   */
  private boolean waitsForLaterPlanned(Entry<T> entry) {
    for (Entry<T> other : inProgress) {
      if (other.planned && !other.committed && other.age > entry.age) {
        return true;
      }
    }
    for (Entry<T> other : delayed) {
      if (other.planned && other.age > entry.age) {
        return true;
      }
    }
    return false;
  }

  /**
   * Every state the entity can be in once the actions in progress are resolved, indexed by which
   * undecided actions commit (bit i of the index: the i-th undecided one commits); committed ones
   * always apply. A combination in which an action would fail cannot happen (that action was
   * admitted only where it holds, so it aborts): its entry is {@code null}.
   *
   * @param strict on the real state: a committed action must hold everywhere (an invariant); on a
   *     hypothetical one (a newcomer applied first), any failure makes the result {@code null}
   */
  private List<EntityState> outcomes(EntityState start, boolean strict) {
    List<EntityState> leaves = new ArrayList<>();
    leaves.add(start);
    for (Entry<T> entry : inProgress) {
      List<EntityState> next = new ArrayList<>(entry.committed ? leaves.size() : leaves.size() * 2);
      for (EntityState leaf : leaves) {
        EntityState committed = null;
        if (leaf != null) {
          switch (evaluator.apply(entry.item, leaf)) {
            case Evaluation.Holds held -> committed = held.after();
            case Evaluation.Fails failed -> {
              if (!strict) {
                return null;
              }
              Invariants.check(!entry.committed,
                  "committed action %s fails on a possible state: %s", entry.item,
                  failed.error().getMessage());
            }
          }
        }
        if (!entry.committed) {
          next.add(leaf);
        }
        next.add(committed);
      }
      leaves = next;
    }
    return leaves;
  }

  /** Equal as clients see them: same existence and the same value (JSON) under every key. */
  private static boolean sameContent(EntityState first, EntityState second) {
    if (first.exists() != second.exists() || !first.values().keySet().equals(
        second.values().keySet())) {
      return false;
    }
    for (var entry : first.values().entrySet()) {
      if (!entry.getValue().toJson().equals(second.values().get(entry.getKey()).toJson())) {
        return false;
      }
    }
    return true;
  }

  private static <T> Entry<T> find(List<Entry<T>> entries, T item) {
    for (Iterator<Entry<T>> iterator = entries.iterator(); iterator.hasNext(); ) {
      Entry<T> entry = iterator.next();
      if (entry.item == item) {
        return entry;
      }
    }
    return null;
  }
}
