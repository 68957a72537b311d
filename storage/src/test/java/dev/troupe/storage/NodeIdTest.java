package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityLocator;
import dev.troupe.model.Operation;
import dev.troupe.model.time.HybridLogicalClock;
import dev.troupe.model.time.TransactionIds;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The store on an injected clock with a node id: every timestamp it issues carries the node id,
 * two nodes never issue the same one, data written before node ids (or under another node id) still
 * loads and new ids stay above it, and its locator is the placement the store always used.
 */
class NodeIdTest {
  private static final Path NO_DIRECTORY = Path.of("memory-disk");
  private static final EntityId ENTITY = new EntityId("Item", "item-1");

  private static StorageSettings settings(int nodeId) {
    return Fixtures.settings(NO_DIRECTORY).withNodeId(nodeId);
  }

  private static RocksStore open(StorageSettings settings, FakeClock clock, KeyValueDisk disk) {
    return RocksStore.open(settings, clock, disk, RocksStore.Execution.STEPPED);
  }

  private static void settle(RocksStore store) {
    while (store.runPendingWork()) {
      // until idle
    }
  }

  private static Committed commit(RocksStore store, long transactionId, long amount) {
    var committed = store.commit(transactionId,
        List.of(Fixtures.write(ENTITY, new Operation.Increment("n", amount))));
    settle(store);
    return committed.join();
  }

  @Test
  void idsAndCommitTimestampsCarryTheNodeId() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    RocksStore store = open(settings(5), clock, new MemoryDisk());
    for (int i = 0; i < 200; i++) {
      long id = store.newTransactionId();
      assertEquals(5, TransactionIds.nodeOf(id));
      assertEquals(5, TransactionIds.nodeOf(commit(store, id, 1).commitTimestamp()));
      if (i % 7 == 0) {
        clock.advance(1);
      }
    }
    store.close();
  }

  @Test
  void twoNodesOnTheSameClockNeverIssueTheSameId() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    RocksStore first = open(settings(1), clock, new MemoryDisk());
    RocksStore second = open(settings(2), clock, new MemoryDisk());
    Set<Long> issued = new HashSet<>();
    for (int i = 0; i < 5_000; i++) {
      assertTrue(issued.add(first.newTransactionId()));
      assertTrue(issued.add(second.newTransactionId()));
      if (i % 100 == 0) {
        clock.advance(-3); // the clock stepping back changes nothing
      }
    }
    first.close();
    second.close();
  }

  @Test
  void dataWrittenUnderAnotherNodeIdLoadsAndNewIdsStayAbove() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(settings(0), clock, disk);
    // An id with arbitrary low bits, as a clock that ticked in steps of one issued them.
    long oldId = HybridLogicalClock.fromMillis(Fixtures.START_MILLIS + 400) + 37;
    Committed old = commit(store, oldId, 4);
    store.close();
    clock.advance(-1_000);
    RocksStore reopened = open(settings(9), clock, disk.restart());
    assertEquals(4, Fixtures.counter(reopened.read(ENTITY), "n"));
    long next = reopened.newTransactionId();
    assertTrue(next > oldId && next > old.commitTimestamp(), "a new id below an old one");
    assertEquals(9, TransactionIds.nodeOf(next));
    assertTrue(commit(reopened, next, 1).commitTimestamp() > old.commitTimestamp());
    assertEquals(5, Fixtures.counter(reopened.read(ENTITY), "n"));
    reopened.close();
  }

  @Test
  void aCrashDoesNotReissueAnIdOfTheNode() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(settings(3), clock, disk);
    long issued = 0;
    for (int i = 0; i < 2_000; i++) {
      issued = store.newTransactionId();
    }
    disk = disk.crash(new SplittableRandom(1), 0);
    clock.advance(-2_000);
    RocksStore recovered = open(settings(3), clock, disk);
    long next = recovered.newTransactionId();
    assertTrue(next > issued);
    assertEquals(3, TransactionIds.nodeOf(next));
    recovered.close();
  }

  @Test
  void theLocatorIsTheStoresPlacement() {
    RocksStore store = open(settings(4), new FakeClock(Fixtures.START_MILLIS), new MemoryDisk());
    EntityLocator locator = store.locator();
    assertEquals(settings(4).partitions(), locator.partitions());
    for (int i = 0; i < 100; i++) {
      EntityId entity = new EntityId("Item", "item-" + i);
      assertEquals(Keys.partitionOf(entity, locator.partitions()), locator.partitionOf(entity));
      assertEquals(locator.partitionOf(entity), store.partitionOf(entity));
      assertEquals(4, locator.nodeOf(entity));
    }
    store.close();
  }

  @Test
  void aClockOfAnotherNodeIsRefused() {
    FakeClock physical = new FakeClock(Fixtures.START_MILLIS);
    assertThrows(IllegalArgumentException.class, () -> RocksStore.open(settings(1),
        new HybridLogicalClock(physical, 2), new MemoryDisk(), RocksStore.Execution.STEPPED));
    assertThrows(IllegalArgumentException.class, () -> RocksStore.open(settings(64),
        physical, new MemoryDisk(), RocksStore.Execution.STEPPED));
  }
}
