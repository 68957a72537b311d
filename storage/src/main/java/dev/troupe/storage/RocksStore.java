package dev.troupe.storage;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.stats.CacheStats;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityLocator;
import dev.troupe.model.EntityState;
import dev.troupe.model.SmallPersistentMap;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.Operation;
import dev.troupe.model.SingleNodeLocator;
import dev.troupe.model.TroupeException;
import dev.troupe.model.time.Clock;
import dev.troupe.model.time.HybridLogicalClock;
import dev.troupe.model.time.TransactionIds;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.LongSupplier;

/**
 * The embedded storage engine: a partitioned operation journal in RocksDB with a per-object index,
 * a Caffeine object cache, object checkpoints, checkpoint rounds and journal truncation
 * (antidote-cache.txt §2–3; DESIGN.md "Storage engine").
 *
 * <p><b>Layout.</b> One RocksDB database, column families {@code journal} (partition, sequence →
 * {@link TransactionRecord}), {@code index} (entity, commit timestamp, partition, sequence → empty),
 * {@code checkpoints} (entity, version → {@link EntityState}), {@code meta} (per partition: last
 * completed checkpoint round, history horizon, completed rounds above it; the partition count; the
 * clock ceiling; the replication log's received and applied vectors), {@code transactions}
 * (two-phase commit state, idempotency records) and {@code replication} (the replication log,
 * {@link DiskReplicationLog}). Key
 * layouts in {@link Keys}, value formats in {@link Codec}. The engine reaches the database only
 * through {@link KeyValueDisk} (RocksDB's batches, snapshots, bounded iterators and write-ahead-log
 * contract): {@link RocksDisk} in production, {@link MemoryDisk} (simulated power loss) in the
 * simulator and tests.
 *
 * <p><b>Commits.</b> An entity belongs to one partition (MurmurHash3 of its bytes). Each partition
 * has one writer thread ({@link Partition}) doing group commit: it drains up to
 * {@code groupCommitMaxRecords} queued commits, gives each a commit timestamp from the node-wide
 * {@link HybridLogicalClock} and the next sequence, writes journal and index entries (and due object
 * checkpoints) in one write batch, synced under {@link Durability#SYNC}, applies the records to the
 * object cache and only then completes the futures, in order. Encoding happens on the caller's
 * thread (the writer only patches the timestamp and checksum). A failed write fails its futures
 * with {@link OutcomeUnknownException} and fails the whole store: nothing is acknowledged after it.
 *
 * <p><b>Cache coherence.</b> The cache holds the latest committed state of an entity, as a {@link
 * CachedState}: encoded when loaded or checkpointed by a round, decoded once a commit was applied
 * to it (issue 20, memory; a form change keeps the version and the state). Loads
 * ({@code cache.get(entity, loader)}) materialize from a RocksDB snapshot inside Caffeine's atomic
 * per-key computation (taking the newest checkpoint's bytes as they are when no record follows it:
 * {@link Materializer#latest}; the same snapshot, so the same coherence). After each batch is written the writer runs {@code
 * asMap().compute(entity, (k, s) -> s == null ? null : s.version() < ts ? s.apply(...) : s)}.
 * Deviation from the brief: {@code computeIfPresent} is not used because Caffeine's has a lock-free
 * fast path that returns without waiting when the key is being loaded, so a load from a snapshot
 * taken before the batch could be installed afterwards and stay stale. {@code compute} goes through
 * {@code ConcurrentHashMap.compute} and waits for the in-progress load; the version check makes the
 * apply idempotent when the load already saw the batch. Hence every visible cache entry includes every
 * written batch once the writer has passed it, and {@link #read} never returns a state older than an
 * acknowledged commit.
 *
 * <p><b>Visibility of timestamps.</b> A record's timestamp is assigned before it is written, so a
 * read at T could miss a record with timestamp at or below T still in flight, and a second read
 * would see it. Each partition publishes a visibility floor (a lower bound of its in-flight
 * timestamps); {@link #readAt} waits while T is at or above it. With timestamps strictly increasing
 * and T at most {@link #currentTimestamp()}, later commits get timestamps above T, so readAt is
 * repeatable. A T above the current timestamp is rejected (invalid_request): its history is not
 * decided yet.
 *
 * <p><b>Materialization</b> ({@link Materializer}): the newest checkpoint of the entity at or before
 * T, then the entity's index entries in (checkpoint, T], the journal records by multiGet, applied in
 * commit order.
 *
 * <p><b>Checkpoints.</b> (a) Object checkpoints: once an entity had {@code
 * checkpointEveryOperations} operations since its last one, the writer adds its new state to the
 * commit batch. (b) Rounds per partition, triggered by {@code checkpointJournalRecords} records or
 * {@code checkpointIntervalMillis} since the last round: round r starts at S_r (next sequence) with
 * frontier F_r (timestamp of the last record), checkpoints every entity written in [S_(r-1), S_r) at
 * its state as of F_r, then records "completed (S_r, F_r)" in meta. Checkpoints are keyed by the
 * version of the state they hold (deviation from "at F_r": the same state, but a round never creates
 * a second copy of an unchanged object and every checkpoint key is a commit timestamp of its entity).
 *
 * <p><b>History horizon and truncation.</b> The retention bound is R = min(pinned snapshot
 * timestamps, HLC(now - historyRetentionMillis) - 1), the minus one so that every version committed
 * in the last {@code historyRetentionMillis} stays readable. A partition truncates at the newest
 * completed round t with F_t ≤ R: it publishes H = F_t as its <em>history horizon</em> (persisted
 * before any deletion), deletes journal records with sequence below S_t with their index entries,
 * and for each entity of those records deletes the checkpoints older than its newest checkpoint at
 * or before F_t. {@code readAt(e, T)} fails with history_truncated exactly when T < H of e's
 * partition (H = 0 before the first truncation: all history is kept).
 *
 * <p><b>Why reads at T ≥ H stay exact.</b> Claim (by induction over rounds, see {@link Partition}):
 * after round t completed, every entity e with a record below S_t has a checkpoint at or before F_t
 * whose state is e's state at F_t, namely its newest one there; truncation keeps it. Let c be the
 * newest retained checkpoint of e at or before T. If e has records below S_t, c is at or after that
 * checkpoint, e has no records in (c, F_t], and every record of e above F_t has sequence ≥ S_t
 * (sequence order = timestamp order), so all records in (c, T] are retained. If e has no record below
 * S_t, nothing of e was deleted. Either way the materialization at T applies exactly the records of e
 * in (c, T] to the exact state at c. Pins: pinning and choosing R take the same lock, and a pin below
 * a published horizon is refused, so H ≤ every pinned timestamp. Readers take a RocksDB snapshot
 * before checking H, and H is published before deleting, so a reader that passed the check sees the
 * data as it was before the deletions.
 *
 * <p><b>Maintenance concurrency.</b> Rounds and truncation run on the partition's writer thread
 * between group commits, in slices (256 objects, 1024 records), so they never race with that
 * partition's writes and commits keep flowing. Their writes are not synced: RocksDB recovers a
 * prefix of its write-ahead log, so a round is never recorded complete without its checkpoints, and
 * a deletion is never durable without the horizon that allows it. Truncation and the post-recovery
 * scan yield to cold reads ({@link MaintenancePacing}, {@code maintenanceYieldMillis}): while a
 * read waits for storage, one such slice runs at a time across the partitions, with a pause after
 * it; what they delete and when that is safe do not change.
 *
 * <p><b>Decisions without a sync of their own</b> (issue 20, {@link
 * #persistDecisionBeforeLocalCommits}; under ALL, on a disk that crashes only with this process,
 * {@link KeyValueDisk#crashesOnlyWithThisProcess}). Invariant: a participant's commit of a
 * transaction is durable only if its decision is. It holds because such a decision's batch is
 * written (its future completes) before any participant is told, every participant's {@link
 * #commitPrepared} is a synced batch of this same database, and a crash keeps a prefix of the
 * written batches that includes every synced one. Its replication log entry is held back from
 * {@link DiskReplicationLog#localSafeTimestamp} until a later sync ({@link
 * DiskReplicationLog#writtenUnsynced}). Recovery is unchanged: a decision a crash lost had no
 * durable part, so its prepared parts are aborted.
 *
 * <p><b>Prepared records without a sync of their own</b> (issue 20, {@link #prepare}; under ALL,
 * on such a disk, and for transactions this node coordinates only). Invariant: a decision is
 * durable only if every prepared record written before it on this database is. It holds for the
 * same reason: the coordinator writes the decision after every vote, each vote is sent once its
 * prepared record is written, and the decision is synced or made durable by synced commits written
 * after it. A two-participant transaction on one node so syncs only its two commit records, in one
 * wait.
 *
 * <p><b>Recovery</b> (at open, measured in {@code statistics().recoveryMillis}): per partition, the
 * last sequence and timestamp from the journal tail (or the round and horizon marks when the journal
 * is empty), the clock advanced past the greatest commit timestamp, the transaction id of every
 * prepared part and decision, and the clock ceiling (so commit timestamps and transaction ids, both
 * clock ticks, never repeat one issued before; see {@link #tick}), the completed rounds and the
 * horizon from meta, an interrupted truncation resumed, and the dirty set rebuilt by scanning the
 * journal from the last completed round's start, which the round triggers keep short. RocksDB's
 * own write-ahead-log replay is bounded by {@code setMaxTotalWalSize}.
 *
 * <p><b>Partition ownership</b> ({@link StorageSettings#partitionOwnership}). Under {@link
 * PartitionOwnership#ALL} (a single node) everything above holds as written and no batch is
 * fenced. Under {@link PartitionOwnership#ACQUIRED} (one node of several on a shared disk) open
 * recovers only what is node-wide (the partition count, this node's own clock ceiling, kept under
 * {@link Keys#metaClockCeiling} so that the nodes' ceilings never collide, the replication log's
 * vectors) and owns no partition; each partition is recovered, as above, when it is acquired, and
 * its writer fences every batch with the owner epoch of that acquisition ({@link
 * AcquiredPartitions}, {@link Partition}). Reads and commits of a partition this node does not own
 * are refused with {@code not_owner}, so a state cached before another node wrote the partition is
 * never served; decisions and expired idempotency records belong to no partition: a decision is
 * fenced by this node's coordinator partition instead ({@link CoordinatorPartitions}, acquired at
 * open; {@link #endCoordinator}), a deletion of an expired idempotency record is unfenced.
 *
 * <p><b>Threads.</b> Thread-safe. Futures complete on the partition's writer thread: continuations
 * must not block on the store ({@link #checkpointNow} and {@link #close} refuse to run there).
 * Under {@link Execution#STEPPED} there are no writer threads: each writer pass runs on the thread
 * that calls {@link #runPendingWork} (or a blocking call that needs it), which is then the writer
 * for the refusals above; the store is driven by one thread at a time.
 */
public final class RocksStore implements Store {

  /** Who runs the partitions' writers. */
  public enum Execution {
    /**
     * Production: one writer thread per partition, and under {@link Durability#ASYNC} a thread
     * that syncs the write-ahead log every {@code asyncFlushIntervalMillis}.
     */
    THREADS,
    /**
     * Deterministic (the simulator, tests): no thread is started and nothing happens until the
     * caller drives it with {@link #runPendingWork} and, under {@link Durability#ASYNC}, {@link
     * #flushWriteAheadLog}. Blocking calls ({@link #checkpointNow}, {@link
     * #resolveInDoubtTransactions}, {@link #close}) run the pending work on the calling thread
     * until what they wait for is done. Time comes only from the injected physical clock and the
     * engine draws no random numbers, with one exception outside its control: the object cache
     * (Caffeine) occasionally admits an entry at random, which changes which states stay cached
     * (so whether a read materializes), never what a read returns. One thread at a time.
     */
    STEPPED
  }

  final StorageSettings settings;
  /**
   * The node's clock (the {@link Clock} port), injected: the store issues every timestamp from it
   * and keeps it past everything durable (recovery) and below the durable ceiling ({@link #tick}).
   */
  final Clock clock;
  /** Every timestamp issued is below it, and it is durable (meta) before one reaches it. */
  private volatile long clockCeiling;
  private final Object ceilingLock = new Object();
  /** Raises the clock ceiling ahead of the clock ({@link #tick}); null when stepped. */
  private final java.util.concurrent.ExecutorService ceilingRaiser;
  /** Whether a raise ahead is queued or running on {@link #ceilingRaiser}. */
  private final AtomicBoolean ceilingRaiseQueued = new AtomicBoolean();
  /** What recovery read of two-phase-commit state, until in-doubt resolution consumes it. */
  private volatile TransactionState recoveredTransactionState;
  final KeyValueDisk disk;
  /** Whether commit batches are synced ({@link Durability#SYNC}); maintenance never is. */
  final boolean syncCommits;
  final Materializer materializer;
  /** When truncation and the post-recovery scan yield to cold reads (issue 20). */
  final MaintenancePacing maintenancePacing;
  /** Where commits' time goes on the partitions' writers ({@link #writerTimings()}). */
  final WriterTimings writerTimings = new WriterTimings();

  final LongAdder commits = new LongAdder();
  final LongAdder groupCommits = new LongAdder();
  final LongAdder checkpointRounds = new LongAdder();
  final LongAdder objectCheckpoints = new LongAdder();
  final LongAdder truncatedRecords = new LongAdder();
  /**
   * Cache loads given the newest checkpoint's bytes (no record after it: {@link
   * Materializer#latest}), for tests; the entry is made of them without decoding when plain.
   */
  final LongAdder loadsFromCheckpointBytes = new LongAdder();
  /** Object-cache hits of {@link #readCachedIfPresent}, which Caffeine's statistics do not see. */
  private final LongAdder hitsOutsideStatistics = new LongAdder();
  volatile long lastCheckpointMillis;

  private final Execution execution;
  /**
   * Latest committed states with their estimated weights. The weight travels with the state so
   * that applying a commit re-weighs only the keys it touched (an entity with many keys would
   * otherwise be re-weighed whole on every commit).
   */
  private final Cache<EntityId, CachedState> cache;

  /**
   * The partitions, one per number: replaced whole (copy on write) when an acquisition or a
   * release replaces one (ACQUIRED), never changed in place, so a reader of the array sees a
   * consistent set.
   */
  private volatile Partition[] partitions;
  private final Object partitionsLock = new Object();
  /** Acquisition, release and unfenced writes (ACQUIRED); null under ALL. */
  private final AcquiredPartitions acquired;
  /** The replication log; its local entries are written by the partitions' group commits. */
  final DiskReplicationLog replicationLog;
  /** Entity → partition (and node): this node's placement, the partitions' count from settings. */
  private final EntityLocator locator;
  /** Guards {@link #pins} and the choice and publication of history horizons. */
  private final Object pinLock = new Object();
  private final TreeMap<Long, Integer> pins = new TreeMap<>();
  /** Read side: every API call using the database; write side: close. */
  private final ReentrantReadWriteLock closeLock = new ReentrantReadWriteLock();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private final LongAdder corruptionsDetected = new LongAdder();
  private volatile String lastCorruption;
  private volatile StorageEvents events = StorageEvents.NONE;
  private boolean closed;
  private ScheduledExecutorService walFlusher;
  private long recoveryMillis;
  /** Statistics only: entities the listing index was built for at this open (0: built before). */
  private long listingEntitiesBuilt;

  private RocksStore(
      StorageSettings settings,
      Clock clock,
      KeyValueDisk disk,
      Execution execution) {
    this.settings = settings;
    this.execution = execution;
    this.clock = clock;
    this.disk = disk;
    this.syncCommits = settings.durability() == Durability.SYNC;
    this.materializer = new Materializer(disk);
    this.maintenancePacing = new MaintenancePacing(settings.maintenanceYieldMillis());
    Caffeine<EntityId, CachedState> builder =
        Caffeine.newBuilder()
            .maximumWeight(settings.cacheMaxWeightBytes())
            .weigher((EntityId entity, CachedState cached) -> cached.weight())
            .recordStats();
    if (execution == Execution.STEPPED) {
      // Eviction and other maintenance on the calling thread, not on the common pool. Only when
      // stepped: in production it would put that work on the writers and readers.
      builder = builder.executor(Runnable::run);
    }
    this.cache = builder.build();
    Partition[] initial = new Partition[settings.partitions()];
    this.locator = new SingleNodeLocator(settings.partitions(), settings.nodeId());
    for (int i = 0; i < initial.length; i++) {
      initial[i] = new Partition(this, i, execution == Execution.THREADS, 0);
    }
    this.partitions = initial;
    this.acquired = settings.partitionOwnership() == PartitionOwnership.ACQUIRED
        ? new AcquiredPartitions(this, execution == Execution.THREADS, initial.length) : null;
    this.replicationLog = new DiskReplicationLog(this);
    this.ceilingRaiser = execution == Execution.THREADS
        ? Executors.newSingleThreadExecutor(runnable -> {
          Thread thread = new Thread(runnable, "troupe-storage-clock-ceiling");
          thread.setDaemon(true);
          return thread;
        })
        : null;
  }

  /**
   * Opens (creating if needed) the store in {@code settings.directory()} on RocksDB, recovers it
   * and starts its writer threads.
   *
   * @param physicalMillis the physical clock: commit timestamps, round intervals and history
   *     retention are all derived from it (tests inject a fake one)
   */
  public static RocksStore open(StorageSettings settings, LongSupplier physicalMillis) {
    Objects.requireNonNull(settings, "settings");
    return open(settings, defaultClock(settings, physicalMillis));
  }

  /**
   * As {@link #open(StorageSettings, LongSupplier)}, on an injected clock.
   *
   * @param clock the node's clock: its node id must be {@code settings.nodeId()}; the store starts
   *     it past everything it recovers and its own clock ceiling, and owns it from here on (nothing
   *     else may tick it, or the ceiling would not bound what it issued)
   */
  public static RocksStore open(StorageSettings settings, Clock clock) {
    validate(settings);
    Objects.requireNonNull(settings.directory(), "settings.directory");
    Objects.requireNonNull(clock, "clock");
    return open(settings, clock, RocksDisk.open(settings.directory(), settings.rocksDisk()),
        Execution.THREADS);
  }

  /**
   * The clock {@link #open(StorageSettings, LongSupplier)} builds: a {@link HybridLogicalClock}
   * over {@code physicalMillis} for node {@code settings.nodeId()}.
   */
  public static Clock defaultClock(StorageSettings settings, LongSupplier physicalMillis) {
    Objects.requireNonNull(physicalMillis, "physicalMillis");
    return new HybridLogicalClock(physicalMillis, settings.nodeId());
  }

  /**
   * Opens the store on {@code disk} and recovers it. The store owns the disk from here on: it
   * closes it when it is closed or when recovery fails.
   *
   * @param physicalMillis the physical clock: commit timestamps, round intervals and history
   *     retention are all derived from it
   * @param execution who runs the writers; {@link Execution#STEPPED} starts no thread
   */
  public static RocksStore open(
      StorageSettings settings, LongSupplier physicalMillis, KeyValueDisk disk,
      Execution execution) {
    Clock clock;
    try {
      Objects.requireNonNull(settings, "settings");
      clock = defaultClock(settings, physicalMillis);
    } catch (RuntimeException e) {
      if (disk != null) {
        disk.close();
      }
      throw e;
    }
    return open(settings, clock, disk, execution);
  }

  /**
   * Opens the store on {@code disk} with an injected clock and recovers it (see {@link
   * #open(StorageSettings, Clock)} for what the store does with the clock).
   */
  public static RocksStore open(
      StorageSettings settings, Clock clock, KeyValueDisk disk, Execution execution) {
    Objects.requireNonNull(disk, "disk");
    try {
      validate(settings);
      Objects.requireNonNull(clock, "clock");
      require(clock.nodeId() == settings.nodeId(), "the clock's node id is settings.nodeId");
      Objects.requireNonNull(execution, "execution");
    } catch (RuntimeException e) {
      disk.close();
      throw e;
    }
    // Statistics only (recoveryMillis): never read by the engine's logic.
    long started = System.nanoTime();
    RocksStore store = new RocksStore(settings, clock, disk, execution);
    try {
      store.recover();
    } catch (DiskException e) {
      store.closeResources();
      throw new UncheckedIOException(
          new IOException("cannot recover the store in " + settings.directory(), e));
    } catch (RuntimeException e) {
      store.closeResources();
      throw e;
    }
    store.recoveryMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    store.start();
    return store;
  }

  private static void validate(StorageSettings settings) {
    Objects.requireNonNull(settings, "settings");
    Objects.requireNonNull(settings.durability(), "settings.durability");
    Objects.requireNonNull(settings.partitionOwnership(), "settings.partitionOwnership");
    require(settings.partitions() >= 1 && settings.partitions() <= 0xFFFF, "partitions in 1..65535");
    require(settings.groupCommitMaxRecords() >= 1, "groupCommitMaxRecords >= 1");
    require(settings.groupCommitQueueLimit() >= 1, "groupCommitQueueLimit >= 1");
    require(settings.asyncFlushIntervalMillis() >= 1, "asyncFlushIntervalMillis >= 1");
    require(settings.cacheMaxWeightBytes() >= 0, "cacheMaxWeightBytes >= 0");
    require(settings.checkpointEveryOperations() >= 1, "checkpointEveryOperations >= 1");
    require(settings.checkpointBytesPerOperation() >= 1, "checkpointBytesPerOperation >= 1");
    require(settings.checkpointIntervalMillis() >= 1, "checkpointIntervalMillis >= 1");
    require(settings.checkpointJournalRecords() >= 1, "checkpointJournalRecords >= 1");
    require(settings.historyRetentionMillis() >= 0, "historyRetentionMillis >= 0");
    require(settings.clockCeilingMillis() >= 1, "clockCeilingMillis >= 1");
    require(TransactionIds.isValidNodeId(settings.nodeId()), "nodeId in 0..63");
  }

  private static void require(boolean condition, String what) {
    if (!condition) {
      throw new IllegalArgumentException("invalid storage settings: " + what);
    }
  }

  private void recover() throws DiskException {
    byte[] stored = disk.get(KeyValueDisk.Column.META, Keys.META_PARTITIONS);
    if (stored == null) {
      try (KeyValueDisk.Batch batch = disk.newBatch()) {
        batch.put(KeyValueDisk.Column.META, Keys.META_PARTITIONS,
            Codec.encodePosition(new JournalPosition(settings.partitions(), 0)));
        // A new store: its listing index is complete from the first commit on.
        ListingIndex.markBuilt(batch);
        disk.write(batch, syncCommits);
      }
    } else {
      long created = Codec.decodePosition(stored).sequence();
      if (created != settings.partitions()) {
        throw new IllegalStateException(
            "the store in " + settings.directory() + " was created with " + created
                + " partitions; it cannot be opened with " + settings.partitions()
                + " (entities would move between partitions)");
      }
    }
    // Before any writer of this node runs; on a store written before the listing index existed,
    // built once from the entities it holds (ListingIndex.buildIfAbsent).
    listingEntitiesBuilt = ListingIndex.buildIfAbsent(disk, this::entities,
        settings.groupCommitMaxRecords());
    if (acquired != null) {
      recoverNodeWide();
      acquired.acquireCoordinatorPartition();
      return;
    }
    for (Partition partition : partitions) {
      partition.recover();
    }
    // Two-phase commit state carries transaction ids the journal may not: a transaction ticked
    // its id after the last commit, prepared, and the node crashed. Past them too, or a new
    // transaction could get the id of one still in doubt (found by the simulator: after a
    // backward clock jump, an in-doubt part was committed under a timestamp below its own id and
    // a later transaction reused that id).
    TransactionState state = readTransactionState();
    state.prepared().forEach(part -> clock.advancePast(part.transactionId()));
    state.decided().forEach(decision -> clock.advancePast(decision.transactionId()));
    replicationLog.recover();
    // Kept for resolveInDoubtTransactions, which runs next, so the column is read once.
    recoveredTransactionState = state;
    // And past everything the last incarnation may have issued without recording it (ids of
    // transactions that left no trace, timestamps handed to clients).
    byte[] ceiling = disk.get(KeyValueDisk.Column.META, Keys.META_CLOCK_CEILING);
    if (ceiling != null) {
      clock.advancePast(Codec.decodePosition(ceiling).timestamp() - 1);
    }
  }

  /**
   * Recovery of a node that owns no partition yet (ACQUIRED): the clock past this node's own
   * ceiling (and a single node's, in a store that was one: harmless, it only moves the clock
   * forward) and past every transaction id of two-phase-commit state (an id this node issued may
   * be among them); the partitions are recovered as they are acquired.
   */
  private void recoverNodeWide() throws DiskException {
    TransactionState state = readTransactionState();
    state.prepared().forEach(part -> clock.advancePast(part.transactionId()));
    state.decided().forEach(decision -> clock.advancePast(decision.transactionId()));
    replicationLog.recover();
    for (byte[] key : List.of(Keys.META_CLOCK_CEILING, Keys.metaClockCeiling(settings.nodeId()))) {
      byte[] ceiling = disk.get(KeyValueDisk.Column.META, key);
      if (ceiling != null) {
        clock.advancePast(Codec.decodePosition(ceiling).timestamp() - 1);
      }
    }
  }

  /**
   * A timestamp from the node's clock, below the durable clock ceiling: reaching the ceiling first
   * raises it to {@code clockCeilingMillis} past physical time with one synced write (about once
   * per that many milliseconds), so a restart, which starts the clock at the ceiling, never issues
   * a timestamp twice. Any thread.
   */
  long tick() {
    long timestamp = clock.tick();
    long ceiling = clockCeiling;
    if (timestamp >= ceiling) {
      raiseClockCeiling(timestamp, false);
    } else if (ceilingRaiser != null
        && timestamp >= ceiling - HybridLogicalClock.fromMillis(settings.clockCeilingMillis() / 2)
        && ceilingRaiseQueued.compareAndSet(false, true)) {
      raiseClockCeilingAhead(timestamp);
    }
    return timestamp;
  }

  /**
   * Raises the ceiling on its own thread once the clock is within half the window of it, so that
   * no caller waits for the synced write. Reaching the ceiling made the ticking thread write it
   * (and every thread ticking meanwhile wait for it): once a second a partition writer, or the
   * planned sequencer with its lock held, stalled for a synced database write; on PostgreSQL
   * under load 20-480 ms (issue 18, `bench bank --nodes 3`). Only when the writes take longer
   * than half the window does a caller still reach the ceiling and wait.
   */
  private void raiseClockCeilingAhead(long timestamp) {
    try {
      ceilingRaiser.execute(() -> {
        try {
          raiseClockCeiling(timestamp, true);
        } catch (TroupeException failed) {
          // The store failed (recorded by raiseClockCeiling); the next tick at the ceiling says so.
        } finally {
          ceilingRaiseQueued.set(false);
        }
      });
    } catch (java.util.concurrent.RejectedExecutionException closing) {
      ceilingRaiseQueued.set(false);
    }
  }

  /**
   * Writes a new ceiling above {@code timestamp}. The writers may write until close has drained
   * them; any other thread holds the close lock, as every API call does, so that it never writes
   * to a closed disk. Once the store is closed or failed nothing more becomes durable under a new
   * id, so the ceiling stays (the journal's and the prepared records' own timestamps still bound
   * the next clock).
   */
  private void raiseClockCeiling(long timestamp, boolean ahead) {
    boolean writer = onWriterThread();
    if (!writer) {
      closeLock.readLock().lock();
    }
    try {
      synchronized (ceilingLock) {
        long needed = ahead
            ? timestamp + HybridLogicalClock.fromMillis(settings.clockCeilingMillis() / 2)
            : timestamp;
        if (needed < clockCeiling || failure.get() != null || (!writer && closed)) {
          return; // raised meanwhile (or nothing more becomes durable)
        }
        // From physical time, not from the timestamp: after a restart the clock starts at the old
        // ceiling, and raising from there would push it further ahead with every restart.
        long raised = Math.max(timestamp + 1,
            HybridLogicalClock.fromMillis(nowMillis() + settings.clockCeilingMillis()));
        try (KeyValueDisk.Batch batch = disk.newBatch()) {
          batch.put(KeyValueDisk.Column.META,
              acquired == null ? Keys.META_CLOCK_CEILING : Keys.metaClockCeiling(settings.nodeId()),
              Codec.encodePosition(new JournalPosition(0, raised)));
          disk.write(batch, true);
        } catch (DiskException e) {
          // Nothing is acknowledged after this: a timestamp above the ceiling stays harmless.
          fail(e);
          throw unavailable(e);
        }
        clockCeiling = raised;
      }
    } finally {
      if (!writer) {
        closeLock.readLock().unlock();
      }
    }
  }

  /** The prepared parts and decisions a crash left (the transactions column family, whole). */
  private record TransactionState(
      List<PreparedTransaction> prepared, List<DecidedTransaction> decided) {}

  private TransactionState readTransactionState() {
    List<PreparedTransaction> prepared = new ArrayList<>();
    List<DecidedTransaction> decided = new ArrayList<>();
    try (KeyValueDisk.Cursor iterator = disk.cursor(KeyValueDisk.Column.TRANSACTIONS)) {
      for (iterator.seekToFirst(); iterator.isValid(); iterator.next()) {
        byte[] key = iterator.key();
        switch (key[0]) {
          case Keys.PREPARED_TAG -> prepared.add(Codec.decodePrepared(iterator.value()));
          case Keys.DECIDED_TAG -> decided.add(Codec.decodeDecided(iterator.value()));
          case Keys.IDEMPOTENCY_TAG -> { } // not two-phase-commit state: read on demand
          default -> throw new CorruptDataException(
              "unknown key tag " + key[0] + " in the transactions column family");
        }
      }
    }
    return new TransactionState(prepared, decided);
  }

  private void start() {
    if (acquired == null) {
      for (Partition partition : partitions) {
        partition.start(); // stepped: only marks it started
      }
    }
    if (execution == Execution.STEPPED) {
      return;
    }
    if (settings.durability() == Durability.ASYNC) {
      walFlusher =
          Executors.newSingleThreadScheduledExecutor(
              runnable -> {
                Thread thread = new Thread(runnable, "troupe-storage-wal-flush");
                thread.setDaemon(true);
                return thread;
              });
      walFlusher.scheduleWithFixedDelay(
          this::flushWriteAheadLog,
          settings.asyncFlushIntervalMillis(),
          settings.asyncFlushIntervalMillis(),
          TimeUnit.MILLISECONDS);
    }
  }

  /**
   * Syncs the write-ahead log: every commit acknowledged so far becomes durable. Runs every {@code
   * asyncFlushIntervalMillis} on its own thread under {@link Execution#THREADS} and {@link
   * Durability#ASYNC}; a {@link Execution#STEPPED} store's driver calls it on its own schedule
   * (under {@link Durability#SYNC} every commit is durable already and it changes nothing). A no-op
   * once the store failed or closed.
   */
  public void flushWriteAheadLog() {
    closeLock.readLock().lock();
    try {
      if (closed || failure.get() != null) {
        return;
      }
      // Taken before the sync: every local replication log entry at or below it is then durable.
      long written = replicationLog.writtenSafeTimestamp();
      long unsyncedRegistered = replicationLog.unsyncedRegistrations();
      disk.flushWriteAheadLog(true);
      replicationLog.synced(written);
      replicationLog.syncedThrough(unsyncedRegistered);
    } catch (DiskException e) {
      // Acknowledged ASYNC commits may not be durable: stop acknowledging more.
      fail(e);
    } finally {
      closeLock.readLock().unlock();
    }
  }

  /**
   * Runs, on the calling thread, one pass of every partition's writer loop: its queued tasks (at
   * most {@code groupCommitMaxRecords}) as one group commit, completing their futures in order (so
   * their continuations run here), then one slice of maintenance (a checkpoint round, the scan
   * after recovery, truncation). Returns whether any partition did anything: a driver calls it
   * until it returns false to let the store settle. {@link Execution#STEPPED} only; not from a
   * continuation of a future this store completes (it would run inside a pass).
   */
  public boolean runPendingWork() {
    if (execution != Execution.STEPPED) {
      throw new IllegalStateException(
          "runPendingWork drives a stepped store; this one runs its own writer threads");
    }
    refuseOnWriterThread("runPendingWork");
    boolean worked = false;
    for (Partition partition : partitions) {
      worked |= partition.step();
    }
    return worked;
  }

  /** Waits for a future a writer completes (see {@link #runUntilDone}). */
  private <T> T await(CompletableFuture<T> future) {
    runUntilDone(future);
    return future.join();
  }

  /**
   * Stepped, runs the pending work on this thread until {@code future} is done: its task is taken
   * by the next pass of its partition, so that takes a bounded number of passes. With writer
   * threads, does nothing (the caller then blocks on the future).
   */
  private void runUntilDone(CompletableFuture<?> future) {
    if (execution != Execution.STEPPED) {
      return;
    }
    while (!future.isDone()) {
      Invariants.check(runPendingWork(), "a stepped store has no work left, yet a future waits");
    }
  }

  // ------------------------------------------------------------------------------------- Store API

  @Override
  public long newTransactionId() {
    return tick();
  }

  @Override
  public CompletableFuture<Committed> commit(long transactionId, List<EntityWrite> writes) {
    return commit(transactionId, writes, null, false);
  }

  /** Idempotency records waiting for the single-turn commit of their transaction id. */
  private final java.util.concurrent.ConcurrentHashMap<Long, IdempotencyRecord> idempotentCommits =
      new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * How many attached records carry each key: asked on every keyed request, so a lookup rather
   * than a scan of {@link #idempotentCommits}.
   */
  private final java.util.concurrent.ConcurrentHashMap<String, Integer> attachedKeys =
      new java.util.concurrent.ConcurrentHashMap<>();

  @Override
  public void attachIdempotency(long transactionId, IdempotencyRecord record) {
    attachedKeys.merge(record.qualifiedKey(), 1, Integer::sum);
    IdempotencyRecord replaced = idempotentCommits.put(transactionId, record);
    if (replaced != null) {
      releaseAttachedKey(replaced.qualifiedKey());
    }
  }

  @Override
  public void detachIdempotency(long transactionId) {
    IdempotencyRecord removed = idempotentCommits.remove(transactionId);
    if (removed != null) {
      releaseAttachedKey(removed.qualifiedKey());
    }
  }

  private void releaseAttachedKey(String qualifiedKey) {
    attachedKeys.computeIfPresent(qualifiedKey, (key, count) -> count == 1 ? null : count - 1);
  }

  @Override
  public boolean idempotencyAttached(String qualifiedKey) {
    return attachedKeys.containsKey(qualifiedKey);
  }

  @Override
  public boolean decisionRecorded(long transactionId) {
    try {
      return disk.get(KeyValueDisk.Column.TRANSACTIONS, Keys.decided(transactionId)) != null;
    } catch (DiskException e) {
      throw new TroupeException(ErrorCode.UNAVAILABLE,
          "cannot read a decision record: " + e.getMessage());
    }
  }

  @Override
  public java.util.Optional<IdempotencyRecord> idempotencyRecord(String qualifiedKey) {
    try {
      byte[] value = disk.get(KeyValueDisk.Column.TRANSACTIONS, Keys.idempotency(qualifiedKey));
      return value == null ? java.util.Optional.empty()
          : java.util.Optional.of(Codec.decodeIdempotency(value));
    } catch (DiskException e) {
      throw new TroupeException(ErrorCode.UNAVAILABLE,
          "cannot read an idempotency record: " + e.getMessage());
    }
  }

  @Override
  public void recordIdempotencyAnswers(List<IdempotencyRecord> records) {
    // One unsynced batch, written by the caller's thread, outside the partition writers: through a
    // writer's group commit (synced, one more hop) an answer doubled a keyed write's latency
    // (bench ycsb --target secured). The record that says the write committed is already durable
    // with the commit; this only adds answers. Unsynced, a batch survives a process crash (the
    // write-ahead log is in the OS's buffers) and is durable with the next synced write of any
    // partition; only a power loss before that can lose it, and a retry then gets the answer
    // rebuilt from the record (docs/ARCHITECTURE.md, "Idempotent retries").
    closeLock.readLock().lock();
    try {
      if (closed || failure.get() != null) {
        throw new TroupeException(ErrorCode.UNAVAILABLE,
            "the store is closed or failed; answers are not recorded");
      }
      try (KeyValueDisk.Batch batch = disk.newBatch()) {
        for (IdempotencyRecord record : records) {
          batch.put(KeyValueDisk.Column.TRANSACTIONS, Keys.idempotency(record.qualifiedKey()),
              Codec.encodeIdempotency(record));
        }
        disk.write(batch, false);
      } catch (DiskException e) {
        throw new TroupeException(ErrorCode.UNAVAILABLE,
            "cannot record idempotency answers: " + e.getMessage());
      }
    } finally {
      closeLock.readLock().unlock();
    }
  }

  @Override
  public List<IdempotencyRecord> idempotencyRecords() {
    List<IdempotencyRecord> records = new ArrayList<>();
    byte[] start = {Keys.IDEMPOTENCY_TAG};
    try (KeyValueDisk.Cursor cursor = disk.cursor(KeyValueDisk.Column.TRANSACTIONS)) {
      for (cursor.seek(start); cursor.isValid() && cursor.key()[0] == Keys.IDEMPOTENCY_TAG;
          cursor.next()) {
        records.add(Codec.decodeIdempotency(cursor.value()));
      }
    }
    return records;
  }

  @Override
  public CompletableFuture<Void> forgetIdempotencyRecord(String qualifiedKey) {
    byte[] key = Keys.idempotency(qualifiedKey);
    if (acquired != null) {
      return acquired.forgetIdempotencyRecord(key);
    }
    return writeTransactionState(idempotencyPartition(key), 0,
        new Partition.TransactionStateChange(key, null), true);
  }

  /** Any fixed choice would do: spreads answer writes and deletions over the writers. */
  private int idempotencyPartition(byte[] key) {
    return Math.floorMod(java.util.Arrays.hashCode(key), partitions.length);
  }

  @Override
  public CompletableFuture<Committed> commitExemptFromQueueLimit(
      long transactionId, List<EntityWrite> writes) {
    return commit(transactionId, writes, null, true);
  }

  /**
   * @param stateChange a change of two-phase-commit state written atomically with the record
   * @param bypassQueueLimit the commit of a decided transaction, which must not be refused for load
   *     (the number of such commits is bounded by the open transactions)
   */
  private CompletableFuture<Committed> commit(long transactionId, List<EntityWrite> writes,
      Partition.TransactionStateChange stateChange, boolean bypassQueueLimit) {
    if (writes == null || writes.isEmpty()) {
      return CompletableFuture.failedFuture(TroupeException.invalid("a commit needs writes"));
    }
    int partitionNumber;
    byte[] encoded;
    List<Partition.EntityEffect> effects;
    try {
      int number = -1;
      Map<EntityId, List<Operation>> byEntity = new LinkedHashMap<>();
      for (EntityWrite write : writes) {
        Objects.requireNonNull(write, "write");
        int writePartition = partitionOf(write.entity());
        if (number >= 0 && writePartition != number) {
          return CompletableFuture.failedFuture(
              TroupeException.invalid(
                  "a commit's writes must all be in one partition; " + write.entity()
                      + " is in partition " + writePartition + ", not " + number));
        }
        number = writePartition;
        byEntity.computeIfAbsent(write.entity(), e -> new ArrayList<>()).addAll(write.operations());
      }
      partitionNumber = number;
      effects = new ArrayList<>(byEntity.size());
      for (Map.Entry<EntityId, List<Operation>> entry : byEntity.entrySet()) {
        effects.add(
            new Partition.EntityEffect(
                entry.getKey(), Keys.entityPrefix(entry.getKey()), List.copyOf(entry.getValue())));
      }
      // Encoded here, in parallel, rather than on the writer thread; also rejects malformed
      // operations (null fields) before they could reach, and stop, the writer.
      encoded =
          Codec.encodeRecord(
              new TransactionRecord(transactionId, 0, settings.dataCentreId(), writes));
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(
          TroupeException.invalid("malformed write: " + e.getMessage()));
    }
    closeLock.readLock().lock();
    try {
      return enqueue(partitions[partitionNumber],
          new Partition.Commit(transactionId, encoded, effects, stateChange,
              stateChange == null ? idempotentCommits.get(transactionId) : null, null, false,
              new CompletableFuture<>()),
          bypassQueueLimit);
    } finally {
      closeLock.readLock().unlock();
    }
  }

  /** Queues a commit task; the caller holds the close lock's read side. */
  private CompletableFuture<Committed> enqueue(
      Partition partition, Partition.Commit commit, boolean bypassQueueLimit) {
    if (closed) {
      return CompletableFuture.failedFuture(
          new TroupeException(ErrorCode.UNAVAILABLE, "the store is closed"));
    }
    Throwable failed = failure.get();
    if (failed != null) {
      return CompletableFuture.failedFuture(unavailable(failed));
    }
    Lock admission = admit(partition);
    if (admission == NOT_ADMITTED) {
      return CompletableFuture.failedFuture(notOwner(partition.number));
    }
    try {
      if (partition.queuedCommits.incrementAndGet() > settings.groupCommitQueueLimit()
          && !bypassQueueLimit) {
        partition.queuedCommits.decrementAndGet();
        return CompletableFuture.failedFuture(
            Partition.overloaded(partition.number, settings.groupCommitQueueLimit()));
      }
      partition.queue.add(commit);
      return commit.future();
    } finally {
      admitted(admission);
    }
  }

  /** Queues a change of two-phase-commit state alone, in the partition's order. */
  private CompletableFuture<Void> writeTransactionState(
      int number, long transactionId, Partition.TransactionStateChange change,
      boolean bypassQueueLimit) {
    return writeTransactionState(number, transactionId, change, null, bypassQueueLimit);
  }

  /** Like the above, with an idempotency record written in the same batch (or null). */
  private CompletableFuture<Void> writeTransactionState(
      int number, long transactionId, Partition.TransactionStateChange change,
      IdempotencyRecord idempotency, boolean bypassQueueLimit) {
    return writeTransactionState(number, transactionId, change, idempotency, null,
        bypassQueueLimit);
  }

  /**
   * Like the above; {@code loggedDecision}, or null, are the participants of a local transaction's
   * decision, whose replication log entry is written in the same batch.
   */
  private CompletableFuture<Void> writeTransactionState(
      int number, long transactionId, Partition.TransactionStateChange change,
      IdempotencyRecord idempotency, List<EntityId> loggedDecision, boolean bypassQueueLimit) {
    return writeTransactionState(number, transactionId, change, idempotency, loggedDecision,
        bypassQueueLimit, false);
  }

  /** Like the above; {@code syncedByLaterWrite}: see {@link Partition.Commit}. */
  private CompletableFuture<Void> writeTransactionState(
      int number, long transactionId, Partition.TransactionStateChange change,
      IdempotencyRecord idempotency, List<EntityId> loggedDecision, boolean bypassQueueLimit,
      boolean syncedByLaterWrite) {
    closeLock.readLock().lock();
    try {
      return enqueue(partitions[number],
          new Partition.Commit(transactionId, null, List.of(), change, idempotency,
              loggedDecision, syncedByLaterWrite, new CompletableFuture<>()),
          bypassQueueLimit).thenApply(committed -> null);
    } finally {
      closeLock.readLock().unlock();
    }
  }

  @Override
  public CompletableFuture<Void> prepare(PreparedTransaction part) {
    byte[] value;
    byte[] key;
    EntityId entity = part.entity();
    long transactionId = part.transactionId();
    try {
      key = preparedKey(transactionId, entity);
      value = Codec.encodePrepared(part);
    } catch (TroupeException e) {
      return CompletableFuture.failedFuture(e);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(
          TroupeException.invalid("malformed prepared operations: " + e.getMessage()));
    }
    return writeTransactionState(partitionOf(entity), transactionId,
        new Partition.TransactionStateChange(key, value), null, null, false,
        preparedRecordSyncedByLaterWrite(transactionId));
  }

  /**
   * Issue 20: whether a prepared record of {@code transactionId} needs no sync of its own: on the
   * single node of a data centre ({@link PartitionOwnership#ALL}) when this node coordinates the
   * transaction (its id is this node's, {@link TransactionIds#nodeOf}). Its decision is then
   * written to this same database after every vote, and either synced itself or made durable by
   * the participants' synced commits written after it; a crash keeps a prefix of the written
   * batches that includes every synced one, so no decision is durable without the prepared records
   * before it, and a crash that loses a prepared record loses its decision too (presumed abort). A
   * vote is sent to that coordinator only, so nothing is acknowledged on the strength of the
   * prepared record alone. Not on a disk that can crash alone ({@link
   * KeyValueDisk#crashesOnlyWithThisProcess}: a PostgreSQL server), where this process could go on
   * acting on a record the disk lost. See {@link DurableStore#prepare}.
   */
  private boolean preparedRecordSyncedByLaterWrite(long transactionId) {
    return acquired == null && TransactionIds.nodeOf(transactionId) == settings.nodeId()
        && disk.crashesOnlyWithThisProcess();
  }

  @Override
  public CompletableFuture<Committed> commitPrepared(
      long transactionId, EntityId entity, List<Operation> operations) {
    byte[] key = preparedKey(transactionId, entity);
    return commit(transactionId, List.of(new EntityWrite(entity, operations)),
        new Partition.TransactionStateChange(key, null), true);
  }

  @Override
  public void abandonPrepared(long transactionId, EntityId entity) {
    byte[] key = preparedKey(transactionId, entity);
    writeTransactionState(partitionOf(entity), transactionId,
        new Partition.TransactionStateChange(key, null), true);
  }

  @Override
  public CompletableFuture<Void> persistDecision(DecidedTransaction decision) {
    return persistDecision(decision, false);
  }

  /**
   * Issue 20: on the single node of a data centre ({@link PartitionOwnership#ALL}) a decision
   * without an idempotency record is written without a sync of its own, on a disk that crashes
   * only with this process ({@link KeyValueDisk#crashesOnlyWithThisProcess}: not a PostgreSQL
   * server, which could lose it while this node goes on committing its parts); otherwise exactly
   * {@link #persistDecision}. See {@link DurableStore#persistDecisionBeforeLocalCommits} for the
   * rule and why it is safe.
   */
  @Override
  public CompletableFuture<Void> persistDecisionBeforeLocalCommits(DecidedTransaction decision) {
    return persistDecision(decision, acquired == null && decision.idempotency() == null
        && disk.crashesOnlyWithThisProcess());
  }

  private CompletableFuture<Void> persistDecision(DecidedTransaction decision,
      boolean syncedByLaterWrite) {
    Invariants.check(!decision.participants().isEmpty(), "a decision without participants");
    if (acquired != null) {
      return acquired.persistDecision(decision);
    }
    return writeTransactionState(decisionPartition(decision), decision.transactionId(),
        new Partition.TransactionStateChange(Keys.decided(decision.transactionId()),
            Codec.encodeDecided(decision)), decision.idempotency(),
        decision.replicaApplication() ? null : decision.participants(), false,
        syncedByLaterWrite);
  }

  @Override
  public void forgetDecision(DecidedTransaction decision) {
    if (acquired != null) {
      acquired.forgetDecision(decision);
      return;
    }
    writeTransactionState(decisionPartition(decision), decision.transactionId(),
        new Partition.TransactionStateChange(Keys.decided(decision.transactionId()), null), true);
  }

  private byte[] preparedKey(long transactionId, EntityId entity) {
    return Keys.prepared(partitionOf(entity), transactionId, Keys.entityPrefix(entity));
  }

  /** A decision lives in its first participant's partition (any fixed choice would do). */
  private int decisionPartition(DecidedTransaction decision) {
    return partitionOf(decision.participants().get(0));
  }

  @Override
  public InDoubtResolution resolveInDoubtTransactions(Redo redo) {
    return resolveInDoubtTransactions(redo, transactionId -> true, entity -> true);
  }

  /**
   * As {@link #resolveInDoubtTransactions(Redo)}, on one node of several ({@link
   * InDoubtResolution#of(List, List, java.util.function.LongPredicate,
   * java.util.function.Predicate)}): a prepared part whose coordinator is on another node stays
   * prepared ({@code toAsk}, for its entity to ask that node), and a decision naming a participant
   * on another node is kept.
   */
  public InDoubtResolution resolveInDoubtTransactions(Redo redo,
      java.util.function.LongPredicate coordinatedHere,
      java.util.function.Predicate<EntityId> hostedHere) {
    if (acquired != null) {
      // Nothing is owned at open: each acquisition reports its partition's state (acquirePartition).
      return new InDoubtResolution(List.of(), List.of(), List.of());
    }
    TransactionState state = recoveredTransactionState != null
        ? recoveredTransactionState : readTransactionState();
    recoveredTransactionState = null;
    InDoubtResolution resolution =
        InDoubtResolution.of(state.prepared(), state.decided(), coordinatedHere, hostedHere);
    apply(resolution, redo, true);
    return resolution;
  }

  @Override
  public InDoubtResolution resolveAcquired(AcquiredPartition acquired, Redo redo,
      java.util.function.LongPredicate coordinatedByAnEndedIncarnation) {
    Invariants.check(this.acquired != null, "resolveAcquired on a store that owns every partition");
    InDoubtResolution resolution = acquired.resolution(coordinatedByAnEndedIncarnation,
        entity -> ownsPartition(partitionOf(entity)));
    // The report's decisions are only those of its own parts: never grounds to forget one.
    apply(resolution, redo, false);
    return resolution;
  }

  /** Commits, redoes and abandons what {@code resolution} says, waiting for every write. */
  private void apply(InDoubtResolution resolution, Redo redo, boolean forgetDecisions) {
    List<CompletableFuture<?>> writes = new ArrayList<>();
    List<PreparedTransaction> redone = new ArrayList<>();
    for (PreparedTransaction commit : resolution.toCommit()) {
      if (commit.needsRedo()) {
        redone.add(commit);
      } else {
        writes.add(commitPrepared(commit.transactionId(), commit.entity(), commit.operations()));
      }
    }
    await(CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)));
    // One at a time, in the resolution's order (per entity in arrival order): each meets the
    // state the previous one left.
    for (PreparedTransaction part : redone) {
      List<Operation> operations = redo.operations(part, read(part.entity()));
      if (operations.isEmpty()) {
        byte[] key = preparedKey(part.transactionId(), part.entity());
        await(writeTransactionState(partitionOf(part.entity()), part.transactionId(),
            new Partition.TransactionStateChange(key, null), true));
      } else {
        await(commitPrepared(part.transactionId(), part.entity(), operations));
      }
    }
    for (PreparedTransaction abort : resolution.toAbort()) {
      byte[] key = preparedKey(abort.transactionId(), abort.entity());
      writes.add(writeTransactionState(partitionOf(abort.entity()), abort.transactionId(),
          new Partition.TransactionStateChange(key, null), true));
    }
    await(CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)));
    if (!forgetDecisions) {
      return;
    }
    for (DecidedTransaction done : resolution.decisionsToForget()) {
      writes.add(writeTransactionState(decisionPartition(done), done.transactionId(),
          new Partition.TransactionStateChange(Keys.decided(done.transactionId()), null), true));
    }
    await(CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)));
  }

  @Override
  public EntityState read(EntityId entity) {
    CachedState cached = readCached(entity);
    try {
      return cached.state();
    } catch (CorruptDataException damage) {
      throw corrupt(entity, damage);
    }
  }

  @Override
  public CachedState readCached(EntityId entity) {
    Objects.requireNonNull(entity, "entity");
    enter();
    Lock admission = null;
    try {
      admission = requireOwned(entity);
      return cachedOrLoaded(entity);
    } catch (CorruptDataException damage) {
      throw corrupt(entity, damage);
    } finally {
      admitted(admission);
      closeLock.readLock().unlock();
    }
  }

  @Override
  public CachedState readCachedIfPresent(EntityId entity) {
    Objects.requireNonNull(entity, "entity");
    enter();
    Lock admission = null;
    try {
      admission = requireOwned(entity);
      // asMap().get records the read for the eviction policy but not in the statistics: a miss
      // is counted once, by the load that follows (each miss one materialization), and a hit here.
      CachedState cached = cache.asMap().get(entity);
      if (cached != null) {
        hitsOutsideStatistics.increment();
      }
      return cached;
    } finally {
      admitted(admission);
      closeLock.readLock().unlock();
    }
  }

  private CachedState cachedOrLoaded(EntityId entity) {
    return cache.get(entity, this::loadCached);
  }

  /**
   * The cache entry of {@code entity}'s latest state, loaded from the database: made from its
   * newest checkpoint's bytes as they are when no record follows the checkpoint ({@link
   * Materializer#latest}; a damaged checkpoint throws {@link CorruptDataException} and nothing is
   * cached), else from the state materialized.
   */
  private CachedState loadCached(EntityId entity) {
    Materializer.Latest latest =
        readFromSnapshot(entity, snapshot -> materializer.latest(entity, snapshot));
    if (latest.checkpoint() != null) {
      loadsFromCheckpointBytes.increment();
    }
    return latest.toCachedState(entity);
  }

  @Override
  public EntityState readLatestDurable(EntityId entity) {
    Objects.requireNonNull(entity, "entity");
    enter();
    try {
      // Not through the cache, and whatever partition owns it: in ACQUIRED mode another node may
      // be writing this entity, and a cached copy here would never learn of its writes.
      return loadLatest(entity);
    } catch (CorruptDataException damage) {
      throw corrupt(entity, damage);
    } finally {
      closeLock.readLock().unlock();
    }
  }

  /**
   * Records damage a read of {@code entity} met and turns it into the client's answer: {@code
   * corrupt_data}, never "absent" (which would let a write re-create the entity over its
   * acknowledged keys) and never an older state. Nothing is cached, so every later read checks
   * again.
   */
  private TroupeException corrupt(EntityId entity, CorruptDataException damage) {
    String where = "entity " + entity + " (partition " + partitionOf(entity) + ")";
    corruptionsDetected.increment();
    lastCorruption = where + ": " + damage.getMessage();
    events.corruptionDetected(where, damage);
    return new TroupeException(ErrorCode.CORRUPT_DATA,
        "the stored data of " + entity + " failed its integrity check (" + damage.getMessage()
            + "); it is not served and not written over. An operator must check and repair the"
            + " store (troupe check, docs/OPERATIONS.md)");
  }

  /** Where the runtime hears of failures and damage as they happen (see {@link StorageEvents}). */
  @Override
  public void setEvents(StorageEvents events) {
    this.events = Objects.requireNonNull(events, "events");
    Throwable failed = failure.get();
    if (failed != null) {
      events.storeFailed(failed);
    }
  }

  @Override
  public StoreHealth health() {
    Throwable failed = failure.get();
    return new StoreHealth(failed == null ? null : String.valueOf(failed.getMessage()),
        corruptionsDetected.sum(), lastCorruption);
  }

  @Override
  public boolean isCached(EntityId entity) {
    return cache.policy().getIfPresentQuietly(entity) != null;
  }

  private EntityState loadLatest(EntityId entity) {
    return readFromSnapshot(entity,
        snapshot -> materializer.materialize(entity, Long.MAX_VALUE, snapshot));
  }

  /** A read of one entity's latest state from a snapshot of the database. */
  @FunctionalInterface
  private interface SnapshotRead<T> {
    T read(KeyValueDisk.Snapshot snapshot) throws DiskException;
  }

  /**
   * Runs {@code read} on a fresh snapshot as a read waiting for storage (truncation yields to it:
   * {@link MaintenancePacing}); a disk failure becomes an unchecked one naming the entity.
   */
  private <T> T readFromSnapshot(EntityId entity, SnapshotRead<T> read) {
    maintenancePacing.readStarted();
    try (KeyValueDisk.Snapshot snapshot = disk.snapshot()) {
      return read.read(snapshot);
    } catch (DiskException e) {
      throw new UncheckedIOException(new IOException("cannot read " + entity, e));
    } finally {
      maintenancePacing.readEnded(nowMillis());
    }
  }

  @Override
  public List<EntityId> entitiesOfType(String type, EntityId after, int limit) {
    Objects.requireNonNull(type, "type");
    Invariants.check(limit > 0, "a page of entities holds at least one, asked for %d", limit);
    Invariants.check(after == null || after.type().equals(type),
        "a page of type %s continues after an entity of another type: %s", type, after);
    enter();
    try (KeyValueDisk.Snapshot snapshot = disk.snapshot()) {
      // Ordered as storage orders entity prefixes, so that the first `limit` of the union of both
      // columns are the first `limit` of each column's own first `limit`.
      TreeMap<byte[], EntityId> found = new TreeMap<>(Arrays::compareUnsigned);
      entitiesOfType(KeyValueDisk.Column.INDEX, snapshot, type, after, limit, found);
      entitiesOfType(KeyValueDisk.Column.CHECKPOINTS, snapshot, type, after, limit, found);
      return found.values().stream().limit(limit).toList();
    } finally {
      closeLock.readLock().unlock();
    }
  }

  @Override
  public List<EntityId> listing(String type, String startId, boolean includeStart, int limit) {
    Objects.requireNonNull(type, "type");
    enter();
    try {
      return ListingIndex.page(disk, type, startId, includeStart, limit);
    } catch (CorruptDataException damage) {
      corruptionsDetected.increment();
      lastCorruption = "the listing index of type " + type + ": " + damage.getMessage();
      events.corruptionDetected("the listing index of type " + type, damage);
      throw new TroupeException(ErrorCode.CORRUPT_DATA, "the listing index of type " + type
          + " failed its integrity check (" + damage.getMessage() + "); an operator must check"
          + " and repair the store (troupe check, docs/OPERATIONS.md)");
    } catch (java.io.UncheckedIOException e) {
      throw new TroupeException(ErrorCode.UNAVAILABLE,
          "cannot read the listing index of type " + type + ": " + e.getMessage());
    } finally {
      closeLock.readLock().unlock();
    }
  }

  @Override
  public List<Long> versions(EntityId entity, Long before, int limit) {
    Objects.requireNonNull(entity, "entity");
    Invariants.check(limit > 0, "a page of versions holds at least one, asked for %d", limit);
    enter();
    try (KeyValueDisk.Snapshot snapshot = disk.snapshot()) {
      return Materializer.versions(disk, snapshot, entity, before, limit);
    } catch (CorruptDataException damage) {
      throw corrupt(entity, damage);
    } catch (java.io.UncheckedIOException e) {
      throw new TroupeException(ErrorCode.UNAVAILABLE,
          "cannot read the versions of " + entity + ": " + e.getMessage());
    } finally {
      closeLock.readLock().unlock();
    }
  }

  /** Entities the listing index was built for at this open (0: it was complete already). */
  long listingEntitiesBuiltAtOpen() {
    return listingEntitiesBuilt;
  }

  @Override
  public List<EntityId> entities(EntityId after, int limit) {
    Invariants.check(limit > 0, "a page of entities holds at least one, asked for %d", limit);
    enter();
    try (KeyValueDisk.Snapshot snapshot = disk.snapshot()) {
      // Both columns are keyed by the entity prefix first: the first `limit` of the union are
      // among the first `limit` of each.
      TreeMap<byte[], EntityId> found = new TreeMap<>(Arrays::compareUnsigned);
      for (KeyValueDisk.Column column
          : List.of(KeyValueDisk.Column.INDEX, KeyValueDisk.Column.CHECKPOINTS)) {
        byte[] target = after == null ? new byte[0]
            : Keys.entityUpperBound(Keys.entityPrefix(after));
        try (KeyValueDisk.Cursor cursor = disk.cursor(column, snapshot, null, null)) {
          for (int collected = 0; collected < limit; collected++) {
            cursor.seek(target);
            if (!cursor.isValid()) {
              break;
            }
            byte[] key = cursor.key();
            int length = ((key[0] & 0xFF) << 8) | (key[1] & 0xFF);
            Invariants.check(key.length >= 2 + length, "%s key shorter than its entity", column);
            byte[] prefix = Arrays.copyOf(key, 2 + length);
            found.putIfAbsent(prefix,
                EntityId.fromBytes(Arrays.copyOfRange(key, 2, 2 + length)));
            target = Keys.entityUpperBound(prefix);
          }
        }
      }
      return found.values().stream().limit(limit).toList();
    } finally {
      closeLock.readLock().unlock();
    }
  }

  /**
   * Installing a bootstrap image into this (empty) store, before the node serves
   * (docs/ARCHITECTURE.md, "Bootstrapping a new data centre").
   */
  public BootstrapInstallation bootstrapInstallation() {
    if (acquired != null) {
      throw new UnsupportedOperationException("cannot install a bootstrap image: replication"
          + " between data centres is not supported by a data centre of several nodes (storage"
          + " partition ownership ACQUIRED); bootstrap such a data centre on one node");
    }
    return new BootstrapInstallation(this);
  }

  /**
   * A skip scan of one column: within one entity length, the entities of a type are contiguous
   * (their bytes start with the type's name and a zero byte), so the scan seeks to that run in each
   * length, and past each entity it finds.
   */
  private void entitiesOfType(KeyValueDisk.Column column, KeyValueDisk.Snapshot snapshot,
      String type, EntityId after, int limit, TreeMap<byte[], EntityId> found) {
    byte[] typeBytes = type.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    byte[] typePrefix = Arrays.copyOf(typeBytes, typeBytes.length + 1); // then the zero byte
    int shortest = typePrefix.length + 1;
    if (shortest > Keys.MAX_ENTITY_BYTES) {
      return;
    }
    byte[] target = after == null ? runStart(shortest, typePrefix)
        : Keys.entityUpperBound(Keys.entityPrefix(after));
    int collected = 0;
    try (KeyValueDisk.Cursor cursor = disk.cursor(column, snapshot, null, null)) {
      while (collected < limit) {
        cursor.seek(target);
        if (!cursor.isValid()) {
          return;
        }
        byte[] key = cursor.key();
        int length = ((key[0] & 0xFF) << 8) | (key[1] & 0xFF);
        Invariants.check(key.length >= 2 + length, "%s key shorter than its entity", column);
        if (length < shortest) {
          target = runStart(shortest, typePrefix);
          continue;
        }
        int order = Arrays.compareUnsigned(key, 2, 2 + typePrefix.length, typePrefix, 0,
            typePrefix.length);
        if (order == 0) {
          byte[] prefix = Arrays.copyOf(key, 2 + length);
          found.putIfAbsent(prefix, EntityId.fromBytes(Arrays.copyOfRange(key, 2, 2 + length)));
          collected++;
          target = Keys.entityUpperBound(prefix);
        } else if (order < 0) {
          target = runStart(length, typePrefix);
        } else if (length < Keys.MAX_ENTITY_BYTES) {
          target = runStart(length + 1, typePrefix);
        } else {
          return;
        }
      }
    }
  }

  /** The first possible key of an entity of {@code length} bytes starting with {@code prefix}. */
  private static byte[] runStart(int length, byte[] prefix) {
    byte[] start = new byte[2 + prefix.length];
    Keys.putShort(start, 0, length);
    System.arraycopy(prefix, 0, start, 2, prefix.length);
    return start;
  }

  @Override
  public EntityState readAt(EntityId entity, long timestamp) {
    Objects.requireNonNull(entity, "entity");
    enter();
    Lock admission = null;
    try {
      long current = clock.current();
      if (timestamp < 0 || timestamp > current) {
        throw TroupeException.invalid(
            "cannot read at " + timestamp + ": the current timestamp is " + current);
      }
      admission = requireOwned(entity);
      Partition partition = partitions[partitionOf(entity)];
      awaitVisible(partition, timestamp);
      checkHorizon(partition, entity, timestamp);
      CachedState cached = cache.policy().getIfPresentQuietly(entity);
      if (cached != null && cached.version() <= timestamp) {
        // Every record at or below the timestamp is applied to the cache (visibility floor), and
        // none of this entity's lies after the cached version: the cached state is the state there.
        return cached.state();
      }
      maintenancePacing.readStarted();
      try (KeyValueDisk.Snapshot snapshot = disk.snapshot()) {
        // Checked again after taking the snapshot: a truncation publishes its horizon before it
        // deletes, so passing this check means the snapshot predates any deletion it would need.
        checkHorizon(partition, entity, timestamp);
        return materializer.materialize(entity, timestamp, snapshot);
      } catch (DiskException e) {
        throw new UncheckedIOException(new IOException("cannot read " + entity, e));
      } catch (CorruptDataException damage) {
        throw corrupt(entity, damage);
      } finally {
        maintenancePacing.readEnded(nowMillis());
      }
    } finally {
      admitted(admission);
      closeLock.readLock().unlock();
    }
  }

  private static void checkHorizon(Partition partition, EntityId entity, long timestamp) {
    long horizon = partition.historyHorizon;
    if (timestamp < horizon) {
      throw new TroupeException(
          ErrorCode.HISTORY_TRUNCATED,
          "history of " + entity + " before " + horizon + " is truncated; cannot read at "
              + timestamp);
    }
  }

  private void awaitVisible(Partition partition, long timestamp) {
    if (execution == Execution.STEPPED) {
      // A stepped writer lowers the floor only within a pass and restores it before completing
      // any future, and no one else runs meanwhile: waiting here could never end.
      Invariants.check(partition.visibilityFloor > timestamp,
          "partition %d: read at %d inside a group commit", partition.number, timestamp);
      return;
    }
    while (partition.visibilityFloor <= timestamp) {
      // The writer holds timestamps at or below ours that are not applied yet: at most one group
      // commit to wait for (one synced write, two when it raises the clock ceiling).
      LockSupport.parkNanos(20_000);
    }
  }

  @Override
  public Snapshot pinSnapshot(long timestamp) {
    synchronized (pinLock) {
      for (Partition partition : partitions) {
        if (timestamp < partition.historyHorizon) {
          throw new TroupeException(
              ErrorCode.HISTORY_TRUNCATED,
              "cannot pin " + timestamp + ": partition " + partition.number
                  + " is truncated up to " + partition.historyHorizon);
        }
      }
      pins.merge(timestamp, 1, Integer::sum);
    }
    return new PinnedSnapshot(timestamp);
  }

  /**
   * The lowest pinned snapshot's timestamp, {@code Long.MAX_VALUE} when none is pinned: the local
   * replication log is kept above it too ({@link DiskReplicationLog#truncate}).
   */
  long lowestPinnedSnapshot() {
    synchronized (pinLock) {
      return pins.isEmpty() ? Long.MAX_VALUE : pins.firstKey();
    }
  }

  /** A pinned timestamp; closing it twice is harmless. */
  private final class PinnedSnapshot implements Store.Snapshot {
    private final long timestamp;
    private final AtomicBoolean released = new AtomicBoolean();

    PinnedSnapshot(long timestamp) {
      this.timestamp = timestamp;
    }

    @Override
    public long timestamp() {
      return timestamp;
    }

    @Override
    public void close() {
      if (released.compareAndSet(false, true)) {
        synchronized (pinLock) {
          pins.computeIfPresent(timestamp, (key, count) -> count == 1 ? null : count - 1);
        }
      }
    }
  }

  /**
   * Chooses the newest completed round whose frontier is at or below the retention bound R and
   * publishes its frontier as the partition's history horizon; null if none qualifies. Runs under
   * the pin lock so that no snapshot below the published horizon can be pinned meanwhile.
   */
  JournalPosition claimHorizon(Partition partition, TreeMap<Long, Long> completedRounds) {
    synchronized (pinLock) {
      long retentionMillis = Math.max(0, nowMillis() - settings.historyRetentionMillis());
      long bound = HybridLogicalClock.fromMillis(retentionMillis) - 1;
      if (!pins.isEmpty()) {
        bound = Math.min(bound, pins.firstKey());
      }
      for (Map.Entry<Long, Long> round : completedRounds.descendingMap().entrySet()) {
        if (round.getValue() <= bound) {
          if (round.getValue() <= partition.historyHorizon) {
            return null;
          }
          partition.historyHorizon = round.getValue();
          return new JournalPosition(round.getKey(), round.getValue());
        }
      }
      return null;
    }
  }

  @Override
  public long currentTimestamp() {
    return clock.current();
  }

  @Override
  public ReplicationLog replicationLog() {
    return replicationLog;
  }

  /** The lowest partition visibility floor ({@code Long.MAX_VALUE}: no batch in flight). */
  long lowestVisibilityFloor() {
    long lowest = Long.MAX_VALUE;
    for (Partition partition : partitions) {
      lowest = Math.min(lowest, partition.visibilityFloor);
    }
    return lowest;
  }

  /** Enters an API call that uses the disk (unavailable once closed); {@link #exitOpen} after. */
  void enterOpen() {
    enter();
  }

  void exitOpen() {
    closeLock.readLock().unlock();
  }

  @Override
  public EntityLocator locator() {
    return locator;
  }

  @Override
  public int partitionCount() {
    return partitions.length;
  }

  @Override
  public List<JournalEntry> readJournal(int partitionNumber, long fromSequence, int limit) {
    Invariants.check(limit > 0, "a page of the journal holds at least one record, asked for %d",
        limit);
    Partition partition = partitions[partitionNumber];
    long end = partition.publishedNextSequence;
    long from = Math.max(fromSequence, partition.firstRetainedSequence);
    List<JournalEntry> entries = new ArrayList<>();
    if (from >= end) {
      return entries;
    }
    enter();
    try (KeyValueDisk.Cursor cursor = disk.cursor(KeyValueDisk.Column.JOURNAL, null,
        Keys.journal(partitionNumber, from), Keys.journal(partitionNumber, end))) {
      for (cursor.seek(Keys.journal(partitionNumber, from));
          cursor.isValid() && entries.size() < limit; cursor.next()) {
        byte[] key = cursor.key();
        entries.add(new JournalEntry(partitionNumber, Keys.journalSequence(key),
            Codec.decodeRecord(cursor.value())));
      }
      return entries;
    } finally {
      closeLock.readLock().unlock();
    }
  }

  @Override
  public long journalSequenceAfter(int partitionNumber, long timestamp) {
    Partition partition = partitions[partitionNumber];
    long low = partition.firstRetainedSequence;
    long high = partition.publishedNextSequence;
    // Invariant: every retained record below `low` is at or below the timestamp, every one at or
    // above `high` above it (sequence order is timestamp order).
    while (low < high) {
      long middle = low + (high - low) / 2;
      List<JournalEntry> found = readJournal(partitionNumber, middle, 1);
      if (found.isEmpty() || found.get(0).sequence() >= high) {
        high = middle;
      } else if (found.get(0).record().commitTimestamp() <= timestamp) {
        low = found.get(0).sequence() + 1;
      } else {
        high = middle; // sequences are contiguous: the record found is the one at `middle`
      }
    }
    return low;
  }

  /** The history horizon of a partition: readAt below it fails with history_truncated. */
  @Override
  public long historyHorizon(int partition) {
    return partitions[partition].historyHorizon;
  }

  @Override
  public WriterTimings writerTimings() {
    return writerTimings;
  }

  @Override
  public StorageStatistics statistics() {
    long sinceCheckpoint = 0;
    long retained = 0;
    for (Partition partition : partitions) {
      long next = partition.publishedNextSequence;
      sinceCheckpoint += next - partition.completedRoundSequence;
      retained += next - partition.firstRetainedSequence;
    }
    CacheStats cacheStats = cache.stats();
    long weight = cache.policy().eviction().map(e -> e.weightedSize().orElse(0)).orElse(0L);
    return new StorageStatistics(
        commits.sum(),
        groupCommits.sum(),
        sinceCheckpoint,
        retained,
        lastCheckpointMillis,
        checkpointRounds.sum(),
        objectCheckpoints.sum(),
        truncatedRecords.sum(),
        cacheStats.hitCount() + hitsOutsideStatistics.sum(),
        cacheStats.missCount(),
        weight,
        recoveryMillis,
        disk.files());
  }

  @Override
  public void checkpointNow() {
    refuseOnWriterThread("checkpointNow");
    List<CompletableFuture<Void>> rounds = new ArrayList<>();
    enter();
    try {
      Throwable failed = failure.get();
      if (failed != null) {
        throw unavailable(failed);
      }
      for (Partition partition : partitions) {
        Lock admission = admit(partition);
        if (admission == NOT_ADMITTED) {
          continue; // not owned here (ACQUIRED): its owner checkpoints it
        }
        try {
          CompletableFuture<Void> done = new CompletableFuture<>();
          partition.queue.add(new Partition.CheckpointRequest(done));
          rounds.add(done);
        } finally {
          admitted(admission);
        }
      }
    } finally {
      closeLock.readLock().unlock();
    }
    for (CompletableFuture<Void> done : rounds) {
      runUntilDone(done);
      try {
        done.get();
      } catch (ExecutionException e) {
        Throwable cause = e.getCause();
        if (cause instanceof TroupeException refusal && refusal.code() == ErrorCode.NOT_OWNER) {
          continue; // fenced meanwhile (ACQUIRED): its new owner checkpoints it
        }
        if (cause instanceof RuntimeException runtime) {
          throw runtime;
        }
        throw new CompletionException(cause);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new TroupeException(ErrorCode.UNAVAILABLE, "interrupted waiting for a checkpoint");
      }
    }
  }

  @Override
  public void close() {
    refuseOnWriterThread("close");
    closeLock.writeLock().lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
    } finally {
      closeLock.writeLock().unlock();
    }
    // Every admitted task precedes Stop in its queue: writers drain them, then exit.
    Partition[] closing = partitions;
    for (Partition partition : closing) {
      partition.queue.add(Partition.Stop.INSTANCE);
    }
    boolean interrupted = false;
    for (Partition partition : closing) {
      if (!partition.isStarted()) {
        continue; // never acquired (ACQUIRED): no writer
      }
      if (execution == Execution.STEPPED) {
        // Bounded: every pass takes tasks off the queue, Stop is among them.
        while (!partition.isStopped()) {
          partition.step();
        }
        continue;
      }
      while (true) {
        try {
          partition.join();
          break;
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    }
    if (acquired != null) {
      acquired.close();
    }
    if (ceilingRaiser != null) {
      ceilingRaiser.shutdown();
      try {
        ceilingRaiser.awaitTermination(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (walFlusher != null) {
      walFlusher.shutdown();
      try {
        walFlusher.awaitTermination(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (failure.get() == null) {
      try {
        disk.flushWriteAheadLog(true);
      } catch (DiskException e) {
        fail(e);
      }
    }
    closeResources();
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private void closeResources() {
    cache.invalidateAll();
    disk.close();
  }

  // ------------------------------------------------------------------------ partition ownership

  @Override
  public AcquiredPartition acquirePartition(int partition) {
    requireAcquiredMode("acquirePartition");
    checkPartitionNumber(partition);
    refuseOnWriterThread("acquirePartition");
    return acquired.acquire(partition);
  }

  @Override
  public void releasePartition(int partition) {
    requireAcquiredMode("releasePartition");
    checkPartitionNumber(partition);
    refuseOnWriterThread("releasePartition");
    acquired.release(partition);
  }

  @Override
  public boolean ownsPartition(int partition) {
    checkPartitionNumber(partition);
    return partitions[partition].accepting;
  }

  @Override
  public List<Integer> ownedPartitions() {
    List<Integer> owned = new ArrayList<>();
    Partition[] current = partitions;
    for (Partition partition : current) {
      if (partition.accepting) {
        owned.add(partition.number);
      }
    }
    return owned;
  }

  @Override
  public long coordinatorEpoch() {
    requireAcquiredMode("coordinatorEpoch");
    return acquired.coordinatorEpoch();
  }

  @Override
  public long endCoordinator(int nodeId, long epoch) {
    requireAcquiredMode("endCoordinator");
    Invariants.check(TransactionIds.isValidNodeId(nodeId), "endCoordinator of a valid node id");
    return acquired.endCoordinator(nodeId, epoch);
  }

  @Override
  public boolean coordinatorEnded(int nodeId) {
    if (acquired == null) {
      // The only node of its store: no other node id coordinates anything here any more.
      return nodeId != settings.nodeId();
    }
    Invariants.check(TransactionIds.isValidNodeId(nodeId), "coordinatorEnded of a valid node id");
    return acquired.coordinatorEnded(nodeId);
  }

  private void requireAcquiredMode(String operation) {
    if (acquired == null) {
      throw new IllegalStateException(operation + " needs partition ownership ACQUIRED (a node of"
          + " several); this store owns every partition (ALL)");
    }
  }

  private void checkPartitionNumber(int partition) {
    if (partition < 0 || partition >= settings.partitions()) {
      throw new IllegalArgumentException(
          "partition " + partition + " outside 0.." + (settings.partitions() - 1));
    }
  }

  /** What {@link #admit} returns for a partition that admits nothing. */
  private static final Lock NOT_ADMITTED =
      new ReentrantLock();

  /**
   * Admits a read or a task of {@code partition}: under ALL, null (always admitted, no lock);
   * under ACQUIRED, the partition's admission lock (read side) held, to release with {@link
   * #admitted} once the read is done or the task queued, so that a release, which takes the write
   * side, waits for it; {@link #NOT_ADMITTED} if the partition is not owned.
   */
  private Lock admit(Partition partition) {
    if (acquired == null) {
      return null;
    }
    Lock lock = partition.admission.readLock();
    lock.lock();
    if (!partition.accepting) {
      lock.unlock();
      return NOT_ADMITTED;
    }
    return lock;
  }

  private static void admitted(Lock admission) {
    if (admission != null && admission != NOT_ADMITTED) {
      admission.unlock();
    }
  }

  /**
   * Admits a read of an entity (see {@link #admit}); refuses it with {@code not_owner} if this node
   * does not write its partition. Returns the lock to release with {@link #admitted}.
   */
  private Lock requireOwned(EntityId entity) {
    int number = partitionOf(entity);
    Lock admission = admit(partitions[number]);
    if (admission == NOT_ADMITTED) {
      throw notOwner(number);
    }
    return admission;
  }

  static TroupeException notOwner(int partition) {
    return new TroupeException(ErrorCode.NOT_OWNER,
        "partition " + partition + " is not owned by this node (it moved to, or is moving to,"
            + " another node); retry: the request is routed to its owner");
  }

  /** The partition in slot {@code number} now. */
  Partition partitionSlot(int number) {
    return partitions[number];
  }

  /** A partition for slot {@code number} (not started), fenced with {@code epoch} unless 0. */
  Partition newPartition(int number, long epoch) {
    return new Partition(this, number, execution == Execution.THREADS, epoch);
  }

  /** Puts {@code partition} in its slot (copy on write). */
  void replacePartition(Partition partition) {
    synchronized (partitionsLock) {
      Partition[] next = partitions.clone();
      next[partition.number] = partition;
      partitions = next;
    }
  }

  /**
   * Stops {@code partition} admitting and queues its writer's Stop behind everything admitted,
   * under the write side of the partition's admission lock (which waits for every admission and
   * read of it in progress, and no other partition's). After a close, which stopped the writer
   * already, the second Stop is never taken, and harmless.
   */
  void stopAdmitting(Partition partition) {
    partition.admission.writeLock().lock();
    try {
      partition.accepting = false;
      partition.queue.add(Partition.Stop.INSTANCE);
    } finally {
      partition.admission.writeLock().unlock();
    }
  }

  /** Drops every cached state of the partition's entities (they may be written elsewhere). */
  void dropCachedStates(int partition) {
    cache.asMap().keySet().removeIf(entity -> partitionOf(entity) == partition);
  }

  /** A partition's writer was fenced (its thread): drops its cached states and tells the runtime. */
  void partitionLost(Partition partition, FencedException cause) {
    dropCachedStates(partition.number);
    events.partitionLost(partition.number, cause);
  }

  // --------------------------------------------------------------------------- writer support

  long nowMillis() {
    return clock.physicalMillis();
  }

  Throwable failure() {
    return failure.get();
  }

  /** Marks the store failed: no commit is accepted or acknowledged after this. */
  void fail(Throwable cause) {
    if (failure.compareAndSet(null, cause)) {
      // Cached states may lack records whose outcome is unknown: reads go to the database instead.
      cache.invalidateAll();
      if (cause instanceof CorruptDataException damage) {
        corruptionsDetected.increment();
        lastCorruption = "storage maintenance: " + damage.getMessage();
      }
      events.storeFailed(cause);
    }
  }

  static TroupeException unavailable(Throwable cause) {
    return new TroupeException(
        ErrorCode.UNAVAILABLE, "storage failed and accepts no more commits: " + cause);
  }

  /** The cached entry of an entity, null if it is not cached; not a cache hit or miss. */
  CachedState cachedQuietly(EntityId entity) {
    return cache.policy().getIfPresentQuietly(entity);
  }

  /**
   * The estimated in-memory size of a cached entity's state decoded (as an actor holds it), 0 if
   * it is not cached.
   */
  int cachedWeightQuietly(EntityId entity) {
    CachedState entry = cachedQuietly(entity);
    return entry == null ? 0 : entry.decodedWeight();
  }

  @Override
  public int cachedWeightBytes(EntityId entity) {
    return cachedWeightQuietly(entity);
  }

  @Override
  public int cacheEntryWeightBytes(EntityId entity) {
    CachedState entry = cachedQuietly(entity);
    return entry == null ? 0 : entry.weight();
  }

  @Override
  public void resizeCache(long maximumWeightBytes) {
    require(maximumWeightBytes >= 0, "cache maximum weight >= 0");
    cache.policy().eviction().ifPresent(eviction -> {
      if (eviction.getMaximum() != maximumWeightBytes) {
        eviction.setMaximum(maximumWeightBytes);
      }
    });
  }

  /** Brings a cached state up to a just-written record; no-op for uncached entities. */
  void applyToCache(EntityId entity, List<Operation> operations, long commitTimestamp, int originDc) {
    cache
        .asMap()
        .compute(
            entity,
            (key, state) -> {
              if (state == null) {
                return null;
              }
              return state.version() < commitTimestamp
                  ? state.apply(key, operations, commitTimestamp, originDc)
                  : state;
            });
  }

  /**
   * Puts a cached entry that is still at {@code version} into the encoded form, given the state's
   * encoding (a checkpoint round's): written entities go back to the compact form once checkpointed.
   * No-op when the entity is not cached, is being loaded or has moved on.
   */
  void encodeCached(EntityId entity, long version, byte[] encoding) {
    cache.asMap().computeIfPresent(entity,
        (key, state) -> state.version() == version ? state.encodedAs(key, encoding) : state);
  }

  JournalPosition readPosition(byte[] key) throws DiskException {
    byte[] value = disk.get(KeyValueDisk.Column.META, key);
    return value == null ? JournalPosition.START : Codec.decodePosition(value);
  }

  private void enter() {
    closeLock.readLock().lock();
    if (closed) {
      closeLock.readLock().unlock();
      throw new TroupeException(ErrorCode.UNAVAILABLE, "the store is closed");
    }
  }

  private void refuseOnWriterThread(String operation) {
    if (onWriterThread()) {
      throw new IllegalStateException(
          operation + " called from a storage writer thread (a commit continuation): it would"
              + " wait for itself");
    }
  }

  /** Whether the calling thread runs a partition's writer (its thread, or a stepped pass). */
  private boolean onWriterThread() {
    for (Partition partition : partitions) {
      if (partition.isWriterThread()) {
        return true;
      }
    }
    return false;
  }
}
