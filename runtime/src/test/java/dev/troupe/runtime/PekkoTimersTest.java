package dev.troupe.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.txn.port.Timers;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The runtime's {@link Timers} port keeps its contract: once, not early, cancellable. */
class PekkoTimersTest {
  private static ActorSystem<Void> system;
  private static Timers timers;

  @BeforeAll
  static void start() {
    system = ActorSystem.create(Behaviors.empty(), "pekko-timers-test");
    timers = new PekkoTimers(system);
  }

  @AfterAll
  static void stop() {
    system.terminate();
  }

  @Test
  void runsOnceAndNotBeforeItsDelay() throws Exception {
    AtomicInteger runs = new AtomicInteger();
    AtomicLong ranAfterNanos = new AtomicLong();
    CountDownLatch ran = new CountDownLatch(1);
    long scheduled = System.nanoTime();
    timers.schedule(50, () -> {
      ranAfterNanos.set(System.nanoTime() - scheduled);
      runs.incrementAndGet();
      ran.countDown();
    });
    assertTrue(ran.await(5, TimeUnit.SECONDS), "the timer never fired");
    Thread.sleep(200); // long enough for a second run, if there were one
    assertEquals(1, runs.get());
    assertTrue(ranAfterNanos.get() >= TimeUnit.MILLISECONDS.toNanos(50),
        "fired after " + ranAfterNanos.get() + " ns, before its 50 ms");
  }

  @Test
  void aCancelledTimerNeverRunsAndCancellingAFiredOneDoesNothing() throws Exception {
    AtomicInteger cancelledRuns = new AtomicInteger();
    Timers.Scheduled cancelled = timers.schedule(100, cancelledRuns::incrementAndGet);
    cancelled.cancel();

    CountDownLatch fired = new CountDownLatch(1);
    Timers.Scheduled firedTimer = timers.schedule(1, fired::countDown);
    assertTrue(fired.await(5, TimeUnit.SECONDS));
    firedTimer.cancel(); // after firing: nothing to undo, nothing thrown
    cancelled.cancel(); // twice: still nothing

    Thread.sleep(300);
    assertEquals(0, cancelledRuns.get());
  }

  @Test
  void aNegativeDelayRunsAtOnce() throws Exception {
    CountDownLatch ran = new CountDownLatch(1);
    timers.schedule(-5, ran::countDown);
    assertTrue(ran.await(5, TimeUnit.SECONDS));
  }
}
