package dev.troupe.sim;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Operation;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.time.Clock;
import dev.troupe.model.time.HybridLogicalClock;
import dev.troupe.storage.DecidedTransaction;
import dev.troupe.storage.InDoubtResolution;
import dev.troupe.storage.PreparedTransaction;
import dev.troupe.txn.TurnCodec;
import dev.troupe.txn.TurnEvaluator;
import dev.troupe.txn.TurnLimits;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.LongConsumer;

/**
 * A minimal journal for a {@link SimulatedNode}: record objects on a {@link SimulatedLog}, synced in
 * group commits, replayed at restart by the simulator's own code. It gives what the real engine
 * cannot: torn and corrupted tails cut by checksums, and the shell mutations that need a hand in
 * recovery ({@code SKIP_IN_DOUBT_COMMITS}, {@code SKIP_CLOCK_RECOVERY}, {@code
 * ACKNOWLEDGE_BEFORE_SYNC}). Recovery decides with the store's pure {@link InDoubtResolution} and
 * redoes PSAC parts with {@link TurnEvaluator#redo}, as the real store and {@code Troupe} do.
 *
 * <p><b>Records</b> (in the order written): {@code Committed(tx, entity, operations, timestamp,
 * resolvesPrepared)}, {@code Prepared(part)}, {@code Abandoned(tx, entity)}, {@code
 * Decided(decision)}, {@code Forgotten(tx)}. The log holds their sequence numbers, so torn and
 * corrupted tails cut the record list exactly where the real log's checksums would.
 */
final class SimulatedJournal implements NodeStorage {
  private sealed interface JournalRecord {}

  private record Committed(long transactionId, EntityId entity, List<Operation> operations,
      long commitTimestamp, boolean resolvesPrepared) implements JournalRecord {}

  private record Prepared(PreparedTransaction part) implements JournalRecord {}

  private record Abandoned(long transactionId, EntityId entity) implements JournalRecord {}

  private record Decided(DecidedTransaction decision) implements JournalRecord {}

  private record Forgotten(long transactionId) implements JournalRecord {}

  /** The clock ceiling was raised: every timestamp issued before is below it (as the store's). */
  private record ClockCeilingRaised(long ceiling) implements JournalRecord {}

  /** How far ahead of the clock the ceiling is set, as the store's default. */
  private static final long CLOCK_CEILING_MILLIS = 1_000;

  private record Part(long transactionId, EntityId entity) {}

  private final Scheduler scheduler;
  private final Timers timers;
  private final Function<EntityId, CompiledType> typeOf;
  private final long syncMillis;
  private final double tornProbability;
  private final double corruptProbability;
  private final SimulatedNode.Mutation mutation;

  // ---- the disk: survives crashes
  private final SimulatedLog log = new SimulatedLog();
  private final List<JournalRecord> written = new ArrayList<>();

  // ---- the incarnation: lost on a crash
  private final Map<EntityId, EntityState> durable = new HashMap<>();
  private List<Runnable> awaitingSync = new ArrayList<>();
  /** Run by the next group commit's sync, which schedules none itself (written, not synced). */
  private List<Runnable> durableAtNextSync = new ArrayList<>();
  private final List<Runnable> acknowledgedUnsynced = new ArrayList<>();
  private boolean syncScheduled;
  /**
   * The production hybrid logical clock over this node's physical clock (simulated time plus an
   * offset that clock jumps move). A new one per incarnation; recovery advances it past
   * everything the journal holds.
   */
  private Clock clock;
  private final int nodeId;
  private long clockCeiling;
  private long clockOffsetMillis;
  private long resolvedInDoubt;
  private InDoubtResolution lastResolution;
  private final Placement placement;
  private long redone;

  SimulatedJournal(Scheduler scheduler, Timers timers, Function<EntityId, CompiledType> typeOf,
      long syncMillis, double tornProbability, double corruptProbability,
      SimulatedNode.Mutation mutation) {
    this(scheduler, timers, typeOf, syncMillis, tornProbability, corruptProbability, mutation, 0,
        Placement.ALONE);
  }

  /**
   * @param nodeId the node's id: its clock puts it in every timestamp
   * @param placement which transactions and entities are this node's, in a cluster
   */
  SimulatedJournal(Scheduler scheduler, Timers timers, Function<EntityId, CompiledType> typeOf,
      long syncMillis, double tornProbability, double corruptProbability,
      SimulatedNode.Mutation mutation, int nodeId, Placement placement) {
    this.nodeId = nodeId;
    this.placement = placement;
    this.scheduler = scheduler;
    this.timers = timers;
    this.typeOf = typeOf;
    this.syncMillis = syncMillis;
    this.tornProbability = tornProbability;
    this.corruptProbability = corruptProbability;
    this.mutation = mutation;
    this.clock = newClock();
  }

  @Override
  public long newTransactionId() {
    return tick();
  }

  /** A tick below the durable clock ceiling, raised (one synced record) when reached. */
  private long tick() {
    long timestamp = clock.tick();
    if (timestamp >= clockCeiling) {
      // From physical time, as the store does: not ever further ahead with each restart.
      clockCeiling = Math.max(timestamp + 1, HybridLogicalClock.fromMillis(
          Math.max(0, scheduler.nowMillis() + clockOffsetMillis) + CLOCK_CEILING_MILLIS));
      append(new ClockCeilingRaised(clockCeiling));
      log.sync();
    }
    return timestamp;
  }

  @Override
  public void preload(long transactionId, EntityId entity, List<Operation> operations) {
    long timestamp = tick();
    append(new Committed(transactionId, entity, operations, timestamp, false));
    log.sync();
    durable.put(entity, durable(entity).apply(operations, timestamp, 0));
  }

  @Override
  public dev.troupe.model.TroupeException commit(long transactionId, EntityId entity,
      List<Operation> operations, boolean resolvesPrepared, boolean exemptFromQueueLimit,
      LongConsumer durableAt, java.util.function.Consumer<Throwable> failed) {
    long timestamp = tick();
    append(new Committed(transactionId, entity, operations, timestamp, resolvesPrepared));
    Runnable durableNow = () -> {
      durable.put(entity, durable(entity).apply(operations, timestamp, 0));
      durableAt.accept(timestamp);
    };
    if (mutation == SimulatedNode.Mutation.ACKNOWLEDGE_BEFORE_SYNC) {
      acknowledgeUnsynced(durableNow);
    } else {
      awaitSync(durableNow);
    }
    return null; // the simulator's journal never refuses nor fails: it has no damage
  }

  @Override
  public void prepare(PreparedTransaction part, Runnable durableNow,
      java.util.function.Consumer<Throwable> failed) {
    append(new Prepared(part));
    if (placement.coordinatedHere().test(part.transactionId())) {
      // As the real store (RocksStore#prepare, issue 20): the vote goes to this node's own
      // coordinator, whose decision is appended after it and made durable by a later sync (the
      // log keeps a prefix), so the record needs no sync of its own.
      timers.later(0, "prepared written", durableNow);
    } else {
      awaitSync(durableNow);
    }
  }

  @Override
  public void abandonPrepared(long transactionId, EntityId entity) {
    append(new Abandoned(transactionId, entity));
  }

  @Override
  public void persistDecision(DecidedTransaction decision, Runnable durableNow,
      java.util.function.Consumer<Throwable> failed) {
    append(new Decided(decision));
    awaitSync(durableNow);
  }

  /**
   * As the real store: appended and acknowledged without a sync of its own; the participants'
   * commits, appended after it and synced, make it durable (the log keeps a prefix).
   */
  @Override
  public void persistDecisionBeforeLocalCommits(DecidedTransaction decision, Runnable written,
      Runnable durable, java.util.function.Consumer<Throwable> failed) {
    append(new Decided(decision));
    durableAtNextSync.add(durable);
    timers.later(0, "decision written", written);
  }

  @Override
  public void forgetDecision(DecidedTransaction decision) {
    append(new Forgotten(decision.transactionId()));
  }

  @Override
  public EntityState durable(EntityId entity) {
    return durable.getOrDefault(entity, EntityState.ABSENT);
  }

  @Override
  public void crash() {
    durable.clear();
    awaitingSync = new ArrayList<>();
    durableAtNextSync = new ArrayList<>();
    acknowledgedUnsynced.clear();
    syncScheduled = false;
    log.crash(scheduler.random(), tornProbability, corruptProbability);
  }

  @Override
  public boolean restart() {
    clock = newClock();
    clockCeiling = 0;
    int surviving = log.recover().size();
    written.subList(surviving, written.size()).clear();
    Map<Part, PreparedTransaction> prepared = new LinkedHashMap<>();
    Map<Long, DecidedTransaction> decided = new LinkedHashMap<>();
    for (JournalRecord record : written) {
      switch (record) {
        case Committed committed -> {
          advanceClockPast(committed.commitTimestamp());
          durable.put(committed.entity(), durable(committed.entity())
              .apply(committed.operations(), committed.commitTimestamp(), 0));
          if (committed.resolvesPrepared()) {
            prepared.remove(new Part(committed.transactionId(), committed.entity()));
          }
        }
        case Prepared part -> prepared.put(
            new Part(part.part().transactionId(), part.part().entity()), part.part());
        case Abandoned abandoned ->
            prepared.remove(new Part(abandoned.transactionId(), abandoned.entity()));
        case Decided decision ->
            decided.put(decision.decision().transactionId(), decision.decision());
        case Forgotten forgotten -> decided.remove(forgotten.transactionId());
        case ClockCeilingRaised raised -> {}
      }
      advanceClockPast(lastIssuedBy(record));
    }
    InDoubtResolution resolution = InDoubtResolution.of(
        new ArrayList<>(prepared.values()), new ArrayList<>(decided.values()),
        placement.coordinatedHere(), placement.hostedHere());
    lastResolution = resolution;
    // In the resolution's order, one at a time, as the real store applies it.
    for (PreparedTransaction part : resolution.toCommit()) {
      resolvedInDoubt++;
      if (mutation == SimulatedNode.Mutation.SKIP_IN_DOUBT_COMMITS) {
        append(new Abandoned(part.transactionId(), part.entity()));
        continue;
      }
      List<Operation> operations = part.operations();
      if (part.needsRedo()) {
        redone++;
        operations = TurnEvaluator.redo(part.entity(), typeOf.apply(part.entity()),
            durable(part.entity()), TurnCodec.decode(part.redo()), part.transactionId(), 0,
            TurnLimits.DEFAULTS);
      }
      if (part.needsRedo() && operations.isEmpty()) {
        // As the real store: a redo that changes nothing only removes its prepared record.
        append(new Abandoned(part.transactionId(), part.entity()));
      } else {
        long timestamp = tick();
        append(new Committed(part.transactionId(), part.entity(), operations, timestamp, true));
        durable.put(part.entity(), durable(part.entity()).apply(operations, timestamp, 0));
      }
    }
    for (PreparedTransaction part : resolution.toAbort()) {
      resolvedInDoubt++;
      append(new Abandoned(part.transactionId(), part.entity()));
    }
    for (DecidedTransaction decision : resolution.decisionsToForget()) {
      append(new Forgotten(decision.transactionId()));
    }
    log.sync();
    return true;
  }

  @Override
  public String damage() {
    // Options refuse the damage fault with this storage: its records are objects, not stored bytes.
    throw new UnsupportedOperationException("the simulator's journal is never damaged");
  }

  @Override
  public boolean failed() {
    return false;
  }

  @Override
  public boolean degradedDuring(long fromMillis, long toMillis) {
    return false;
  }

  @Override
  public java.util.Set<EntityId> damagedEntities() {
    return java.util.Set.of();
  }

  @Override
  public void jumpClock(long deltaMillis) {
    clockOffsetMillis += deltaMillis;
  }

  @Override
  public Map<Long, Map<EntityId, CommittedWrite>> committedWrites() {
    Map<Long, Map<EntityId, CommittedWrite>> writes = new LinkedHashMap<>();
    for (JournalRecord record : written) {
      if (record instanceof Committed committed) {
        writes.computeIfAbsent(committed.transactionId(), ignored -> new LinkedHashMap<>())
            .put(committed.entity(),
                CommittedWrite.of(committed.commitTimestamp(), committed.operations()));
      }
    }
    return writes;
  }

  @Override
  public InDoubtResolution lastResolution() {
    return lastResolution;
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
    return new Counters(0, 0, 0, 0, 0, 0, 0); // no checkpoints: recovery replays the whole journal
  }

  private void append(JournalRecord record) {
    written.add(record);
    log.append(Long.toString(written.size()).getBytes(StandardCharsets.UTF_8));
  }

  /** Runs {@code then} once everything appended so far is synced (a group commit). */
  private void awaitSync(Runnable then) {
    awaitingSync.add(then);
    if (syncScheduled) {
      return;
    }
    syncScheduled = true;
    timers.later(syncMillis, "fsync", () -> {
      syncScheduled = false;
      log.sync();
      List<Runnable> done = awaitingSync;
      awaitingSync = new ArrayList<>();
      List<Runnable> decisions = durableAtNextSync;
      durableAtNextSync = new ArrayList<>();
      decisions.forEach(Runnable::run);
      done.forEach(Runnable::run);
    });
  }

  /** The {@code ACKNOWLEDGE_BEFORE_SYNC} path: in order, at once, without a sync. */
  private void acknowledgeUnsynced(Runnable then) {
    acknowledgedUnsynced.add(then);
    if (acknowledgedUnsynced.size() == 1) {
      timers.later(0, "commits acknowledged before sync", () -> {
        List<Runnable> done = new ArrayList<>(acknowledgedUnsynced);
        acknowledgedUnsynced.clear();
        done.forEach(Runnable::run);
      });
    }
  }

  private void advanceClockPast(long timestamp) {
    if (mutation != SimulatedNode.Mutation.SKIP_CLOCK_RECOVERY) {
      clock.advancePast(timestamp);
    }
  }

  private Clock newClock() {
    return new HybridLogicalClock(
        () -> Math.max(0, scheduler.nowMillis() + clockOffsetMillis), nodeId);
  }

  /** A bound on the timestamps a record shows were issued: recovery advances the clock past it. */
  private static long lastIssuedBy(JournalRecord record) {
    return switch (record) {
      case Committed committed -> committed.transactionId();
      case Prepared prepared -> prepared.part().transactionId();
      case Abandoned abandoned -> abandoned.transactionId();
      case Decided decided -> decided.decision().transactionId();
      case Forgotten forgotten -> forgotten.transactionId();
      case ClockCeilingRaised raised -> raised.ceiling() - 1; // everything issued was below
    };
  }
}
