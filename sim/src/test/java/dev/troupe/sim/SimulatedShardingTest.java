package dev.troupe.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** {@link SimulatedSharding}: home nodes, failover to the next live node, generations, views. */
class SimulatedShardingTest {
  @Test
  void partitionsLiveAtHomeAndFailOverToTheNextLiveNode() {
    SimulatedSharding sharding = new SimulatedSharding(3, 6);
    assertTrue(sharding.rebalance(node -> true));
    for (int partition = 0; partition < 6; partition++) {
      assertEquals(partition % 3, sharding.hostOf(partition));
    }
    assertTrue(sharding.rebalance(node -> node != 1));
    assertEquals(2, sharding.hostOf(1));
    assertEquals(2, sharding.hostOf(4));
    assertEquals(0, sharding.hostOf(0));
    assertEquals(2, sharding.moves());
    assertFalse(sharding.rebalance(node -> node != 1), "nothing moves twice");
    assertTrue(sharding.rebalance(node -> false));
    assertEquals(SimulatedSharding.NOBODY, sharding.hostOf(2));
  }

  @Test
  void aNodeThatIsNotLiveKeepsItsStaleViewAndGetsANewGenerationBack() {
    SimulatedSharding sharding = new SimulatedSharding(3, 6);
    sharding.rebalance(node -> true);
    long first = sharding.viewGeneration(1, 1);
    sharding.rebalance(node -> node != 1); // node 1 cut off: a zombie
    assertTrue(sharding.assignedInView(1, 1), "the zombie still believes it hosts partition 1");
    assertEquals(2, sharding.nodeOf(entityOfPartition(sharding, 1), 0));
    assertEquals(1, sharding.nodeOf(entityOfPartition(sharding, 1), 1));
    sharding.rebalance(node -> true); // healed: partition 1 comes home under a new generation
    assertTrue(sharding.assignedInView(1, 1));
    assertNotEquals(first, sharding.viewGeneration(1, 1));
  }

  private static dev.troupe.model.EntityId entityOfPartition(SimulatedSharding sharding,
      int partition) {
    for (int i = 0; ; i++) {
      dev.troupe.model.EntityId entity = new dev.troupe.model.EntityId("account", "a" + i);
      if (sharding.partitionOf(entity) == partition) {
        return entity;
      }
    }
  }
}
