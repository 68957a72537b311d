package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;

/**
 * Checkpoint rounds and truncation run on a partition's writer in slices bounded in time
 * ({@code maintenanceSliceMaxMillis}), so the commits queued behind a slice wait for at most that
 * long plus one entity's or record's work (issue 20: truncation slices of 1,024 records took up to
 * 345 ms and held YCSB A's update p99 near 100 ms). Driven on a stepped store whose clock moves one
 * millisecond at every reading, so a slice's time bound passes after a known number of entities
 * or records.
 */
class MaintenanceSliceTimeBoundTest {
  /** Never touched: the disk is in memory. */
  private static final Path NO_DIRECTORY = Path.of("memory-disk");
  private static final int ENTITY_COUNT = 600;
  private static final int SLICE_MAX_MILLIS = 5;
  private static final Store.Redo NO_REDO = (part, state) -> {
    throw new AssertionError("no part needs a redo here");
  };

  /** A physical clock that, while ticking, moves one millisecond at every reading. */
  private static final class TickingClock implements LongSupplier {
    private final AtomicLong millis = new AtomicLong(Fixtures.START_MILLIS);
    private volatile boolean ticking;

    @Override
    public long getAsLong() {
      return ticking ? millis.getAndIncrement() : millis.get();
    }

    void advance(long byMillis) {
      millis.addAndGet(byMillis);
    }
  }

  private final List<EntityId> entities = new ArrayList<>();
  private final Map<EntityId, Long> expected = new HashMap<>();
  private final TickingClock clock = new TickingClock();

  MaintenanceSliceTimeBoundTest() {
    for (int i = 0; i < ENTITY_COUNT; i++) {
      entities.add(new EntityId("Stock", "s" + i));
    }
  }

  /** One partition; a round only when the test makes one due; no history kept. */
  private static StorageSettings settings(long sliceMaxMillis) {
    return Fixtures.settings(NO_DIRECTORY).withPartitions(1)
        .withCheckpoints(1_000_000, 10_000, 1_000_000).withHistoryRetentionMillis(0)
        .withMaintenanceSliceMaxMillis(sliceMaxMillis);
  }

  private static RocksStore open(StorageSettings settings, LongSupplier clock, KeyValueDisk disk) {
    return RocksStore.open(settings, clock, disk, RocksStore.Execution.STEPPED);
  }

  private static void settle(RocksStore store) {
    for (int passes = 0; store.runPendingWork(); passes++) {
      if (passes > 1_000_000) {
        fail("the stepped store never ran out of work");
      }
    }
  }

  /** Two increments of every entity, then runs them with the clock still. */
  private void commitTwicePerEntity(RocksStore store) {
    clock.ticking = false;
    for (int i = 0; i < 2 * ENTITY_COUNT; i++) {
      EntityId entity = entities.get(i % ENTITY_COUNT);
      store.commit(store.newTransactionId(),
          List.of(Fixtures.write(entity, new Operation.Increment("n", i + 1))));
      expected.merge(entity, (long) i + 1, Long::sum);
    }
    settle(store);
  }

  /** Makes a round due and lets the clock tick from now on. */
  private void makeARoundDue() {
    clock.advance(10_001);
    clock.ticking = true;
  }

  private void assertStatesIntact(RocksStore store) {
    for (EntityId entity : entities) {
      assertEquals(expected.get(entity), Fixtures.counter(store.read(entity), "n"),
          "read " + entity);
      assertEquals(expected.get(entity),
          Fixtures.counter(store.readAt(entity, store.currentTimestamp()), "n"),
          "readAt " + entity);
    }
  }

  @Test
  void roundsAndTruncationsRunInSlicesBoundedInTimeAndComplete() {
    RocksStore store = open(settings(SLICE_MAX_MILLIS), clock, new MemoryDisk());
    commitTwicePerEntity(store);
    makeARoundDue();
    long before = store.statistics().objectCheckpoints();
    store.runPendingWork();
    long firstSlice = store.statistics().objectCheckpoints() - before;
    assertTrue(firstSlice >= 1 && firstSlice <= SLICE_MAX_MILLIS,
        "a round's slice ends once its time is up: " + firstSlice + " entities");
    store.runPendingWork();
    long secondSlice = store.statistics().objectCheckpoints() - before - firstSlice;
    assertTrue(secondSlice >= 1 && secondSlice <= SLICE_MAX_MILLIS, secondSlice + " entities");
    // The rest of the round, then the truncation: its slices end by time too, and the records
    // they passed leave the journal only in ranges of at least 1,024 (one range tombstone each).
    while (store.statistics().checkpointRounds() == 0) {
      assertTrue(store.runPendingWork(), "the round is not done yet");
    }
    assertEquals(ENTITY_COUNT, store.statistics().objectCheckpoints() - before);
    for (int pass = 0; pass < 20; pass++) {
      store.runPendingWork();
    }
    assertEquals(0, store.statistics().truncatedRecords(),
        "20 slices of at most 5 records each delete no record yet");
    while (store.statistics().truncatedRecords() == 0) {
      assertTrue(store.runPendingWork(), "the truncation is not done yet");
    }
    long firstRange = store.statistics().truncatedRecords();
    assertTrue(firstRange >= 1_024 && firstRange < 1_024 + SLICE_MAX_MILLIS,
        "the first range: " + firstRange);
    settle(store);
    assertEquals(2 * ENTITY_COUNT, store.statistics().truncatedRecords(), "truncation completed");
    assertEquals(0, store.statistics().journalRecordsRetained());
    assertStatesIntact(store);
    // WriterTimings (/metrics) saw every commit and every slice.
    WriterTimings.Snapshot timings = store.writerTimings().snapshot();
    assertEquals(2 * ENTITY_COUNT, timings.commit().getTotalCount());
    assertEquals(2 * ENTITY_COUNT, timings.commitWait().getTotalCount());
    assertTrue(timings.journalWrite().getTotalCount() >= 1);
    assertTrue(timings.slices().get(WriterTimings.Slice.ROUND).getTotalCount()
        >= ENTITY_COUNT / SLICE_MAX_MILLIS, "a round's slices of at most 5 entities each");
    assertTrue(timings.slices().get(WriterTimings.Slice.TRUNCATION).getTotalCount()
        >= 2 * ENTITY_COUNT / SLICE_MAX_MILLIS, "a truncation's slices of at most 5 records each");

    // A second round supersedes the first one's checkpoints; the second truncation, in hundreds
    // of slices, deletes every superseded one.
    commitTwicePerEntity(store);
    makeARoundDue();
    settle(store);
    assertEquals(2, store.statistics().checkpointRounds());
    assertEquals(4 * ENTITY_COUNT, store.statistics().truncatedRecords());
    for (EntityId entity : entities) {
      assertEquals(1, Fixtures.checkpointsOf(store, entity), entity + "'s checkpoints");
    }
    assertStatesIntact(store);
    store.close();
  }

  @Test
  void withoutATimeBoundASliceRunsToItsCount() {
    RocksStore store = open(settings(0), clock, new MemoryDisk());
    commitTwicePerEntity(store);
    makeARoundDue();
    long before = store.statistics().objectCheckpoints();
    store.runPendingWork();
    assertEquals(256, store.statistics().objectCheckpoints() - before,
        "a round's slice without a time bound: 256 entities");
    settle(store);
    assertEquals(2 * ENTITY_COUNT, store.statistics().truncatedRecords());
    assertStatesIntact(store);
    store.close();
  }

  @Test
  void aCrashAmidASlicedTruncationLosesNothing() {
    for (int seed = 0; seed < 8; seed++) {
      expected.clear();
      clock.ticking = false;
      SplittableRandom random = new SplittableRandom(seed);
      MemoryDisk disk = new MemoryDisk();
      RocksStore store = open(settings(SLICE_MAX_MILLIS), clock, disk);
      commitTwicePerEntity(store);
      makeARoundDue();
      settle(store);
      commitTwicePerEntity(store);
      makeARoundDue();
      // Somewhere in the second round or its truncation (about 120 slices each).
      int passes = random.nextInt(1, 400);
      for (int pass = 0; pass < passes; pass++) {
        store.runPendingWork();
      }
      // Every commit above was acknowledged (settled) before the crash.
      disk = disk.crash(random, 0.5);
      RocksStore recovered = open(settings(SLICE_MAX_MILLIS), clock, disk);
      assertTrue(recovered.resolveInDoubtTransactions(NO_REDO).isEmpty());
      assertStatesIntact(recovered);
      recovered.checkpointNow();
      assertEquals(0, recovered.statistics().journalRecordsRetained(),
          "seed " + seed + ": the interrupted truncation completed after the restart");
      for (EntityId entity : entities) {
        assertEquals(1, Fixtures.checkpointsOf(recovered, entity), "seed " + seed + ": " + entity);
      }
      assertStatesIntact(recovered);
      recovered.close();
    }
  }
}
