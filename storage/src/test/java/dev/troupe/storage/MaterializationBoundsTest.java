package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.PerfContext;
import org.rocksdb.PerfLevel;
import org.rocksdb.RocksDB;

/**
 * Materializing one entity reads only that entity's keys, even when truncation has just deleted
 * the index entries of the entities that follow it in key order: the deletion tombstones there
 * must not be scanned (counted with RocksDB's perf context, so the check does not depend on time).
 * Before the iterators were bounded, a cold read after a large truncation skipped every following
 * tombstone and took seconds (found by {@code troupe bench ycsb}).
 */
class MaterializationBoundsTest {
  private static final int FOLLOWING_ENTITIES = 3_000;

  @TempDir Path directory;

  @Test
  void coldReadSkipsNoTombstonesOfOtherEntities() throws Exception {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    StorageSettings settings = Fixtures.settings(directory)
        .withCheckpoints(1_000_000, 1_000_000_000, 1_000_000_000)
        .withHistoryRetentionMillis(0);
    // Same type and id length, so the probe's keys sort just before all the others'.
    EntityId probe = new EntityId("Probe", "a0000");
    try (RocksStore store = RocksStore.open(settings, clock)) {
      store.commit(store.newTransactionId(),
          List.of(Fixtures.write(probe, new Operation.Increment("n", 7)))).join();
      for (int i = 0; i < FOLLOWING_ENTITIES; i++) {
        EntityId other = new EntityId("Probe", String.format("b%04d", i));
        store.commit(store.newTransactionId(),
            List.of(Fixtures.write(other, new Operation.Increment("n", 1)))).join();
      }
      clock.advance(10_000);
      store.checkpointNow();
      assertEquals(0, store.statistics().journalRecordsRetained(),
          "truncation deleted every journal record and index entry");
      assertTrue(!store.isCached(probe), "the read below materializes from the database");

      RocksDB database = ((RocksDisk) store.disk).database();
      database.setPerfLevel(PerfLevel.ENABLE_COUNT);
      PerfContext perf = database.getPerfContext();
      perf.reset();
      long value = Fixtures.counter(store.read(probe), "n");
      long skippedTombstones = perf.getInternalDeleteSkippedCount();
      database.setPerfLevel(PerfLevel.DISABLE);

      assertEquals(7, value);
      assertTrue(skippedTombstones <= 2, "a read of one entity skipped " + skippedTombstones
          + " deletion tombstones, most of them other entities'");
    }
  }
}
