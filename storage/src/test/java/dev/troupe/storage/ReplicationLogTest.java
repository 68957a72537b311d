package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.Operation;
import dev.troupe.model.time.HybridLogicalClock;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicaApplication;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationEntry;
import dev.troupe.model.causal.ReplicationLogTruncatedException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The replication log of {@link RocksStore} ({@link DiskReplicationLog}): local entries written
 * with their journal records (crashes keep both or neither), decisions below their parts, replica
 * applications skipped, reading in bounded batches, the local safe timestamp under concurrent
 * writers, received entries, truncation and the vectors across restarts.
 */
class ReplicationLogTest {
  private static final Path NO_DIRECTORY = Path.of("memory-disk");
  private static final int LOCAL = 1001;
  private static final int REMOTE = 2002;
  private static final int OTHER = 3003;
  private static final int ENTITY_COUNT = 12;
  private static final Store.Redo NO_REDO = (part, state) -> {
    throw new AssertionError("no part needs a redo here");
  };

  private final List<EntityId> entities = new ArrayList<>();

  ReplicationLogTest() {
    for (int i = 0; i < ENTITY_COUNT; i++) {
      entities.add(new EntityId("Account", "a" + i));
    }
  }

  private static StorageSettings settings(boolean log) {
    return Fixtures.settings(NO_DIRECTORY).withDataCentreId(LOCAL).withReplicationLog(log)
        .withCheckpoints(2, 10, 5);
  }

  private static RocksStore open(StorageSettings settings, FakeClock clock, KeyValueDisk disk) {
    return RocksStore.open(settings, clock, disk, RocksStore.Execution.STEPPED);
  }

  private static void settle(RocksStore store) {
    for (int passes = 0; store.runPendingWork(); passes++) {
      if (passes > 1_000_000) {
        fail("the stepped store never ran out of work");
      }
    }
  }

  /** Every entry of {@code origin} the log serves, read in batches of {@code max}. */
  private static List<ReplicationEntry> readAll(ReplicationLog log, int origin, int max) {
    List<ReplicationEntry> all = new ArrayList<>();
    // Everything still held: a read from below the truncated bound is refused.
    long after = log.truncatedVector().get(origin);
    while (true) {
      ReplicationBatch batch = log.read(origin, after, max);
      all.addAll(batch.entries());
      // An empty batch read everything up to its upTo; the local origin's upTo moves on with the
      // clock (heartbeats), so waiting for it to stand still would never end.
      if (batch.entries().isEmpty() || batch.upToTimestamp() <= after) {
        return all;
      }
      after = batch.upToTimestamp();
    }
  }

  private static Set<Long> journalTransactions(MemoryDisk disk) {
    Set<Long> ids = new HashSet<>();
    try (KeyValueDisk.Cursor cursor = disk.cursor(KeyValueDisk.Column.JOURNAL)) {
      for (cursor.seekToFirst(); cursor.isValid(); cursor.next()) {
        TransactionRecord record = Codec.decodeRecord(cursor.value());
        if (!ReplicaApplication.isReplicaApplication(record.writes().get(0).operations())) {
          ids.add(record.commitTimestamp());
        }
      }
    }
    return ids;
  }

  private static List<Operation> replicaOperations(long position) {
    return List.of(new Operation.Assign(ReplicaApplication.markerKey(REMOTE),
        LongNode.valueOf(position)), new Operation.Increment("n", 1));
  }

  // --------------------------------------------------------------------------------- local side

  @Test
  void aCrashKeepsEachPartWithItsJournalRecordOrNeither() {
    int decisionsSeen = 0;
    int multiEntityPartsSeen = 0;
    for (int seed = 0; seed < 60; seed++) {
      SplittableRandom random = new SplittableRandom(seed);
      FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
      MemoryDisk disk = new MemoryDisk();
      StorageSettings settings = settings(true).withHistoryRetentionMillis(Long.MAX_VALUE / 4);
      RocksStore store = open(settings, clock, disk);
      Set<Long> multiEntity = new HashSet<>();
      for (int i = 0; i < 80; i++) {
        EntityId entity = entities.get(random.nextInt(ENTITY_COUNT));
        if (random.nextInt(6) == 0) {
          // A two-phase commit: prepare, decide, and commit each part once the decision is
          // durable, as the coordinator does (a crash may leave any of it in doubt).
          EntityId other = entities.get((entities.indexOf(entity) + 1) % ENTITY_COUNT);
          long transaction = store.newTransactionId();
          multiEntity.add(transaction);
          boolean replica = random.nextInt(3) == 0;
          List<Operation> operations = replica ? replicaOperations(i + 1)
              : List.of(new Operation.Increment("n", 1));
          CompletableFuture<Void> first =
              store.prepare(new PreparedTransaction(transaction, entity, operations));
          CompletableFuture<Void> second =
              store.prepare(new PreparedTransaction(transaction, other, operations));
          CompletableFuture.allOf(first, second).thenCompose(prepared -> store.persistDecision(
                  new DecidedTransaction(transaction, List.of(entity, other), null, replica)))
              .thenRun(() -> {
                store.commitPrepared(transaction, entity, operations);
                store.commitPrepared(transaction, other, operations);
              });
        } else {
          List<Operation> operations = random.nextInt(5) == 0
              ? replicaOperations(i + 1)
              : List.of(new Operation.Increment("n", random.nextLong(1, 9)));
          store.commit(store.newTransactionId(), List.of(new EntityWrite(entity, operations)));
        }
        if (random.nextInt(3) == 0) {
          store.runPendingWork();
        }
        clock.advance(random.nextInt(0, 3));
      }
      store.runPendingWork();
      disk = disk.crash(random, 0.5);
      RocksStore recovered = open(settings, clock, disk);
      recovered.resolveInDoubtTransactions(NO_REDO);
      Set<Long> parts = new HashSet<>();
      Map<Long, Long> decisions = new java.util.HashMap<>();
      List<ReplicationEntry> logged = readAll(recovered.replicationLog(), LOCAL, 7);
      for (ReplicationEntry entry : logged) {
        if (entry instanceof ReplicationEntry.Decision decision) {
          assertTrue(multiEntity.contains(decision.transactionId()), "seed " + seed);
          assertEquals(null, decisions.put(decision.transactionId(), decision.timestamp()),
              "seed " + seed + ": one decision per transaction");
          decisionsSeen++;
          continue;
        }
        ReplicationEntry.Part part = assertInstanceOf(ReplicationEntry.Part.class, entry);
        assertFalse(ReplicaApplication.isReplicaApplication(part.operations()),
            "seed " + seed + ": a replica application was logged");
        assertTrue(parts.add(part.timestamp()), "seed " + seed + ": one part per record");
        if (multiEntity.contains(part.transactionId())) {
          Long decided = decisions.get(part.transactionId());
          assertTrue(decided != null && decided < part.timestamp(),
              "seed " + seed + ": a part of a multi-entity transaction before its decision");
          multiEntityPartsSeen++;
        }
      }
      assertEquals(journalTransactions(disk), parts,
          "seed " + seed + ": parts and local journal records survive together");
      assertEquals(logged.size(), recovered.replicationLog().entryCount(), "seed " + seed);
      recovered.close();
    }
    assertTrue(decisionsSeen > 50 && multiEntityPartsSeen > 50,
        decisionsSeen + " decisions and " + multiEntityPartsSeen + " of their parts survived");
  }

  @Test
  void nothingIsLoggedWhenTheLogIsOff() {
    StorageSettings settings = settings(false);
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    RocksStore store = open(settings, clock, new MemoryDisk());
    store.commit(store.newTransactionId(), List.of(Fixtures.write(entities.get(0),
        new Operation.Increment("n", 1))));
    settle(store);
    assertEquals(0, store.replicationLog().entryCount());
    assertFalse(settings.writesReplicationLog());
    store.close();
  }

  @Test
  void anUnnamedDataCentreLogsUnderOriginZeroForItsMessages() {
    StorageSettings settings = settings(true).withDataCentreId(0);
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    RocksStore store = open(settings, clock, new MemoryDisk());
    Operation message = new Operation.SendMessage(entities.get(1), "hear",
        dev.troupe.model.Json.parse("{}"));
    store.commit(store.newTransactionId(), List.of(Fixtures.write(entities.get(0),
        new Operation.Increment("n", 1), message)));
    settle(store);
    List<ReplicationEntry> entries = readAll(store.replicationLog(), 0, 100);
    assertEquals(1, entries.size(), entries.toString());
    ReplicationEntry.Part part = assertInstanceOf(ReplicationEntry.Part.class, entries.get(0));
    assertEquals(0, part.originDc());
    assertEquals(message, part.operations().get(1));
    store.close();
  }

  @Test
  void theDeliveredWatermarkIsDurableAndOnlyRises() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(settings(true), clock, disk);
    assertEquals(0, store.replicationLog().deliveredWatermark());
    store.replicationLog().recordDelivered(500).join();
    store.replicationLog().recordDelivered(400).join();
    assertEquals(500, store.replicationLog().deliveredWatermark());
    RocksStore recovered = open(settings(true), clock, disk.crash(new SplittableRandom(3), 0));
    assertEquals(500, recovered.replicationLog().deliveredWatermark());
    recovered.close();
  }

  @Test
  void eachOriginsDeliveredWatermarkIsDurableApartAndOnlyRises() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(settings(true), clock, disk);
    ReplicationLog log = store.replicationLog();
    assertEquals(DependencyVector.EMPTY, log.deliveredVector());
    log.recordDelivered(LOCAL + 1, 700).join();
    log.recordDelivered(LOCAL + 2, 300).join();
    log.recordDelivered(LOCAL + 1, 600).join();
    log.recordDelivered(LOCAL, 500).join(); // this DC's own: the watermark of its log
    assertEquals(500, log.deliveredWatermark());
    DependencyVector expected =
        DependencyVector.of(java.util.Map.of(LOCAL, 500L, LOCAL + 1, 700L, LOCAL + 2, 300L));
    assertEquals(expected, log.deliveredVector());
    RocksStore recovered = open(settings(true), clock, disk.crash(new SplittableRandom(4), 0));
    assertEquals(expected, recovered.replicationLog().deliveredVector());
    recovered.close();
  }

  @Test
  void partsCarryTheirEntityOperationsPlaceAndTheApplyingVector() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    RocksStore store = open(settings(true), clock, new MemoryDisk());
    ReplicationLog log = store.replicationLog();
    DependencyVector applying = DependencyVector.of(Map.of(REMOTE, 77L));
    log.setApplyingVectorSource(() -> applying);
    // Two entities of one partition in one record: two parts at one timestamp, places 0 and 1.
    EntityId a = entities.get(0);
    EntityId b = entities.stream().skip(1)
        .filter(e -> store.partitionOf(e) == store.partitionOf(a)).findFirst().orElseThrow();
    long transaction = store.newTransactionId();
    CompletableFuture<Committed> committed = store.commit(transaction, List.of(
        Fixtures.write(a, new Operation.Increment("n", 2)),
        Fixtures.write(b, new Operation.Assign("name", TextNode.valueOf("x")))));
    settle(store);
    long timestamp = committed.join().commitTimestamp();
    List<ReplicationEntry> entries = readAll(log, LOCAL, 100);
    assertEquals(List.of(
        new ReplicationEntry.Part(LOCAL, timestamp, transaction, 0, a,
            List.of(new Operation.Increment("n", 2)), applying),
        new ReplicationEntry.Part(LOCAL, timestamp, transaction, 1, b,
            List.of(new Operation.Assign("name", TextNode.valueOf("x"))), applying)), entries);
    store.close();
  }

  @Test
  void aDecisionPrecedesItsPartsAndReplicaApplicationsAreSkipped() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(settings(true), clock, disk);
    EntityId a = entities.get(0);
    EntityId b = entities.get(1);
    long local = store.newTransactionId();
    store.prepare(new PreparedTransaction(local, a, List.of(new Operation.Increment("n", -3))));
    store.prepare(new PreparedTransaction(local, b, List.of(new Operation.Increment("n", 3))));
    settle(store); // every vote follows its durable prepare
    store.persistDecision(new DecidedTransaction(local, List.of(a, b)));
    long remote = store.newTransactionId();
    store.prepare(new PreparedTransaction(remote, a, replicaOperations(5)));
    store.prepare(new PreparedTransaction(remote, b, replicaOperations(5)));
    settle(store);
    store.persistDecision(new DecidedTransaction(remote, List.of(a, b), null, true));
    settle(store);
    store.commitPrepared(local, a, List.of(new Operation.Increment("n", -3)));
    store.commitPrepared(remote, a, replicaOperations(5));
    settle(store);
    // b's parts are left in doubt: recovery commits them.
    disk = disk.crash(new SplittableRandom(2), 0);
    RocksStore recovered = open(settings(true), clock, disk);
    recovered.resolveInDoubtTransactions(NO_REDO);
    List<ReplicationEntry> entries = readAll(recovered.replicationLog(), LOCAL, 100);
    assertEquals(3, entries.size(), entries.toString());
    ReplicationEntry.Decision decision =
        assertInstanceOf(ReplicationEntry.Decision.class, entries.get(0));
    assertEquals(local, decision.transactionId());
    assertEquals(List.of(a, b), decision.participants());
    for (ReplicationEntry part : entries.subList(1, 3)) {
      assertInstanceOf(ReplicationEntry.Part.class, part);
      assertEquals(local, part.transactionId());
      assertTrue(part.timestamp() > decision.timestamp(), "a part below its decision");
    }
    recovered.close();
  }

  /**
   * A bootstrap image's start for the local origin never cuts a local multi-entity transaction:
   * below the oldest remembered decision until every part committed and the decision is
   * forgotten, then the local safe timestamp.
   */
  @Test
  void theLocalImageStartStaysBelowEveryDecisionWhosePartsMayStillCommit() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    RocksStore store = open(settings(true), clock, new MemoryDisk());
    EntityId a = entities.get(0);
    EntityId b = entities.get(1);
    store.commit(store.newTransactionId(), List.of(Fixtures.write(a,
        new Operation.Increment("n", 1))));
    settle(store);
    long safe = store.replicationLog().localSafeTimestamp();
    assertTrue(store.replicationLog().localImageStart() >= safe, "no decision: the safe one");
    long transaction = store.newTransactionId();
    store.prepare(new PreparedTransaction(transaction, a, List.of(new Operation.Increment("n", 2))));
    store.prepare(new PreparedTransaction(transaction, b, List.of(new Operation.Increment("n", 2))));
    settle(store);
    DecidedTransaction decision = new DecidedTransaction(transaction, List.of(a, b));
    store.persistDecision(decision);
    store.commitPrepared(transaction, a, List.of(new Operation.Increment("n", 2)));
    settle(store);
    assertTrue(store.replicationLog().localSafeTimestamp() > transaction);
    assertEquals(transaction - 1, store.replicationLog().localImageStart(),
        "b's part may still commit: the decision is not cut");
    store.commitPrepared(transaction, b, List.of(new Operation.Increment("n", 2)));
    settle(store);
    store.forgetDecision(decision);
    settle(store);
    safe = store.replicationLog().localSafeTimestamp();
    assertTrue(store.replicationLog().localImageStart() >= safe, "forgotten: the safe one");
    store.close();
  }

  @Test
  void aDecisionNamesOnlyTheParticipantsThatWillCommitAPart() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    RocksStore store = open(settings(true), clock, new MemoryDisk());
    EntityId writer = entities.get(0);
    EntityId reader = entities.get(1); // read only: prepares nothing
    EntityId amended = entities.get(2); // its amendment took every operation back
    EntityId psac = entities.get(3); // operations computed at the commit
    long transaction = store.newTransactionId();
    store.prepare(new PreparedTransaction(transaction, writer,
        List.of(new Operation.Increment("n", 1))));
    store.prepare(new PreparedTransaction(transaction, amended, List.of()));
    store.prepare(new PreparedTransaction(transaction, psac, List.of(), new byte[] {'+', '1'}, 1));
    settle(store);
    store.persistDecision(new DecidedTransaction(transaction,
        List.of(writer, reader, amended, psac)));
    long readOnly = store.newTransactionId();
    store.prepare(new PreparedTransaction(readOnly, amended, List.of()));
    settle(store);
    store.persistDecision(new DecidedTransaction(readOnly, List.of(reader, amended)));
    settle(store);
    List<ReplicationEntry> entries = readAll(store.replicationLog(), LOCAL, 100);
    assertEquals(1, entries.size(), "no decision when no participant commits a part: " + entries);
    ReplicationEntry.Decision decision =
        assertInstanceOf(ReplicationEntry.Decision.class, entries.get(0));
    assertEquals(List.of(writer, psac), decision.participants());
    store.close();
  }

  @Test
  void aPsacPartThatCommitsNothingLogsAnEmptyPartAfterItsDecision() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(settings(true), clock, disk);
    EntityId writer = entities.get(0);
    EntityId psac = entities.get(3);
    EntityId inDoubt = entities.get(4);
    long transaction = store.newTransactionId();
    store.prepare(new PreparedTransaction(transaction, writer,
        List.of(new Operation.Increment("n", 1))));
    store.prepare(new PreparedTransaction(transaction, psac, List.of(), new byte[] {'+', '0'}, 1));
    store.prepare(new PreparedTransaction(transaction, inDoubt, List.of(), new byte[] {'+', '0'},
        1));
    settle(store);
    store.persistDecision(new DecidedTransaction(transaction, List.of(writer, psac, inDoubt)));
    settle(store);
    store.commitPrepared(transaction, writer, List.of(new Operation.Increment("n", 1)));
    store.abandonPrepared(transaction, psac); // its redo computed nothing
    // An aborted PSAC part (no decision) logs nothing.
    long aborted = store.newTransactionId();
    store.prepare(new PreparedTransaction(aborted, psac, List.of(), new byte[] {'+', '0'}, 2));
    settle(store);
    store.abandonPrepared(aborted, psac);
    settle(store);
    // The third part is in doubt at the crash; recovery's redo computes nothing for it either.
    disk = disk.crash(new SplittableRandom(6), 0);
    RocksStore recovered = open(settings(true), clock, disk);
    recovered.resolveInDoubtTransactions((part, state) -> List.of());
    ReplicationLog log = recovered.replicationLog();
    List<ReplicationEntry> entries = readAll(log, LOCAL, 100);
    assertEquals(4, entries.size(), entries.toString());
    ReplicationEntry.Decision decision =
        assertInstanceOf(ReplicationEntry.Decision.class, entries.get(0));
    assertEquals(List.of(writer, psac, inDoubt), decision.participants());
    Map<EntityId, List<Operation>> parts = new java.util.HashMap<>();
    for (ReplicationEntry entry : entries.subList(1, 4)) {
      ReplicationEntry.Part part = assertInstanceOf(ReplicationEntry.Part.class, entry);
      assertEquals(transaction, part.transactionId());
      assertTrue(part.timestamp() > decision.timestamp());
      parts.put(part.entity(), part.operations());
    }
    assertEquals(Map.of(writer, List.of(new Operation.Increment("n", 1)), psac, List.of(),
        inDoubt, List.of()), parts);
    assertTrue(disk.storedKeys(KeyValueDisk.Column.META, Keys.metaLoggedDecision(transaction),
        Keys.metaLoggedDecision(transaction + 1)).size() == 1, "marked until truncation");
    log.truncate(DependencyVector.of(Map.of(LOCAL, decision.timestamp()))).join();
    assertTrue(disk.storedKeys(KeyValueDisk.Column.META, Keys.metaLoggedDecision(transaction),
        Keys.metaLoggedDecision(transaction + 1)).isEmpty(), "the mark goes with the decision");
    assertEquals(3, readAll(log, LOCAL, 100).size());
    recovered.close();
  }

  @Test
  void underAsyncDurabilityOnlySyncedEntriesAreShipped() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    StorageSettings settings = settings(true).withDurability(Durability.ASYNC);
    RocksStore store = open(settings, clock, disk);
    ReplicationLog log = store.replicationLog();
    long opened = log.localSafeTimestamp();
    CompletableFuture<Committed> committed = store.commit(store.newTransactionId(),
        List.of(Fixtures.write(entities.get(0), new Operation.Increment("n", 1))));
    settle(store);
    long timestamp = committed.join().commitTimestamp();
    assertTrue(log.localSafeTimestamp() < timestamp, "acknowledged but not synced");
    assertEquals(new ReplicationBatch(LOCAL, List.of(), log.localSafeTimestamp()),
        log.read(LOCAL, 0, 10));
    assertTrue(log.localSafeTimestamp() >= opened);
    store.flushWriteAheadLog();
    assertTrue(log.localSafeTimestamp() >= timestamp);
    assertEquals(1, log.read(LOCAL, 0, 10).entries().size());
    store.close();
  }

  @Test
  void theLocalSafeTimestampIsNeverPassedByALaterWrite() throws Exception {
    for (int run = 0; run < 3; run++) {
      StorageSettings settings = Fixtures.settings(NO_DIRECTORY).withDataCentreId(LOCAL)
          .withReplicationLog(true);
      assertPullerSeesEveryEntry(RocksStore.open(settings,
          RocksStore.defaultClock(settings, System::currentTimeMillis), new MemoryDisk(),
          RocksStore.Execution.THREADS));
    }
  }

  @Test
  void theLocalSafeTimestampIsNeverPassedByALaterWriteOnRocksDb() throws Exception {
    for (Durability durability : Durability.values()) {
      Path directory = Fixtures.createTempDirectory();
      try {
        StorageSettings settings = Fixtures.settings(directory).withDataCentreId(LOCAL)
            .withReplicationLog(true).withDurability(durability);
        assertPullerSeesEveryEntry(RocksStore.open(settings, System::currentTimeMillis));
      } finally {
        Fixtures.deleteRecursively(directory);
      }
    }
  }

  /**
   * Writers (commits and decisions) on their own threads; a puller reads behind them as a peer
   * would, and what it got up to each upTo must be exactly what the log holds there at the end.
   */
  private static void assertPullerSeesEveryEntry(RocksStore store) throws Exception {
    ReplicationLog log = store.replicationLog();
    AtomicBoolean writing = new AtomicBoolean(true);
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<Thread> writers = new ArrayList<>();
    for (int w = 0; w < 4; w++) {
      int writer = w;
      writers.add(Thread.ofPlatform().start(() -> {
        SplittableRandom random = new SplittableRandom(writer);
        try {
          List<CompletableFuture<?>> commits = new ArrayList<>();
          for (int i = 0; i < 1_500; i++) {
            EntityId entity = new EntityId("Account", "w" + writer + "-" + random.nextInt(20));
            long transaction = store.newTransactionId();
            CompletableFuture<?> done = random.nextInt(10) == 0
                ? store.prepare(new PreparedTransaction(transaction, entity,
                        List.of(new Operation.Increment("n", 1))))
                    .thenCompose(prepared -> store.persistDecision(new DecidedTransaction(
                        transaction, List.of(entity, new EntityId("Account", "other")))))
                : store.commit(transaction,
                    List.of(Fixtures.write(entity, new Operation.Increment("n", 1))));
            commits.add(done);
            if (random.nextInt(8) == 0) {
              done.join();
            }
          }
          commits.forEach(CompletableFuture::join);
        } catch (Throwable t) {
          failure.compareAndSet(null, t);
        }
      }));
    }
    List<ReplicationEntry> pulled = new ArrayList<>();
    long after = 0;
    long previousSafe = 0;
    Thread watcher = Thread.ofPlatform().start(() -> {
      for (Thread writer : writers) {
        try {
          writer.join();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      store.flushWriteAheadLog(); // under ASYNC, what is shipped waits for the sync
      writing.set(false);
    });
    while (true) {
      // Read before reading: once the writers are done, an empty batch means everything
      // written is pulled (the safe timestamp itself moves on with the clock: heartbeats).
      boolean done = !writing.get();
      long safe = log.localSafeTimestamp();
      assertTrue(safe >= previousSafe, "the safe timestamp went back");
      previousSafe = safe;
      ReplicationBatch batch = log.read(LOCAL, after, 1 + (int) (safe % 50));
      pulled.addAll(batch.entries());
      after = Math.max(after, batch.upToTimestamp());
      if (done && batch.entries().isEmpty()) {
        break;
      }
    }
    watcher.join();
    if (failure.get() != null) {
      throw new AssertionError(failure.get());
    }
    List<ReplicationEntry> all = readAll(log, LOCAL, 1_000_000);
    assertEquals(6_000, all.size());
    assertTrue(all.stream().anyMatch(ReplicationEntry.Decision.class::isInstance));
    assertEquals(all.size(), pulled.size(), "entries appeared at or below an upTo already served");
    assertTrue(all.equals(pulled), "the puller got the log's entries in order");
    store.close();
  }

  // -------------------------------------------------------------------------------- remote side

  private static ReplicationEntry.Part remotePart(int origin, long timestamp, int index) {
    return new ReplicationEntry.Part(origin, timestamp, timestamp + 1_000, index,
        new EntityId("Account", "r" + timestamp), List.of(new Operation.Increment("n", 1)),
        DependencyVector.of(Map.of(LOCAL, 5L)));
  }

  @Test
  void receivedEntriesAreDurableIdempotentAndRaiseOnlyTheirOrigin() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(settings(true), clock, disk);
    ReplicationLog log = store.replicationLog();
    List<ReplicationEntry> first = List.of(remotePart(REMOTE, 10, 0), remotePart(REMOTE, 10, 1),
        remotePart(REMOTE, 20, 0));
    log.appendReceived(REMOTE, first, 25).join();
    log.appendReceived(REMOTE, first, 15).join(); // again, with a lower upTo
    log.appendReceived(OTHER, List.of(), 40).join(); // a heartbeat
    assertEquals(25, log.receivedVector().get(REMOTE));
    assertEquals(40, log.receivedVector().get(OTHER));
    long safe = log.localSafeTimestamp();
    long ownEntry = log.receivedVector().get(LOCAL);
    assertTrue(ownEntry >= safe && ownEntry <= log.localSafeTimestamp(),
        "the own entry is the local safe timestamp when asked");
    assertEquals(first, readAll(log, REMOTE, 100));
    assertEquals(new ReplicationBatch(REMOTE, List.of(), 25), log.read(REMOTE, 25, 10));
    assertEquals(new ReplicationBatch(OTHER, List.of(), 40), log.read(OTHER, 0, 10));
    // Synced: a power loss right after keeps them.
    store.close();
    disk = disk.crash(new SplittableRandom(4), 0);
    RocksStore recovered = open(settings(true), clock, disk);
    ReplicationLog after = recovered.replicationLog();
    assertEquals(first, readAll(after, REMOTE, 2));
    assertEquals(25, after.receivedVector().get(REMOTE));
    assertEquals(40, after.receivedVector().get(OTHER));
    assertThrows(Invariants.InvariantViolation.class,
        () -> after.appendReceived(LOCAL, List.of(), 5),
        "a peer never sends this data centre its own entries");
    assertThrows(Invariants.InvariantViolation.class,
        () -> after.appendReceived(REMOTE, List.of(remotePart(OTHER, 30, 0)), 30));
    recovered.close();
  }

  @Test
  void readsCutBetweenTimestampsNeverInsideOne() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    RocksStore store = open(settings(true), clock, new MemoryDisk());
    ReplicationLog log = store.replicationLog();
    List<ReplicationEntry> entries = new ArrayList<>();
    long[] timestamps = {3, 3, 3, 5, 8, 8, 9};
    for (int i = 0; i < timestamps.length; i++) {
      int index = i == 0 ? 0 : timestamps[i] == timestamps[i - 1]
          ? entries.get(i - 1).index() + 1 : 0;
      entries.add(remotePart(REMOTE, timestamps[i], index));
    }
    log.appendReceived(REMOTE, entries, 12).join();
    // A first timestamp larger than the limit comes whole.
    assertEquals(new ReplicationBatch(REMOTE, entries.subList(0, 3), 3), log.read(REMOTE, 0, 2));
    assertEquals(new ReplicationBatch(REMOTE, entries.subList(0, 3), 3), log.read(REMOTE, 0, 3));
    assertEquals(new ReplicationBatch(REMOTE, entries.subList(0, 4), 5), log.read(REMOTE, 0, 5));
    assertEquals(new ReplicationBatch(REMOTE, entries.subList(3, 4), 5), log.read(REMOTE, 3, 2));
    assertEquals(new ReplicationBatch(REMOTE, entries.subList(4, 7), 12), log.read(REMOTE, 5, 3));
    assertEquals(new ReplicationBatch(REMOTE, entries.subList(4, 6), 8), log.read(REMOTE, 5, 2));
    assertEquals(new ReplicationBatch(REMOTE, entries, 12), log.read(REMOTE, 0, 100));
    for (int max = 1; max <= 8; max++) {
      assertEquals(entries, readAll(log, REMOTE, max), "in batches of " + max);
    }
    store.close();
  }

  @Test
  void anIdleDataCentresSafeTimestampFollowsPhysicalTime() {
    // Heartbeats: with nothing committed, a peer's pull of this origin still learns that nothing
    // happened up to about now, so its applied vector (and lag, and the stable vector) move on.
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    RocksStore store = open(settings(true), clock, new MemoryDisk());
    ReplicationLog log = store.replicationLog();
    long before = log.localSafeTimestamp();
    clock.advance(5_000);
    long after = log.read(LOCAL, before, 10).upToTimestamp();
    assertTrue(HybridLogicalClock.toMillis(after) >= Fixtures.START_MILLIS + 5_000,
        "an idle origin's upTo follows the physical clock: " + after);
    store.close();
  }

  @Test
  void aPinnedSnapshotKeepsTheLocalEntriesAboveIt() {
    // The system-of-record exporter pins its watermark and reads the decisions above it: a
    // truncation asked past the pin (causal-message delivery's) keeps them.
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    RocksStore store = open(settings(true), clock, new MemoryDisk());
    ReplicationLog log = store.replicationLog();
    var firstCommit = store.commit(store.newTransactionId(),
        List.of(Fixtures.write(entities.get(0), new Operation.Increment("n", 1))));
    settle(store);
    var secondCommit = store.commit(store.newTransactionId(),
        List.of(Fixtures.write(entities.get(1), new Operation.Increment("n", 1))));
    settle(store);
    long first = firstCommit.join().commitTimestamp();
    long second = secondCommit.join().commitTimestamp();
    Store.Snapshot pin = store.pinSnapshot(first);
    log.truncate(DependencyVector.of(Map.of(LOCAL, log.localSafeTimestamp()))).join();
    assertEquals(first, log.truncatedVector().get(LOCAL), "deleted up to the pin only");
    List<ReplicationEntry> kept = readAll(log, LOCAL, 10);
    assertEquals(1, kept.size());
    assertEquals(second, kept.getFirst().timestamp());
    pin.close();
    log.truncate(DependencyVector.of(Map.of(LOCAL, log.localSafeTimestamp()))).join();
    assertEquals(List.of(), readAll(log, LOCAL, 10));
    assertEquals(second, log.truncatedVector().get(LOCAL), "released: the rest goes");
    store.close();
  }

  @Test
  void truncationDeletesPerOriginAtOrBelowItsEntryOnly() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(settings(true), clock, disk);
    ReplicationLog log = store.replicationLog();
    List<ReplicationEntry> remote = List.of(remotePart(REMOTE, 10, 0), remotePart(REMOTE, 20, 0),
        remotePart(REMOTE, 30, 0));
    List<ReplicationEntry> other = List.of(remotePart(OTHER, 10, 0), remotePart(OTHER, 20, 0));
    log.appendReceived(REMOTE, remote, 30).join();
    log.appendReceived(OTHER, other, 20).join();
    store.commit(store.newTransactionId(),
        List.of(Fixtures.write(entities.get(0), new Operation.Increment("n", 1))));
    settle(store);
    assertEquals(6, log.entryCount());
    log.truncate(DependencyVector.of(Map.of(REMOTE, 20L))).join();
    assertEquals(remote.subList(2, 3), readAll(log, REMOTE, 10));
    assertEquals(other, readAll(log, OTHER, 10), "an origin absent from the vector keeps all");
    assertEquals(1, readAll(log, LOCAL, 10).size());
    assertEquals(4, log.entryCount());
    // Received again after truncation (a peer re-sending): not stored again.
    log.appendReceived(REMOTE, remote, 30).join();
    assertEquals(remote.subList(2, 3), readAll(log, REMOTE, 10));
    log.truncate(DependencyVector.of(Map.of(LOCAL, log.localSafeTimestamp(), OTHER, 10L))).join();
    assertEquals(List.of(), readAll(log, LOCAL, 10));
    assertEquals(other.subList(1, 2), readAll(log, OTHER, 10));
    store.close();
    RocksStore reopened = open(settings(true), clock, disk.restart());
    assertEquals(2, reopened.replicationLog().entryCount(), "kept across a restart");
    reopened.close();
  }

  /** The entries the log's column holds, counted. */
  private static long storedEntries(MemoryDisk disk) {
    long count = 0;
    try (KeyValueDisk.Cursor cursor = disk.cursor(KeyValueDisk.Column.REPLICATION)) {
      for (cursor.seekToFirst(); cursor.isValid(); cursor.next()) {
        count++;
      }
    }
    return count;
  }

  /**
   * The entry count is kept without a scan at open and stays exact across power losses that drop
   * any suffix of the unsynced batches (local commits under async durability, truncations), with
   * entries received twice, and for a log written before the count was kept (its counters
   * removed: counted once at open).
   */
  @Test
  void theEntryCountStaysExactAcrossCrashesWithoutAScan() {
    for (int seed = 0; seed < 40; seed++) {
      SplittableRandom random = new SplittableRandom(seed);
      FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
      MemoryDisk disk = new MemoryDisk();
      StorageSettings settings = settings(true).withDurability(Durability.ASYNC);
      long remoteTimestamp = 0;
      List<ReplicationEntry> sent = new ArrayList<>();
      for (int life = 0; life < 4; life++) {
        RocksStore store = open(settings, clock, disk);
        ReplicationLog log = store.replicationLog();
        assertEquals(storedEntries(disk), log.entryCount(), "seed " + seed + ", life " + life);
        for (int step = 0; step < 30; step++) {
          switch (random.nextInt(4)) {
            case 0 -> {
              remoteTimestamp += random.nextInt(1, 5);
              List<ReplicationEntry> batch = new ArrayList<>();
              for (int index = 0; index < random.nextInt(1, 3); index++) {
                batch.add(remotePart(REMOTE, remoteTimestamp, index));
              }
              if (!sent.isEmpty() && random.nextBoolean()) {
                batch.add(sent.get(random.nextInt(sent.size()))); // received twice
              }
              sent.addAll(batch);
              log.appendReceived(REMOTE, batch, remoteTimestamp).join();
            }
            case 1 -> {
              long local = random.nextBoolean() ? log.localSafeTimestamp() : 0;
              log.truncate(DependencyVector.of(Map.of(LOCAL, local,
                  REMOTE, remoteTimestamp / 2))).join();
            }
            default -> store.commit(store.newTransactionId(), List.of(Fixtures.write(
                entities.get(random.nextInt(ENTITY_COUNT)), new Operation.Increment("n", 1))));
          }
          if (random.nextInt(3) == 0) {
            store.runPendingWork();
          }
          clock.advance(random.nextInt(0, 3));
        }
        settle(store);
        assertEquals(storedEntries(disk), log.entryCount(), "seed " + seed + ", life " + life);
        disk = disk.crash(random, 0.5);
        if (life == 2) {
          // As a log from before the count was kept: no counter in meta.
          try (KeyValueDisk.Batch batch = disk.newBatch()) {
            batch.delete(KeyValueDisk.Column.META, Keys.META_RECEIVED_ENTRIES);
            batch.delete(KeyValueDisk.Column.META, Keys.META_TRUNCATED_ENTRIES);
            for (int partition = 0; partition < settings.partitions(); partition++) {
              batch.delete(KeyValueDisk.Column.META, Keys.metaLoggedEntries(partition));
            }
            disk.write(batch, true);
          } catch (DiskException e) {
            throw new AssertionError(e);
          }
        }
      }
      RocksStore last = open(settings, clock, disk);
      assertEquals(storedEntries(disk), last.replicationLog().entryCount(), "seed " + seed);
      last.close();
    }
  }

  @Test
  void aReadBelowWhatWasTruncatedIsRefusedAndTheBoundSurvivesARestart() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(settings(true), clock, disk);
    ReplicationLog log = store.replicationLog();
    List<ReplicationEntry> remote = List.of(remotePart(REMOTE, 10, 0), remotePart(REMOTE, 20, 0),
        remotePart(REMOTE, 30, 0));
    log.appendReceived(REMOTE, remote, 40).join();
    log.appendReceived(OTHER, List.of(), 50).join();
    // A truncation that deletes nothing leaves no bound: nothing can be missing.
    log.truncate(DependencyVector.of(Map.of(OTHER, 45L))).join();
    assertEquals(DependencyVector.EMPTY, log.truncatedVector());
    assertEquals(new ReplicationBatch(OTHER, List.of(), 50), log.read(OTHER, 0, 10));
    // The bound is the highest timestamp deleted (20), not the truncation's (25).
    log.truncate(DependencyVector.of(Map.of(REMOTE, 25L))).join();
    assertEquals(DependencyVector.of(Map.of(REMOTE, 20L)), log.truncatedVector());
    ReplicationLogTruncatedException refused =
        assertThrows(ReplicationLogTruncatedException.class, () -> log.read(REMOTE, 5, 10));
    assertEquals(ErrorCode.TRUNCATED, refused.code());
    assertEquals(REMOTE, refused.originDc());
    assertEquals(20, refused.truncatedThrough());
    assertEquals(21, refused.lowestHeldTimestamp());
    assertEquals(new ReplicationBatch(REMOTE, remote.subList(2, 3), 40), log.read(REMOTE, 20, 10),
        "a read from the bound on is answered");
    // Written in the deletion's batch (unsynced, as the deletion): a later synced write makes
    // both durable, and a power loss after it keeps the bound and the refusal.
    log.recordApplied(DependencyVector.of(Map.of(REMOTE, 30L))).join();
    store.close();
    disk = disk.crash(new SplittableRandom(11), 0);
    RocksStore reopened = open(settings(true), clock, disk);
    ReplicationLog after = reopened.replicationLog();
    assertEquals(DependencyVector.of(Map.of(REMOTE, 20L)), after.truncatedVector());
    assertThrows(ReplicationLogTruncatedException.class, () -> after.read(REMOTE, 0, 10));
    assertEquals(remote.subList(2, 3), readAll(after, REMOTE, 10));
    reopened.close();
  }

  @Test
  void thePeersAddedAtRuntimeSurviveARestart() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(settings(true), clock, disk);
    ReplicationLog log = store.replicationLog();
    assertEquals(List.of(), log.peers());
    log.recordPeers(List.of(new ReplicationPeer("c", "http://c:1"),
        new ReplicationPeer("d", "http://d:2"))).join();
    List<ReplicationPeer> last = List.of(new ReplicationPeer("d", "https://d.example:8443"));
    log.recordPeers(last).join();
    assertEquals(last, log.peers());
    store.close();
    // Synced: a power loss right after keeps the last list, whole.
    disk = disk.crash(new SplittableRandom(5), 0);
    RocksStore recovered = open(settings(true), clock, disk);
    assertEquals(last, recovered.replicationLog().peers());
    recovered.close();
  }

  @Test
  void theAppliedAndReceivedVectorsSurviveARestart() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(settings(true), clock, disk);
    ReplicationLog log = store.replicationLog();
    assertEquals(DependencyVector.EMPTY, log.appliedVector());
    log.recordApplied(DependencyVector.of(Map.of(REMOTE, 7L, OTHER, 9L))).join();
    DependencyVector applied = DependencyVector.of(Map.of(REMOTE, 12L));
    log.recordApplied(applied).join();
    log.appendReceived(REMOTE, List.of(remotePart(REMOTE, 12, 0)), 14).join();
    assertEquals(applied, log.appliedVector());
    disk = disk.crash(new SplittableRandom(9), 0);
    RocksStore recovered = open(settings(true), clock, disk);
    assertEquals(applied, recovered.replicationLog().appliedVector(), "the last one, whole");
    assertEquals(14, recovered.replicationLog().receivedVector().get(REMOTE));
    recovered.close();
  }

  @Test
  void aClosedStoreRefusesAndAFailedOneDoesNotShipItsLocalEntries() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    RocksStore store = open(settings(true), clock, new MemoryDisk());
    ReplicationLog log = store.replicationLog();
    store.fail(new DiskException("simulated"));
    assertThrows(dev.troupe.model.TroupeException.class, () -> log.read(LOCAL, 0, 10));
    assertTrue(log.appendReceived(REMOTE, List.of(), 5).isCompletedExceptionally());
    store.close();
    assertThrows(dev.troupe.model.TroupeException.class, () -> log.read(REMOTE, 0, 10));
    assertTrue(log.recordApplied(DependencyVector.EMPTY).isCompletedExceptionally());
  }

  // ------------------------------------------------------------------------------------ RocksDB

  @Test
  void theStoreCheckReadsEveryEntryAndReportsOneThatFailsItsChecksum() throws Exception {
    Path directory = Fixtures.createTempDirectory();
    try {
      StorageSettings settings = Fixtures.settings(directory).withDataCentreId(LOCAL)
          .withReplicationLog(true);
      try (RocksStore store = RocksStore.open(settings, new FakeClock(Fixtures.START_MILLIS))) {
        store.commit(store.newTransactionId(), List.of(Fixtures.write(entities.get(0),
            new Operation.Increment("n", 1)))).join();
        store.replicationLog().appendReceived(REMOTE, List.of(remotePart(REMOTE, 3, 0)), 4).join();
        // The peers' record and a truncation bound are meta records the check reads too.
        store.replicationLog().recordPeers(List.of(new ReplicationPeer("c", "http://c:1")))
            .join();
        store.replicationLog().appendReceived(OTHER, List.of(remotePart(OTHER, 2, 0)), 2).join();
        store.replicationLog().truncate(DependencyVector.of(Map.of(OTHER, 2L))).join();
      }
      StoreCheck.Report clean = StoreCheck.check(directory);
      assertTrue(clean.clean(), clean.render());
      assertEquals(2L, clean.keysRead().get("replication"));
      byte[] key = Keys.replication(REMOTE, 3, 1003, 0);
      try (RocksDisk disk = RocksDisk.open(directory);
          KeyValueDisk.Batch batch = disk.newBatch()) {
        byte[] value = disk.get(KeyValueDisk.Column.REPLICATION, key);
        value[value.length / 2] ^= 1;
        batch.put(KeyValueDisk.Column.REPLICATION, key, value);
        disk.write(batch, true);
      }
      StoreCheck.Report damaged = StoreCheck.check(directory);
      assertEquals(1, damaged.findings().size(), damaged.render());
      assertTrue(damaged.findings().get(0).where().startsWith("replication"), damaged.render());
    } finally {
      Fixtures.deleteRecursively(directory);
    }
  }

  @Test
  void aDatabaseFromBeforeTheLogOpensForInspectionAndForServing() throws Exception {
    Path directory = Fixtures.createTempDirectory();
    try {
      // The column families of a store written before the replication log existed.
      org.rocksdb.RocksDB.loadLibrary();
      List<org.rocksdb.ColumnFamilyHandle> handles = new ArrayList<>();
      try (org.rocksdb.DBOptions options = new org.rocksdb.DBOptions().setCreateIfMissing(true)
          .setCreateMissingColumnFamilies(true)) {
        List<org.rocksdb.ColumnFamilyDescriptor> descriptors = new ArrayList<>();
        descriptors.add(new org.rocksdb.ColumnFamilyDescriptor(
            org.rocksdb.RocksDB.DEFAULT_COLUMN_FAMILY));
        for (String name : List.of("journal", "index", "checkpoints", "meta", "transactions")) {
          descriptors.add(new org.rocksdb.ColumnFamilyDescriptor(
              name.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        }
        try (org.rocksdb.RocksDB raw = org.rocksdb.RocksDB.open(options, directory.toString(),
            descriptors, handles)) {
          assertTrue(raw.get(handles.get(4), Keys.META_PARTITIONS) == null);
        } finally {
          handles.forEach(org.rocksdb.ColumnFamilyHandle::close);
        }
      }
      try (RocksDisk inspected = RocksDisk.open(directory, RocksDisk.OpenMode.INSPECT);
          KeyValueDisk.Cursor cursor = inspected.cursor(KeyValueDisk.Column.REPLICATION)) {
        cursor.seekToFirst();
        assertFalse(cursor.isValid(), "the missing column family reads as empty");
        assertEquals(null, inspected.get(KeyValueDisk.Column.REPLICATION, new byte[24]));
      }
      StorageSettings settings = Fixtures.settings(directory).withDataCentreId(LOCAL)
          .withReplicationLog(true);
      try (RocksStore store = RocksStore.open(settings, new FakeClock(Fixtures.START_MILLIS))) {
        store.commit(store.newTransactionId(), List.of(Fixtures.write(entities.get(0),
            new Operation.Increment("n", 1)))).join();
        assertEquals(1, readAll(store.replicationLog(), LOCAL, 10).size(), "created when served");
      }
    } finally {
      Fixtures.deleteRecursively(directory);
    }
  }

  @Test
  void onRocksDbTheLogAndItsVectorsSurviveAReopen() {
    Path directory = Fixtures.createTempDirectory();
    try {
      StorageSettings settings = Fixtures.settings(directory).withDataCentreId(LOCAL)
          .withReplicationLog(true);
      FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
      List<ReplicationEntry> local;
      try (RocksStore store = RocksStore.open(settings, clock)) {
        for (int i = 0; i < 20; i++) {
          store.commit(store.newTransactionId(), List.of(Fixtures.write(entities.get(i % 5),
              new Operation.Increment("n", i)))).join();
        }
        store.replicationLog().appendReceived(REMOTE, List.of(remotePart(REMOTE, 3, 0)), 4).join();
        store.replicationLog().recordApplied(DependencyVector.of(Map.of(REMOTE, 3L))).join();
        local = readAll(store.replicationLog(), LOCAL, 6);
        assertEquals(20, local.size());
      }
      try (RocksStore store = RocksStore.open(settings, clock)) {
        ReplicationLog log = store.replicationLog();
        assertEquals(local, readAll(log, LOCAL, 100));
        assertEquals(List.of(remotePart(REMOTE, 3, 0)), readAll(log, REMOTE, 100));
        assertEquals(DependencyVector.of(Map.of(REMOTE, 3L)), log.appliedVector());
        assertEquals(21, log.entryCount());
      }
    } finally {
      Fixtures.deleteRecursively(directory);
    }
  }
}
