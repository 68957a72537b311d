package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import dev.troupe.model.causal.ReplicationEntry;
import dev.troupe.model.time.TransactionIds;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * Issue 20: on the single node of a data centre, the prepared records of a transaction it
 * coordinates ({@link DurableStore#prepare}) and a commit decision whose every participant commits
 * on this store ({@link DurableStore#persistDecisionBeforeLocalCommits}) are written without a sync
 * of their own; the participants' synced commits, written after them, make them durable. On a
 * stepped store over a {@link MemoryDisk} whose crash keeps a prefix of the unsynced batches: every
 * crash in the new window (prepared records and decision written, not yet durable) loses the whole
 * transaction or keeps all of it, never a part; once one part's commit is durable the decision is,
 * and recovery commits the other part; the replication log ships no decision before it is
 * durable; a decision with an idempotency record, and a prepared record of a transaction another
 * node coordinates, are synced as before.
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

  /** A and B prepared, then the decision, all three written without a sync. */
  private static long preparedAndDecided(RocksStore store, MemoryDisk disk) {
    await(store, store.commit(store.newTransactionId(),
        List.of(Fixtures.write(A, new Operation.Increment("n", 100)))));
    long id = store.newTransactionId();
    await(store, store.prepare(new PreparedTransaction(id, A,
        List.of(new Operation.Increment("n", -30)))));
    await(store, store.prepare(new PreparedTransaction(id, B,
        List.of(new Operation.Increment("n", 30)))));
    assertEquals(2, disk.unsyncedBatches(),
        "the prepared records of a transaction this node coordinates are written without a sync");
    await(store, store.persistDecisionBeforeLocalCommits(new DecidedTransaction(id, List.of(A, B))));
    assertEquals(3, disk.unsyncedBatches(), "the decision was written without a sync");
    return id;
  }

  /**
   * A crash before any part commits keeps a prefix of the three unsynced batches (A's prepared
   * record, B's, the decision): recovery either finds the decision with both prepared records and
   * commits both parts, or finds no decision and aborts whatever prepared record survived. Never
   * one part without the other.
   */
  @Test
  void aCrashBeforeAnyPartCommitsKeepsAllOfTheTransactionOrNothing() {
    boolean sawWhole = false;
    boolean sawNothing = false;
    for (int seed = 1; seed <= 40; seed++) {
      MemoryDisk disk = new MemoryDisk();
      RocksStore store = open(disk);
      long id = preparedAndDecided(store, disk);
      // Power lost (no close: a close would sync).
      RocksStore recovered = open(disk.crash(new SplittableRandom(seed), 0.75));
      InDoubtResolution resolution = recovered.resolveInDoubtTransactions(NO_REDO);
      long a = Fixtures.counter(recovered.read(A), "n");
      long b = Fixtures.counter(recovered.read(B), "n");
      if (resolution.toCommit().isEmpty()) {
        assertEquals(List.of(), resolution.decisionsToForget(), "seed " + seed);
        assertTrue(resolution.toAbort().stream().allMatch(part -> part.transactionId() == id));
        assertEquals(100, a, "seed " + seed + ": presumed abort, nothing of it applied");
        assertEquals(0, b, "seed " + seed);
        sawNothing = true;
      } else {
        assertEquals(List.of(A, B), resolution.toCommit().stream()
            .map(PreparedTransaction::entity).sorted(
                java.util.Comparator.comparing(EntityId::id)).toList(), "seed " + seed);
        assertEquals(70, a, "seed " + seed + ": the decision survived with both parts");
        assertEquals(30, b, "seed " + seed);
        sawWhole = true;
      }
      recovered.close();
    }
    assertTrue(sawWhole && sawNothing, "the seeds cover both ends of the window");
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
   * The count the change is about: a transaction of two participants in two partitions took five
   * synced writes in three sequential waits (prepare ×2, decision, commit ×2). Coordinated on this
   * single node it now takes two in one wait (the commits); with a synced decision (an idempotency
   * record, a participant elsewhere) three in two; and a transaction another node coordinates
   * still syncs its prepared records.
   */
  @Test
  void aTwoParticipantTransactionTakesTwoSyncedWritesInsteadOfFive() {
    assertEquals(2, syncedWritesOfATransaction(true, true, false));
    assertEquals(3, syncedWritesOfATransaction(true, false, false));
    assertEquals(5, syncedWritesOfATransaction(false, false, false));
  }

  /**
   * On a disk that can crash alone (a PostgreSQL server, here a {@link SharedDiskView}, which says
   * so), this process could go on acting on a record the disk lost: everything is synced as before.
   */
  @Test
  void onADiskThatCanCrashAloneEveryRecordKeepsItsOwnSync() {
    assertEquals(5, syncedWritesOfATransaction(true, true, true));
  }

  private static long syncedWritesOfATransaction(boolean coordinatedHere,
      boolean decisionSyncedByCommits, boolean diskCrashesAlone) {
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = diskCrashesAlone
        ? RocksStore.open(settings(), new FakeClock(Fixtures.START_MILLIS),
            SharedDiskView.of(disk), RocksStore.Execution.STEPPED)
        : open(disk);
    long id = store.newTransactionId();
    if (!coordinatedHere) {
      int otherNode = (TransactionIds.nodeOf(id) + 1) % TransactionIds.NODE_COUNT;
      id = id - TransactionIds.nodeOf(id) + otherNode;
    }
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
