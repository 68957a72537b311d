package dev.troupe.runtime.cluster;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.pekko.cluster.MemberStatus;
import org.junit.jupiter.api.Test;

/**
 * Which removals end a member's coordinators ({@link RemovedCoordinators#endsCoordinators}): only
 * the cluster's own (from down or exiting) seen by a member whose cluster still runs. A member
 * whose cluster shut down (it left, or downed itself as a minority) is told that every other
 * member was removed, up ones included; ending their coordinators then fenced the decisions of
 * live members (ClusterRollingRestartTest's aborts before the graceful leave worked).
 */
class RemovedCoordinatorsTest {
  @Test
  void aMemberDownedOrLeftIsEndedBySurvivors() {
    assertTrue(RemovedCoordinators.endsCoordinators(MemberStatus.down(), false));
    assertTrue(RemovedCoordinators.endsCoordinators(MemberStatus.exiting(), false));
  }

  @Test
  void aRemovalFromAnyOtherStatusIsOnlyThisMembersViewOfItsOwnShutdown() {
    for (MemberStatus status : new MemberStatus[] {MemberStatus.up(), MemberStatus.weaklyUp(),
        MemberStatus.leaving(), MemberStatus.joining()}) {
      assertFalse(RemovedCoordinators.endsCoordinators(status, false), status.toString());
    }
  }

  @Test
  void nothingIsEndedOnceThisMembersClusterHasShutDown() {
    assertFalse(RemovedCoordinators.endsCoordinators(MemberStatus.down(), true));
    assertFalse(RemovedCoordinators.endsCoordinators(MemberStatus.exiting(), true));
    assertFalse(RemovedCoordinators.endsCoordinators(MemberStatus.up(), true));
  }
}
