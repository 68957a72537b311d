package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.DBOptions;
import org.rocksdb.RocksDB;

/** Recovery resumes work a crash interrupted. */
class RecoveryTest {
  @TempDir Path directory;

  @Test
  void anInterruptedTruncationIsFinishedAfterReopen() throws Exception {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    // Retention of a day: the first run completes rounds but truncates nothing.
    StorageSettings settings =
        Fixtures.settings(directory)
            .withCheckpoints(4, 1_000_000, 16)
            .withHistoryRetentionMillis(86_400_000);
    List<EntityId> entities = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      entities.add(new EntityId("Ticket", "t" + i));
    }
    Map<EntityId, Long> sums = new HashMap<>();
    long[] frontiers = new long[settings.partitions()];
    try (RocksStore store = RocksStore.open(settings, clock)) {
      for (int i = 0; i < 120; i++) {
        EntityId entity = entities.get(i % entities.size());
        long timestamp =
            store
                .commit(store.newTransactionId(), List.of(Fixtures.write(entity, new Operation.Increment("n", i))))
                .join()
                .commitTimestamp();
        sums.merge(entity, (long) i, Long::sum);
        int p = store.partitionOf(entity);
        frontiers[p] = Math.max(frontiers[p], timestamp);
      }
      store.checkpointNow();
      assertEquals(0, store.statistics().truncatedRecords());
      assertEquals(120, store.statistics().journalRecordsRetained());
    }
    // Simulate a crash right after a truncation persisted its horizon, before any deletion.
    RocksDB.loadLibrary();
    List<ColumnFamilyHandle> handles = new ArrayList<>();
    try (DBOptions options = new DBOptions()) {
      List<ColumnFamilyDescriptor> descriptors = new ArrayList<>();
      descriptors.add(new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY));
      for (KeyValueDisk.Column column : KeyValueDisk.Column.values()) {
        descriptors.add(new ColumnFamilyDescriptor(
            RocksDisk.columnFamilyName(column).getBytes(StandardCharsets.UTF_8)));
      }
      try (RocksDB raw = RocksDB.open(options, directory.toString(), descriptors, handles)) {
        ColumnFamilyHandle meta = handles.get(4);
        for (int p = 0; p < settings.partitions(); p++) {
          byte[] lastRound = raw.get(meta, Keys.metaLastRound(p));
          assertEquals(frontiers[p], Codec.decodePosition(lastRound).timestamp());
          raw.put(meta, Keys.metaHorizon(p), lastRound);
        }
      } finally {
        handles.forEach(ColumnFamilyHandle::close);
      }
    }
    try (RocksStore store = RocksStore.open(settings, clock)) {
      for (int p = 0; p < settings.partitions(); p++) {
        assertEquals(frontiers[p], store.historyHorizon(p));
      }
      store.checkpointNow();
      assertEquals(120, store.statistics().truncatedRecords());
      assertEquals(0, store.statistics().journalRecordsRetained());
      for (EntityId entity : entities) {
        assertEquals(sums.get(entity), Fixtures.counter(store.read(entity), "n"));
        long horizon = store.historyHorizon(store.partitionOf(entity));
        assertEquals(sums.get(entity), Fixtures.counter(store.readAt(entity, horizon), "n"));
        TroupeException e =
            assertThrows(TroupeException.class, () -> store.readAt(entity, horizon - 1));
        assertEquals(ErrorCode.HISTORY_TRUNCATED, e.code());
      }
      long next =
          store
              .commit(store.newTransactionId(), List.of(Fixtures.write(entities.get(0), new Operation.Increment("n", 1))))
              .join()
              .commitTimestamp();
      assertTrue(next > frontiers[0] && next > frontiers[1]);
    }
    try (RocksStore store = RocksStore.open(settings, clock)) {
      assertEquals(1, store.statistics().journalRecordsRetained());
      assertEquals(sums.get(entities.get(0)) + 1, Fixtures.counter(store.read(entities.get(0)), "n"));
    }
  }

  @Test
  void entitiesWrittenBeforeACrashAreCheckpointedByTheFirstRoundAfterIt() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    // Rounds only when forced, and no history kept: truncation deletes everything a round covers,
    // so an entity the post-recovery scan missed would lose its records.
    StorageSettings settings =
        Fixtures.settings(directory)
            .withCheckpoints(1_000_000, 1_000_000_000, 1_000_000_000)
            .withHistoryRetentionMillis(0);
    Map<EntityId, Long> sums = new HashMap<>();
    try (RocksStore store = RocksStore.open(settings, clock)) {
      for (int i = 0; i < 5_000; i++) {
        EntityId entity = new EntityId("Ticket", "t" + (i % 700));
        store.commit(store.newTransactionId(),
            List.of(Fixtures.write(entity, new Operation.Increment("n", i)))).join();
        sums.merge(entity, (long) i, Long::sum);
      }
      assertEquals(0, store.statistics().checkpointRounds());
    }
    clock.advance(10_000);
    try (RocksStore store = RocksStore.open(settings, clock)) {
      store.checkpointNow();
      assertEquals(700, store.statistics().objectCheckpoints(),
          "the scan after recovery found every entity written since the last round");
      assertEquals(0, store.statistics().journalRecordsRetained(), "everything was truncated");
    }
    try (RocksStore store = RocksStore.open(settings, clock)) {
      for (Map.Entry<EntityId, Long> entry : sums.entrySet()) {
        assertEquals(entry.getValue(), Fixtures.counter(store.read(entry.getKey()), "n"));
      }
    }
  }
}
