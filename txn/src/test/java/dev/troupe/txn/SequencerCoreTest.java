package dev.troupe.txn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The planned-transaction sequencer: one global order, consecutive positions, batches. */
class SequencerCoreTest {
  @Test
  void drainsInSubmissionOrderWithConsecutivePositionsFromOne() {
    SequencerCore<String> sequencer = new SequencerCore<>();
    assertTrue(sequencer.drain().isEmpty());
    sequencer.submit("a");
    sequencer.submit("b");
    assertTrue(sequencer.hasQueued());
    assertEquals(List.of(new SequencerCore.Positioned<>("a", 1), new SequencerCore.Positioned<>("b", 2)),
        sequencer.drain());
    assertFalse(sequencer.hasQueued());
    sequencer.submit("c");
    assertEquals(List.of(new SequencerCore.Positioned<>("c", 3)), sequencer.drain());
    assertEquals(4, sequencer.nextPosition());
  }

  @Test
  void anyInterleavingOfSubmissionsAndDrainsGivesEveryTransactionTheNextPositionOnce() {
    Random random = new Random(4);
    for (int run = 0; run < 200; run++) {
      SequencerCore<Integer> sequencer = new SequencerCore<>();
      List<Integer> submitted = new ArrayList<>();
      List<SequencerCore.Positioned<Integer>> started = new ArrayList<>();
      int next = 0;
      for (int step = 0; step < 100; step++) {
        if (random.nextInt(3) > 0) {
          sequencer.submit(next);
          submitted.add(next++);
        } else {
          started.addAll(sequencer.drain());
        }
      }
      started.addAll(sequencer.drain());
      // Started in submission order, each exactly once, at positions 1, 2, 3, ...
      assertEquals(submitted, started.stream().map(SequencerCore.Positioned::transaction).toList(),
          "run " + run);
      for (int i = 0; i < started.size(); i++) {
        assertEquals(i + 1, started.get(i).position(), "run " + run);
      }
    }
  }
}
