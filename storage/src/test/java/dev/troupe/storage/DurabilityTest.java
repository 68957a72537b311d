package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reopen after close: acknowledged commits survive, and commit timestamps, sequences and
 * transaction ids keep increasing (never reused), even when the physical clock went backwards.
 * (A real kill -9 cannot be simulated in-process; that test lives at the server level.)
 */
class DurabilityTest {
  /**
   * Opens the store under test: on RocksDB in {@code settings.directory()} here, on PostgreSQL in
   * {@code DurabilityOnPostgresTest}, which runs these tests again.
   */
  RocksStore open(StorageSettings settings, java.util.function.LongSupplier clock) {
    return RocksStore.open(settings, clock);
  }

  private static final EntityId ALICE = new EntityId("Account", "alice");
  private static final EntityId BOB = new EntityId("Account", "bob");

  @TempDir Path directory;

  @Test
  void acknowledgedCommitsSurviveReopenAndTimestampsKeepIncreasing() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    StorageSettings settings = Fixtures.settings(directory);
    long lastTimestamp = 0;
    long lastTransaction = 0;
    try (RocksStore store = open(settings, clock)) {
      List<CompletableFuture<Committed>> futures = new ArrayList<>();
      for (int i = 0; i < 100; i++) {
        EntityId entity = i % 2 == 0 ? ALICE : BOB;
        futures.add(
            store.commit(
                store.newTransactionId(),
                List.of(Fixtures.write(entity, new Operation.Increment("balance", 1)))));
      }
      for (CompletableFuture<Committed> future : futures) {
        Committed committed = future.join();
        lastTimestamp = Math.max(lastTimestamp, committed.commitTimestamp());
        lastTransaction = Math.max(lastTransaction, committed.transactionId());
      }
      assertEquals(100, store.statistics().commits());
    }
    // Restart with a physical clock one minute behind.
    clock.advance(-60_000);
    try (RocksStore store = open(settings, clock)) {
      assertEquals(50, Fixtures.counter(store.read(ALICE), "balance"));
      assertEquals(50, Fixtures.counter(store.read(BOB), "balance"));
      assertEquals(100, store.statistics().journalRecordsRetained());
      assertTrue(store.statistics().recoveryMillis() >= 0);
      assertTrue(store.currentTimestamp() >= lastTimestamp);
      long transaction = store.newTransactionId();
      assertTrue(transaction > lastTimestamp && transaction > lastTransaction);
      Committed next =
          store
              .commit(transaction, List.of(Fixtures.write(ALICE, new Operation.Increment("balance", 1))))
              .join();
      assertTrue(next.commitTimestamp() > lastTimestamp);
      assertEquals(51, Fixtures.counter(store.read(ALICE), "balance"));
      assertEquals(101, store.statistics().journalRecordsRetained());
      lastTimestamp = next.commitTimestamp();
    }
    try (RocksStore store = open(settings, clock)) {
      assertEquals(51, Fixtures.counter(store.readAt(ALICE, store.currentTimestamp()), "balance"));
      assertTrue(store.newTransactionId() > lastTimestamp);
    }
  }

  @Test
  void timestampsContinueAfterTheWholeJournalWasTruncated() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    StorageSettings settings = Fixtures.settings(directory).withHistoryRetentionMillis(0);
    long lastTimestamp = 0;
    try (RocksStore store = open(settings, clock)) {
      for (int i = 0; i < 20; i++) {
        lastTimestamp =
            store
                .commit(
                    store.newTransactionId(),
                    List.of(Fixtures.write(ALICE, new Operation.Increment("balance", 2))))
                .join()
                .commitTimestamp();
      }
      clock.advance(10);
      store.checkpointNow();
      assertEquals(0, store.statistics().journalRecordsRetained());
      assertEquals(20, store.statistics().truncatedRecords());
    }
    clock.advance(-10_000);
    try (RocksStore store = open(settings, clock)) {
      // Only checkpoints and the meta marks are left; they carry the sequence and timestamp.
      assertEquals(40, Fixtures.counter(store.read(ALICE), "balance"));
      assertTrue(store.currentTimestamp() >= lastTimestamp);
      Committed next =
          store
              .commit(store.newTransactionId(), List.of(Fixtures.write(ALICE, new Operation.Increment("balance", 2))))
              .join();
      assertTrue(next.commitTimestamp() > lastTimestamp);
      assertEquals(42, Fixtures.counter(store.read(ALICE), "balance"));
      assertEquals(1, store.statistics().journalRecordsRetained());
    }
  }

  @Test
  void asyncDurabilityAcknowledgesAndSurvivesACleanClose() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    StorageSettings settings = Fixtures.settings(directory).withDurability(Durability.ASYNC);
    try (RocksStore store = open(settings, clock)) {
      for (int i = 0; i < 30; i++) {
        store.commit(store.newTransactionId(), List.of(Fixtures.write(BOB, new Operation.Increment("n", 1))));
      }
      store.commit(store.newTransactionId(), List.of(Fixtures.write(BOB, new Operation.Increment("n", 1)))).join();
    }
    try (RocksStore store = open(settings, clock)) {
      assertEquals(31, Fixtures.counter(store.read(BOB), "n"));
    }
  }

  @Test
  void theStoreRefusesAnotherPartitionCount() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    StorageSettings settings = Fixtures.settings(directory);
    open(settings, clock).close();
    StorageSettings other =
        new StorageSettings(directory, 3, settings.durability(), settings.groupCommitMaxRecords(),
            settings.groupCommitQueueLimit(), settings.asyncFlushIntervalMillis(),
            settings.cacheMaxWeightBytes(), settings.checkpointEveryOperations(),
            settings.checkpointIntervalMillis(), settings.checkpointJournalRecords(),
            settings.historyRetentionMillis(), settings.dataCentreId());
    assertThrows(IllegalStateException.class, () -> open(other, clock));
    open(settings, clock).close();
  }

  @Test
  void aClosedStoreRejectsWorkAndCommitsAcrossPartitionsAreRejected() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    RocksStore store = open(Fixtures.settings(directory), clock);
    EntityId candidate = ALICE;
    for (int i = 0; store.partitionOf(candidate) == store.partitionOf(ALICE); i++) {
      candidate = new EntityId("Account", "n" + i);
    }
    EntityId other = candidate;
    CompletionException crossing =
        assertThrows(
            CompletionException.class,
            () ->
                store
                    .commit(
                        store.newTransactionId(),
                        List.of(
                            Fixtures.write(ALICE, new Operation.Increment("n", 1)),
                            Fixtures.write(other, new Operation.Increment("n", 1))))
                    .join());
    assertEquals(ErrorCode.INVALID_REQUEST, ((TroupeException) crossing.getCause()).code());
    TroupeException future =
        assertThrows(TroupeException.class, () -> store.readAt(ALICE, store.currentTimestamp() + 1000));
    assertEquals(ErrorCode.INVALID_REQUEST, future.code());
    store.close();
    store.close();
    CompletionException closed =
        assertThrows(
            CompletionException.class,
            () ->
                store
                    .commit(1, List.of(Fixtures.write(ALICE, new Operation.Increment("n", 1))))
                    .join());
    assertEquals(ErrorCode.UNAVAILABLE, ((TroupeException) closed.getCause()).code());
    assertThrows(TroupeException.class, () -> store.read(ALICE));
  }
}
