package dev.troupe.storage;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * The port through which the cores' shells (an entity's actor, a coordinator's run, a request's
 * and an interactive transaction's shells) reach storage: the narrowed store, only what they need
 * to run a turn, prepare and decide a transaction, and issue transaction ids. Everything else of
 * {@link Store} (MVCC reads, scans, cache sizing, checkpoints, recovery, idempotency records'
 * administration) belongs to the node's start, its read path and its maintenance, not to a
 * protocol. The issue that introduced the ports called it "Durability"; it is named {@code
 * DurableStore} because {@link Durability} already means when a commit is acknowledged (sync or
 * async), and a word has one meaning here (docs/GLOSSARY.md).
 *
 * <p><b>Contract.</b>
 *
 * <ul>
 *   <li><b>Durable when complete.</b> A future returned by {@link #commit}, {@link
 *       #commitExemptFromQueueLimit}, {@link #commitPrepared}, {@link #prepare} or {@link
 *       #persistDecision} (not {@link #persistDecisionBeforeLocalCommits}, whose participants'
 *       commits make it durable, nor {@link #prepare} for a transaction this single node
 *       coordinates, which its decision makes durable) completes normally only once what it wrote
 *       survives a crash (under {@link Durability#SYNC}; under {@link Durability#ASYNC} a crash
 *       may lose the last flush interval of them, by the operator's choice) and, for commits, is
 *       visible to {@link #read}.
 *       An exceptional completion with a {@link TroupeException} other than {@code
 *       outcome_unknown} means nothing was written; {@link OutcomeUnknownException} (or any other
 *       failure, see {@link #failureOf}) means it may or may not have been.
 *   <li><b>Not synced.</b> {@link #abandonPrepared} and {@link #forgetDecision} are written in
 *       partition order without a sync: after a crash they may be undone, which is safe (a
 *       prepared part comes back and is resolved again, presumed abort; a decision comes back and
 *       is forgotten again once its parts are found applied).
 *   <li><b>Crash.</b> Nothing whose future completed is lost (SYNC). What a crash leaves prepared
 *       or decided is resolved by recovery before any turn runs ({@link
 *       Store#resolveInDoubtTransactions}); timers and futures of the crashed incarnation are
 *       gone, so shells re-arm nothing themselves.
 *   <li><b>Order.</b> Writes of one entity are applied in submission order (per partition); a
 *       prepared record is durable only after every commit submitted before it.
 *   <li><b>Threads.</b> Thread-safe; futures complete on the store's writer threads, so a shell
 *       hands completions back to its own thread (an actor's {@code pipeToSelf}, a coordinator's
 *       monitor). Callers must serialize commits per entity (the entity actor does), because the
 *       operations of a commit were computed against the entity's previous state.
 * </ul>
 *
 * <p>Implemented by the storage engine ({@link Store}, hence {@link RocksStore}) in the runtime
 * and, in the simulator, by the node's storage over the same engine on a {@link MemoryDisk}.
 */
public interface DurableStore {

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
   * A {@link #commit} of this transaction id (a single turn) also writes {@code record}, with the
   * entity and the commit timestamp, in the same atomic write. It stays attached until {@link
   * #detachIdempotency}, which the caller calls once the turn is answered (committed and durable,
   * or refused): while attached, the write may still commit.
   */
  void attachIdempotency(long transactionId, IdempotencyRecord record);

  void detachIdempotency(long transactionId);

  /**
   * Durably records a participant's prepared part (two-phase commit): written in the entity's
   * partition order, so it is durable only after every commit submitted before it. Invisible to
   * reads. Fails like {@link #commit} (refused when the queue is full).
   *
   * <p>On the single node of a data centre, for a transaction this node coordinates, the future
   * completes once the record is written, without a sync of its own (issue 20): the coordinator's
   * decision is written to this same store after every vote, and is synced or made durable by the
   * participants' synced commits written after it ({@link #persistDecisionBeforeLocalCommits}), so
   * no decision is durable without its prepared records (the store keeps a prefix of its writes
   * that includes every synced one), and a crash that loses a prepared record loses its decision
   * too (presumed abort). A caller may therefore send such a part's vote to its coordinator, and
   * only there, once written. Otherwise (a node of several, a remote coordinator, a disk that can
   * crash alone: {@link KeyValueDisk#crashesOnlyWithThisProcess}) it completes once durable, as
   * every other write.
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

  /**
   * Durably records a commit decision; complete only once durable. On a node of several ({@link
   * PartitionOwnership#ACQUIRED}) refused with {@code unavailable}, nothing written, once another
   * node ended this node's coordinators ({@link Store#endCoordinator}).
   */
  CompletableFuture<Void> persistDecision(DecidedTransaction decision);

  /**
   * Like {@link #persistDecision}, for a decision whose every participant commits its part on this
   * same store (the caller checked that each is hosted by this node): on the single node of a data
   * centre ({@link PartitionOwnership#ALL}), and without an idempotency record, the future
   * completes once the decision is <em>written</em>, without a sync of its own (issue 20). The
   * rule that makes that safe:
   *
   * <ol>
   *   <li>The store's write-ahead log is one sequence: a crash keeps a prefix of the written
   *       batches that includes every synced one ({@link KeyValueDisk}).
   *   <li>The caller sends the decision only once this future completed, so every participant's
   *       commit of its part ({@link #commitPrepared}, always synced) is written after the
   *       decision: a part durable means the decision is durable, and a crash that loses the
   *       decision loses every part's commit too (the prepared parts are then aborted by recovery,
   *       presumed abort).
   *   <li>Nothing is acknowledged on the strength of the decision alone: the client is answered
   *       once every participant's commit is durable (so the decision is), an entity's replies
   *       wait for the commits they observed, and the replication log's safe timestamp stays below
   *       the decision's entry until a later sync ({@link ReplicationLog#localSafeTimestamp}).
   *   <li>The decision is forgotten only after every participant acknowledged its durable commit,
   *       as before.
   * </ol>
   *
   * With an idempotency record (a retry may answer from it) or on a node of several ({@link
   * PartitionOwnership#ACQUIRED}), it is exactly {@link #persistDecision}, which is also the
   * default for any other implementation.
   */
  default CompletableFuture<Void> persistDecisionBeforeLocalCommits(DecidedTransaction decision) {
    return persistDecision(decision);
  }

  /** Removes a decision every participant has applied; needs no sync. */
  void forgetDecision(DecidedTransaction decision);

  /** The latest committed state of an entity, from the object cache when present. */
  EntityState read(EntityId entity);

  /**
   * The latest committed state of an entity as the object cache holds it (encoded; loaded into
   * the cache when absent, as {@link #read}): its version and existence without decoding, the
   * state decoded on demand. The same object while the entity's cached version stays, so what a
   * caller derives from it can be memoized by its identity (the rendered-state memo).
   */
  CachedState readCached(EntityId entity);

  /**
   * {@link #readCached} when the entity is in the object cache now, else null (nothing is
   * loaded): one lookup for a reader that runs a cache miss elsewhere (on the materialization
   * pool), where {@link #isCached} then {@link #readCached} took two. Counts as a hit when found;
   * an absent entity is counted as a miss only by the load that follows, as before.
   */
  CachedState readCachedIfPresent(EntityId entity);

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
   * The estimated heap the entity's entry in the object cache takes (its encoded state, the entry
   * and the key: what the cache's weigher counts), 0 if it is not cached. Does not count as a
   * cache hit or miss.
   */
  int cacheEntryWeightBytes(EntityId entity);

  /** Whether the store accepts commits and whether it has met damaged data (readiness). */
  StoreHealth health();

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
}
