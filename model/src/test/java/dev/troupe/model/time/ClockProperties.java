package dev.troupe.model.time;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.constraints.UniqueElements;

/**
 * The {@link Clock} contract of {@link HybridLogicalClock} with node ids: timestamps of clocks with
 * different node ids never collide, each clock's are strictly increasing (also across a restart
 * over a durable ceiling, as the store keeps one), and {@link TransactionIds#nodeOf} recovers the
 * issuing node.
 */
class ClockProperties {
  /** One step of a cluster history: which node acts and how. */
  record Step(int node, int kind, int millis) {}

  @Provide
  Arbitrary<List<Step>> steps() {
    return Combinators.combine(
            Arbitraries.integers().between(0, 7),
            Arbitraries.integers().between(0, 9),
            Arbitraries.integers().between(-300, 300))
        .as(Step::new)
        .list()
        .ofMaxSize(400);
  }

  /**
   * Several nodes with skewed, jumping physical clocks tick, exchange timestamps (observe) and
   * restart (a new clock advanced past a ceiling kept as the store keeps it). No timestamp is
   * issued twice in the cluster, each node's are strictly increasing over all its incarnations, and
   * each carries its node's id.
   */
  @Property(tries = 300)
  void timestampsAreUniqueAcrossNodesAndRestartsAndCarryTheirNode(
      @ForAll @Size(min = 1, max = 8) @UniqueElements
          List<@IntRange(min = 0, max = 63) Integer> nodeIds,
      @ForAll("steps") List<Step> steps,
      @ForAll @LongRange(min = 0, max = 1L << 40) long startMillis) {
    int nodes = nodeIds.size();
    long[] physical = new long[nodes];
    long[] ceiling = new long[nodes];
    long[] lastIssued = new long[nodes];
    HybridLogicalClock[] clocks = new HybridLogicalClock[nodes];
    for (int node = 0; node < nodes; node++) {
      physical[node] = startMillis + node * 17L;
      clocks[node] = clockOf(physical, node, nodeIds.get(node));
      lastIssued[node] = Long.MIN_VALUE;
    }
    Set<Long> issued = new HashSet<>();
    long ceilingMillis = 1_000;
    for (Step step : steps) {
      int node = step.node() % nodes;
      switch (step.kind()) {
        case 0 -> physical[node] = Math.max(0, physical[node] + step.millis()); // a jump
        case 1 -> { // a restart: a new clock past the durable ceiling
          clocks[node] = clockOf(physical, node, nodeIds.get(node));
          clocks[node].advancePast(ceiling[node] - 1);
        }
        case 2 -> { // receives another node's latest timestamp
          int from = (node + 1 + Math.floorMod(step.millis(), nodes)) % nodes;
          clocks[node].advancePast(clocks[from].current());
        }
        default -> {
          long timestamp = clocks[node].tick();
          if (timestamp >= ceiling[node]) { // as RocksStore.tick: raised before it is used
            ceiling[node] = Math.max(timestamp + 1,
                HybridLogicalClock.fromMillis(physical[node] + ceilingMillis));
          }
          assertTrue(issued.add(timestamp), "issued twice: " + timestamp);
          assertTrue(timestamp > lastIssued[node], "node " + node + " went back");
          assertEquals(nodeIds.get(node), TransactionIds.nodeOf(timestamp));
          assertTrue(HybridLogicalClock.toMillis(timestamp) >= physical[node],
              "behind physical time");
          lastIssued[node] = timestamp;
        }
      }
    }
  }

  private static HybridLogicalClock clockOf(long[] physical, int node, int nodeId) {
    return new HybridLogicalClock(() -> physical[node], nodeId);
  }

  /**
   * An id written before node ids existed (any low bits) stays below every new tick of any node
   * once recovery observed it, so a new id never equals an old one.
   */
  @Property(tries = 500)
  void oldIdsStayBelowNewOnes(
      @ForAll @LongRange(min = 0, max = 1L << 56) long oldId,
      @ForAll @IntRange(min = 0, max = 63) int nodeId,
      @ForAll @LongRange(min = 0, max = 1L << 40) long nowMillis) {
    HybridLogicalClock clock = new HybridLogicalClock(() -> nowMillis, nodeId);
    clock.advancePast(oldId);
    long next = clock.tick();
    assertTrue(next > oldId);
    assertEquals(nodeId, TransactionIds.nodeOf(next));
  }

  /** The smallest value at or above a timestamp that a node may issue. */
  @Property(tries = 1000)
  void atOrAboveIsTheSmallestTimestampOfTheNode(
      @ForAll @LongRange(min = 0, max = 1L << 60) long timestamp,
      @ForAll @IntRange(min = 0, max = 63) int nodeId) {
    long aligned = TransactionIds.atOrAbove(timestamp, nodeId);
    assertTrue(aligned >= timestamp);
    assertTrue(aligned - timestamp < TransactionIds.NODE_COUNT);
    assertEquals(nodeId, TransactionIds.nodeOf(aligned));
  }

  /** A clock steps by the node count: 1,024 ticks in a millisecond, then it runs ahead. */
  @Example
  void aBurstStepsByTheNodeCountThenRunsAhead() {
    HybridLogicalClock clock = new HybridLogicalClock(() -> 5, 3);
    long first = clock.tick();
    assertEquals(HybridLogicalClock.fromMillis(5) + 3, first);
    Map<Long, Integer> perMilli = new HashMap<>();
    List<Long> all = new ArrayList<>(List.of(first));
    for (int i = 1; i < HybridLogicalClock.TICKS_PER_MILLI + 1; i++) {
      long next = clock.tick();
      assertEquals(all.getLast() + TransactionIds.NODE_COUNT, next);
      all.add(next);
    }
    all.forEach(t -> perMilli.merge(HybridLogicalClock.toMillis(t), 1, Integer::sum));
    assertEquals(HybridLogicalClock.TICKS_PER_MILLI, perMilli.get(5L));
    assertEquals(1, perMilli.get(6L));
  }

  @Example
  void nodeIdsOutsideTheRangeAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> new HybridLogicalClock(() -> 0, 64));
    assertThrows(IllegalArgumentException.class, () -> new HybridLogicalClock(() -> 0, -1));
  }
}
