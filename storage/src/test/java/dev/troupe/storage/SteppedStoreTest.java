package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.node.TextNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import dev.troupe.model.time.HybridLogicalClock;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The real engine on a {@link MemoryDisk} in {@link RocksStore.Execution#STEPPED} mode: nothing
 * runs until the test drives it, so crashes land between any two passes of the writers, and what
 * survives is checked against the journal records the disk saw become durable.
 */
class SteppedStoreTest {
  /** Never touched: the disk is in memory. */
  private static final Path NO_DIRECTORY = Path.of("memory-disk");
  private static final int ENTITY_COUNT = 16;
  private static final Store.Redo NO_REDO = (part, state) -> {
    throw new AssertionError("no part needs a redo here");
  };

  private final List<EntityId> entities = new ArrayList<>();

  SteppedStoreTest() {
    for (int i = 0; i < ENTITY_COUNT; i++) {
      entities.add(new EntityId("Account", "a" + i));
    }
  }

  /** Tiny thresholds: object checkpoints, rounds and truncation all happen within a few commits. */
  private static StorageSettings settings(Durability durability) {
    return Fixtures.settings(NO_DIRECTORY)
        .withDurability(durability)
        .withCheckpoints(2, 10, 5)
        .withCacheMaxWeightBytes(1_500)
        .withHistoryRetentionMillis(0);
  }

  private static RocksStore open(StorageSettings settings, FakeClock clock, KeyValueDisk disk) {
    return RocksStore.open(settings, clock, disk, RocksStore.Execution.STEPPED);
  }

  /** Runs the store's pending work until it has none. */
  private static void settle(RocksStore store) {
    for (int passes = 0; store.runPendingWork(); passes++) {
      if (passes > 1_000_000) {
        fail("the stepped store never ran out of work");
      }
    }
  }

  private static List<Operation> randomOperations(SplittableRandom random) {
    int kind = random.nextInt(20);
    if (kind < 12) {
      return List.of(new Operation.Increment("n", random.nextLong(-5, 10)));
    } else if (kind < 16) {
      return List.of(new Operation.Assign("name", TextNode.valueOf("v" + random.nextInt(100))),
          new Operation.Increment("n", 1));
    } else if (kind < 19) {
      return List.of(new Operation.DeleteKey("name"));
    }
    return List.of(new Operation.DeleteEntity());
  }

  // ------------------------------------------------------------------------ the model of the disk

  /** Every journal record that became durable on {@code disk}, in commit timestamp order. */
  private static List<TransactionRecord> durableRecords(MemoryDisk disk) {
    List<TransactionRecord> records = new ArrayList<>();
    for (byte[] value : disk.durableJournalValuesEverWritten()) {
      records.add(Codec.decodeRecord(value));
    }
    records.sort(Comparator.comparingLong(TransactionRecord::commitTimestamp));
    return records;
  }

  /** Entity states as of {@code timestamp}, by replaying the records in commit order. */
  private static Map<EntityId, EntityState> statesAt(List<TransactionRecord> records, long timestamp) {
    Map<EntityId, EntityState> states = new HashMap<>();
    for (TransactionRecord record : records) {
      if (record.commitTimestamp() > timestamp) {
        break;
      }
      Map<EntityId, List<Operation>> byEntity = new HashMap<>();
      for (EntityWrite write : record.writes()) {
        byEntity.computeIfAbsent(write.entity(), e -> new ArrayList<>()).addAll(write.operations());
      }
      byEntity.forEach((entity, operations) -> states.put(entity,
          states.getOrDefault(entity, EntityState.ABSENT)
              .apply(operations, record.commitTimestamp(), record.originDc())));
    }
    return states;
  }

  // ------------------------------------------------------------------------------------ the tests

  @Test
  void nothingHappensUntilTheDriverRunsThePendingWork() {
    Set<Thread> before = storageThreads();
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    RocksStore store = open(settings(Durability.SYNC), clock, new MemoryDisk());
    assertEquals(before, storageThreads(), "a stepped store starts no thread");
    EntityId entity = entities.get(0);
    CompletableFuture<Committed> first = store.commit(store.newTransactionId(),
        List.of(Fixtures.write(entity, new Operation.Increment("n", 5))));
    CompletableFuture<Committed> second = store.commit(store.newTransactionId(),
        List.of(Fixtures.write(entity, new Operation.Increment("n", 2))));
    assertFalse(first.isDone());
    assertEquals(0, store.statistics().commits());
    assertEquals(0, Fixtures.counter(store.read(entity), "n"), "nothing written yet");
    assertTrue(store.runPendingWork());
    assertTrue(first.isDone() && second.isDone(), "one pass commits the queued group");
    assertEquals(1, store.statistics().groupCommits());
    assertTrue(first.join().commitTimestamp() < second.join().commitTimestamp());
    assertEquals(7, Fixtures.counter(store.read(entity), "n"));
    settle(store);
    assertFalse(store.runPendingWork(), "settled");
    store.close();
    assertFalse(store.runPendingWork(), "a closed store has nothing to run");
    Path directory = Fixtures.createTempDirectory();
    try (RocksStore threaded = RocksStore.open(Fixtures.settings(directory), clock)) {
      assertThrows(IllegalStateException.class, threaded::runPendingWork,
          "only a stepped store is driven from outside");
    } finally {
      Fixtures.deleteRecursively(directory);
    }
  }

  private static Set<Thread> storageThreads() {
    Set<Thread> threads = new HashSet<>();
    for (Thread thread : Thread.getAllStackTraces().keySet()) {
      if (thread.getName().startsWith("troupe-storage") && thread.isAlive()) {
        threads.add(thread);
      }
    }
    return threads;
  }

  @Test
  void truncationYieldsToWaitingReadsYetCommitsDoNotAndItCompletes() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    // One partition, one round over everything, then a truncation of several slices.
    StorageSettings settings = Fixtures.settings(NO_DIRECTORY).withPartitions(1)
        .withCheckpoints(1_000, 10_000, 100_000).withHistoryRetentionMillis(0)
        .withMaintenanceYieldMillis(50);
    RocksStore store = open(settings, clock, new MemoryDisk());
    int records = 3_008; // 188 per entity
    for (int i = 0; i < records; i++) {
      store.commit(store.newTransactionId(), List.of(Fixtures.write(
          entities.get(i % ENTITY_COUNT), new Operation.Increment("n", 1))));
    }
    settle(store);
    assertEquals(0, store.statistics().truncatedRecords());
    // A cold read is waiting for storage, and the round is due.
    store.maintenancePacing.readStarted();
    clock.advance(10_001);
    for (int pass = 0; pass < 10; pass++) {
      store.runPendingWork();
    }
    assertEquals(1_024, store.statistics().truncatedRecords(),
        "the round ran whole, truncation one slice, then it waits for its pause");
    assertEquals(1, store.statistics().checkpointRounds());
    CompletableFuture<Committed> commit = store.commit(store.newTransactionId(),
        List.of(Fixtures.write(entities.get(0), new Operation.Increment("n", 1))));
    assertTrue(store.runPendingWork());
    assertTrue(commit.isDone(), "a commit does not wait for the yield");
    assertEquals(1_024, store.statistics().truncatedRecords());
    clock.advance(50);
    settle(store);
    assertEquals(2_048, store.statistics().truncatedRecords(), "one more slice per pause");
    store.maintenancePacing.readEnded(clock.getAsLong());
    settle(store);
    assertEquals(2_048, store.statistics().truncatedRecords(), "the read ended just now");
    clock.advance(50);
    settle(store);
    assertEquals(records, store.statistics().truncatedRecords(),
        "no read waiting: the rest at once, the same records as without a yield");
    for (int i = 0; i < ENTITY_COUNT; i++) {
      assertEquals(records / ENTITY_COUNT + (i == 0 ? 1 : 0),
          Fixtures.counter(store.read(entities.get(i)), "n"));
    }
    store.close();
  }

  @Test
  void statesFollowTheModelThroughRoundsTruncationAndEviction() {
    SplittableRandom random = new SplittableRandom(7);
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(settings(Durability.SYNC), clock, disk);
    List<CompletableFuture<Committed>> futures = new ArrayList<>();
    for (int i = 0; i < 1_500; i++) {
      EntityId entity = entities.get(random.nextInt(ENTITY_COUNT));
      futures.add(store.commit(store.newTransactionId(),
          List.of(new EntityWrite(entity, randomOperations(random)))));
      if (random.nextInt(4) == 0) {
        store.runPendingWork();
      }
      if (random.nextInt(10) == 0) {
        clock.advance(random.nextInt(1, 8));
      }
      if (i % 100 == 99) {
        settle(store);
        assertMatchesTheDurableRecords(store, disk, random, "commit " + i);
      }
    }
    settle(store);
    for (CompletableFuture<Committed> future : futures) {
      assertNotNull(future.getNow(null), "every commit completed");
    }
    StorageStatistics statistics = store.statistics();
    assertEquals(1_500, statistics.commits());
    assertTrue(statistics.checkpointRounds() > 10, statistics.toString());
    assertTrue(statistics.objectCheckpoints() > 100, statistics.toString());
    assertTrue(statistics.truncatedRecords() > 1_000, statistics.toString());
    assertTrue(statistics.cacheMisses() > 10, "states were evicted and materialized: " + statistics);
    store.checkpointNow();
    assertMatchesTheDurableRecords(store, disk, random, "after checkpointNow");
    store.close();
    RocksStore reopened = open(settings(Durability.SYNC), clock, disk.restart());
    assertMatchesTheDurableRecords(reopened, disk, random, "after reopening");
    reopened.close();
  }

  /**
   * Every entity's latest state, its state at the current timestamp and at a random retained
   * timestamp equal the replay of the durable journal records. The store must be settled and, under
   * ASYNC durability, its write-ahead log flushed.
   */
  private void assertMatchesTheDurableRecords(
      RocksStore store, MemoryDisk disk, SplittableRandom random, String where) {
    List<TransactionRecord> records = durableRecords(disk);
    long now = store.currentTimestamp();
    Map<EntityId, EntityState> latest = statesAt(records, Long.MAX_VALUE);
    for (EntityId entity : entities) {
      EntityState expected = latest.getOrDefault(entity, EntityState.ABSENT);
      assertEquals(expected, store.read(entity), where + ": read of " + entity);
      assertEquals(expected, store.readAt(entity, now), where + ": readAt(now) of " + entity);
      long timestamp = retainedTimestamp(records, store.historyHorizon(store.partitionOf(entity)),
          random);
      assertEquals(statesAt(records, timestamp).getOrDefault(entity, EntityState.ABSENT),
          store.readAt(entity, timestamp), where + ": readAt(" + timestamp + ") of " + entity);
    }
  }

  /**
   * A timestamp readAt must serve: the horizon, or a commit timestamp at or after it, or just
   * before one (uniform timestamps would nearly all fall before the first commit).
   */
  private static long retainedTimestamp(
      List<TransactionRecord> records, long horizon, SplittableRandom random) {
    List<Long> candidates = new ArrayList<>();
    candidates.add(horizon);
    for (TransactionRecord record : records) {
      if (record.commitTimestamp() - 1 >= horizon) {
        candidates.add(record.commitTimestamp() - 1);
      }
      if (record.commitTimestamp() >= horizon) {
        candidates.add(record.commitTimestamp());
      }
    }
    return candidates.get(random.nextInt(candidates.size()));
  }

  @Test
  void aCrashLosesNoAcknowledgedCommit() {
    SplittableRandom random = new SplittableRandom(11);
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(settings(Durability.SYNC), clock, disk);
    Set<Long> acknowledged = new HashSet<>();
    for (int i = 0; i < 300; i++) {
      EntityId entity = entities.get(random.nextInt(ENTITY_COUNT));
      store.commit(store.newTransactionId(),
              List.of(Fixtures.write(entity, new Operation.Increment("n", 1))))
          .thenAccept(committed -> acknowledged.add(committed.transactionId()));
      if (random.nextInt(3) == 0) {
        store.runPendingWork();
      }
      clock.advance(random.nextInt(0, 3));
    }
    store.runPendingWork();
    assertTrue(disk.unsyncedBatches() > 0 || store.statistics().checkpointRounds() > 0);
    // Power loss; the old store is abandoned with work still queued.
    disk = disk.crash(random, 0.5);
    RocksStore recovered = open(settings(Durability.SYNC), clock, disk);
    assertTrue(recovered.resolveInDoubtTransactions(NO_REDO).isEmpty());
    Set<Long> durable = new HashSet<>();
    for (TransactionRecord record : durableRecords(disk)) {
      durable.add(record.transactionId());
    }
    assertTrue(durable.containsAll(acknowledged), "acknowledged commits are durable");
    assertMatchesTheDurableRecords(recovered, disk, random, "after the crash");
    recovered.close();
  }

  @Test
  void twoPhaseCommitStateAndInDoubtResolutionNeedNoThreads() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    EntityId a = entities.get(0);
    EntityId b = entities.get(1);
    EntityId c = entities.get(2);
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(settings(Durability.SYNC), clock, disk);
    CompletableFuture<Committed> opening = store.commit(store.newTransactionId(),
        List.of(Fixtures.write(a, new Operation.Increment("n", 100))));
    CompletableFuture<Void> prepareA =
        store.prepare(new PreparedTransaction(1, a, List.of(new Operation.Increment("n", -30))));
    CompletableFuture<Void> prepareB =
        store.prepare(new PreparedTransaction(1, b, List.of(new Operation.Increment("n", 30))));
    assertFalse(prepareA.isDone() || prepareB.isDone());
    settle(store);
    opening.join();
    prepareA.join();
    prepareB.join();
    CompletableFuture<Void> decision = store.persistDecision(new DecidedTransaction(1, List.of(a, b)));
    store.prepare(new PreparedTransaction(2, c, List.of(new Operation.Increment("n", 5))));
    // PSAC parts: redone in arrival order, 0 -> 3 -> 6 as in TwoPhaseCommitStateTest.
    store.prepare(new PreparedTransaction(11, c, List.of(), new byte[] {'x', '2'}, 2));
    store.prepare(new PreparedTransaction(10, c, List.of(), new byte[] {'+', '3'}, 1));
    store.persistDecision(new DecidedTransaction(10, List.of(c)));
    store.persistDecision(new DecidedTransaction(11, List.of(c)));
    settle(store);
    decision.join();
    assertEquals(100, Fixtures.counter(store.read(a), "n"), "prepared is not visible");

    disk = disk.crash(new SplittableRandom(1), 0.5);
    RocksStore recovered = open(settings(Durability.SYNC), clock, disk);
    // Blocks on futures only the writers complete: it runs their work itself.
    InDoubtResolution resolution = recovered.resolveInDoubtTransactions((part, state) -> {
      long current = Fixtures.counter(state, "n");
      long next = part.redo()[0] == 'x' ? current * (part.redo()[1] - '0')
          : current + (part.redo()[1] - '0');
      return List.of(new Operation.Increment("n", next - current));
    });
    assertEquals(4, resolution.toCommit().size());
    assertEquals(List.of(2L),
        resolution.toAbort().stream().map(PreparedTransaction::transactionId).toList());
    assertEquals(70, Fixtures.counter(recovered.read(a), "n"));
    assertEquals(30, Fixtures.counter(recovered.read(b), "n"));
    assertEquals(6, Fixtures.counter(recovered.read(c), "n"));
    assertTrue(recovered.resolveInDoubtTransactions(NO_REDO).isEmpty(), "resolved for good");
    recovered.checkpointNow();
    recovered.close();

    RocksStore again = open(settings(Durability.SYNC), clock, disk.restart());
    assertTrue(again.resolveInDoubtTransactions(NO_REDO).isEmpty());
    assertEquals(70, Fixtures.counter(again.read(a), "n"), "not applied twice");
    again.close();
  }

  @Test
  void transactionIdsInDoubtAreNeverIssuedAgainAfterTheClockWentBack() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(settings(Durability.SYNC), clock, disk);
    EntityId entity = entities.get(0);
    CompletableFuture<Committed> first =
        store.commit(store.newTransactionId(), List.of(Fixtures.write(entity,
            new Operation.Increment("n", 1))));
    settle(store);
    first.join();
    // A transaction starts after the last commit (its id is the newest tick), prepares and
    // decides; then the node crashes and comes back with its clock a second behind.
    clock.advance(500);
    long inDoubt = store.newTransactionId();
    store.prepare(new PreparedTransaction(inDoubt, entity, List.of(new Operation.Increment("n", 2))));
    store.persistDecision(new DecidedTransaction(inDoubt, List.of(entity)));
    settle(store);
    disk = disk.crash(new SplittableRandom(3), 0);
    clock.advance(-1_000);
    RocksStore recovered = open(settings(Durability.SYNC), clock, disk);
    assertTrue(recovered.newTransactionId() > inDoubt, "an id still in doubt was issued again");
    assertEquals(1, recovered.resolveInDoubtTransactions(NO_REDO).toCommit().size());
    assertEquals(3, Fixtures.counter(recovered.read(entity), "n"));
    assertTrue(recovered.read(entity).version() > inDoubt,
        "an in-doubt part committed below its own transaction id");
    recovered.close();
  }

  @Test
  void noTimestampIsIssuedTwiceAcrossRestartsEvenWhenTheClockGoesBack() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(settings(Durability.SYNC), clock, disk);
    // Ids that leave nothing in the journal: transactions started and lost in the crash.
    long issued = 0;
    for (int i = 0; i < 1_000; i++) {
      clock.advance(3);
      issued = Math.max(issued, store.newTransactionId());
    }
    disk = disk.crash(new SplittableRandom(5), 0);
    clock.advance(-5_000);
    RocksStore recovered = open(settings(Durability.SYNC), clock, disk);
    long next = recovered.newTransactionId();
    assertTrue(next > issued, next + " after " + issued + " was issued before the crash");
    // Ahead of the clock by at most the ceiling distance (plus the time the clock went back).
    assertTrue(HybridLogicalClock.toMillis(next) <= clock.getAsLong() + 5_000
        + StorageSettings.DEFAULT_CLOCK_CEILING_MILLIS, "too far ahead: " + next);
    recovered.close();
  }

  @Test
  void quickRestartsDoNotPushTheClockFurtherAhead() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    for (int restart = 0; restart < 5; restart++) {
      RocksStore store = open(settings(Durability.SYNC), clock, disk);
      long issued = store.newTransactionId();
      assertTrue(HybridLogicalClock.toMillis(issued)
              <= clock.getAsLong() + StorageSettings.DEFAULT_CLOCK_CEILING_MILLIS,
          "restart " + restart + ": " + HybridLogicalClock.toMillis(issued) + " ms, clock at "
              + clock.getAsLong());
      disk = disk.crash(new SplittableRandom(restart), 0);
    }
  }

  @Test
  void aContinuationCannotDriveOrWaitForTheStoreThatRunsIt() {
    RocksStore store =
        open(settings(Durability.SYNC), new FakeClock(Fixtures.START_MILLIS), new MemoryDisk());
    AtomicReference<Throwable> refused = new AtomicReference<>();
    store.commit(store.newTransactionId(),
            List.of(Fixtures.write(entities.get(0), new Operation.Increment("n", 1))))
        .thenRun(() -> {
          try {
            store.checkpointNow();
          } catch (Throwable t) {
            refused.set(t);
          }
        });
    settle(store);
    assertInstanceOf(IllegalStateException.class, refused.get());
    store.close();
  }

  /**
   * Many seeds of random commits, two-phase-commit parts, pins, clock moves, checkpoints, write-
   * ahead-log flushes and crashes at random points, under both durabilities: recovery never fails,
   * no acknowledged (and, under ASYNC, flushed) commit or decision is lost, every state and every
   * retained past state equals the replay of the durable journal, and a decided part is applied
   * exactly once.
   */
  @Test
  void randomCrashesNeverLoseAnAcknowledgedCommit() {
    long[] totals = new long[4];
    for (long seed = 1; seed <= 200; seed++) {
      CrashRun run = new CrashRun(seed);
      try {
        run.run();
      } catch (AssertionError | RuntimeException e) {
        throw new AssertionError("seed " + seed + ": " + e.getMessage(), e);
      }
      totals[0] += run.unsyncedBatchesAtCrashes;
      totals[1] += run.checkpointRounds;
      totals[2] += run.truncatedRecords;
      totals[3] += run.cacheMisses;
    }
    // The loop exercises what it claims to: lost writes, rounds, truncation, eviction.
    for (long total : totals) {
      assertTrue(total > 200, "unsynced batches at crashes, rounds, truncated records, cache"
          + " misses: " + java.util.Arrays.toString(totals));
    }
  }

  @Test
  void theSameSeedReplaysTheSameJournal() {
    for (long seed : new long[] {3, 4}) {
      CrashRun first = new CrashRun(seed);
      first.run();
      CrashRun second = new CrashRun(seed);
      second.run();
      List<byte[]> expected = first.disk.durableJournalValuesEverWritten();
      List<byte[]> actual = second.disk.durableJournalValuesEverWritten();
      assertEquals(expected.size(), actual.size(), "seed " + seed);
      for (int i = 0; i < expected.size(); i++) {
        assertTrue(java.util.Arrays.equals(expected.get(i), actual.get(i)),
            "seed " + seed + ": journal record " + i + " differs");
      }
    }
  }

  /** One seed of the crash loop. */
  private final class CrashRun {
    private final long seed;
    private final SplittableRandom random;
    private final Durability durability;
    private final StorageSettings settings;
    private final FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    private MemoryDisk disk = new MemoryDisk();
    private RocksStore store;
    /** Transactions whose commit was acknowledged since the last write-ahead-log flush. */
    private final Set<Long> acknowledgedSinceFlush = new HashSet<>();
    /** Acknowledged and known durable: they must survive every crash. */
    private final Set<Long> mustSurvive = new HashSet<>();
    /** Decided two-phase transactions known durable, with their participants. */
    private final Map<Long, List<EntityId>> decisionsThatMustSurvive = new HashMap<>();
    private final Map<Long, List<EntityId>> decisionsSinceFlush = new HashMap<>();
    /** Every two-phase transaction that prepared, with its participants: all or nothing. */
    private final Map<Long, Set<EntityId>> twoPhaseParticipants = new HashMap<>();
    private final List<Store.Snapshot> pins = new ArrayList<>();
    private final Map<Store.Snapshot, Map<EntityId, EntityState>> statesAtPins = new HashMap<>();
    /** Failures seen by continuations (an assertion thrown there would only fail a future). */
    private final List<Throwable> unexpectedFailures = new ArrayList<>();
    private TwoPhaseRun transaction;
    private int crashes;
    long unsyncedBatchesAtCrashes;
    long checkpointRounds;
    long truncatedRecords;
    long cacheMisses;

    CrashRun(long seed) {
      this.seed = seed;
      this.random = new SplittableRandom(seed);
      this.durability = seed % 3 == 0 ? Durability.ASYNC : Durability.SYNC;
      this.settings = settings(durability);
    }

    void run() {
      store = open(settings, clock, disk);
      for (int step = 0; step < 300; step++) {
        int dice = random.nextInt(100);
        if (dice < 45) {
          commit();
        } else if (dice < 70) {
          store.runPendingWork();
        } else if (dice < 78) {
          clock.advance(random.nextInt(1, 12));
        } else if (dice < 82) {
          flush();
        } else if (dice < 86) {
          advanceTransaction();
        } else if (dice < 88) {
          pinOrRelease();
        } else if (dice < 90) {
          store.checkpointNow();
        } else if (dice < 93) {
          settle(store);
          flush();
          assertNoUnexpectedFailure("step " + step);
          assertMatchesTheDurableRecords(store, disk, random, "step " + step);
          checkPins("step " + step);
        } else if (dice < 95) {
          crash("step " + step);
        } else {
          store.read(entities.get(random.nextInt(ENTITY_COUNT)));
        }
      }
      crash("the end");
      assertTrue(crashes > 0);
      store.close();
    }

    private void commit() {
      EntityId first = entities.get(random.nextInt(ENTITY_COUNT));
      List<EntityWrite> writes = new ArrayList<>();
      writes.add(new EntityWrite(first, randomOperations(random)));
      if (random.nextInt(4) == 0) {
        // A second entity of the same partition: one record, both or neither.
        for (EntityId other : entities) {
          if (!other.equals(first) && store.partitionOf(other) == store.partitionOf(first)) {
            writes.add(new EntityWrite(other, randomOperations(random)));
            break;
          }
        }
      }
      store.commit(store.newTransactionId(), writes).whenComplete((committed, failure) -> {
        if (failure != null) {
          unexpectedFailures.add(failure);
        } else {
          acknowledge(committed.transactionId());
        }
      });
    }

    private void acknowledge(long transactionId) {
      if (durability == Durability.SYNC) {
        mustSurvive.add(transactionId);
      } else {
        acknowledgedSinceFlush.add(transactionId);
      }
    }

    private void flush() {
      store.flushWriteAheadLog();
      mustSurvive.addAll(acknowledgedSinceFlush);
      acknowledgedSinceFlush.clear();
      decisionsThatMustSurvive.putAll(decisionsSinceFlush);
      decisionsSinceFlush.clear();
    }

    /** One step of the open two-phase transaction, once its previous step is acknowledged. */
    private void advanceTransaction() {
      if (transaction == null) {
        transaction = new TwoPhaseRun(store.newTransactionId());
        EntityId first = entities.get(random.nextInt(ENTITY_COUNT));
        EntityId second = entities.get(random.nextInt(ENTITY_COUNT));
        for (EntityId entity : first.equals(second) ? List.of(first) : List.of(first, second)) {
          List<Operation> operations = List.of(new Operation.Increment("n", random.nextLong(1, 50)));
          transaction.parts.put(entity, operations);
          transaction.pending.add(store.prepare(
              new PreparedTransaction(transaction.id, entity, operations)));
        }
        // Issue 20: half the decisions are written without a sync of their own; the
        // participants' synced commits make them durable.
        transaction.decisionSyncedByCommits = random.nextBoolean();
        twoPhaseParticipants.put(transaction.id, Set.copyOf(transaction.parts.keySet()));
        return;
      }
      for (CompletableFuture<?> future : transaction.pending) {
        if (!future.isDone()) {
          return;
        }
        future.join();
      }
      transaction.pending.clear();
      List<EntityId> participants = List.copyOf(transaction.parts.keySet());
      DecidedTransaction decision = new DecidedTransaction(transaction.id, participants);
      switch (transaction.stage++) {
        case 0 -> {
          if (random.nextInt(4) == 0) {
            // Presumed abort: the parts are dropped, nothing records the abort.
            participants.forEach(entity -> store.abandonPrepared(transaction.id, entity));
            transaction = null;
            return;
          }
          long id = transaction.id;
          if (transaction.decisionSyncedByCommits) {
            // Durable only with a later sync: the participants' commits (stage 1) or a flush.
            transaction.pending.add(store.persistDecisionBeforeLocalCommits(decision)
                .thenRun(() -> decisionsSinceFlush.put(id, participants)));
            return;
          }
          transaction.pending.add(store.persistDecision(decision).thenRun(() -> {
            if (durability == Durability.SYNC) {
              decisionsThatMustSurvive.put(id, participants);
            } else {
              decisionsSinceFlush.put(id, participants);
            }
          }));
        }
        case 1 -> {
          long id = transaction.id;
          boolean syncedByCommits = transaction.decisionSyncedByCommits;
          transaction.parts.forEach((entity, operations) -> transaction.pending.add(
              store.commitPrepared(id, entity, operations).thenRun(() -> {
                if (syncedByCommits && durability == Durability.SYNC) {
                  // A synced commit written after the decision: the decision is durable.
                  decisionsThatMustSurvive.put(id, participants);
                }
              })));
        }
        default -> {
          store.forgetDecision(decision);
          transaction = null;
        }
      }
    }

    private void pinOrRelease() {
      if (!pins.isEmpty() && random.nextBoolean()) {
        Store.Snapshot pin = pins.remove(random.nextInt(pins.size()));
        pin.close();
        statesAtPins.remove(pin);
        return;
      }
      settle(store);
      flush();
      Store.Snapshot pin = store.pinSnapshot(store.currentTimestamp());
      pins.add(pin);
      statesAtPins.put(pin, statesAt(durableRecords(disk), pin.timestamp()));
    }

    private void checkPins(String where) {
      for (Store.Snapshot pin : pins) {
        Map<EntityId, EntityState> expected = statesAtPins.get(pin);
        for (EntityId entity : entities) {
          EntityState state;
          try {
            state = store.readAt(entity, pin.timestamp());
          } catch (TroupeException e) {
            assertEquals(ErrorCode.HISTORY_TRUNCATED, e.code());
            fail(where + ": history at pin " + pin.timestamp() + " truncated: " + e.getMessage());
            return;
          }
          assertEquals(expected.getOrDefault(entity, EntityState.ABSENT), state,
              where + ": readAt(pin " + pin.timestamp() + ") of " + entity);
        }
      }
    }

    private void assertNoUnexpectedFailure(String where) {
      if (!unexpectedFailures.isEmpty()) {
        throw new AssertionError(where + ": a commit failed", unexpectedFailures.get(0));
      }
    }

    private void crash(String where) {
      assertNoUnexpectedFailure(where);
      crashes++;
      StorageStatistics statistics = store.statistics();
      checkpointRounds += statistics.checkpointRounds();
      truncatedRecords += statistics.truncatedRecords();
      cacheMisses += statistics.cacheMisses();
      unsyncedBatchesAtCrashes += disk.unsyncedBatches();
      disk = disk.crash(random, 0.5);
      // Pins, queued work and unacknowledged futures die with the process.
      pins.clear();
      statesAtPins.clear();
      transaction = null;
      acknowledgedSinceFlush.clear();
      decisionsSinceFlush.clear();
      clock.advance(random.nextInt(-30, 30));
      store = open(settings, clock, disk);
      store.resolveInDoubtTransactions(NO_REDO);
      assertTrue(store.resolveInDoubtTransactions(NO_REDO).isEmpty(),
          where + ": in-doubt state resolved for good");
      // Under ASYNC the resolution's own commits are durable only once flushed.
      settle(store);
      flush();
      List<TransactionRecord> records = durableRecords(disk);
      Set<Long> durable = new HashSet<>();
      Map<Long, Set<EntityId>> entitiesByTransaction = new HashMap<>();
      for (TransactionRecord record : records) {
        durable.add(record.transactionId());
        for (EntityWrite write : record.writes()) {
          assertTrue(entitiesByTransaction.computeIfAbsent(record.transactionId(),
                  id -> new HashSet<>()).add(write.entity()),
              where + ": transaction " + record.transactionId() + " applied twice to "
                  + write.entity());
        }
      }
      for (long id : mustSurvive) {
        assertTrue(durable.contains(id), where + ": acknowledged commit " + id + " lost");
      }
      decisionsThatMustSurvive.forEach((id, participants) -> assertEquals(
          Set.copyOf(participants), entitiesByTransaction.get(id),
          where + ": decided transaction " + id + " not applied to every participant"));
      twoPhaseParticipants.forEach((id, participants) -> {
        Set<EntityId> applied = entitiesByTransaction.getOrDefault(id, Set.of());
        assertTrue(applied.isEmpty() || applied.equals(participants),
            where + ": two-phase transaction " + id + " applied to " + applied + " of "
                + participants);
      });
      assertMatchesTheDurableRecords(store, disk, random, where + " (crash " + crashes + ")");
    }
  }

  /** A two-phase transaction in progress: 0 prepared, 1 decided, 2 committed. */
  private static final class TwoPhaseRun {
    final long id;
    final Map<EntityId, List<Operation>> parts = new java.util.LinkedHashMap<>();
    final List<CompletableFuture<?>> pending = new ArrayList<>();
    int stage;
    /** Whether its decision is written without a sync of its own (issue 20). */
    boolean decisionSyncedByCommits;

    TwoPhaseRun(long id) {
      this.id = id;
    }
  }

  @Test
  void aStaleStoreCannotWriteToTheDiskAfterACrash() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    RocksStore stale = open(settings(Durability.SYNC), clock, disk);
    CompletableFuture<Committed> late = stale.commit(stale.newTransactionId(),
        List.of(Fixtures.write(entities.get(0), new Operation.Increment("n", 1))));
    MemoryDisk next = disk.crash(new SplittableRandom(1), 0.5);
    RocksStore recovered = open(settings(Durability.SYNC), clock, next);
    settle(stale);
    CompletionException failed = assertThrows(CompletionException.class, late::join);
    assertInstanceOf(OutcomeUnknownException.class, failed.getCause());
    assertEquals(0, Fixtures.counter(recovered.read(entities.get(0)), "n"));
    assertTrue(durableRecords(next).isEmpty());
    recovered.close();
  }
}
