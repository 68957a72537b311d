package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.node.LongNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import dev.troupe.model.causal.ReplicaApplication;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * A group of commits that only apply other data centres' transactions is written without a sync
 * of its own (Partition.onlyReplicaApplications): a power loss may lose it (the replication log
 * holds the transaction, and the recorded applied vector stays below it, so it is applied again),
 * and any later synced write makes it durable, since the write-ahead log is one sequence. A local
 * commit is synced as always.
 */
class ReplicaApplicationSyncTest {
  private static final int ORIGIN = 7;
  private static final EntityId APPLIED = new EntityId("Item", "applied");
  private static final EntityId LOCAL = new EntityId("Item", "local");

  private static RocksStore open(FakeClock clock, KeyValueDisk disk) {
    return RocksStore.open(Fixtures.settings(java.nio.file.Path.of("memory-disk")).withDataCentreId(3).withReplicationLog(true),
        clock, disk, RocksStore.Execution.STEPPED);
  }

  private static void settle(RocksStore store) {
    while (store.runPendingWork()) {
      // until the stepped store ran every write
    }
  }

  private static void applyRemote(RocksStore store, long transactionTimestamp) {
    store.commit(store.newTransactionId(), List.of(Fixtures.write(APPLIED,
        new Operation.Assign(ReplicaApplication.markerKey(ORIGIN),
            LongNode.valueOf(transactionTimestamp)),
        new Operation.IncrementReplicated("n", 1, ORIGIN))));
  }

  @Test
  void aReplicaApplicationAloneIsNotSyncedAndALaterLocalCommitMakesItDurable() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    RocksStore store = open(clock, disk);
    applyRemote(store, 100);
    settle(store);
    assertEquals(1, Fixtures.counter(store.read(APPLIED), "n"));
    // A power loss that keeps nothing unsynced: the application is gone (the log re-applies it).
    store = open(clock, disk = disk.crash(new SplittableRandom(1), 0));
    assertEquals(0, Fixtures.counter(store.read(APPLIED), "n"));

    applyRemote(store, 100);
    settle(store);
    store.commit(store.newTransactionId(), List.of(Fixtures.write(LOCAL,
        new Operation.Increment("n", 5))));
    settle(store);
    // The local commit's sync made the application before it durable too.
    store = open(clock, disk = disk.crash(new SplittableRandom(2), 0));
    assertEquals(1, Fixtures.counter(store.read(APPLIED), "n"));
    assertEquals(5, Fixtures.counter(store.read(LOCAL), "n"));
    store.close();
  }
}
