package dev.troupe.sim;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Operation;
import dev.troupe.storage.DecidedTransaction;
import dev.troupe.storage.PreparedTransaction;
import java.util.List;
import java.util.Map;
import java.util.function.LongConsumer;

/**
 * Where a {@link SimulatedNode} keeps its durable state: the operations its shells run for the
 * cores' effects, crash and restart. Two implementations: {@link StoreStorage}, the production
 * storage engine ({@code RocksStore}) over a simulated disk, and {@link SimulatedJournal}, a
 * minimal journal of record objects whose recovery the simulator itself writes (torn and corrupted
 * tails, and the shell mutations that need a hand in recovery).
 *
 * <p>Completions ({@code durableAt}, {@code durable}) run in the order the storage made things
 * durable, from a scheduler event of the incarnation that asked (a group commit), never
 * synchronously and never after a crash. They must only send messages (as the production shells'
 * {@code pipeToSelf}), not call the storage back inside its writer's pass.
 */
interface NodeStorage {
  /** Runs {@code action} after {@code delayMillis}, unless the node crashed meanwhile. */
  @FunctionalInterface
  interface Timers {
    void later(long delayMillis, String what, Runnable action);
  }

  /** A clock tick of the node's hybrid logical clock: transaction ids and ages. */
  long newTransactionId();

  /** Writes an entity's opening state durably (set-up, before faults). */
  void preload(long transactionId, EntityId entity, List<Operation> operations);

  /**
   * Commits one entity's operations; {@code durableAt} receives the commit timestamp once the
   * commit is durable (acknowledged).
   */
  void commit(long transactionId, EntityId entity, List<Operation> operations,
      boolean resolvesPrepared, boolean exemptFromQueueLimit, LongConsumer durableAt);

  void prepare(PreparedTransaction part, Runnable durable);

  void abandonPrepared(long transactionId, EntityId entity);

  void persistDecision(DecidedTransaction decision, Runnable durable);

  void forgetDecision(DecidedTransaction decision);

  /** The entity's latest committed state (the node must be up). */
  EntityState durable(EntityId entity);

  /** Power loss: what was not synced is lost, or a prefix of it survives. */
  void crash();

  /** Recovers and resolves in-doubt transactions; the node serves afterwards. */
  void restart();

  /** Moves the node's physical clock (negative: backwards). */
  void jumpClock(long deltaMillis);

  /**
   * Every commit that became durable, over every incarnation (even if truncated since): per
   * transaction id, the commit timestamp of each entity it wrote.
   */
  Map<Long, Map<EntityId, Long>> committedWrites();

  /** In-doubt prepared parts resolved at restarts. */
  long resolvedInDoubt();

  /** Decided PSAC parts re-evaluated at restarts. */
  long redone();

  /** What the storage engine's maintenance did over every incarnation (zeros for the journal). */
  Counters counters();

  /** Maintenance the storage engine did. */
  record Counters(long checkpointRounds, long objectCheckpoints, long truncatedRecords) {
    @Override
    public String toString() {
      return checkpointRounds + " checkpoint rounds, " + objectCheckpoints
          + " object checkpoints, " + truncatedRecords + " journal records truncated";
    }
  }
}
