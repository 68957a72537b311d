package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.IntFunction;

/**
 * The coordinator fence ({@link CoordinatorPartitions}, {@link Store#endCoordinator}), written once
 * and run on every shared disk (a {@link MemoryDisk} and PostgreSQL): node 1 coordinates and
 * records a decision; node 2 ends node 1's coordinators (conditionally on the epoch of the incarnation it ends,
 * so a second or late end changes nothing); node 1's next decision is refused with
 * {@code unavailable}, writes nothing and leaves its store healthy; node 2 then knows what node 1
 * decided (one recorded decision, one not, presumed aborted); a restarted node 1 acquires its
 * coordinator partition again, under a higher epoch, and writes decisions again, and node 2 sees
 * its coordinators no longer ended.
 */
final class CoordinatorFenceScenario {
  private CoordinatorFenceScenario() {}

  /** Runs it; {@code diskOf} opens a fresh view of the one shared disk per call (per "process"). */
  static void run(IntFunction<KeyValueDisk> diskOf) {
    List<Throwable> failures = new CopyOnWriteArrayList<>();
    List<RocksStore> opened = new ArrayList<>();
    try {
      RocksStore coordinator = open(1, diskOf.apply(1), failures, opened);
      RocksStore survivor = open(2, diskOf.apply(2), failures, opened);
      long firstEpoch = coordinator.coordinatorEpoch();
      assertTrue(firstEpoch > 0, "a node of several acquires its coordinator partition at open");
      assertFalse(survivor.coordinatorEnded(1));
      assertFalse(coordinator.coordinatorEnded(2));
      EntityId participant = new EntityId("Account", "a1");

      long committedId = coordinator.newTransactionId();
      coordinator.persistDecision(new DecidedTransaction(committedId, List.of(participant)))
          .join();
      long zombieId = coordinator.newTransactionId();

      long endedEpoch = survivor.endCoordinator(1, firstEpoch);
      assertTrue(endedEpoch > firstEpoch, "ending bumps the coordinator partition's epoch");
      // Every survivor may end it: a second end of the same incarnation changes nothing.
      assertEquals(0, survivor.endCoordinator(1, firstEpoch));
      assertTrue(survivor.coordinatorEnded(1));
      assertTrue(coordinator.coordinatorEnded(1), "every node sees it (the shared disk)");
      // The zombie coordinator's decision: refused, not written, and its store still serves.
      assertEquals(ErrorCode.UNAVAILABLE, PartitionOwnershipTest.refusal(coordinator.persistDecision(
          new DecidedTransaction(zombieId, List.of(participant)))));
      assertTrue(survivor.decisionRecorded(committedId), "written before the end: committed");
      assertFalse(survivor.decisionRecorded(zombieId), "refused after it: presumed aborted");
      assertEquals(List.of(), failures, "a fenced decision fails no store");
      assertThrows(IllegalArgumentException.class, () -> survivor.endCoordinator(2, 1));

      // Node 1 restarts: its new incarnation takes its coordinator partition back.
      coordinator.close();
      opened.remove(coordinator);
      RocksStore restarted = open(1, diskOf.apply(3), failures, opened);
      assertTrue(restarted.coordinatorEpoch() > endedEpoch);
      assertFalse(survivor.coordinatorEnded(1), "a restarted node coordinates again");
      // A survivor that learns of the old incarnation's removal only now ends nothing.
      assertEquals(0, survivor.endCoordinator(1, firstEpoch));
      assertEquals(0, survivor.endCoordinator(1, endedEpoch));
      assertFalse(survivor.coordinatorEnded(1));
      long laterId = restarted.newTransactionId();
      restarted.persistDecision(new DecidedTransaction(laterId, List.of(participant))).join();
      assertTrue(survivor.decisionRecorded(laterId));
      assertEquals(List.of(), failures);
    } finally {
      for (RocksStore store : opened) {
        store.close();
      }
    }
  }

  private static RocksStore open(int nodeId, KeyValueDisk disk, List<Throwable> failures,
      List<RocksStore> opened) {
    RocksStore store = open(nodeId, disk, failures);
    opened.add(store);
    return store;
  }

  /**
   * A store of node {@code nodeId} of several on {@code disk} (acquired partitions, threads) whose
   * store failures are collected in {@code failures}.
   */
  static RocksStore open(int nodeId, KeyValueDisk disk, List<Throwable> failures) {
    RocksStore store = RocksStore.open(PartitionOwnershipTest.settings(nodeId),
        System::currentTimeMillis, disk, RocksStore.Execution.THREADS);
    store.setEvents(new StorageEvents() {
      @Override
      public void storeFailed(Throwable cause) {
        failures.add(cause);
      }

      @Override
      public void corruptionDetected(String where, CorruptDataException damage) {}
    });
    return store;
  }
}
