package dev.troupe.storage;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityLocator;
import dev.troupe.model.EntityState;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import java.util.List;
import java.util.concurrent.CompletableFuture;

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
public interface Store extends DurableStore, AutoCloseable {

  /** {@link DurableStore#refusedAtOnce}, for callers that name the whole store. */
  static TroupeException refusedAtOnce(CompletableFuture<?> future) {
    return DurableStore.refusedAtOnce(future);
  }

  /** {@link DurableStore#failureOf}, for callers that name the whole store. */
  static TroupeException failureOf(Throwable failure) {
    return DurableStore.failureOf(failure);
  }

  // ------------------------------------------------------------------ idempotency records

  /** Whether a record with this key is attached to a turn not yet answered. */
  boolean idempotencyAttached(String qualifiedKey);

  /** The durable record of this key, if any (expired ones too: pruning is the caller's). */
  /**
   * Whether the store holds the commit decision record of {@code transactionId} (written by
   * {@link #persistDecision}, not forgotten yet): what a node answers a participant in doubt
   * when no live coordinator of its own knows the transaction (in a DC of several nodes the
   * record may have been written by another node's coordinator, or before a restart). A point
   * read.
   *
   * @throws dev.troupe.model.TroupeException {@code unavailable} when the store cannot read it
   */
  boolean decisionRecorded(long transactionId);

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
   * Resolves what a crash left of two-phase commit (see {@link InDoubtResolution}) and waits for
   * it: called once at start, before any transaction runs. Parts that {@link
   * PreparedTransaction#needsRedo need a redo} are committed one at a time, per entity in arrival
   * order, with the operations {@code redo} computes from the entity's state at that point.
   */
  InDoubtResolution resolveInDoubtTransactions(Redo redo);

  /**
   * What a partition acquired by this node of several ({@link #acquirePartition}) holds of
   * two-phase commit, resolved as {@link #resolveInDoubtTransactions} resolves a restart's: its
   * decided parts committed (redone where needed), its parts whose coordinator ended without a
   * decision abandoned (presumed abort), and its parts whose coordinator may still run ({@code
   * toAsk}) left prepared for their entities to ask. No decision is forgotten (see {@link
   * AcquiredPartition#decided}). Call before any turn reaches the partition's entities.
   *
   * @param coordinatedByAnEndedIncarnation see {@link AcquiredPartition#resolution}
   */
  InDoubtResolution resolveAcquired(AcquiredPartition acquired, Redo redo,
      java.util.function.LongPredicate coordinatedByAnEndedIncarnation);

  /** Computes a PSAC part's operations on the state it meets when applied. */
  @FunctionalInterface
  interface Redo {
    List<Operation> operations(PreparedTransaction part, EntityState current);
  }

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

  /**
   * A page of the listing index ({@link ListingIndex}): the entities of the type name {@code type}
   * ever written (deleted ones too: whether one exists, now or at a version, is the caller's read),
   * in id order (UTF-8 bytes, so code point order), from the id {@code startId} (included with
   * {@code includeStart}, else only the ids after it; null: from the first), at most {@code
   * limit}. One bounded range read of the listing column at one consistent
   * point of the disk, whatever the node owns: on a disk several nodes share, it sees every commit
   * durable before the call, whichever node wrote it.
   *
   * @throws dev.troupe.model.TroupeException {@code unavailable} if the store is closed or the disk
   *     cannot be read; {@code corrupt_data} if it is damaged
   */
  List<EntityId> listing(String type, String startId, boolean includeStart, int limit);

  /**
   * The versions of {@code entity} still in the journal (the commit timestamps of its index
   * entries: every write, delete included, since its partition's history horizon), newest first,
   * each below {@code before} (null: from the newest), at most {@code limit}. A read {@code
   * ?at=} each of them answers the entity's state as that write left it. One seek per version in
   * the entity's own key range of the index column, at one consistent point of the disk; on a
   * disk several nodes share, it sees every commit durable before the call.
   *
   * @throws dev.troupe.model.TroupeException {@code unavailable} if the store is closed or the disk
   *     cannot be read; {@code corrupt_data} if it is damaged
   */
  List<Long> versions(EntityId entity, Long before, int limit);

  /**
   * A page of every stored entity (with a journal record or a checkpoint; deleted ones too), of
   * every type, in storage order, starting after {@code after} (null: from the first): the
   * enumeration a bootstrap image is read by (docs/ARCHITECTURE.md, "Bootstrapping a new data
   * centre"). Seeks once per entity returned.
   */
  List<EntityId> entities(EntityId after, int limit);

  /**
   * Up to {@code limit} journal records of {@code partition} from sequence {@code fromSequence}
   * on, in sequence (so commit-timestamp) order, only records already written (below the
   * partition's published next sequence): how the system-of-record exporter tails the journal
   * (docs/ARCHITECTURE.md, "System of record"). A sequence below the first retained one starts at
   * the first retained record (truncation deleted the ones before: the caller checks the history
   * horizon, {@link #historyHorizon}). One bounded range read.
   *
   * @throws dev.troupe.model.TroupeException {@code unavailable} if the store is closed or the
   *     disk cannot be read; {@code corrupt_data} if a record is damaged
   */
  List<JournalEntry> readJournal(int partition, long fromSequence, int limit);

  /**
   * The first sequence of {@code partition} whose record has a commit timestamp above {@code
   * timestamp} (the partition's next sequence if none): where a journal reader resumes after a
   * watermark. A binary search of point reads over the retained journal.
   */
  long journalSequenceAfter(int partition, long timestamp);

  /** The number of journal partitions. */
  int partitionCount();

  /**
   * The history horizon of {@code partition}: every record with a commit timestamp above it is
   * retained, and {@link #readAt} below it fails with {@code history_truncated}.
   */
  long historyHorizon(int partition);

  /** The state of an entity as of a commit timestamp (MVCC read). */
  EntityState readAt(EntityId entity, long timestamp);

  /**
   * The entity's latest durable state read from the disk, bypassing the object cache and
   * partition ownership: for a node of several on a shared store ({@link
   * PartitionOwnership#ACQUIRED}) reading what every node must agree on (the types' definitions),
   * whoever hosts it. It sees every commit durable before the call, and may miss one in flight on
   * its owner; it caches nothing. Damage answers {@code corrupt_data}, never an older state.
   */
  EntityState readLatestDurable(EntityId entity);

  /**
   * Pins the history at {@code timestamp}: until the snapshot is closed, truncation keeps every
   * version at or after it readable with {@link #readAt}, and the local replication log's entries
   * above it ({@link ReplicationLog#truncate} keeps them, whatever it is asked).
   */
  Snapshot pinSnapshot(long timestamp);

  /** The greatest commit timestamp issued so far; reads at it see every acknowledged commit. */
  long currentTimestamp();

  /**
   * The replication log: local commits' entries (when the settings turn it on for a named data
   * centre) and entries received from other data centres.
   */
  ReplicationLog replicationLog();

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

  /** Where commits' time goes on the partitions' writers, since the store opened. */
  WriterTimings writerTimings();

  /**
   * Where to report failures and damage as they happen; a store that already failed reports it at
   * once. Replaces the previous listener.
   */
  void setEvents(StorageEvents events);

  /**
   * Runs a checkpoint round and truncation on every partition now (every owned one, under {@link
   * PartitionOwnership#ACQUIRED}), and waits for them.
   */
  void checkpointNow();

  // ------------------------------------------------------- partition ownership (several nodes)

  /**
   * Takes {@code partition} over for this node ({@link PartitionOwnership#ACQUIRED} only) and
   * waits until it is served: makes this node its owner under a new owner epoch ({@link
   * KeyValueDisk#acquirePartition}, which waits for a batch of the previous owner in flight and
   * fences every later one), then recovers the partition from the disk as the previous owner left
   * it (journal tail, checkpoint rounds, history horizon, an interrupted truncation; the node's
   * clock advanced past its greatest commit timestamp and past the transaction ids of its prepared
   * parts and their decisions, so this node's commits to it are ordered after every earlier one),
   * drops every cached state of its entities (another node may have written them since this node
   * last owned it) and starts its writer, which fences every batch it writes with the epoch.
   * Blocking (disk reads, and on a shared database round trips): call it off any thread the store
   * completes futures on, e.g. from the partition host's start through a future on another thread.
   *
   * <p>Acquiring a partition this node owns already (the disk still names this node and the
   * acquisition's epoch) returns its current acquisition's report, read again; one whose
   * acquisition was fenced, whether its writer noticed or not, is first released (its cached
   * states dropped) and acquired anew. The report's two-phase-commit
   * state is for the caller to resolve ({@link AcquiredPartition}).
   *
   * @throws IllegalStateException under {@link PartitionOwnership#ALL}, or on a writer thread
   * @throws dev.troupe.model.TroupeException {@code unavailable} if the store is closed or failed,
   *     or the disk cannot acquire or recover the partition; {@code not_owner} if another node
   *     acquired it while this one recovered it (nothing is owned then, either way)
   */
  AcquiredPartition acquirePartition(int partition);

  /**
   * Gives {@code partition} up ({@link PartitionOwnership#ACQUIRED} only) and waits until this
   * node writes nothing more to it: refuses every later commit, read and prepare of its entities
   * with {@code not_owner}, lets the writer finish what was admitted before (those commits complete
   * as usual: durable and acknowledged, or refused with {@code not_owner} by a fence), stops the
   * writer and drops the cached states of its entities. Does not touch the owner epoch: the next
   * owner's acquisition fences whatever could still be in flight. A partition not owned is left
   * as it is. Blocking; not on a writer thread.
   */
  void releasePartition(int partition);

  /**
   * Whether this node writes {@code partition} now: always under {@link PartitionOwnership#ALL};
   * under {@link PartitionOwnership#ACQUIRED}, between its acquisition and its release or fence.
   */
  boolean ownsPartition(int partition);

  /** The partitions {@link #ownsPartition owned}, ascending. */
  List<Integer> ownedPartitions();

  // ------------------------------------------------- the coordinator fence (several nodes)

  /**
   * The owner epoch of this node's coordinator partition ({@link CoordinatorPartitions}), acquired
   * when the store opened ({@link PartitionOwnership#ACQUIRED} only). Every decision record this
   * node writes ({@link DurableStore#persistDecision}) is fenced with it: once another node {@link
   * #endCoordinator ended} this node's coordinators, a decision write is refused ({@code
   * unavailable}, nothing written: the transaction is not committed) instead of written.
   *
   * @throws IllegalStateException under {@link PartitionOwnership#ALL}
   */
  long coordinatorEpoch();

  /**
   * Ends the coordinators of the incarnation of node {@code nodeId} that acquired its coordinator
   * partition under {@code epoch} (a member the cluster removed; its epoch is in its member roles):
   * acquires that partition for this node under a new epoch, durably, only if its epoch is still
   * {@code epoch}, and returns the new one; returns 0 and changes nothing if it is not (another
   * node ended that incarnation already, or the node restarted and its new incarnation acquired
   * its partition again, which fenced the old one itself). Once it returns, either way, no decision
   * record of that incarnation can be written any more (one in flight was written before, and is
   * visible to {@link #decisionRecorded}, or is refused), so whether one of its transactions
   * committed is exactly whether its decision record exists, and any node may answer its
   * participants in doubt: committed if recorded, else aborted (presumed abort). Conditional so
   * that every survivor may call it, late or not, and never ends a restarted incarnation.
   * Blocking ({@link PartitionOwnership#ACQUIRED} only).
   *
   * @throws IllegalStateException under {@link PartitionOwnership#ALL}
   * @throws IllegalArgumentException for this node's own id
   * @throws dev.troupe.model.TroupeException {@code unavailable} if the disk cannot do it
   */
  long endCoordinator(int nodeId, long epoch);

  /**
   * Whether node {@code nodeId}'s coordinators are ended: another node owns its coordinator
   * partition now ({@link #endCoordinator}). Reads the disk each time and must be called after
   * the question it answers arrived (so that an incarnation that coordinated the transaction in
   * question had acquired its coordinator partition before this read); then read {@link
   * #decisionRecorded} after it. Under {@link PartitionOwnership#ALL} (the only node of its store)
   * true for every other node id, false for this node's.
   *
   * @throws dev.troupe.model.TroupeException {@code unavailable} if the disk cannot be read
   */
  boolean coordinatorEnded(int nodeId);

  @Override
  void close();

  /** A pinned read timestamp; close it to let truncation proceed. */
  interface Snapshot extends AutoCloseable {
    long timestamp();

    @Override
    void close();
  }
}
