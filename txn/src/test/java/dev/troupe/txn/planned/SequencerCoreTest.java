package dev.troupe.txn.planned;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.Invariants.InvariantViolation;
import dev.troupe.model.time.HybridLogicalClock;
import dev.troupe.model.time.TransactionIds;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The planned-transaction sequencer: one global order, positions from the node's clock (below
 * every dynamic age, unique across nodes and restarts), batches.
 */
class SequencerCoreTest {
  @Test
  void drainsInSubmissionOrderWithPositionsFromTheClock() {
    SequencerCore<String> sequencer = new SequencerCore<>();
    AtomicLong clock = new AtomicLong(1_000);
    assertTrue(sequencer.drain(clock::incrementAndGet).isEmpty());
    assertEquals(1_000, clock.get(), "nothing queued, no tick");
    sequencer.submit("a");
    sequencer.submit("b");
    assertTrue(sequencer.hasQueued());
    assertEquals(List.of(
            new SequencerCore.Positioned<>("a", SequencerCore.positionOf(1_001)),
            new SequencerCore.Positioned<>("b", SequencerCore.positionOf(1_002))),
        sequencer.drain(clock::incrementAndGet));
    assertFalse(sequencer.hasQueued());
    sequencer.submit("c");
    assertEquals(List.of(new SequencerCore.Positioned<>("c", SequencerCore.positionOf(1_003))),
        sequencer.drain(clock::incrementAndGet));
    assertEquals(SequencerCore.positionOf(1_003), sequencer.lastPosition());
  }

  @Test
  void positionsAreBelowEveryDynamicAgeAndKeepTheTimestampsOrderAndNode() {
    long early = HybridLogicalClock.fromMillis(1) + 5;
    long late = HybridLogicalClock.fromMillis(1L << 40) + 9;
    assertTrue(SequencerCore.positionOf(early) < SequencerCore.positionOf(late));
    assertTrue(SequencerCore.positionOf(late) < 0, "below every dynamic age (a timestamp)");
    assertTrue(SequencerCore.isPlannedAge(SequencerCore.positionOf(late)));
    assertFalse(SequencerCore.isPlannedAge(early));
    assertEquals(late, SequencerCore.timestampOf(SequencerCore.positionOf(late)));
    assertEquals(9, TransactionIds.nodeOf(SequencerCore.positionOf(late)));
  }

  @Test
  void aClockThatGoesBackIsRefused() {
    SequencerCore<String> sequencer = new SequencerCore<>();
    sequencer.submit("a");
    sequencer.drain(() -> 100);
    sequencer.submit("b");
    assertThrows(InvariantViolation.class, () -> sequencer.drain(() -> 100));
  }

  /**
   * Sequencers of several nodes, each over its own clock, restarting (a new core over a clock past
   * its ceiling, as the store restarts it): positions never repeat across nodes and restarts, each
   * node's only grow, and each names its node.
   */
  @Test
  void positionsAreUniqueAcrossNodesAndRestarts() {
    Random random = new Random(16);
    int nodes = 3;
    long[] physical = new long[nodes];
    long[] ceiling = new long[nodes];
    long[] last = new long[nodes];
    HybridLogicalClock[] clocks = new HybridLogicalClock[nodes];
    List<SequencerCore<Integer>> sequencers = new ArrayList<>();
    for (int node = 0; node < nodes; node++) {
      int index = node;
      physical[node] = 1_000 + node;
      clocks[node] = new HybridLogicalClock(() -> physical[index], 10 + node);
      sequencers.add(new SequencerCore<>());
      last[node] = Long.MIN_VALUE;
    }
    Set<Long> positions = new HashSet<>();
    for (int step = 0; step < 5_000; step++) {
      int node = random.nextInt(nodes);
      int index = node;
      switch (random.nextInt(6)) {
        case 0 -> physical[node] = Math.max(0, physical[node] + random.nextInt(-50, 50));
        case 1 -> {
          clocks[node] = new HybridLogicalClock(() -> physical[index], 10 + node);
          clocks[node].advancePast(ceiling[node] - 1);
          sequencers.set(node, new SequencerCore<>());
        }
        default -> {
          int batch = random.nextInt(1, 4);
          for (int i = 0; i < batch; i++) {
            sequencers.get(node).submit(i);
          }
          for (SequencerCore.Positioned<Integer> positioned : sequencers.get(node).drain(() -> {
            long timestamp = clocks[index].tick();
            if (timestamp >= ceiling[index]) {
              ceiling[index] = Math.max(timestamp + 1,
                  HybridLogicalClock.fromMillis(physical[index] + 1_000));
            }
            return timestamp;
          })) {
            long position = positioned.position();
            assertTrue(positions.add(position), "position " + position + " handed out twice");
            assertTrue(position > last[node], "node " + node + " went back");
            assertEquals(10 + node, TransactionIds.nodeOf(position));
            last[node] = position;
          }
        }
      }
    }
  }

  @Test
  void anyInterleavingOfSubmissionsAndDrainsGivesEveryTransactionAnIncreasingPositionOnce() {
    Random random = new Random(4);
    for (int run = 0; run < 200; run++) {
      SequencerCore<Integer> sequencer = new SequencerCore<>();
      AtomicLong clock = new AtomicLong(random.nextInt(1_000));
      List<Integer> submitted = new ArrayList<>();
      List<SequencerCore.Positioned<Integer>> started = new ArrayList<>();
      int next = 0;
      for (int step = 0; step < 100; step++) {
        if (random.nextInt(3) > 0) {
          sequencer.submit(next);
          submitted.add(next++);
        } else {
          started.addAll(sequencer.drain(() -> clock.addAndGet(random.nextInt(1, 64))));
        }
      }
      started.addAll(sequencer.drain(clock::incrementAndGet));
      // Started in submission order, each exactly once, at increasing positions.
      assertEquals(submitted, started.stream().map(SequencerCore.Positioned::transaction).toList(),
          "run " + run);
      for (int i = 1; i < started.size(); i++) {
        assertTrue(started.get(i).position() > started.get(i - 1).position(), "run " + run);
      }
    }
  }
}
