package dev.troupe.runtime.cluster;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Subscribe;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ends the coordinators of every member the cluster removes (downed or left): the store's
 * coordinator fence ({@link PartitionOwner#endCoordinator}; docs/ARCHITECTURE.md, "On the shared
 * store"). From then on no decision of that member's incarnation can be written, so every node
 * answers its participants in doubt from the shared store (committed if its decision is recorded,
 * else aborted), and the entities its undecided transactions held are released without waiting
 * for it to restart.
 *
 * <p><b>Every survivor does it</b>, rather than one chosen one: the end is conditional on the
 * removed incarnation's coordinator epoch (carried in its member roles, {@link
 * ClusterSettings#coordinatorEpochRole}), so the first survivor's end takes effect and the others'
 * change nothing; no choice of survivor can be wrong or die with the choice; and a late end (the
 * node already restarted, its new incarnation holding a newer epoch) changes nothing either. A
 * member without that role (no shared store) is skipped.
 */
final class RemovedCoordinators {
  private static final Logger log = LoggerFactory.getLogger(RemovedCoordinators.class);

  private RemovedCoordinators() {}

  static Behavior<ClusterEvent.MemberRemoved> create(int localNode, PartitionOwner ownership,
      Executor blocking) {
    return Behaviors.setup(context -> {
      ActorRef<ClusterEvent.MemberRemoved> self = context.getSelf();
      Cluster.get(context.getSystem()).subscriptions()
          .tell(Subscribe.create(self, ClusterEvent.MemberRemoved.class));
      return Behaviors.receiveMessage(removed -> {
        Member member = removed.member();
        int nodeId = -1;
        for (String role : member.getRoles()) {
          nodeId = Math.max(nodeId, ClusterSettings.nodeIdOfRole(role));
        }
        long epoch = ClusterSettings.coordinatorEpochOfRoles(member.getRoles());
        if (nodeId < 0 || nodeId == localNode || epoch <= 0) {
          return Behaviors.same();
        }
        int endedNode = nodeId;
        // Blocking (a round trip to the shared store): off the actor's thread.
        CompletableFuture.runAsync(() -> {
          try {
            ownership.endCoordinator(endedNode, epoch);
          } catch (RuntimeException failed) {
            // Liveness only: its participants in doubt keep asking (answered undecided) until
            // another survivor's end, or the node's restart, lets them be answered.
            log.warn("cannot end the coordinators of removed node {} (epoch {})", endedNode,
                epoch, failed);
          }
        }, blocking);
        return Behaviors.same();
      });
    });
  }
}
