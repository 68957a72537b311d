package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import dev.troupe.storage.KeyValueDisk.Column;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Partition ownership ({@link PartitionOwnership#ACQUIRED}): two {@link RocksStore}s over one
 * shared {@link MemoryDisk} play two nodes of a data centre (each through a {@link SharedDiskView}
 * view, as two nodes share a PostgreSQL database). Hand-offs keep every acknowledged commit and
 * its order, a fenced node's writes are refused with {@code not_owner} and write nothing, cached
 * states do not outlive an ownership, maintenance runs per acquired partition, and each node keeps
 * its own clock ceiling.
 */
class PartitionOwnershipTest {
  private static final Path NO_DIRECTORY = Path.of("memory-disk");

  private final MemoryDisk disk = new MemoryDisk();
  private final List<RocksStore> opened = new ArrayList<>();

  @AfterEach
  void closeAll() {
    for (RocksStore store : opened) {
      store.close();
    }
    disk.close();
  }

  static StorageSettings settings(int nodeId) {
    return Fixtures.settings(NO_DIRECTORY).withNodeId(nodeId)
        .withPartitionOwnership(PartitionOwnership.ACQUIRED);
  }

  private RocksStore node(int nodeId, FakeClock clock) {
    return node(settings(nodeId), clock, RocksStore.Execution.STEPPED);
  }

  private RocksStore node(StorageSettings settings, FakeClock clock,
      RocksStore.Execution execution) {
    RocksStore store = RocksStore.open(settings, clock, SharedDiskView.of(disk), execution);
    opened.add(store);
    return store;
  }

  static void settle(RocksStore store) {
    for (int passes = 0; store.runPendingWork(); passes++) {
      if (passes > 1_000_000) {
        fail("the stepped store never ran out of work");
      }
    }
  }

  /** The {@code index}th entity (of type Account) that lands in {@code partition}. */
  static EntityId entityIn(Store store, int partition, int index) {
    int found = 0;
    for (int i = 0; ; i++) {
      EntityId entity = new EntityId("Account", "a" + i);
      if (store.partitionOf(entity) == partition && found++ == index) {
        return entity;
      }
    }
  }

  static List<EntityWrite> increment(EntityId entity, long by) {
    return List.of(Fixtures.write(entity, new Operation.Increment("n", by)));
  }

  static ErrorCode refusal(CompletableFuture<?> future) {
    try {
      future.join();
      return null;
    } catch (CompletionException e) {
      if (e.getCause() instanceof TroupeException refused) {
        return refused.code();
      }
      throw e;
    }
  }

  static ErrorCode refusal(Runnable call) {
    try {
      call.run();
      return null;
    } catch (TroupeException refused) {
      return refused.code();
    }
  }

  /** The journal records of a partition, in sequence order, asserting the sequences are dense. */
  static List<TransactionRecord> journal(KeyValueDisk disk, int partition) {
    List<TransactionRecord> records = new ArrayList<>();
    try (KeyValueDisk.Cursor cursor = disk.cursor(Column.JOURNAL)) {
      long expected = -1;
      for (cursor.seek(Keys.journal(partition, 0));
          cursor.isValid() && Keys.journalPartition(cursor.key()) == partition; cursor.next()) {
        long sequence = Keys.journalSequence(cursor.key());
        assertTrue(expected < 0 || sequence == expected, "a journal gap at " + expected);
        expected = sequence + 1;
        records.add(Codec.decodeRecord(cursor.value()));
      }
    }
    return records;
  }

  static List<Long> transactionIds(List<TransactionRecord> records) {
    return records.stream().map(TransactionRecord::transactionId).toList();
  }

  // ------------------------------------------------------------------------------------ the tests

  @Test
  void aNodeOpensOwningNothingAndRefusesWhatItDoesNotOwn() {
    RocksStore a = node(1, new FakeClock(Fixtures.START_MILLIS));
    EntityId entity = entityIn(a, 0, 0);
    assertEquals(List.of(), a.ownedPartitions());
    assertFalse(a.ownsPartition(0));
    assertEquals(ErrorCode.NOT_OWNER, refusal(() -> a.read(entity)));
    assertEquals(ErrorCode.NOT_OWNER,
        refusal(() -> a.readAt(entity, a.currentTimestamp())));
    assertEquals(ErrorCode.NOT_OWNER, refusal(a.commit(a.newTransactionId(), increment(entity, 1))));
    assertEquals(ErrorCode.NOT_OWNER,
        refusal(a.prepare(new PreparedTransaction(a.newTransactionId(), entity,
            List.of(new Operation.Increment("n", 1))))));
    assertEquals(List.of(), journal(disk, 0), "nothing was written");
    a.checkpointNow(); // nothing owned, nothing to do
  }

  @Test
  void aHandOffKeepsEveryAcknowledgedCommitInOrderAndTheNextOwnerCommitsAbove() {
    // B's physical clock is ten seconds behind A's: its versions must still follow A's.
    RocksStore a = node(1, new FakeClock(Fixtures.START_MILLIS + 10_000));
    RocksStore b = node(2, new FakeClock(Fixtures.START_MILLIS));
    EntityId entity = entityIn(a, 1, 0);
    AcquiredPartition first = a.acquirePartition(1);
    assertEquals(1, first.epoch());
    assertEquals(List.of(1), a.ownedPartitions());
    List<Long> acknowledged = new ArrayList<>();
    long lastTimestamp = 0;
    for (int i = 1; i <= 5; i++) {
      CompletableFuture<Committed> commit = a.commit(a.newTransactionId(), increment(entity, i));
      settle(a);
      Committed committed = commit.join();
      assertTrue(committed.commitTimestamp() > lastTimestamp);
      lastTimestamp = committed.commitTimestamp();
      acknowledged.add(committed.transactionId());
    }
    assertEquals(15, Fixtures.counter(a.read(entity), "n"));
    a.releasePartition(1);
    assertEquals(List.of(), a.ownedPartitions());
    assertEquals(ErrorCode.NOT_OWNER, refusal(() -> a.read(entity)));
    assertEquals(ErrorCode.NOT_OWNER, refusal(a.commit(a.newTransactionId(), increment(entity, 100))));

    AcquiredPartition second = b.acquirePartition(1);
    assertEquals(2, second.epoch());
    assertEquals(new KeyValueDisk.PartitionOwner(2, 2), ownerOf(1));
    assertEquals(15, Fixtures.counter(b.read(entity), "n"), "B reads every acknowledged commit");
    assertEquals(lastTimestamp, b.read(entity).version());
    assertTrue(b.currentTimestamp() >= lastTimestamp, "B's clock is past A's timestamps");
    CompletableFuture<Committed> next = b.commit(b.newTransactionId(), increment(entity, 6));
    settle(b);
    assertTrue(next.join().commitTimestamp() > lastTimestamp, "B's version continues above A's");
    assertEquals(21, Fixtures.counter(b.read(entity), "n"));
    acknowledged.add(next.join().transactionId());
    assertEquals(acknowledged, transactionIds(journal(disk, 1)), "every commit, in order");
    assertEquals(21, Fixtures.counter(b.readAt(entity, b.currentTimestamp()), "n"));
  }

  private KeyValueDisk.PartitionOwner ownerOf(int partition) {
    try {
      return disk.ownerOf(partition);
    } catch (DiskException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void aFencedNodeIsRefusedNotOwnerWritesNothingAndKeepsItsOtherPartitions() {
    RocksStore a = node(1, new FakeClock(Fixtures.START_MILLIS));
    RocksStore b = node(2, new FakeClock(Fixtures.START_MILLIS));
    List<Integer> lost = new CopyOnWriteArrayList<>();
    a.setEvents(new StorageEvents() {
      @Override
      public void storeFailed(Throwable cause) {
        fail("the store must not fail: " + cause);
      }

      @Override
      public void corruptionDetected(String where, CorruptDataException damage) {}

      @Override
      public void partitionLost(int partition, FencedException cause) {
        lost.add(partition);
      }
    });
    EntityId moving = entityIn(a, 0, 0);
    EntityId staying = entityIn(a, 1, 0);
    a.acquirePartition(0);
    a.acquirePartition(1);
    CompletableFuture<Committed> before = a.commit(a.newTransactionId(), increment(moving, 1));
    settle(a);
    before.join();
    // Queued on A, not yet written, when B takes the partition over without A releasing it (A
    // was cut off): in flight during the hand-off.
    long inFlight = a.newTransactionId();
    CompletableFuture<Committed> refused = a.commit(inFlight, increment(moving, 10));
    assertEquals(2, b.acquirePartition(0).epoch());
    settle(a);
    assertEquals(ErrorCode.NOT_OWNER, refusal(refused));
    assertEquals(List.of(0), lost, "the runtime hears of the lost partition once");
    assertFalse(transactionIds(journal(disk, 0)).contains(inFlight), "the refused commit wrote nothing");
    assertFalse(a.ownsPartition(0));
    assertEquals(ErrorCode.NOT_OWNER, refusal(() -> a.read(moving)));
    assertEquals(ErrorCode.NOT_OWNER, refusal(a.commit(a.newTransactionId(), increment(moving, 1))));
    // The store stays healthy and keeps serving its other partition.
    assertNull(a.health().failure());
    CompletableFuture<Committed> other = a.commit(a.newTransactionId(), increment(staying, 7));
    settle(a);
    other.join();
    assertEquals(7, Fixtures.counter(a.read(staying), "n"));
    a.checkpointNow(); // the fenced partition is skipped, the owned one checkpointed
    a.releasePartition(0);
    assertEquals(List.of(1), a.ownedPartitions());
    assertEquals(1, Fixtures.counter(b.read(moving), "n"));
    assertEquals(List.of(before.join().transactionId()), transactionIds(journal(disk, 0)));
  }

  @Test
  void aCommitInFlightDuringACutOffHandOffIsEitherAcknowledgedAndPresentOrRefusedAndAbsent()
      throws Exception {
    handOffUnderCommits(false);
  }

  @Test
  void aCommitInFlightDuringAReleaseIsEitherAcknowledgedAndPresentOrRefusedAndAbsent()
      throws Exception {
    handOffUnderCommits(true);
  }

  /**
   * A thread commits to one entity of node A, eight at a time, while node B takes the partition
   * over: after A released it ({@code graceful}) or while A still writes (A cut off).
   */
  private void handOffUnderCommits(boolean graceful) throws Exception {
    StorageSettings settings = settings(1);
    RocksStore a = node(settings, new FakeClock(Fixtures.START_MILLIS), RocksStore.Execution.THREADS);
    RocksStore b = node(settings(2), new FakeClock(Fixtures.START_MILLIS),
        RocksStore.Execution.THREADS);
    EntityId entity = entityIn(a, 0, 0);
    a.acquirePartition(0);
    Set<Long> acknowledged = ConcurrentHashMap.newKeySet();
    Set<Long> refused = ConcurrentHashMap.newKeySet();
    List<Throwable> unexpected = new CopyOnWriteArrayList<>();
    AtomicBoolean running = new AtomicBoolean(true);
    Thread committer = new Thread(() -> {
      while (running.get()) {
        List<CompletableFuture<Committed>> window = new ArrayList<>();
        List<Long> ids = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
          long id = a.newTransactionId();
          ids.add(id);
          window.add(a.commit(id, increment(entity, 1)));
        }
        for (int i = 0; i < window.size(); i++) {
          try {
            acknowledged.add(window.get(i).join().transactionId());
          } catch (CompletionException e) {
            if (e.getCause() instanceof TroupeException t && t.code() == ErrorCode.NOT_OWNER) {
              refused.add(ids.get(i));
            } else {
              unexpected.add(e);
            }
          }
        }
      }
    }, "committer");
    committer.start();
    while (acknowledged.size() < 50) {
      Thread.sleep(1);
    }
    if (graceful) {
      a.releasePartition(0);
    }
    b.acquirePartition(0);
    long deadline = System.currentTimeMillis() + 10_000;
    while (refused.size() < 8 && System.currentTimeMillis() < deadline) {
      Thread.sleep(1);
    }
    running.set(false);
    committer.join();
    assertEquals(List.of(), unexpected);
    assertFalse(refused.isEmpty(), graceful ? "A refused after its release" : "A was fenced");
    List<Long> written = transactionIds(journal(disk, 0));
    assertEquals(acknowledged, new HashSet<>(written), "exactly the acknowledged commits");
    for (Long id : refused) {
      assertFalse(written.contains(id), "a refused commit is absent");
    }
    assertEquals(acknowledged.size(), Fixtures.counter(b.read(entity), "n"));
    CompletableFuture<Committed> after = b.commit(b.newTransactionId(), increment(entity, 1));
    assertTrue(after.get().commitTimestamp() > b.read(entity).version() - 1);
    assertEquals(acknowledged.size() + 1, Fixtures.counter(b.read(entity), "n"));
  }

  @Test
  void aStateCachedBeforeAnotherOwnerWroteIsNeverServed() {
    RocksStore a = node(1, new FakeClock(Fixtures.START_MILLIS));
    RocksStore b = node(2, new FakeClock(Fixtures.START_MILLIS));
    EntityId entity = entityIn(a, 0, 0);
    a.acquirePartition(0);
    CompletableFuture<Committed> first = a.commit(a.newTransactionId(), increment(entity, 1));
    settle(a);
    first.join();
    assertEquals(1, Fixtures.counter(a.read(entity), "n"));
    assertTrue(a.isCached(entity));
    // A graceful hand-off and back.
    a.releasePartition(0);
    assertFalse(a.isCached(entity), "a release drops the partition's cached states");
    b.acquirePartition(0);
    CompletableFuture<Committed> second = b.commit(b.newTransactionId(), increment(entity, 10));
    settle(b);
    second.join();
    b.releasePartition(0);
    a.acquirePartition(0);
    assertEquals(11, Fixtures.counter(a.read(entity), "n"), "A reads B's write");
    // Cut off: B takes over while A still caches, then A takes it back.
    assertTrue(a.isCached(entity));
    b.acquirePartition(0);
    CompletableFuture<Committed> third = b.commit(b.newTransactionId(), increment(entity, 100));
    settle(b);
    third.join();
    // A never noticed the fence (no write since): acquiring again asks the disk who owns it.
    AcquiredPartition again = a.acquirePartition(0);
    assertEquals(5, again.epoch());
    assertEquals(111, Fixtures.counter(a.read(entity), "n"), "A reads B's write again");
    CompletableFuture<Committed> fourth = a.commit(a.newTransactionId(), increment(entity, 1000));
    settle(a);
    assertTrue(fourth.join().commitTimestamp() > third.join().commitTimestamp());
    assertEquals(1111, Fixtures.counter(a.read(entity), "n"));
    // B was fenced without noticing: its next write is refused and wrote nothing.
    CompletableFuture<Committed> stale = b.commit(b.newTransactionId(), increment(entity, 5));
    settle(b);
    assertEquals(ErrorCode.NOT_OWNER, refusal(stale));
    assertEquals(1111, Fixtures.counter(a.read(entity), "n"));
  }

  @Test
  void maintenanceRunsPerAcquiredPartitionAndTheNextOwnerContinuesIt() {
    FakeClock clockA = new FakeClock(Fixtures.START_MILLIS);
    FakeClock clockB = new FakeClock(Fixtures.START_MILLIS);
    StorageSettings tiny = settings(1).withCheckpoints(2, 10, 5).withHistoryRetentionMillis(0);
    RocksStore a = node(tiny, clockA, RocksStore.Execution.STEPPED);
    RocksStore b = node(tiny.withNodeId(2), clockB, RocksStore.Execution.STEPPED);
    EntityId entity = entityIn(a, 0, 0);
    a.acquirePartition(0);
    long[] timestamps = new long[30];
    for (int i = 0; i < 30; i++) {
      CompletableFuture<Committed> commit = a.commit(a.newTransactionId(), increment(entity, 1));
      settle(a);
      timestamps[i] = commit.join().commitTimestamp();
      clockA.advance(5);
    }
    clockA.advance(1_000);
    a.checkpointNow();
    settle(a);
    assertTrue(a.statistics().checkpointRounds() > 0);
    assertTrue(a.statistics().truncatedRecords() > 0, "A truncated its partition");
    long horizon = a.historyHorizon(0);
    assertTrue(horizon > 0);
    assertEquals(0, a.historyHorizon(1), "an unowned partition is not maintained");
    assertNull(metaValue(Keys.metaLastRound(1)), "no round was written for partition 1");
    assertNotNull(metaValue(Keys.metaLastRound(0)));
    a.releasePartition(0);

    clockB.set(clockA.getAsLong());
    b.acquirePartition(0);
    assertEquals(horizon, b.historyHorizon(0), "B recovered A's horizon");
    assertEquals(30, Fixtures.counter(b.read(entity), "n"));
    assertEquals(30, Fixtures.counter(b.readAt(entity, timestamps[29]), "n"));
    assertEquals(ErrorCode.HISTORY_TRUNCATED, refusal(() -> b.readAt(entity, timestamps[0])));
    for (int i = 0; i < 20; i++) {
      CompletableFuture<Committed> commit = b.commit(b.newTransactionId(), increment(entity, 1));
      settle(b);
      commit.join();
      clockB.advance(5);
    }
    clockB.advance(1_000);
    b.checkpointNow();
    settle(b);
    assertTrue(b.historyHorizon(0) > horizon, "B truncates further");
    assertEquals(50, Fixtures.counter(b.readAt(entity, b.currentTimestamp()), "n"));
    List<TransactionRecord> retained = journal(disk, 0);
    for (int i = 1; i < retained.size(); i++) {
      assertTrue(retained.get(i).commitTimestamp() > retained.get(i - 1).commitTimestamp());
    }
  }

  private byte[] metaValue(byte[] key) {
    try {
      return disk.get(Column.META, key);
    } catch (DiskException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void eachNodeKeepsItsOwnClockCeiling() {
    FakeClock clockA = new FakeClock(Fixtures.START_MILLIS);
    FakeClock clockB = new FakeClock(Fixtures.START_MILLIS);
    RocksStore a = node(1, clockA);
    RocksStore b = node(2, clockB);
    a.acquirePartition(0);
    b.acquirePartition(1);
    long lastOfA = a.newTransactionId();
    long lastOfB = b.newTransactionId();
    byte[] ceilingA = metaValue(Keys.metaClockCeiling(1));
    byte[] ceilingB = metaValue(Keys.metaClockCeiling(2));
    assertNotNull(ceilingA);
    assertNotNull(ceilingB);
    assertNull(metaValue(Keys.META_CLOCK_CEILING), "a single node's key is not written");
    assertTrue(Codec.decodePosition(ceilingA).timestamp() > lastOfA);
    assertTrue(Codec.decodePosition(ceilingB).timestamp() > lastOfB);
    // B raising its ceiling much later leaves A's alone.
    clockB.advance(60_000);
    long laterOfB = b.newTransactionId();
    assertTrue(Codec.decodePosition(metaValue(Keys.metaClockCeiling(2))).timestamp() > laterOfB);
    assertEquals(Codec.decodePosition(ceilingA), Codec.decodePosition(metaValue(Keys.metaClockCeiling(1))));
    // A restarted node, its physical clock set back, still issues above its own ceiling.
    a.close();
    opened.remove(a);
    RocksStore restarted = node(1, new FakeClock(Fixtures.START_MILLIS - 60_000));
    assertTrue(restarted.newTransactionId() >= Codec.decodePosition(ceilingA).timestamp());
  }

  @Test
  void aSingleNodesStoreOpensAsANodeOfSeveralPastItsCeiling() {
    StorageSettings single = Fixtures.settings(NO_DIRECTORY).withNodeId(1);
    RocksStore alone = node(single, new FakeClock(Fixtures.START_MILLIS), RocksStore.Execution.STEPPED);
    assertEquals(List.of(0, 1), alone.ownedPartitions());
    assertTrue(alone.ownsPartition(0));
    assertThrows(IllegalStateException.class, () -> alone.acquirePartition(0));
    assertThrows(IllegalStateException.class, () -> alone.releasePartition(0));
    EntityId entity = entityIn(alone, 0, 0);
    CompletableFuture<Committed> commit = alone.commit(alone.newTransactionId(), increment(entity, 3));
    settle(alone);
    long last = commit.join().commitTimestamp();
    long ceiling = Codec.decodePosition(metaValue(Keys.META_CLOCK_CEILING)).timestamp();
    assertNull(metaValue(Keys.metaClockCeiling(1)), "a single node writes its ceiling as before");
    assertNull(ownerOf(0), "a single node takes no owner epoch");
    alone.close();
    opened.remove(alone);

    RocksStore node = node(1, new FakeClock(Fixtures.START_MILLIS - 60_000));
    assertTrue(node.newTransactionId() >= ceiling, "past the single node's ceiling");
    node.acquirePartition(0);
    assertEquals(3, Fixtures.counter(node.read(entity), "n"));
    CompletableFuture<Committed> next = node.commit(node.newTransactionId(), increment(entity, 1));
    settle(node);
    assertTrue(next.join().commitTimestamp() > last);
  }

  @Test
  void theNextOwnerIsToldOfPreparedPartsAndTheirDecisionsWrittenByANodeOwningNothing() {
    RocksStore a = node(1, new FakeClock(Fixtures.START_MILLIS));
    RocksStore b = node(2, new FakeClock(Fixtures.START_MILLIS));
    RocksStore coordinator = node(3, new FakeClock(Fixtures.START_MILLIS));
    EntityId x = entityIn(a, 0, 0);
    EntityId y = entityIn(a, 0, 1);
    a.acquirePartition(0);
    long decidedId = coordinator.newTransactionId();
    long undecidedId = coordinator.newTransactionId();
    List<Operation> plusFive = List.of(new Operation.Increment("n", 5));
    CompletableFuture<Void> preparedX = a.prepare(new PreparedTransaction(decidedId, x, plusFive));
    CompletableFuture<Void> preparedY = a.prepare(new PreparedTransaction(undecidedId, y, plusFive));
    settle(a);
    preparedX.join();
    preparedY.join();
    // The coordinator's node owns no partition: its decision is written unfenced all the same.
    assertEquals(List.of(), coordinator.ownedPartitions());
    IdempotencyRecord keyed = IdempotencyRecord.pending("\u0000tx", new byte[
        IdempotencyRecord.FINGERPRINT_BYTES], 3);
    coordinator.persistDecision(new DecidedTransaction(decidedId, List.of(x), keyed)).join();
    // Its idempotency record is a shared row, written with the decision: every node reads it.
    assertEquals(decidedId, b.idempotencyRecord("\u0000tx").orElseThrow().transactionId());

    AcquiredPartition acquired = b.acquirePartition(0);
    assertEquals(List.of(decidedId, undecidedId),
        acquired.prepared().stream().map(PreparedTransaction::transactionId).toList());
    assertEquals(List.of(decidedId),
        acquired.decided().stream().map(DecidedTransaction::transactionId).toList());
    assertTrue(b.newTransactionId() > undecidedId, "B's clock is past the prepared parts' ids");
    InDoubtResolution resolution = acquired.resolution(id -> false, entity -> true);
    assertEquals(List.of(x), resolution.toCommit().stream().map(PreparedTransaction::entity).toList());
    assertEquals(List.of(y), resolution.toAsk().stream().map(PreparedTransaction::entity).toList());
    assertEquals(List.of(), resolution.toAbort(), "a part whose coordinator may be alive is kept");
    CompletableFuture<Committed> committed = b.commitPrepared(decidedId, x, plusFive);
    settle(b);
    committed.join();
    assertEquals(5, Fixtures.counter(b.read(x), "n"));
    AcquiredPartition again = b.acquirePartition(0); // owned already: the report, read again
    assertEquals(acquired.epoch(), again.epoch());
    assertEquals(List.of(undecidedId),
        again.prepared().stream().map(PreparedTransaction::transactionId).toList());
    assertEquals(List.of(), again.decided());
    coordinator.forgetDecision(new DecidedTransaction(decidedId, List.of(x)));
    assertNull(metaOrTransaction(Keys.decided(decidedId)));
    coordinator.forgetIdempotencyRecord("\u0000tx").join();
    assertTrue(a.idempotencyRecord("\u0000tx").isEmpty(), "forgotten by a node owning nothing");
    // The fenced node's abandon of a part is refused: the part stays for its owner to resolve.
    a.abandonPrepared(undecidedId, y);
    settle(a);
    assertEquals(1, b.acquirePartition(0).prepared().size());
  }

  private byte[] metaOrTransaction(byte[] key) {
    try {
      return disk.get(Column.TRANSACTIONS, key);
    } catch (DiskException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void aHandOffOnRocksDbFencesTheOldOwner(@TempDir Path directory)
      throws Exception {
    try (RocksDisk rocks = RocksDisk.open(directory)) {
      StorageSettings settingsA = settings(1).withPartitions(2);
      RocksStore a = RocksStore.open(settingsA, new FakeClock(Fixtures.START_MILLIS),
          SharedDiskView.of(rocks), RocksStore.Execution.THREADS);
      RocksStore b = RocksStore.open(settings(2), new FakeClock(Fixtures.START_MILLIS),
          SharedDiskView.of(rocks), RocksStore.Execution.THREADS);
      try {
        EntityId entity = entityIn(a, 1, 0);
        a.acquirePartition(1);
        a.commit(a.newTransactionId(), increment(entity, 2)).get();
        b.acquirePartition(1);
        long refusedId = a.newTransactionId();
        assertEquals(ErrorCode.NOT_OWNER, refusal(a.commit(refusedId, increment(entity, 5))));
        assertEquals(2, Fixtures.counter(b.read(entity), "n"));
        b.commit(b.newTransactionId(), increment(entity, 3)).get();
        assertEquals(5, Fixtures.counter(b.read(entity), "n"));
        assertFalse(transactionIds(journal(rocks, 1)).contains(refusedId));
        assertEquals(2, journal(rocks, 1).size());
      } finally {
        a.close();
        b.close();
      }
    }
  }

  @Test
  void replicationBetweenDataCentresIsRefused() {
    RocksStore a = node(1, new FakeClock(Fixtures.START_MILLIS));
    UnsupportedOperationException refused = assertThrows(UnsupportedOperationException.class,
        () -> a.replicationLog().recordPeers(List.of()));
    assertTrue(refused.getMessage().contains("several nodes"), refused.getMessage());
    assertThrows(UnsupportedOperationException.class, a::bootstrapInstallation);
  }
}
