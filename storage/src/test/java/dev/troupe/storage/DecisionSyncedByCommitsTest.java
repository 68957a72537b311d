package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import dev.troupe.model.causal.ReplicationEntry;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * Issue 20: a commit decision whose every participant commits on this store is written without a
 * sync of its own ({@link DurableStore#persistDecisionBeforeLocalCommits}); the participants'
 * synced commits, written after it, make it durable. On a stepped store over a {@link MemoryDisk}
 * whose crash drops every unsynced batch: the new window (decision written, not yet durable) loses
 * the whole transaction, never a part of it; once one part's commit is durable the decision is,
 * and recovery commits the other part; the replication log ships no decision before it is
 * durable; a decision with an idempotency record is synced as before.
 */
class DecisionSyncedByCommitsTest {
  private static final EntityId A = new EntityId("Account", "a");
  /** In the other partition of two (the decision lives in the first participant's). */
  private static final EntityId B = otherPartitionThan(A);
  private static final Store.Redo NO_REDO = (part, state) -> {
    throw new AssertionError("no part needs a redo here");
  };

  private static EntityId otherPartitionThan(EntityId entity) {
    StorageSettings settings = settings();
    for (int i = 0; ; i++) {
      EntityId candidate = new EntityId("Account", "b" + i);
      if (Keys.partitionOf(candidate, settings.partitions())
          != Keys.partitionOf(entity, settings.partitions())) {
        return candidate;
      }
    }
  }

  private static StorageSettings settings() {
    return Fixtures.settings(Path.of("unused")).withReplicationLog(true);
  }

  private static RocksStore open(MemoryDisk disk) {
    return RocksStore.open(settings(), new FakeClock(Fixtures.START_MILLIS), disk,
        RocksStore.Execution.STEPPED);
  }

  private static <T> T await(RocksStore store, CompletableFuture<T> future) {
    while (!future.isDone() && store.runPendingWork()) {
      // one writer pass at a time
    }
    assertTrue(future.isDone(), "the store ran out of work before the future completed");
    return future.join();
  }

  /** A and B prepared durably, then the decision written without a sync. */
  private static long preparedAndDecided(RocksStore store, MemoryDisk disk) {
    await(store, store.commit(store.newTransactionId(),
        List.of(Fixtures.write(A, new Operation.Increment("n", 100)))));
    long id = store.newTransactionId();
    await(store, store.prepare(new PreparedTransaction(id, A,
        List.of(new Operation.Increment("n", -30)))));
    await(store, store.prepare(new PreparedTransaction(id, B,
        List.of(new Operation.Increment("n", 30)))));
    assertEquals(0, disk.unsyncedBatches(), "prepared records are synced");
    await(store, store.persistDecisionBeforeLocalCommits(new DecidedTransaction(id, List.of(A, B))));
    assertEquals(1, disk.unsyncedBatches(), "the decision was written without a sync");
    return id;
  }

  @Test
  void aCrashBeforeAnyPartCommitsLosesTheWholeTransaction() {
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(disk);
    long id = preparedAndDecided(store, disk);
    // Power lost (no close: a close would sync).
    RocksStore recovered = open(disk.crash(new SplittableRandom(1), 0));
    InDoubtResolution resolution = recovered.resolveInDoubtTransactions(NO_REDO);
    assertEquals(List.of(id, id), resolution.toAbort().stream()
        .map(PreparedTransaction::transactionId).toList(), "presumed abort: no decision survived");
    assertTrue(resolution.toCommit().isEmpty());
    assertEquals(100, Fixtures.counter(recovered.read(A), "n"));
    assertEquals(0, Fixtures.counter(recovered.read(B), "n"));
    recovered.close();
  }

  @Test
  void oneDurablePartMakesTheDecisionDurableAndRecoveryCommitsTheOther() {
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(disk);
    long id = preparedAndDecided(store, disk);
    // B's commit is synced: it was written after the decision, so the decision is durable too.
    await(store, store.commitPrepared(id, B, List.of(new Operation.Increment("n", 30))));
    assertEquals(0, disk.unsyncedBatches());
    // Power lost (no close: a close would sync).
    RocksStore recovered = open(disk.crash(new SplittableRandom(2), 0));
    InDoubtResolution resolution = recovered.resolveInDoubtTransactions(NO_REDO);
    assertEquals(List.of(A), resolution.toCommit().stream().map(PreparedTransaction::entity)
        .toList());
    assertEquals(1, resolution.decisionsToForget().size());
    assertEquals(70, Fixtures.counter(recovered.read(A), "n"));
    assertEquals(30, Fixtures.counter(recovered.read(B), "n"));
    recovered.close();
  }

  @Test
  void theReplicationLogShipsNoDecisionBeforeItIsDurable() {
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(disk);
    int origin = settings().dataCentreId();
    long id = preparedAndDecided(store, disk);
    assertFalse(decisionShipped(store, origin, id), "shipped while a crash could still lose it");
    await(store, store.commitPrepared(id, A, List.of(new Operation.Increment("n", -30))));
    assertTrue(decisionShipped(store, origin, id), "durable with A's commit: shipped");
    await(store, store.commitPrepared(id, B, List.of(new Operation.Increment("n", 30))));
    long before = store.replicationLog().localSafeTimestamp();
    // A second decision, then a flush of the write-ahead log (no commit): durable, shipped.
    long second = store.newTransactionId();
    await(store, store.prepare(new PreparedTransaction(second, A,
        List.of(new Operation.Increment("n", 1)))));
    await(store, store.persistDecisionBeforeLocalCommits(
        new DecidedTransaction(second, List.of(A))));
    assertFalse(decisionShipped(store, origin, second));
    assertTrue(store.replicationLog().localSafeTimestamp() >= before, "never goes back");
    store.flushWriteAheadLog();
    assertTrue(decisionShipped(store, origin, second));
    store.close();
  }

  private static boolean decisionShipped(RocksStore store, int origin, long transactionId) {
    return store.replicationLog().read(origin, 0, 1_000).entries().stream().anyMatch(entry ->
        entry instanceof ReplicationEntry.Decision decision
            && decision.transactionId() == transactionId);
  }

  /**
   * The count the change is about: a transaction of two participants in two partitions takes five
   * synced writes with a synced decision (prepare ×2, decision, commit ×2) and four without; the
   * sequential waits go from three (prepares, decision, commits) to two.
   */
  @Test
  void aTwoParticipantTransactionTakesFourSyncedWritesInsteadOfFive() {
    assertEquals(5, syncedWritesOfATransaction(false));
    assertEquals(4, syncedWritesOfATransaction(true));
  }

  private static long syncedWritesOfATransaction(boolean decisionSyncedByCommits) {
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(disk);
    long id = store.newTransactionId();
    long before = disk.syncs();
    // Each step alone, as when nothing shares its group commit.
    await(store, store.prepare(new PreparedTransaction(id, A,
        List.of(new Operation.Increment("n", -1)))));
    await(store, store.prepare(new PreparedTransaction(id, B,
        List.of(new Operation.Increment("n", 1)))));
    DecidedTransaction decision = new DecidedTransaction(id, List.of(A, B));
    await(store, decisionSyncedByCommits
        ? store.persistDecisionBeforeLocalCommits(decision) : store.persistDecision(decision));
    await(store, store.commitPrepared(id, A, List.of(new Operation.Increment("n", -1))));
    await(store, store.commitPrepared(id, B, List.of(new Operation.Increment("n", 1))));
    long synced = disk.syncs() - before;
    store.close();
    return synced;
  }

  @Test
  void aDecisionWithAnIdempotencyRecordIsSyncedAsBefore() {
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(disk);
    long id = store.newTransactionId();
    await(store, store.prepare(new PreparedTransaction(id, A,
        List.of(new Operation.Increment("n", 1)))));
    await(store, store.persistDecisionBeforeLocalCommits(new DecidedTransaction(id, List.of(A),
        IdempotencyRecord.pending("\u0000key", new byte[IdempotencyRecord.FINGERPRINT_BYTES], 1))));
    assertEquals(0, disk.unsyncedBatches(), "a retry may answer from the record: synced");
    store.close();
  }
}
