package dev.troupe.sim;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Operation;
import dev.troupe.storage.DecidedTransaction;
import dev.troupe.storage.PreparedTransaction;
import dev.troupe.model.TroupeException;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.LongConsumer;

/**
 * Where a {@link SimulatedNode} keeps its durable state: the operations its shells run for the
 * cores' effects, crash and restart. Two implementations: {@link StoreStorage}, the production
 * storage engine ({@code RocksStore}) over a simulated disk, and {@link SimulatedJournal}, a
 * minimal journal of record objects whose recovery the simulator itself writes (torn and corrupted
 * tails, and the shell mutations that need a hand in recovery).
 *
 * <p>Completions ({@code durableAt}, {@code durable}, {@code failed}) run in the order the storage
 * made things durable or failed them, from a scheduler event of the incarnation that asked (a group
 * commit), never synchronously and never after a crash. They must only send messages (as the
 * production shells' {@code pipeToSelf}), not call the storage back inside its writer's pass.
 * {@code failed} receives what the production store's future failed with (a {@link
 * TroupeException} when nothing was written, anything else when the outcome is unknown); only the
 * production engine fails, and only once damage met by its writer failed it (the simulator's disk
 * has no other failures).
 */
interface NodeStorage {
  /** Runs {@code action} after {@code delayMillis}, unless the node crashed meanwhile. */
  @FunctionalInterface
  interface Timers {
    void later(long delayMillis, String what, Runnable action);
  }

  /**
   * Which transactions this node coordinated and which entities it hosts, for the in-doubt
   * resolution at a restart ({@code InDoubtResolution.of} on one node of several).
   */
  record Placement(java.util.function.LongPredicate coordinatedHere,
      java.util.function.Predicate<EntityId> hostedHere) {
    /** A node alone: everything is its own (the resolution of one node). */
    static final Placement ALONE = new Placement(transactionId -> true, entity -> true);
  }

  /** A clock tick of the node's hybrid logical clock: transaction ids and ages. */
  long newTransactionId();

  /** Writes an entity's opening state durably (set-up, before faults). */
  void preload(long transactionId, EntityId entity, List<Operation> operations);

  /**
   * Commits one entity's operations; {@code durableAt} receives the commit timestamp once the
   * commit is durable (acknowledged), {@code failed} the failure if it is not. Returns the refusal
   * if the storage refused the commit at once, before writing anything (then neither callback
   * runs), as the production store's already failed future does; else null.
   */
  TroupeException commit(long transactionId, EntityId entity, List<Operation> operations,
      boolean resolvesPrepared, boolean exemptFromQueueLimit, LongConsumer durableAt,
      Consumer<Throwable> failed);

  void prepare(PreparedTransaction part, Runnable durable, Consumer<Throwable> failed);

  void abandonPrepared(long transactionId, EntityId entity);

  void persistDecision(DecidedTransaction decision, Runnable durable, Consumer<Throwable> failed);

  /**
   * A commit decision whose every participant commits on this storage, after it: {@code written}
   * runs once it is written, without a sync of its own; the participants' synced commits make it
   * durable (the store's {@code DurableStore#persistDecisionBeforeLocalCommits}, issue 20), and
   * {@code durable} runs once a sync that followed the write completed (not at all if the node
   * crashes first: the decision may or may not have survived).
   */
  void persistDecisionBeforeLocalCommits(DecidedTransaction decision, Runnable written,
      Runnable durable, Consumer<Throwable> failed);

  void forgetDecision(DecidedTransaction decision);

  /**
   * The entity's latest committed state (the node must be up). Throws {@link TroupeException}
   * {@code corrupt_data} if the data it needs is damaged: never absent or an older state instead.
   */
  EntityState durable(EntityId entity);

  /** Power loss: what was not synced is lost, or a prefix of it survives. */
  void crash();

  /**
   * Recovers and resolves in-doubt transactions; the node serves afterwards. Returns false if
   * recovery met damaged data and the node could not start (as {@code Troupe}'s constructor
   * fails then): the node stays down and its supervisor tries again later.
   */
  boolean restart();

  /**
   * Damages one stored key, drawn with the scheduler's random generator (see {@link
   * StoreStorage#damage}); returns what it damaged, for the trace, or null if there was nothing to
   * damage. The production engine's storage only.
   */
  String damage();

  /** Whether the storage refuses every commit until the next restart (it failed). */
  boolean failed();

  /**
   * Whether, at some time in {@code [fromMillis, toMillis]}, the storage refused commits because
   * damage failed it, or the node was down because its recovery met damage.
   */
  boolean degradedDuring(long fromMillis, long toMillis);

  /** The entities whose stored data was damaged so far (for reports). */
  java.util.Set<EntityId> damagedEntities();

  /** Moves the node's physical clock (negative: backwards). */
  void jumpClock(long deltaMillis);

  /**
   * Every commit that became durable, over every incarnation (even if truncated since): per
   * transaction id, what it wrote on each entity.
   */
  Map<Long, Map<EntityId, CommittedWrite>> committedWrites();

  /**
   * One durable commit of one entity, at the granularity locks are taken at.
   *
   * @param version the commit timestamp (the entity's version after it)
   * @param keys the keys its operations touched, a dependency's hidden records counted as the key
   *     they describe (as {@code AccessSets} locks them)
   * @param wholeEntity whether it deleted the entity (every key)
   */
  record CommittedWrite(long version, java.util.Set<String> keys, boolean wholeEntity) {
    static CommittedWrite of(long version, List<Operation> operations) {
      java.util.Set<String> keys = new java.util.TreeSet<>();
      boolean wholeEntity = false;
      for (Operation operation : operations) {
        if (operation.deletesEntity()) {
          wholeEntity = true;
        } else {
          keys.add(dev.troupe.model.dependency.DependencyKeys.describedKey(operation.key()));
        }
      }
      return new CommittedWrite(version, java.util.Set.copyOf(keys), wholeEntity);
    }
  }

  /** What the last successful restart's in-doubt resolution decided (null before any). */
  default dev.troupe.storage.InDoubtResolution lastResolution() {
    return null;
  }

  /**
   * Prepared parts stored now: after the run, with the network healed and every node up, each is
   * an in-doubt part nobody resolved. -1 if this storage cannot tell.
   */
  default int preparedParts() {
    return -1;
  }

  /** In-doubt prepared parts resolved at restarts. */
  long resolvedInDoubt();

  /** Decided PSAC parts re-evaluated at restarts. */
  long redone();

  /** What the storage engine's maintenance did over every incarnation (zeros for the journal). */
  Counters counters();

  /**
   * Maintenance the storage engine did, and the damage it met.
   *
   * @param damagedKeys keys the damage fault damaged
   * @param corruptionsDetected reads that met damage and refused to serve it ({@code
   *     StoreHealth.corruptionsDetected}, over every incarnation)
   * @param storeFailures times a store failed (after that it refuses commits until a restart)
   * @param refusedStarts restarts that met damage and left the node down
   */
  record Counters(long checkpointRounds, long objectCheckpoints, long truncatedRecords,
      long damagedKeys, long corruptionsDetected, long storeFailures, long refusedStarts) {
    @Override
    public String toString() {
      return checkpointRounds + " checkpoint rounds, " + objectCheckpoints
          + " object checkpoints, " + truncatedRecords + " journal records truncated"
          + (damagedKeys == 0 ? "" : "; " + damagedKeys + " keys damaged, " + corruptionsDetected
              + " damaged reads detected, " + storeFailures + " store failures, " + refusedStarts
              + " refused starts");
    }
  }
}
