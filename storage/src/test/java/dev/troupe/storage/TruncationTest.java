package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Checkpoints bound the journal; pinned snapshots and the retention period hold truncation back. */
class TruncationTest {
  /**
   * Opens the store under test: on RocksDB in {@code settings.directory()} here, on PostgreSQL in
   * {@code TruncationOnPostgresTest}, which runs these tests again.
   */
  RocksStore open(StorageSettings settings, java.util.function.LongSupplier clock) {
    return RocksStore.open(settings, clock);
  }

  private static final int ENTITY_COUNT = 10;

  @TempDir Path directory;

  private final FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
  private final List<EntityId> entities = new ArrayList<>();
  private final Map<EntityId, Long> expected = new HashMap<>();

  TruncationTest() {
    for (int i = 0; i < ENTITY_COUNT; i++) {
      entities.add(new EntityId("Stock", "s" + i));
    }
  }

  private long commitRound(Store store, int commits) {
    long last = 0;
    List<java.util.concurrent.CompletableFuture<Committed>> futures = new ArrayList<>();
    for (int i = 0; i < commits; i++) {
      EntityId entity = entities.get(i % ENTITY_COUNT);
      futures.add(
          store.commit(
              store.newTransactionId(),
              List.of(Fixtures.write(entity, new Operation.Increment("qty", i + 1)))));
      expected.merge(entity, (long) i + 1, Long::sum);
      if (i % 10 == 9) {
        clock.advance(1);
      }
    }
    for (var future : futures) {
      last = Math.max(last, future.join().commitTimestamp());
    }
    return last;
  }

  private void assertStatesIntact(Store store) {
    for (EntityId entity : entities) {
      assertEquals(expected.get(entity), Fixtures.counter(store.read(entity), "qty"));
      assertEquals(
          expected.get(entity),
          Fixtures.counter(store.readAt(entity, store.currentTimestamp()), "qty"));
    }
  }

  @Test
  void checkpointsBoundTheJournal() {
    StorageSettings settings =
        Fixtures.settings(directory).withCheckpoints(5, 1_000_000, 20).withHistoryRetentionMillis(0);
    try (RocksStore store = open(settings, clock)) {
      commitRound(store, 500);
      clock.advance(10);
      store.checkpointNow();
      StorageStatistics statistics = store.statistics();
      assertTrue(statistics.journalRecordsRetained() <= 20, statistics.toString());
      assertEquals(500, statistics.truncatedRecords() + statistics.journalRecordsRetained());
      assertTrue(statistics.truncatedRecords() > 0);
      assertTrue(statistics.checkpointRounds() > 0);
      assertTrue(statistics.objectCheckpoints() > 0);
      assertEquals(0, statistics.journalRecordsSinceCheckpoint());
      // Nothing committed after the round: truncation left each entity its newest checkpoint only
      // (about ten object checkpoints each were written).
      for (EntityId entity : entities) {
        assertEquals(1, Fixtures.checkpointsOf(store, entity), entity + "'s checkpoints");
      }
      assertTrue(statistics.lastCheckpointMillis() >= Fixtures.START_MILLIS);
      assertTrue(statistics.lastCheckpointMillis() <= clock.getAsLong());
      assertStatesIntact(store);
      // Keep committing: later automatic rounds truncate as the retention window passes.
      for (int i = 0; i < 5; i++) {
        commitRound(store, 100);
        clock.advance(10);
      }
      store.checkpointNow();
      assertTrue(store.statistics().journalRecordsRetained() <= 20);
      assertEquals(1000, store.statistics().truncatedRecords() + store.statistics().journalRecordsRetained());
      assertStatesIntact(store);
    }
    try (RocksStore store = open(settings, clock)) {
      assertStatesIntact(store);
    }
  }

  @Test
  void retentionKeepsRecentHistory() {
    StorageSettings settings =
        Fixtures.settings(directory).withCheckpoints(5, 1_000_000, 20).withHistoryRetentionMillis(1_000);
    try (RocksStore store = open(settings, clock)) {
      long last = commitRound(store, 100);
      store.checkpointNow();
      assertEquals(0, store.statistics().truncatedRecords());
      assertEquals(100, store.statistics().journalRecordsRetained());
      // Timestamps are taken by the writers while the clock moved: all lie in the last ~10 ms.
      clock.advance(500);
      store.checkpointNow();
      assertEquals(0, store.statistics().truncatedRecords());
      clock.advance(520);
      store.checkpointNow();
      assertEquals(100, store.statistics().truncatedRecords());
      for (int p = 0; p < settings.partitions(); p++) {
        assertTrue(store.historyHorizon(p) <= last);
      }
      assertStatesIntact(store);
    }
  }

  @Test
  void aPinnedSnapshotHoldsTheHistoryItNeeds() {
    StorageSettings settings =
        Fixtures.settings(directory).withCheckpoints(5, 1_000_000, 20).withHistoryRetentionMillis(0);
    try (RocksStore store = open(settings, clock)) {
      commitRound(store, 200);
      long pinnedAt = store.currentTimestamp();
      Map<EntityId, EntityState> atPin = new HashMap<>();
      for (EntityId entity : entities) {
        atPin.put(entity, store.readAt(entity, pinnedAt));
      }
      Store.Snapshot snapshot = store.pinSnapshot(pinnedAt);
      commitRound(store, 300);
      clock.advance(10);
      store.checkpointNow();
      long retainedWhilePinned = store.statistics().journalRecordsRetained();
      assertTrue(retainedWhilePinned >= 300, "records after the pin stay: " + retainedWhilePinned);
      for (int p = 0; p < settings.partitions(); p++) {
        assertTrue(store.historyHorizon(p) <= pinnedAt);
      }
      for (EntityId entity : entities) {
        assertEquals(atPin.get(entity), store.readAt(entity, pinnedAt));
      }
      assertStatesIntact(store);
      snapshot.close();
      snapshot.close();
      clock.advance(1);
      store.checkpointNow();
      assertEquals(0, store.statistics().journalRecordsRetained());
      for (EntityId entity : entities) {
        TroupeException e =
            assertThrows(TroupeException.class, () -> store.readAt(entity, pinnedAt));
        assertEquals(ErrorCode.HISTORY_TRUNCATED, e.code());
      }
      TroupeException refused =
          assertThrows(TroupeException.class, () -> store.pinSnapshot(pinnedAt));
      assertEquals(ErrorCode.HISTORY_TRUNCATED, refused.code());
      assertStatesIntact(store);
    }
  }
}
