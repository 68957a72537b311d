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
    assertEquals(Route.SEND, homes.route(0), "sent again through sharding");
    assertEquals(Route.HOLD, homes.route(1), "only the partition that waited");
    homes.answered(0, 3);
    assertEquals(Route.SEND, homes.route(0));
    assertEquals(Route.SEND, homes.route(1), "an answer from node 3 shows it serves");
    assertTrue(homes.settled());
  }
}
