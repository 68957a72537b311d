package dev.troupe.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.runtime.PartitionHomes.Route;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The pure core of failing over fast: which partitions have a live home, as this node knows. */
class PartitionHomesTest {
  @Test
  void aPartitionGoesThroughHeldAndMovingBackToSentAsItsMemberDiesAndItMoves() {
    PartitionHomes homes = new PartitionHomes(3);
    assertTrue(homes.settled());
    assertEquals(Route.SEND, homes.route(0), "an unknown host: sent as always");
    homes.answered(0, 2);
    homes.answered(1, 2);
    homes.answered(2, 3);
    homes.unreachable(2);
    assertFalse(homes.settled());
    assertEquals(Route.HOLD, homes.route(0));
    assertEquals(Route.HOLD, homes.route(1));
    assertEquals(Route.SEND, homes.route(2));
    homes.downed(2);
    assertEquals(List.of(), homes.reachable(2), "a downed member never comes back");
    assertEquals(Route.HOLD, homes.route(0));
    assertEquals(List.of(0, 1), homes.removed(2));
    assertEquals(Route.PROBE, homes.route(0));
    assertEquals(PartitionHomes.UNKNOWN, homes.knownHost(0));
    assertTrue(homes.answered(0, 3), "the new home's answer ends the move");
    assertEquals(Route.SEND, homes.route(0));
    assertEquals(Route.PROBE, homes.route(1));
    assertTrue(homes.answered(1, 1));
    assertTrue(homes.settled());
    assertFalse(homes.answered(1, 1), "nothing waited");
  }

  @Test
  void anUnreachableMemberThatComesBackReleasesItsPartitions() {
    PartitionHomes homes = new PartitionHomes(2);
    homes.answered(0, 2);
    homes.answered(1, 3);
    homes.unreachable(2);
    assertEquals(List.of(0), homes.reachable(2));
    assertEquals(Route.SEND, homes.route(0));
    assertTrue(homes.settled());
  }

  /**
   * A verdict that will not change (a downed node id that restarted as a new member, whose old
   * incarnation's removal this node never saw) never holds a partition for good: a message held
   * the whole rehoming wait forgets the home, the next goes, and its answer from the node clears
   * the verdict.
   */
  @Test
  void aStaleVerdictHoldsAPartitionForOneRehomingWaitAtMost() {
    PartitionHomes homes = new PartitionHomes(2);
    homes.answered(0, 3);
    homes.answered(1, 3);
    homes.unreachable(3);
    homes.downed(3);
    assertEquals(Route.HOLD, homes.route(0));
    homes.heldTooLong(0);
    assertEquals(Route.PROBE, homes.route(0),
        "its home forgotten: uncertain while node 3's verdict stands, so a read (a probe) goes"
            + " through sharding");
    assertEquals(Route.HOLD, homes.route(1), "only the partition that waited");
    homes.answered(0, 3);
    assertEquals(Route.SEND, homes.route(0));
    assertEquals(Route.SEND, homes.route(1), "an answer from node 3 shows it serves");
    assertTrue(homes.settled());
  }

  @Test
  void aPartitionOfUnknownHomeIsUncertainOnlyWhileAMemberIsInTrouble() {
    PartitionHomes homes = new PartitionHomes(3);
    homes.answered(0, 2);
    assertEquals(Route.SEND, homes.route(1));
    assertFalse(homes.uncertain(1));
    homes.unreachable(3);
    assertEquals(Route.PROBE, homes.route(1), "it may be node 3's: reads go, turns wait");
    assertTrue(homes.uncertain(1));
    assertEquals(Route.SEND, homes.route(0), "known on a live member");
    assertFalse(homes.uncertain(0));
    homes.answered(1, 2);
    assertEquals(Route.SEND, homes.route(1), "an answer from a live member settles it");
    assertEquals(List.of(), homes.reachable(3));
    assertEquals(Route.SEND, homes.route(2), "no member in trouble: sent as always");
    assertTrue(homes.settled());
  }

  /**
   * A message sent with its partition's home unknown went to the lost member when the partition
   * was probed in vain while it was in trouble (a live home answers a probe in a round trip), or
   * turned out to be its; at the removal such partitions move with the member's own.
   */
  @Test
  void aPartitionProbedInVainIsTakenForTheLostMembersAndMovesAtItsRemoval() {
    PartitionHomes homes = new PartitionHomes(4);
    homes.answered(0, 3);
    homes.unreachable(3);
    homes.probed(1);
    homes.probed(2);
    homes.answered(2, 2);
    homes.downed(3);
    int unknown = PartitionHomes.UNKNOWN;
    assertTrue(homes.mayHaveGoneTo(3, 0, 3), "sent to it");
    assertFalse(homes.mayHaveGoneTo(2, 2, 3), "sent to another");
    assertTrue(homes.mayHaveGoneTo(unknown, 1, 3), "probed in vain");
    assertFalse(homes.mayHaveGoneTo(unknown, 2, 3), "its probe answered from node 2");
    assertFalse(homes.mayHaveGoneTo(unknown, 3, 3), "never probed: no evidence");
    assertTrue(homes.mayHaveGoneTo(unknown, 0, 3), "sent unknown, learned to be its");
    assertEquals(List.of(0, 1), homes.removed(3));
    assertEquals(Route.PROBE, homes.route(0));
    assertEquals(Route.PROBE, homes.route(1), "moving: its turns wait for the new home");
    assertEquals(Route.SEND, homes.route(2));
    assertEquals(Route.SEND, homes.route(3), "nobody in trouble any more");
    assertTrue(homes.answered(1, 1));
    homes.unreachable(3);
    assertFalse(homes.mayHaveGoneTo(unknown, 1, 3), "an answer clears the probe's evidence");
  }

  /** A member that leaves without being unreachable moves only the partitions known to be its. */
  @Test
  void aLeaveMovesOnlyThePartitionsKnownToBeTheMembers() {
    PartitionHomes homes = new PartitionHomes(3);
    homes.answered(0, 3);
    assertEquals(List.of(0), homes.removed(3));
    assertFalse(homes.mayHaveGoneTo(PartitionHomes.UNKNOWN, 1, 3));
    assertEquals(Route.SEND, homes.route(1));
  }

  /**
   * Random sequences of verdicts, answers, probes and expired holds (seeded, so reproducible):
   * a caller sent without knowing its partition's home is only ever taken for a lost member's
   * when the partition answered from it or was probed with no answer since (never a guess), and
   * once every member in trouble is removed and every partition answered by a live member, nothing
   * is held or moving (no partition held for good).
   */
  @Test
  void randomHistoriesAnswerNoCallerWithoutEvidenceAndHoldNothingForGood() {
    java.util.Random random = new java.util.Random(18);
    for (int history = 0; history < 500; history++) {
      int partitions = 1 + random.nextInt(6);
      PartitionHomes homes = new PartitionHomes(partitions);
      boolean[] probedSinceAnswer = new boolean[partitions];
      for (int step = 0; step < 40; step++) {
        int partition = random.nextInt(partitions);
        int node = 1 + random.nextInt(3);
        switch (random.nextInt(7)) {
          case 0 -> {
            homes.answered(partition, node);
            probedSinceAnswer[partition] = false;
          }
          case 1 -> {
            homes.probed(partition);
            probedSinceAnswer[partition] |= homes.knownHost(partition) == PartitionHomes.UNKNOWN;
          }
          case 2 -> homes.unreachable(node);
          case 3 -> homes.downed(node);
          case 4 -> {
            for (int moved : homes.removed(node)) {
              probedSinceAnswer[moved] = false;
            }
          }
          case 5 -> homes.heldTooLong(partition);
          default -> homes.reachable(node);
        }
        for (int each = 0; each < partitions; each++) {
          for (int lost = 1; lost <= 3; lost++) {
            if (homes.mayHaveGoneTo(PartitionHomes.UNKNOWN, each, lost)) {
              assertTrue(homes.knownHost(each) == lost || probedSinceAnswer[each],
                  "history " + history + ": partition " + each + " taken for node " + lost
                      + "'s without evidence");
            }
          }
        }
      }
      for (int node = 1; node <= 3; node++) {
        homes.downed(node);
        homes.removed(node);
      }
      for (int each = 0; each < partitions; each++) {
        homes.answered(each, 4);
      }
      assertTrue(homes.settled(), "history " + history + ": something held or moving for good");
      for (int each = 0; each < partitions; each++) {
        assertEquals(Route.SEND, homes.route(each));
      }
    }
  }
}
