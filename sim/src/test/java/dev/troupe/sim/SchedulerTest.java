package dev.troupe.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The scheduler: time order, seeded order of simultaneous events, reproducible traces. */
class SchedulerTest {
  /** A small run: events that schedule more events, at random delays and at equal times. */
  private static List<String> run(long seed) {
    Scheduler scheduler = new Scheduler(seed, 10_000);
    List<String> order = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      int id = i;
      scheduler.schedule(i % 3, "start " + id, () -> {
        order.add("start " + id + "@" + scheduler.nowMillis());
        scheduler.schedule(scheduler.random().nextInt(5), "finish " + id,
            () -> order.add("finish " + id + "@" + scheduler.nowMillis()));
      });
    }
    scheduler.run(1_000);
    assertEquals(scheduler.trace().lines().size(), order.size());
    return order;
  }

  @Test
  void theSameSeedReplaysTheSameRunAndAnotherSeedAnotherInterleaving() {
    assertEquals(run(7), run(7));
    assertNotEquals(run(7), run(8));
  }

  @Test
  void eventsRunInTimeOrderAndTimeNeverGoesBack() {
    Scheduler scheduler = new Scheduler(3, 100);
    List<Long> times = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      scheduler.schedule(scheduler.random().nextInt(50), "e" + i,
          () -> times.add(scheduler.nowMillis()));
    }
    // An event scheduled in the past runs now, not earlier.
    scheduler.schedule(-10, "late", () -> times.add(scheduler.nowMillis()));
    assertEquals(201, scheduler.run(Long.MAX_VALUE));
    for (int i = 1; i < times.size(); i++) {
      assertTrue(times.get(i) >= times.get(i - 1), "time went back at " + i);
    }
    assertEquals(201, scheduler.steps());
    assertEquals(0, scheduler.pending());
  }

  @Test
  void runUntilStopsAtTheTimeAndTheTraceKeepsTheLastSteps() {
    Scheduler scheduler = new Scheduler(1, 3);
    for (int i = 1; i <= 10; i++) {
      scheduler.schedule(i * 10, "tick " + i, () -> {});
    }
    scheduler.runUntil(45);
    assertEquals(45, scheduler.nowMillis());
    assertEquals(4, scheduler.steps());
    assertEquals(List.of("t=20ms #2 tick 2", "t=30ms #3 tick 3", "t=40ms #4 tick 4"),
        scheduler.trace().lines());
    assertTrue(scheduler.trace().toString().startsWith("... 1 earlier steps\n"));
  }
}
