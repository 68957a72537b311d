package dev.troupe.sim;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Invariants;
import dev.troupe.model.Operation;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.storage.Codec;
import dev.troupe.storage.Committed;
import dev.troupe.storage.DecidedTransaction;
import dev.troupe.storage.Durability;
import dev.troupe.storage.EntityWrite;
import dev.troupe.storage.InDoubtResolution;
import dev.troupe.storage.MemoryDisk;
import dev.troupe.storage.PreparedTransaction;
import dev.troupe.storage.RocksStore;
import dev.troupe.storage.StorageSettings;
import dev.troupe.storage.StorageStatistics;
import dev.troupe.storage.TransactionRecord;
import dev.troupe.txn.TurnCodec;
import dev.troupe.txn.TurnEvaluator;
import dev.troupe.txn.TurnLimits;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
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
 */
final class StoreStorage implements NodeStorage {
  /** Maintenance ticks; under ASYNC durability, also how often the write-ahead log is synced. */
  private static final long MAINTENANCE_INTERVAL_MILLIS = 10;
  private static final int IDLE_TICKS_BEFORE_PAUSE = 10;

  private final Scheduler scheduler;
  private final NodeStorage.Timers timers;
  private final Function<EntityId, CompiledType> typeOf;
  private final long syncMillis;
  private final double keepUnsyncedPrefixProbability;
  private final SimulatedNode.Mutation mutation;
  private final StorageSettings settings;
  private MemoryDisk disk = new MemoryDisk();
  private RocksStore store;
  private long clockOffsetMillis;
  private boolean writersScheduled;
  private boolean maintenanceScheduled;
  private int idleTicks;
  private long resolvedInDoubt;
  private long redone;
  private long checkpointRounds;
  private long objectCheckpoints;
  private long truncatedRecords;

  StoreStorage(Scheduler scheduler, NodeStorage.Timers timers,
      Function<EntityId, CompiledType> typeOf, long syncMillis,
      double keepUnsyncedPrefixProbability, SimulatedNode.Mutation mutation) {
    this.scheduler = scheduler;
    this.timers = timers;
    this.typeOf = typeOf;
    this.syncMillis = syncMillis;
    this.keepUnsyncedPrefixProbability = keepUnsyncedPrefixProbability;
    this.mutation = mutation;
    this.settings = new StorageSettings(Path.of("simulated-disk"), 2,
        mutation == SimulatedNode.Mutation.ACKNOWLEDGE_BEFORE_SYNC
            ? Durability.ASYNC : Durability.SYNC,
        16, 100_000, MAINTENANCE_INTERVAL_MILLIS, 4_096, 3, 40, 16, 0, 0);
    open();
  }

  private void open() {
    store = RocksStore.open(settings, () -> Math.max(0, scheduler.nowMillis() + clockOffsetMillis),
        disk, RocksStore.Execution.STEPPED);
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
  public void commit(long transactionId, EntityId entity, List<Operation> operations,
      boolean resolvesPrepared, boolean exemptFromQueueLimit, LongConsumer durableAt) {
    List<EntityWrite> writes = List.of(new EntityWrite(entity, operations));
    CompletableFuture<Committed> future = resolvesPrepared
        ? store.commitPrepared(transactionId, entity, operations)
        : exemptFromQueueLimit
            ? store.commitExemptFromQueueLimit(transactionId, writes)
            : store.commit(transactionId, writes);
    future.whenComplete((committed, failure) -> {
      Invariants.check(failure == null, "the simulated store failed a commit: %s", failure);
      durableAt.accept(committed.commitTimestamp());
    });
    scheduleWriters();
  }

  @Override
  public void prepare(PreparedTransaction part, Runnable durable) {
    store.prepare(part).whenComplete((ignored, failure) -> {
      Invariants.check(failure == null, "the simulated store failed a prepare: %s", failure);
      durable.run();
    });
    scheduleWriters();
  }

  @Override
  public void abandonPrepared(long transactionId, EntityId entity) {
    store.abandonPrepared(transactionId, entity);
    scheduleWriters();
  }

  @Override
  public void persistDecision(DecidedTransaction decision, Runnable durable) {
    store.persistDecision(decision).whenComplete((ignored, failure) -> {
      Invariants.check(failure == null, "the simulated store failed a decision: %s", failure);
      durable.run();
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
    disk = disk.crash(scheduler.random(), keepUnsyncedPrefixProbability);
  }

  @Override
  public void restart() {
    open();
    if (mutation == SimulatedNode.Mutation.SKIP_IN_DOUBT_COMMITS) {
      return; // the deliberate breakage: what a crash left prepared stays in doubt
    }
    InDoubtResolution resolution = store.resolveInDoubtTransactions((part, current) -> {
      redone++;
      return TurnEvaluator.redo(part.entity(), typeOf.apply(part.entity()), current,
          TurnCodec.decode(part.redo()), part.transactionId(), 0, TurnLimits.DEFAULTS);
    });
    resolvedInDoubt += resolution.toCommit().size() + resolution.toAbort().size();
  }

  @Override
  public void jumpClock(long deltaMillis) {
    clockOffsetMillis += deltaMillis;
  }

  @Override
  public Map<Long, Map<EntityId, Long>> committedWrites() {
    Map<Long, Map<EntityId, Long>> writes = new LinkedHashMap<>();
    for (byte[] value : disk.durableJournalValuesEverWritten()) {
      TransactionRecord record = Codec.decodeRecord(value);
      for (EntityWrite write : record.writes()) {
        writes.computeIfAbsent(record.transactionId(), ignored -> new LinkedHashMap<>())
            .put(write.entity(), record.commitTimestamp());
      }
    }
    return writes;
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
    if (store != null) {
      StorageStatistics current = store.statistics();
      rounds += current.checkpointRounds();
      objects += current.objectCheckpoints();
      truncated += current.truncatedRecords();
    }
    return new Counters(rounds, objects, truncated);
  }

  /** Keeps the counters of a store about to be dropped (each store counts from zero). */
  private void countStatistics() {
    StorageStatistics statistics = store.statistics();
    checkpointRounds += statistics.checkpointRounds();
    objectCheckpoints += statistics.objectCheckpoints();
    truncatedRecords += statistics.truncatedRecords();
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
    return worked;
  }
}
