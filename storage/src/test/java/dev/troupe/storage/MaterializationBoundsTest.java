package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
 *
 * <p>And a cold read consults the index's and checkpoints' prefix filters ({@link
 * RocksDiskSettings}), skipping the table files that hold nothing of its entity, while every
 * entity (named long enough for the filters or not), checkpointed or not, reads back exactly.
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

  @Test
  void coldReadsSkipTableFilesByPrefixFilterAndReadEverythingBack() throws Exception {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    StorageSettings settings = Fixtures.settings(directory)
        .withCheckpoints(2, 1_000_000_000, 1_000_000_000)
        .withRocksDisk(RocksDiskSettings.defaults().withBlockCacheBytes(8L << 20));
    // Three table files of the index. In each, entities written only there: named long enough
    // for the prefix filters (2 + type + 1 + id >= 24 bytes) and short (read without them). Those
    // of the first file are checkpointed, one of them written again in each later file.
    EntityId checkpointed = new EntityId("ColdReadProbe", "checkpointed-entity");
    Map<EntityId, Long> expected = new LinkedHashMap<>();
    long checkpointedAt = 0;
    long checkpointVersion = 0;
    try (RocksStore store = RocksStore.open(settings, clock)) {
      for (int file = 0; file < 3; file++) {
        for (int i = 0; i < 20; i++) {
          for (EntityId entity : List.of(
              new EntityId("ColdReadProbe", "file" + file + "-entity-" + i),
              new EntityId("S", "f" + file + "e" + i))) {
            store.commit(store.newTransactionId(),
                List.of(Fixtures.write(entity, new Operation.Increment("n", file + 1)))).join();
            expected.put(entity, file + 1L);
          }
        }
        for (int operation = 0; operation < (file == 0 ? 2 : 1); operation++) {
          checkpointedAt = store.commit(store.newTransactionId(),
              List.of(Fixtures.write(checkpointed, new Operation.Increment("n", 1)))).join()
              .commitTimestamp();
        }
        if (file == 0) {
          checkpointVersion = checkpointedAt;
          store.checkpointNow(); // every entity of the first file gets a checkpoint
          assertTrue(store.statistics().objectCheckpoints() > 0, "no checkpoint written");
          clock.advance(1);
        }
        ((RocksDisk) store.disk).flushMemtables();
      }
    }
    expected.put(checkpointed, 4L);

    try (RocksStore store = RocksStore.open(settings, clock)) {
      RocksDB database = ((RocksDisk) store.disk).database();
      database.setPerfLevel(PerfLevel.ENABLE_COUNT);
      PerfContext perf = database.getPerfContext();
      perf.reset();
      for (Map.Entry<EntityId, Long> entity : expected.entrySet()) {
        assertEquals(entity.getValue(), Fixtures.counter(store.read(entity.getKey()), "n"),
            entity.getKey().toString());
      }
      long filteredOut = perf.getBloomSstMissCount();
      database.setPerfLevel(PerfLevel.DISABLE);
      assertTrue(filteredOut >= 40, "the prefix filters skipped only " + filteredOut
          + " table files for 61 long-named entities, each absent from 2 of 3 files");
      // Past versions start from the checkpoint found by the forward seek, or without it.
      assertEquals(4, Fixtures.counter(store.readAt(checkpointed, checkpointedAt), "n"));
      assertEquals(2, Fixtures.counter(store.readAt(checkpointed, checkpointVersion), "n"));
      assertEquals(1, Fixtures.counter(store.readAt(checkpointed, checkpointVersion - 1), "n"));
      // Cursors without an entity's bounds (listing every entity) still see every key.
      assertEquals(expected.size(), store.entities(null, 1_000).size());
    }
  }
}
