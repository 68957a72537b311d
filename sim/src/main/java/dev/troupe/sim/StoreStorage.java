package dev.troupe.sim;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Invariants;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.time.Clock;
import dev.troupe.model.time.HybridLogicalClock;
import dev.troupe.storage.Codec;
import dev.troupe.storage.Committed;
import dev.troupe.storage.CorruptDataException;
import dev.troupe.storage.DecidedTransaction;
import dev.troupe.storage.Durability;
import dev.troupe.storage.EntityWrite;
import dev.troupe.storage.InDoubtResolution;
import dev.troupe.storage.KeyValueDisk;
import dev.troupe.storage.MemoryDisk;
import dev.troupe.storage.PreparedTransaction;
import dev.troupe.storage.RocksStore;
import dev.troupe.storage.StorageEvents;
import dev.troupe.storage.StorageSettings;
import dev.troupe.storage.StorageStatistics;
import dev.troupe.storage.TransactionRecord;
import dev.troupe.txn.TurnCodec;
import dev.troupe.txn.TurnEvaluator;
import dev.troupe.txn.TurnLimits;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.LongConsumer;

/**
 * The production storage engine under a {@link SimulatedNode}: a {@link RocksStore} in {@link
 * RocksStore.Execution#STEPPED} mode over a {@link MemoryDisk}, so its group commit, object
 * checkpoints, checkpoint rounds, truncation, materialization from checkpoints and journal, its
 * recovery and its in-doubt resolution all run, deterministically, under simulated faults.
 *
 * <p><b>Group commit.</b> Submissions queue in the store; an event {@code syncMillis} later (one
 * per burst) runs the partitions' writer passes until the store settles, completing the futures
 * in order, as a writer thread would after its synced write. Periodic ticks run the writers'
 * maintenance (rounds and truncation are due by time too) while there is work. Settings are tiny (checkpoint every 3
 * operations of an object, rounds every 16 records or 40 ms, no history retention, a cache of a
 * few kilobytes) so that every mechanism runs many times per seed.
 *
 * <p><b>Crash.</b> The store object is dropped without closing (its queued work and callbacks die
 * with it) and the disk loses power: batches written since the last sync are lost, or a prefix
 * of them survives. Under {@link Durability#SYNC} acknowledged commits were synced; checkpoint
 * rounds and truncation write unsynced, which is what the prefix exercises. With {@link
 * Durability#ASYNC} (the {@code ACKNOWLEDGE_BEFORE_SYNC} mutation) commits are acknowledged before
 * the write-ahead log is synced, at each maintenance tick: acknowledged commits can be lost.
 *
 * <p><b>Restart</b> opens a new store on the surviving disk (its own recovery, clock advanced past
 * the journal) and resolves in-doubt transactions with the redo {@code Troupe} uses.
 *
 * <p><b>Damage</b> ({@link #damage}): a stored key whose bytes fail their checksum, on the platter
 * until the key is written or deleted again. The engine must detect it, never serve it: reads of
 * the entities that need it answer {@code corrupt_data}, damage met by the writer fails the store
 * (it refuses every commit until the next restart, {@code on-storage-failure = stay-up}, the
 * default), and a restart whose recovery meets it fails as {@code Troupe}'s constructor does (the
 * node stays down; {@link Simulation} plays the supervisor that tries again). A store that fails
 * for any other reason is a bug the run reports ({@link #failureNotCausedByDamage}). Under the
 * {@code IGNORE_DAMAGE} mutation the disk passes damage over in silence, as the engine did before
 * it checked RocksDB's iterator status.
 *
 * <p><b>Shared store</b> (the cluster's shared-store mode): the store opens in {@code
 * PartitionOwnership.ACQUIRED} over this node's view of the data centre's {@link SharedDatabase},
 * owning nothing until {@link #acquire} (which resolves the partition's parts in doubt); a crash
 * drops the store and loses nothing on the database (a process crash), a restart opens a new store
 * owning nothing and learns the commit decisions of the transactions this node issued from the
 * database. A fence that refuses a write is reported to the node ({@code partitionLost}).
 */
final class StoreStorage implements NodeStorage {
  /** Maintenance ticks; under ASYNC durability, also how often the write-ahead log is synced. */
  private static final long MAINTENANCE_INTERVAL_MILLIS = 10;
  private static final int IDLE_TICKS_BEFORE_PAUSE = 10;

  private final Placement placement;
  private final Scheduler scheduler;
  private final NodeStorage.Timers timers;
  private final Function<EntityId, CompiledType> typeOf;
  private final long syncMillis;
  private final double keepUnsyncedPrefixProbability;
  private final SimulatedNode.Mutation mutation;
  private final StorageSettings settings;
  /** The data centre's database in the shared-store mode, or null (this node's own disk). */
  private final SharedDatabase database;
  /** This node's handle on {@link #database} (what its store opens), or null. */
  private final KeyValueDisk sharedView;
  /** Told (from a timer, never inside the writer's pass) that a fence refused a partition's write. */
  private final java.util.function.IntConsumer partitionLost;
  private MemoryDisk disk = new MemoryDisk();
  private RocksStore store;
  private long clockOffsetMillis;
  private boolean writersScheduled;
  private boolean maintenanceScheduled;
  private int idleTicks;
  private long resolvedInDoubt;
  private InDoubtResolution lastResolution;
  private long redone;
  private long checkpointRounds;
  private long objectCheckpoints;
  private long truncatedRecords;
  private long damagedKeys;
  /** Damaged reads the stores dropped so far detected (each store counts from zero). */
  private long corruptionsDetected;
  private long storeFailures;
  private long refusedStarts;
  private final Set<EntityId> damagedEntities = new LinkedHashSet<>();
  /** The first store failure whose cause was not damage (a bug), or null. */
  private Throwable failureNotCausedByDamage;
  /**
   * Closed intervals {@code [from, to]} during which the store was failed or the node down on
   * damage; {@link #degradedSinceMillis} is the start of the open one, or -1.
   */
  private final List<long[]> degradedIntervals = new ArrayList<>();
  private long degradedSinceMillis = -1;

  StoreStorage(Scheduler scheduler, NodeStorage.Timers timers,
      Function<EntityId, CompiledType> typeOf, long syncMillis,
      double keepUnsyncedPrefixProbability, SimulatedNode.Mutation mutation) {
    this(scheduler, timers, typeOf, syncMillis, keepUnsyncedPrefixProbability, mutation, 0,
        Placement.ALONE);
  }

  /**
   * @param nodeId the node's id: its clock puts it in every timestamp (transaction ids unique
   *     across the simulated nodes)
   * @param placement which transactions and entities are this node's, in a cluster
   */
  StoreStorage(Scheduler scheduler, NodeStorage.Timers timers,
      Function<EntityId, CompiledType> typeOf, long syncMillis,
      double keepUnsyncedPrefixProbability, SimulatedNode.Mutation mutation, int nodeId,
      Placement placement) {
    this(scheduler, timers, typeOf, syncMillis, keepUnsyncedPrefixProbability, mutation, nodeId,
        placement, null, 0, ignored -> { });
  }

  /**
   * One node of a data centre on one shared database ({@code database} not null): the store opens
   * in {@link dev.troupe.storage.PartitionOwnership.ACQUIRED} mode over this node's view of it, owning
   * no partition until {@link #acquire}; a crash of the node loses only its memory (the database
   * server keeps what it applied).
   *
   * @param partitions the store's partitions (the sharding's)
   * @param partitionLost told, from a timer of this node, which partition a fence refused
   */
  StoreStorage(Scheduler scheduler, NodeStorage.Timers timers,
      Function<EntityId, CompiledType> typeOf, long syncMillis,
      double keepUnsyncedPrefixProbability, SimulatedNode.Mutation mutation, int nodeId,
      Placement placement, SharedDatabase database, int partitions,
      java.util.function.IntConsumer partitionLost) {
    this.database = database;
    this.sharedView = database == null ? null : database.viewFor(nodeId);
    this.partitionLost = partitionLost;
    this.placement = placement;
    this.scheduler = scheduler;
    this.timers = timers;
    this.typeOf = typeOf;
    this.syncMillis = syncMillis;
    this.keepUnsyncedPrefixProbability = keepUnsyncedPrefixProbability;
    this.mutation = mutation;
    StorageSettings alone = new StorageSettings(Path.of("simulated-disk"), 2,
        mutation == SimulatedNode.Mutation.ACKNOWLEDGE_BEFORE_SYNC
            ? Durability.ASYNC : Durability.SYNC,
        16, 100_000, MAINTENANCE_INTERVAL_MILLIS, 4_096, 3, 40, 16, 0, 0)
        .withNodeId(nodeId);
    this.settings = database == null ? alone : alone.withPartitions(partitions)
        .withPartitionOwnership(dev.troupe.storage.PartitionOwnership.ACQUIRED);
    if (mutation == SimulatedNode.Mutation.IGNORE_DAMAGE) {
      disk.ignoreDamageAsUncheckedRocksDbDid();
    }
    open();
  }

  /**
   * The node's clock, injected into each incarnation's store: the production hybrid logical clock
   * over this node's physical clock (simulated time plus an offset that clock jumps move). A new one
   * per incarnation, as a real restart starts a new one; the store's recovery advances it.
   */
  private Clock newClock() {
    return new HybridLogicalClock(
        () -> Math.max(0, scheduler.nowMillis() + clockOffsetMillis), settings.nodeId());
  }

  private void open() {
    store = RocksStore.open(settings, newClock(), database == null ? disk : sharedView,
        RocksStore.Execution.STEPPED);
    store.setEvents(new StorageEvents() {
      @Override
      public void partitionLost(int partition, dev.troupe.storage.FencedException cause) {
        fencedPartitions++;
        scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
            "node " + settings.nodeId() + " fenced out of partition " + partition);
        // Not inside the writer's pass: the node releases it from a timer of its own.
        timers.later(0, "partition " + partition + " lost", () -> partitionLost.accept(partition));
      }

      @Override
      public void storeFailed(Throwable cause) {
        storeFailures++;
        degrade();
        scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
            "storage failed: " + cause);
        if (!(cause instanceof CorruptDataException) && failureNotCausedByDamage == null) {
          failureNotCausedByDamage = cause;
        }
      }

      @Override
      public void corruptionDetected(String where, CorruptDataException damage) {
        scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
            "damage detected in " + where);
      }
    });
    idleTicks = 0;
    maintenanceScheduled = false;
    scheduleMaintenance();
  }

  /**
   * Ticks that run the writers' maintenance (rounds are due by time too) and, under ASYNC, sync
   * the write-ahead log; they stop after {@link #IDLE_TICKS_BEFORE_PAUSE} idle ticks, so that a
   * run ends, and resume with the next submission.
   */
  private void scheduleMaintenance() {
    if (maintenanceScheduled) {
      return;
    }
    maintenanceScheduled = true;
    timers.later(MAINTENANCE_INTERVAL_MILLIS, "storage maintenance", () -> {
      maintenanceScheduled = false;
      if (settings.durability() == Durability.ASYNC) {
        store.flushWriteAheadLog();
      }
      idleTicks = runWriters() ? 0 : idleTicks + 1;
      if (idleTicks < IDLE_TICKS_BEFORE_PAUSE) {
        scheduleMaintenance();
      }
    });
  }

  @Override
  public long newTransactionId() {
    return store.newTransactionId();
  }

  @Override
  public void preload(long transactionId, EntityId entity, List<Operation> operations) {
    CompletableFuture<Committed> done =
        store.commit(transactionId, List.of(new EntityWrite(entity, operations)));
    while (!done.isDone()) {
      store.runPendingWork();
    }
    done.join();
    store.flushWriteAheadLog();
  }

  @Override
  public TroupeException commit(long transactionId, EntityId entity, List<Operation> operations,
      boolean resolvesPrepared, boolean exemptFromQueueLimit, LongConsumer durableAt,
      Consumer<Throwable> failed) {
    List<EntityWrite> writes = List.of(new EntityWrite(entity, operations));
    CompletableFuture<Committed> future = resolvesPrepared
        ? store.commitPrepared(transactionId, entity, operations)
        : exemptFromQueueLimit
            ? store.commitExemptFromQueueLimit(transactionId, writes)
            : store.commit(transactionId, writes);
    TroupeException refusal = dev.troupe.storage.Store.refusedAtOnce(future);
    if (refusal != null) {
      return refusal;
    }
    future.whenComplete((committed, failure) -> {
      if (failure == null) {
        durableAt.accept(committed.commitTimestamp());
      } else {
        failed.accept(failure);
      }
    });
    scheduleWriters();
    return null;
  }

  @Override
  public void prepare(PreparedTransaction part, Runnable durable, Consumer<Throwable> failed) {
    store.prepare(part).whenComplete((ignored, failure) -> {
      if (failure == null) {
        durable.run();
      } else {
        failed.accept(failure);
      }
    });
    scheduleWriters();
  }

  @Override
  public void abandonPrepared(long transactionId, EntityId entity) {
    store.abandonPrepared(transactionId, entity);
    scheduleWriters();
  }

  @Override
  public void persistDecision(DecidedTransaction decision, Runnable durable,
      Consumer<Throwable> failed) {
    whenDecisionWritten(decision, store.persistDecision(decision), durable, failed);
  }

  @Override
  public void persistDecisionBeforeLocalCommits(DecidedTransaction decision, Runnable written,
      Runnable durable, Consumer<Throwable> failed) {
    whenDecisionWritten(decision, store.persistDecisionBeforeLocalCommits(decision), () -> {
      // Written now (on the writer's pass): durable once the disk syncs again.
      durableAfterSync.add(new DurableAfterSync(disk.syncs(), durable));
      written.run();
    }, failed);
  }

  /** A decision written without a sync of its own, and the disk's sync count when it was. */
  private record DurableAfterSync(long syncsWhenWritten, Runnable durable) {}

  private final List<DurableAfterSync> durableAfterSync = new ArrayList<>();

  /** Runs the callbacks of the decisions a later sync made durable. */
  private void runDurableDecisionCallbacks() {
    if (durableAfterSync.isEmpty()) {
      return;
    }
    long syncs = disk.syncs();
    List<DurableAfterSync> due = new ArrayList<>();
    durableAfterSync.removeIf(pending -> syncs > pending.syncsWhenWritten() && due.add(pending));
    due.forEach(pending -> pending.durable().run());
  }

  private void whenDecisionWritten(DecidedTransaction decision, CompletableFuture<Void> write,
      Runnable durable, Consumer<Throwable> failed) {
    write.whenComplete((ignored, failure) -> {
      if (failure == null) {
        durable.run();
      } else {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null
            ? failure.getCause() : failure;
        if (cause instanceof TroupeException refused && refused.getMessage() != null
            && refused.getMessage().contains("ended this node's coordinators")) {
          refusedDecisions++; // the coordinator fence: a zombie's decision, never written
          scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(), "node "
              + settings.nodeId() + ": decision of tx " + decision.transactionId()
              + " refused by the coordinator fence");
        }
        failed.accept(failure);
      }
    });
    scheduleWriters();
  }

  @Override
  public void forgetDecision(DecidedTransaction decision) {
    store.forgetDecision(decision);
    scheduleWriters();
  }

  @Override
  public EntityState durable(EntityId entity) {
    return store.read(entity);
  }

  @Override
  public void crash() {
    countStatistics();
    store = null; // dropped, not closed: a dead process closes nothing
    writersScheduled = false;
    durableAfterSync.clear(); // the crash decides which of them survived
    if (database == null) {
      disk = disk.crash(scheduler.random(), keepUnsyncedPrefixProbability);
    }
    // On a shared database the node's process died, not the database server: nothing applied is
    // lost, and the next owner's acquisition fences whatever the dead store had queued.
  }

  // ------------------------------------------------------------------ the shared-store mode

  /** The disk the simulator observes: this node's own, or the shared database's current handle. */
  private MemoryDisk observed() {
    return database == null ? disk : database.disk();
  }

  /** Fences observed (a write of this node refused because another node acquired the partition). */
  private long fencedPartitions;
  /** Parts committed or abandoned by this node's acquisitions (the in-doubt resolution). */
  private long resolvedAtAcquisition;

  long fencedPartitions() {
    return fencedPartitions;
  }

  /**
   * Acquires {@code partition} ({@code Store.acquirePartition}: a new owner epoch fences the
   * previous owner) and resolves its two-phase-commit state as the runtime does: commits the parts
   * whose transaction has a commit decision (redoing PSAC parts on the state they meet), abandons
   * those whose coordinator ended without one ({@code coordinatorEnded}), and returns the
   * resolution, whose {@code toAsk} parts the node keeps in doubt and asks about. Returns null if
   * the acquisition was refused (the store failed, or another node acquired it meanwhile).
   */
  InDoubtResolution acquire(int partition, java.util.function.LongPredicate coordinatorEnded,
      java.util.function.Predicate<EntityId> hostedHere) {
    dev.troupe.storage.AcquiredPartition acquired;
    try {
      acquired = store.acquirePartition(partition);
    } catch (TroupeException refused) {
      scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
          "node " + settings.nodeId() + " could not acquire partition " + partition + ": "
              + refused.getMessage());
      return null;
    }
    InDoubtResolution resolution = acquired.resolution(coordinatorEnded, hostedHere);
    for (PreparedTransaction part : resolution.toCommit()) {
      List<dev.troupe.model.Operation> operations = part.operations();
      if (part.needsRedo()) {
        redone++;
        operations = TurnEvaluator.redo(part.entity(), typeOf.apply(part.entity()),
            store.read(part.entity()), TurnCodec.decode(part.redo()), part.transactionId(), 0,
            TurnLimits.DEFAULTS);
      }
      if (operations.isEmpty()) {
        store.abandonPrepared(part.transactionId(), part.entity());
      } else {
        await(store.commitPrepared(part.transactionId(), part.entity(), operations));
      }
    }
    for (PreparedTransaction part : resolution.toAbort()) {
      store.abandonPrepared(part.transactionId(), part.entity());
    }
    runWriters();
    resolvedAtAcquisition += resolution.toCommit().size() + resolution.toAbort().size();
    resolvedInDoubt += resolution.toCommit().size() + resolution.toAbort().size();
    return resolution;
  }

  /** Steps the store until {@code future} completes; a refusal (a fence) is left to the caller. */
  private void await(CompletableFuture<?> future) {
    while (!future.isDone() && store.runPendingWork()) {
      // each pass writes what is queued
    }
  }

  /** Gives {@code partition} up ({@code Store.releasePartition}); nothing if not owned. */
  void release(int partition) {
    store.releasePartition(partition);
  }

  /** Whether the store writes {@code partition} now (acquired, not released or fenced). */
  boolean owns(int partition) {
    return store != null && store.ownsPartition(partition);
  }

  // ------------------------------------------------------------------ the coordinator fence

  /**
   * Decision writes of this node the coordinator fence refused (another node ended this node's
   * coordinators: {@code Store.endCoordinator}); each such transaction aborted.
   */
  private long refusedDecisions;
  /** Ends ({@code Store.endCoordinator}) this node made that took a coordinator partition. */
  private long coordinatorsEnded;

  /**
   * The owner epoch of this incarnation's coordinator partition: the store acquired it when it
   * opened ({@code Store.coordinatorEpoch}); the membership learns it as the member's role.
   */
  long coordinatorEpoch() {
    return store.coordinatorEpoch();
  }

  /**
   * Ends the coordinators of the incarnation of {@code nodeId} that acquired its coordinator
   * partition under {@code epoch} ({@code Store.endCoordinator}: conditional, so a late or repeated
   * end, or one after that node restarted, changes nothing). Returns whether this end took it.
   */
  boolean endCoordinator(int nodeId, long epoch) {
    boolean took = store.endCoordinator(nodeId, epoch) > 0;
    if (took) {
      coordinatorsEnded++;
      scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(), "node "
          + settings.nodeId() + " ended the coordinators of node " + nodeId + " (epoch " + epoch
          + ")");
    }
    return took;
  }

  /** Whether another node owns {@code nodeId}'s coordinator partition now ({@code Store}). */
  boolean coordinatorEnded(int nodeId) {
    return store.coordinatorEnded(nodeId);
  }

  /** Whether the shared store holds a decision record of {@code transactionId} now. */
  boolean decisionRecorded(long transactionId) {
    return store.decisionRecorded(transactionId);
  }

  long refusedDecisions() {
    return refusedDecisions;
  }

  long coordinatorsEnded() {
    return coordinatorsEnded;
  }

  /**
   * The commit decisions on the shared database of transactions {@code coordinatedHere} says this
   * node issued: after a restart its in-doubt answers must say commit for them (a participant's new
   * owner may ask long after the coordinator died), and presumed abort for the rest.
   */
  private List<DecidedTransaction> decisionsOf(java.util.function.LongPredicate coordinatedHere) {
    List<DecidedTransaction> decisions = new ArrayList<>();
    // A decision's key: the tag 'D', then the transaction id (u64, big-endian) (Keys.decided).
    for (byte[] key : observed().storedKeys(KeyValueDisk.Column.TRANSACTIONS, new byte[] {'D'},
        new byte[] {'E'})) {
      long transactionId = java.nio.ByteBuffer.wrap(key, 1, 8).getLong();
      if (coordinatedHere.test(transactionId)) {
        decisions.add(new DecidedTransaction(transactionId, List.of()));
      }
    }
    return decisions;
  }

  @Override
  public boolean restart() {
    if (database != null) {
      // ACQUIRED: the store owns nothing at open; each acquisition resolves its partition's parts.
      open();
      lastResolution = new InDoubtResolution(List.of(), List.of(), List.of(), List.of(),
          decisionsOf(placement.coordinatedHere()));
      return true;
    }
    try {
      open();
    } catch (CorruptDataException damage) {
      // Recovery met damage: the store refuses to open (and closed the disk's handle).
      store = null;
      disk = disk.restart();
      refuseStart(damage);
      return false;
    }
    if (mutation == SimulatedNode.Mutation.SKIP_IN_DOUBT_COMMITS) {
      return true; // the deliberate breakage: what a crash left prepared stays in doubt
    }
    InDoubtResolution resolution;
    try {
      resolution = store.resolveInDoubtTransactions((part, current) -> {
        redone++;
        return TurnEvaluator.redo(part.entity(), typeOf.apply(part.entity()), current,
            TurnCodec.decode(part.redo()), part.transactionId(), 0, TurnLimits.DEFAULTS);
      }, placement.coordinatedHere(), placement.hostedHere());
    } catch (RuntimeException failure) {
      if (!causedByDamage(failure)) {
        throw failure;
      }
      // As Troupe's constructor: the node does not start. The process exits without losing power.
      countStatistics();
      store = null;
      writersScheduled = false;
      disk = disk.restart();
      refuseStart(failure);
      return false;
    }
    lastResolution = resolution;
    resolvedInDoubt += resolution.toCommit().size() + resolution.toAbort().size();
    if (degradedSinceMillis >= 0 && store.health().accepting()) {
      degradedIntervals.add(new long[] {degradedSinceMillis, scheduler.nowMillis()});
      degradedSinceMillis = -1;
    }
    return true;
  }

  private void degrade() {
    if (degradedSinceMillis < 0) {
      degradedSinceMillis = scheduler.nowMillis();
    }
  }

  @Override
  public boolean degradedDuring(long fromMillis, long toMillis) {
    if (degradedSinceMillis >= 0 && degradedSinceMillis <= toMillis) {
      return true;
    }
    for (long[] interval : degradedIntervals) {
      if (interval[0] <= toMillis && interval[1] >= fromMillis) {
        return true;
      }
    }
    return false;
  }

  private void refuseStart(Throwable damage) {
    refusedStarts++;
    degrade();
    scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
        "the node cannot start: recovery met damage (" + damage + ")");
  }

  /**
   * Whether a failure of recovery comes from damage: a damaged read, or a commit refused by a store
   * that damage failed.
   */
  private boolean causedByDamage(Throwable failure) {
    Throwable cause = failure instanceof CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
    if (cause instanceof CorruptDataException) {
      return true;
    }
    if (cause instanceof TroupeException troupe) {
      return troupe.code() == ErrorCode.CORRUPT_DATA
          || (troupe.code() == ErrorCode.UNAVAILABLE && failureNotCausedByDamage == null
              && store != null && !store.health().accepting());
    }
    return false;
  }

  /**
   * Damages one stored key, as a flipped bit in an SST block would: a checkpoint of some entity,
   * an index entry or a journal record, drawn uniformly among the stored keys of a column drawn
   * uniformly. Not the first or last journal record of a partition: recovery reads those to find
   * the partition's positions, so damage there refuses every start and leaves the rest of the run
   * without a node, which checks nothing (the engine refusing to open on damage is {@code
   * CorruptionTest}'s). Returns what it damaged, or null if the column held nothing to damage.
   */
  @Override
  public String damage() {
    KeyValueDisk.Column column = DAMAGEABLE.get(scheduler.random().nextInt(DAMAGEABLE.size()));
    // Every key of these columns starts with a 16-bit partition or entity length below 0xFF00.
    List<byte[]> keys = disk.storedKeys(column, new byte[0], new byte[] {(byte) 0xFF});
    if (column == KeyValueDisk.Column.JOURNAL) {
      keys = withoutEndsOfPartitions(keys);
    }
    if (keys.isEmpty()) {
      return null;
    }
    byte[] key = keys.get(scheduler.random().nextInt(keys.size()));
    Set<EntityId> entities = column == KeyValueDisk.Column.JOURNAL
        ? entitiesOfRecord(key) : Set.of(entityOfKey(key));
    Invariants.check(disk.damage(column, key), "a stored key could not be damaged");
    damagedKeys++;
    damagedEntities.addAll(entities);
    return "a " + column + " key of " + entities;
  }

  private static final List<KeyValueDisk.Column> DAMAGEABLE = List.of(
      KeyValueDisk.Column.CHECKPOINTS, KeyValueDisk.Column.INDEX, KeyValueDisk.Column.JOURNAL);

  /** Journal keys (partition u16, sequence u64) minus each partition's first and last. */
  private static List<byte[]> withoutEndsOfPartitions(List<byte[]> keys) {
    List<byte[]> middle = new ArrayList<>();
    for (int i = 0; i < keys.size(); i++) {
      boolean first = i == 0 || !Arrays.equals(keys.get(i - 1), 0, 2, keys.get(i), 0, 2);
      boolean last = i == keys.size() - 1
          || !Arrays.equals(keys.get(i + 1), 0, 2, keys.get(i), 0, 2);
      if (!first && !last) {
        middle.add(keys.get(i));
      }
    }
    return middle;
  }

  /** The entity of an index or checkpoint key: {@code entityLength u16, entityBytes, ...}. */
  private static EntityId entityOfKey(byte[] key) {
    int length = ((key[0] & 0xFF) << 8) | (key[1] & 0xFF);
    return EntityId.fromBytes(Arrays.copyOfRange(key, 2, 2 + length));
  }

  /** The entities a journal record writes (none known if it is damaged already). */
  private Set<EntityId> entitiesOfRecord(byte[] key) {
    Set<EntityId> entities = new LinkedHashSet<>();
    byte[] value;
    try {
      value = disk.get(KeyValueDisk.Column.JOURNAL, key);
    } catch (CorruptDataException | dev.troupe.storage.DiskException alreadyDamaged) {
      return entities;
    }
    if (value != null) {
      for (EntityWrite write : Codec.decodeRecord(value).writes()) {
        entities.add(write.entity());
      }
    }
    return entities;
  }

  @Override
  public boolean failed() {
    return store != null && !store.health().accepting();
  }

  @Override
  public Set<EntityId> damagedEntities() {
    return Set.copyOf(damagedEntities);
  }

  /** The first store failure not caused by damage (a bug in the engine), or null. */
  Throwable failureNotCausedByDamage() {
    return failureNotCausedByDamage;
  }

  @Override
  public void jumpClock(long deltaMillis) {
    clockOffsetMillis += deltaMillis;
  }

  @Override
  public Map<Long, Map<EntityId, CommittedWrite>> committedWrites() {
    Map<Long, Map<EntityId, CommittedWrite>> writes = new LinkedHashMap<>();
    for (byte[] value : observed().durableJournalValuesEverWritten()) {
      TransactionRecord record = Codec.decodeRecord(value);
      for (EntityWrite write : record.writes()) {
        writes.computeIfAbsent(record.transactionId(), ignored -> new LinkedHashMap<>())
            .put(write.entity(), CommittedWrite.of(record.commitTimestamp(), write.operations()));
      }
    }
    return writes;
  }

  @Override
  public InDoubtResolution lastResolution() {
    return lastResolution;
  }

  @Override
  public int preparedParts() {
    // A prepared part's key starts with the tag 'P' (Keys.prepared).
    return observed().storedKeys(KeyValueDisk.Column.TRANSACTIONS, new byte[] {'P'}, new byte[] {'Q'})
        .size();
  }

  @Override
  public long resolvedInDoubt() {
    return resolvedInDoubt;
  }

  @Override
  public long redone() {
    return redone;
  }

  @Override
  public Counters counters() {
    long rounds = checkpointRounds;
    long objects = objectCheckpoints;
    long truncated = truncatedRecords;
    long corruptions = corruptionsDetected;
    if (store != null) {
      StorageStatistics current = store.statistics();
      rounds += current.checkpointRounds();
      objects += current.objectCheckpoints();
      truncated += current.truncatedRecords();
      corruptions += store.health().corruptionsDetected();
    }
    return new Counters(rounds, objects, truncated, damagedKeys, corruptions, storeFailures,
        refusedStarts);
  }

  /** Keeps the counters of a store about to be dropped (each store counts from zero). */
  private void countStatistics() {
    StorageStatistics statistics = store.statistics();
    checkpointRounds += statistics.checkpointRounds();
    objectCheckpoints += statistics.objectCheckpoints();
    truncatedRecords += statistics.truncatedRecords();
    corruptionsDetected += store.health().corruptionsDetected();
  }

  /** A group commit {@code syncMillis} from now, for everything submitted until then. */
  private void scheduleWriters() {
    if (writersScheduled) {
      return;
    }
    writersScheduled = true;
    timers.later(syncMillis, "storage writers (group commit)", () -> {
      writersScheduled = false;
      runWriters();
    });
    scheduleMaintenance();
  }

  /** Writer passes until the store settles; returns whether any pass did something. */
  private boolean runWriters() {
    boolean worked = false;
    while (store.runPendingWork()) {
      worked = true; // each pass takes at most groupCommitMaxRecords per partition
    }
    runDurableDecisionCallbacks();
    return worked;
  }
}
