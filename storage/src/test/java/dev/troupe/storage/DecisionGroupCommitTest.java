package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The node's decision records are group-committed (AcquiredPartitions' unfenced writer): the
 * decisions queued while a write is in progress go to the disk in ONE batch after it, each is
 * recorded and answered; and when the coordinator fence refuses such a group, every decision in it
 * is refused while the unfenced writes queued with them (forgetting a decision) still happen, and
 * the store stays healthy. The writer is held by a hook in the node's view of the shared disk.
 */
class DecisionGroupCommitTest {
  private static final String WRITER_THREAD = "troupe-storage-unfenced-writer";

  @Test
  void decisionsQueuedBehindAWriteAreWrittenTogetherAndAFenceRefusesOnlyTheDecisions()
      throws Exception {
    MemoryDisk disk = new MemoryDisk();
    AtomicInteger writerWrites = new AtomicInteger();
    AtomicReference<CountDownLatch> hold = new AtomicReference<>();
    CountDownLatch held = new CountDownLatch(2);
    Runnable hook = () -> {
      if (!Thread.currentThread().getName().equals(WRITER_THREAD)) {
        return;
      }
      writerWrites.incrementAndGet();
      CountDownLatch gate = hold.get();
      if (gate != null) {
        held.countDown();
        try {
          assertTrue(gate.await(10, TimeUnit.SECONDS));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    };
    List<Throwable> failures = new CopyOnWriteArrayList<>();
    RocksStore coordinator = CoordinatorFenceScenario.open(1, new WriteHookedView(disk, hook), failures);
    RocksStore survivor = CoordinatorFenceScenario.open(2, SharedDiskView.of(disk), failures);
    try {
      EntityId participant = new EntityId("Account", "a1");
      // Hold the writer inside a first decision's write, queue twenty more, release.
      CountDownLatch release = new CountDownLatch(1);
      hold.set(release);
      long first = coordinator.newTransactionId();
      CompletableFuture<Void> firstWritten =
          coordinator.persistDecision(new DecidedTransaction(first, List.of(participant)));
      waitUntil(() -> held.getCount() == 1);
      hold.set(null);
      List<Long> queued = new ArrayList<>();
      List<CompletableFuture<Void>> written = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        long id = coordinator.newTransactionId();
        queued.add(id);
        written.add(coordinator.persistDecision(new DecidedTransaction(id, List.of(participant))));
      }
      int before = writerWrites.get();
      release.countDown();
      firstWritten.get(10, TimeUnit.SECONDS);
      CompletableFuture.allOf(written.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
      assertEquals(1, writerWrites.get() - before,
          "the twenty decisions queued behind the first are one write");
      assertTrue(survivor.decisionRecorded(first));
      for (long id : queued) {
        assertTrue(survivor.decisionRecorded(id), "decision " + id + " recorded");
      }

      // Node 2 ends node 1's coordinators; a group of node 1's decisions and forgets follows.
      assertTrue(survivor.endCoordinator(1, coordinator.coordinatorEpoch()) > 0);
      CountDownLatch releaseAgain = new CountDownLatch(1);
      hold.set(releaseAgain);
      coordinator.forgetDecision(new DecidedTransaction(queued.get(0), List.of(participant)));
      waitUntil(() -> held.getCount() == 0);
      hold.set(null);
      long zombie = coordinator.newTransactionId();
      CompletableFuture<Void> refused =
          coordinator.persistDecision(new DecidedTransaction(zombie, List.of(participant)));
      coordinator.forgetDecision(new DecidedTransaction(queued.get(1), List.of(participant)));
      long otherZombie = coordinator.newTransactionId();
      CompletableFuture<Void> alsoRefused =
          coordinator.persistDecision(new DecidedTransaction(otherZombie, List.of(participant)));
      releaseAgain.countDown();
      assertEquals(ErrorCode.UNAVAILABLE, PartitionOwnershipTest.refusal(refused));
      assertEquals(ErrorCode.UNAVAILABLE, PartitionOwnershipTest.refusal(alsoRefused));
      assertFalse(survivor.decisionRecorded(zombie));
      assertFalse(survivor.decisionRecorded(otherZombie));
      waitUntil(() -> !survivor.decisionRecorded(queued.get(1)));
      assertFalse(survivor.decisionRecorded(queued.get(0)), "the forgets were written");
      assertTrue(survivor.decisionRecorded(queued.get(2)));
      assertEquals(List.of(), failures, "a fenced group fails no store");
    } finally {
      coordinator.close();
      survivor.close();
      disk.close();
    }
  }

  private static void waitUntil(java.util.function.BooleanSupplier condition)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "timed out waiting");
      Thread.sleep(5);
    }
  }
}
