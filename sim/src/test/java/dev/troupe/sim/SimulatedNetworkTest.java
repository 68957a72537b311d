package dev.troupe.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The simulated network: exact delivery without faults, and each fault as configured. */
class SimulatedNetworkTest {
  @Test
  void withoutFaultsEveryMessageArrivesOnceAndInOrder() {
    Scheduler scheduler = new Scheduler(5, 100);
    SimulatedNetwork network = new SimulatedNetwork(scheduler, SimulatedNetwork.Faults.NONE);
    List<Integer> received = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      network.send("a", "b", i, received::add);
    }
    scheduler.run(Long.MAX_VALUE);
    assertEquals(java.util.stream.IntStream.range(0, 100).boxed().toList(), received);
    assertEquals(100, network.delivered());
  }

  @Test
  void withoutReorderingAConnectionKeepsItsOrderDespiteDelaysAndDuplicates() {
    Scheduler scheduler = new Scheduler(6, 100);
    SimulatedNetwork network =
        new SimulatedNetwork(scheduler, new SimulatedNetwork.Faults(1, 30, 0.1, 0.2, false));
    List<Integer> received = new ArrayList<>();
    for (int i = 0; i < 1_000; i++) {
      network.send("a", "b", i, received::add);
    }
    scheduler.run(Long.MAX_VALUE);
    for (int i = 1; i < received.size(); i++) {
      assertTrue(received.get(i) >= received.get(i - 1), "overtaken at " + i);
    }
    assertTrue(network.dropped() > 0 && network.duplicated() > 0);
  }

  @Test
  void localMailboxesDeliverInSendingOrderWhoeverSent() {
    // Two senders interleave sends to one receiver, with independent delays: per receiver, a
    // message sent later (by anyone) never arrives earlier. Per connection, it can.
    for (SimulatedNetwork.Ordering ordering : SimulatedNetwork.Ordering.values()) {
      Scheduler scheduler = new Scheduler(11, 100);
      SimulatedNetwork network = new SimulatedNetwork(scheduler,
          new SimulatedNetwork.Faults(0, 20, 0, 0, false), ordering);
      List<Integer> received = new ArrayList<>();
      for (int i = 0; i < 1_000; i++) {
        network.send(i % 2 == 0 ? "a" : "c", "b", i, received::add);
      }
      scheduler.run(Long.MAX_VALUE);
      assertEquals(1_000, received.size());
      boolean inSendingOrder = received.equals(
          java.util.stream.IntStream.range(0, 1_000).boxed().toList());
      assertEquals(ordering == SimulatedNetwork.Ordering.PER_RECEIVER, inSendingOrder,
          ordering.toString());
    }
  }

  @Test
  void lossDuplicationAndReorderingFollowTheConfiguredChances() {
    Scheduler scheduler = new Scheduler(9, 100);
    SimulatedNetwork network =
        new SimulatedNetwork(scheduler, new SimulatedNetwork.Faults(1, 50, 0.2, 0.1, true));
    Map<Integer, Integer> copies = new HashMap<>();
    List<Integer> order = new ArrayList<>();
    int messages = 10_000;
    for (int i = 0; i < messages; i++) {
      network.send("a", "b", i, message -> {
        copies.merge(message, 1, Integer::sum);
        order.add(message);
      });
    }
    scheduler.run(Long.MAX_VALUE);
    long lost = messages - copies.size();
    long twice = copies.values().stream().filter(count -> count == 2).count();
    assertEquals(0.2, lost / (double) messages, 0.02);
    assertEquals(0.1 * 0.8, twice / (double) messages, 0.015);
    assertTrue(copies.values().stream().allMatch(count -> count <= 2));
    assertNotEquals(order.stream().sorted().toList(), order, "independent delays reorder");
    assertEquals(network.delivered(), order.size());
  }

  @Test
  void aPartitionLosesWhatCrossesItUntilItHeals() {
    Scheduler scheduler = new Scheduler(2, 100);
    SimulatedNetwork network = new SimulatedNetwork(scheduler, SimulatedNetwork.Faults.NONE);
    List<String> received = new ArrayList<>();
    network.partition(Set.of("n1"), 10);
    network.send("n1", "n2", "across", received::add);
    network.send("n2", "n3", "same side", received::add);
    scheduler.runUntil(10);
    network.send("n1", "n2", "healed", received::add);
    scheduler.run(Long.MAX_VALUE);
    assertEquals(List.of("same side", "healed"), received);
    assertEquals(1, network.dropped());
  }
}
