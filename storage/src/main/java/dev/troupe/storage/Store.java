package dev.troupe.storage;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityLocator;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * The storage engine of one node: a partitioned operation journal with an index per object, an
 * object cache, object checkpoints and journal truncation (antidote-cache.txt §3–4).
 *
 * <p>Contract:
 *
 * <ul>
 *   <li>{@link #commit} appends one journal record and completes its future only once the record
 *       is durable (under {@link Durability#SYNC}) and visible to {@link #read}. A future that
 *       completes exceptionally means the record was not committed, unless the exception is
 *       {@link OutcomeUnknownException}.
 *   <li>{@link #read} returns the latest committed state; it never returns a state older than one
 *       whose commit future has completed (read-your-writes for the caller).
 *   <li>{@link #readAt} returns exactly the state produced by replaying, in commit order, every
 *       record of that entity with commit timestamp ≤ the given timestamp, as long as the timestamp
 *       is within the retained history; otherwise it fails with {@code history_truncated}.
 *   <li>Nothing acknowledged is lost by a crash at any point (SYNC durability).
 * </ul>
 *
 * <p>Thread-safe. Callers must serialize commits per entity (the entity actor does), because the
 * operations of a commit were computed against the entity's previous state.
 */
public interface Store extends AutoCloseable {

  /**
   * A fresh transaction id: a tick of the node's clock, below the durable clock ceiling, so never
   * handed out again by this node, also across restarts (unless the store has failed: it then
   * stops raising the ceiling). Its low bits are the node's id ({@code
   * dev.troupe.model.time.TransactionIds#nodeOf}), so no other node issues it either.
   */
  long newTransactionId();

  /**
   * Commits one transaction record. All writes must be for entities of the same partition (single
   * partition transactions; cross-partition atomic commit arrives with 2PC).
   */
  CompletableFuture<Committed> commit(long transactionId, List<EntityWrite> writes);

  /**
   * Like {@link #commit}, but never refused because the partition's queue is full: for commits
   * that cannot be rolled back once their turn was evaluated (actions applied by a PSAC gate, whose
   * later actions were admitted against them). Their number is bounded by the gates' bounds.
   */
  CompletableFuture<Committed> commitExemptFromQueueLimit(
      long transactionId, List<EntityWrite> writes);

  /**
   * The refusal in a future {@link #commit} returned already failed with a {@link
   * TroupeException}: the record was never written (queue full, store closed or
   * failed, malformed write), so the commit certainly did not happen. Null otherwise: anything
   * else, including an unknown outcome from a writer quick enough to fail the write already, is
   * for the asynchronous path, which reports it as unknown.
   */
  static TroupeException refusedAtOnce(CompletableFuture<?> future) {
    if (!future.isCompletedExceptionally()) {
      return null;
    }
    try {
      future.join();
      return null;
    } catch (CompletionException e) {
      return e.getCause() instanceof TroupeException refusal ? refusal : null;
    } catch (CancellationException e) {
      return null;
    }
  }

  /**
   * A store future's failure as a client sees it: the store's own refusal ({@link
   * TroupeException}), or {@code outcome_unknown} for anything else (a write that failed, after
   * which nothing tells whether it became durable).
   */
  static TroupeException failureOf(Throwable failure) {
    Throwable cause = failure instanceof CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
    if (cause instanceof TroupeException troupe) {
      return troupe;
    }
    return new TroupeException(ErrorCode.OUTCOME_UNKNOWN, String.valueOf(cause.getMessage()));
  }

  // ------------------------------------------------------------------ idempotency records

  /**
   * A {@link #commit} of this transaction id (a single turn) also writes {@code record}, with the
   * entity and the commit timestamp, in the same atomic write. It stays attached until {@link
   * #detachIdempotency}, which the caller calls once the turn is answered (committed and durable,
   * or refused): while attached, the write may still commit.
   */
  void attachIdempotency(long transactionId, IdempotencyRecord record);

  void detachIdempotency(long transactionId);

  /** Whether a record with this key is attached to a turn not yet answered. */
  boolean idempotencyAttached(String qualifiedKey);

  /** The durable record of this key, if any (expired ones too: pruning is the caller's). */
  java.util.Optional<IdempotencyRecord> idempotencyRecord(String qualifiedKey);

  /**
   * Replaces records by ones with their first attempt's answer, in one atomic write on the
   * caller's thread: done on return, durable once any later synced write is (a process crash keeps
   * it; a power loss may lose it, and the answer is then rebuilt from the record).
   *
   * @throws dev.troupe.model.TroupeException {@code unavailable} when the store is closed, failed
   *     or cannot write
   */
  void recordIdempotencyAnswers(List<IdempotencyRecord> records);

  /** Every durable idempotency record (one scan; for pruning and counting at start). */
  List<IdempotencyRecord> idempotencyRecords();

  /**
   * Deletes an expired record; completes once written (not synced: a record that comes back after
   * a crash expires again).
   */
  CompletableFuture<Void> forgetIdempotencyRecord(String qualifiedKey);

  // ------------------------------------------------------------------ two-phase commit state

  /**
   * Durably records a participant's prepared part (two-phase commit): written in the entity's
   * partition order, so it is durable only after every commit submitted before it. Invisible to
   * reads. Fails like {@link #commit} (refused when the queue is full).
   */
  CompletableFuture<Void> prepare(PreparedTransaction part);

  /**
   * Commits a decided transaction's part on one entity: one journal record, written atomically
   * with the removal of its prepared record. Never refused for load (only when the store is closed
   * or failed).
   */
  CompletableFuture<Committed> commitPrepared(
      long transactionId, EntityId entity, List<Operation> operations);

  /** Removes an aborted transaction's prepared record, in partition order; needs no sync. */
  void abandonPrepared(long transactionId, EntityId entity);

  /** Durably records a commit decision; complete only once durable. */
  CompletableFuture<Void> persistDecision(DecidedTransaction decision);

  /** Removes a decision every participant has applied; needs no sync. */
  void forgetDecision(DecidedTransaction decision);

  /**
   * Resolves what a crash left of two-phase commit (see {@link InDoubtResolution}) and waits for
   * it: called once at start, before any transaction runs. Parts that {@link
   * PreparedTransaction#needsRedo need a redo} are committed one at a time, per entity in arrival
   * order, with the operations {@code redo} computes from the entity's state at that point.
   */
  InDoubtResolution resolveInDoubtTransactions(Redo redo);

  /** Computes a PSAC part's operations on the state it meets when applied. */
  @FunctionalInterface
  interface Redo {
    List<Operation> operations(PreparedTransaction part, EntityState current);
  }

  /** The latest committed state of an entity, from the object cache when present. */
  EntityState read(EntityId entity);

  /**
   * Whether the entity's latest state is in the object cache right now: a hint for callers that
   * want to run a cache miss (a materialization, which reads RocksDB) off their own thread. Does not
   * count as a cache hit or miss.
   */
  boolean isCached(EntityId entity);

  /**
   * The estimated in-memory size of the entity's cached state, 0 if it is not cached (the memory
   * budget weighs active actors by it). Does not count as a cache hit or miss.
   */
  int cachedWeightBytes(EntityId entity);

  /**
   * Changes the object cache's bound on estimated weight (the memory budget moves it); a lower
   * bound evicts down to it.
   */
  void resizeCache(long maximumWeightBytes);

  /**
   * Entities of the type name {@code type} that have stored records (committed writes or a
   * checkpoint; a deleted entity may be among them), in storage order, starting after {@code
   * after} (null: from the first), at most {@code limit} of them: a page, to page through a type's
   * entities with bounded memory.
   *
   * <p>Cost: storage keys are ordered by entity length first, so one type's entities are
   * contiguous per entity length; the lookup seeks once per stored entity length at least as long
   * as the type's name, and once per entity found, in the index and checkpoint columns. It never
   * reads records of other types' entities.
   */
  List<EntityId> entitiesOfType(String type, EntityId after, int limit);

  /** The state of an entity as of a commit timestamp (MVCC read). */
  EntityState readAt(EntityId entity, long timestamp);

  /**
   * Pins the history at {@code timestamp}: until the snapshot is closed, truncation keeps every
   * version at or after it readable with {@link #readAt}.
   */
  Snapshot pinSnapshot(long timestamp);

  /** The greatest commit timestamp issued so far; reads at it see every acknowledged commit. */
  long currentTimestamp();

  /**
   * Where entities live (entity → partition → node): this store's partitioning, and this node for
   * every entity it stores.
   */
  EntityLocator locator();

  /** The partition an entity belongs to: {@code locator().partitionOf(entity)}. */
  default int partitionOf(EntityId entity) {
    return locator().partitionOf(entity);
  }

  StorageStatistics statistics();

  /** Whether the store accepts commits and whether it has met damaged data (readiness). */
  StoreHealth health();

  /**
   * Where to report failures and damage as they happen; a store that already failed reports it at
   * once. Replaces the previous listener.
   */
  void setEvents(StorageEvents events);

  /** Runs a checkpoint round and truncation on every partition now, and waits for them. */
  void checkpointNow();

  @Override
  void close();

  /** A pinned read timestamp; close it to let truncation proceed. */
  interface Snapshot extends AutoCloseable {
    long timestamp();

    @Override
    void close();
  }
}
