package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.time.HybridLogicalClock;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The clock ceiling is raised ahead of the clock, on the store's own thread (RocksStore#tick):
 * once the clock is within half the window of the durable ceiling, the ceiling moves up without
 * the ticking thread writing it, so no caller (a partition writer, the planned sequencer) waits
 * for that synced write; only reaching the ceiling itself writes on the caller's thread.
 */
class ClockCeilingAheadTest {
  private static final String RAISER_THREAD = "troupe-storage-clock-ceiling";

  @Test
  void theCeilingIsRaisedAheadOfTheClockOnTheStoresOwnThread() throws Exception {
    MemoryDisk disk = new MemoryDisk();
    List<String> writers = new CopyOnWriteArrayList<>();
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    StorageSettings settings = PartitionOwnershipTest.settings(1);
    long window = settings.clockCeilingMillis();
    RocksStore store = RocksStore.open(settings, clock,
        new WriteHookedView(disk, () -> writers.add(Thread.currentThread().getName())),
        RocksStore.Execution.THREADS);
    try {
      store.newTransactionId();
      long first = ceiling(disk);
      writers.clear();
      // Less than half the window later: nothing to do.
      clock.advance(window / 4);
      store.newTransactionId();
      assertEquals(first, ceiling(disk));
      // Past half the window: raised ahead, by the store's thread, not by this one.
      clock.advance(window / 2);
      long issued = store.newTransactionId();
      assertTrue(issued < first, "still below the old ceiling");
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (ceiling(disk) == first) {
        assertTrue(System.nanoTime() < deadline, "the ceiling was not raised ahead");
        Thread.sleep(2);
      }
      assertTrue(ceiling(disk) >= HybridLogicalClock.fromMillis(clock.getAsLong() + window));
      assertEquals(List.of(RAISER_THREAD), writers, "only the store's own thread wrote");
    } finally {
      store.close();
      disk.close();
    }
  }

  private static long ceiling(MemoryDisk disk) throws DiskException {
    return Codec.decodePosition(disk.get(KeyValueDisk.Column.META, Keys.metaClockCeiling(1)))
        .timestamp();
  }
}
