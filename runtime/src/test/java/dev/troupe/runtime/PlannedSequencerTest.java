package dev.troupe.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.txn.planned.SequencerCore;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/** The sequencer's shell: concurrent submitters, starts in position order, none stranded. */
class PlannedSequencerTest {
  @Test
  void concurrentSubmissionsAreAllStartedOnceInPositionOrder() throws Exception {
    java.util.concurrent.atomic.AtomicLong clock = new java.util.concurrent.atomic.AtomicLong(77);
    PlannedSequencer sequencer = new PlannedSequencer(clock::incrementAndGet);
    List<Long> starts = Collections.synchronizedList(new ArrayList<>());
    int threads = 8;
    int perThread = 5_000;
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> submitters = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      submitters.add(Thread.ofPlatform().start(() -> {
        try {
          go.await();
        } catch (InterruptedException e) {
          throw new IllegalStateException(e);
        }
        for (int i = 0; i < perThread; i++) {
          sequencer.submit(starts::add);
        }
      }));
    }
    go.countDown();
    for (Thread submitter : submitters) {
      submitter.join();
    }
    // Every submission was started (none stranded in the queue), in position order, each at the
    // next tick of the clock (ticked under the lock, one per transaction).
    assertEquals(threads * perThread, starts.size());
    for (int i = 0; i < starts.size(); i++) {
      assertEquals(SequencerCore.positionOf(78 + i), starts.get(i), "start " + i);
    }
    assertTrue(starts.getLast() < 0, "below every dynamic age");
  }
}
