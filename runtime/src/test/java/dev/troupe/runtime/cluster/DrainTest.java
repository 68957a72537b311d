package dev.troupe.runtime.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The SIGTERM drain waits for the open transactions to end, and no longer than its bound. */
class DrainTest {
  @Test
  void leavesOnceNoTransactionIsOpen() {
    AtomicLong polls = new AtomicLong();
    // Three transactions end one per poll.
    long waitedMillis = Drain.awaitNoOpenTransactions(
        () -> Math.max(0, 3 - polls.getAndIncrement()), 60_000);
    assertEquals(4, polls.get(), "polled until none was open");
    assertTrue(waitedMillis < 30_000, "did not wait for the bound: " + waitedMillis);
  }

  @Test
  void leavesAtTheBoundWhenATransactionStaysOpen() {
    long waitedMillis = Drain.awaitNoOpenTransactions(() -> 1, 200);
    assertTrue(waitedMillis >= 200, "waited the whole bound: " + waitedMillis);
  }
}
