package dev.troupe.runtime.cluster;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
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
 * member without that role (no shared store) is skipped. Only a survivor does it: a removal this
 * member sees because its own cluster shut down is not one ({@link #endsCoordinators}).
 */
final class RemovedCoordinators {
  private static final Logger log = LoggerFactory.getLogger(RemovedCoordinators.class);

  private RemovedCoordinators() {}

  /**
   * Whether a removal this member observed is the cluster's decision, so that the removed
   * member's coordinators may be ended: it was removed after being downed or after it left
   * ({@code previousStatus} down or exiting), and this member's own cluster has not shut down.
   *
   * <p>Why both: when a member's cluster shuts down (it left, or it was downed, e.g. the minority
   * side of a split, which downs itself), Pekko publishes to its own subscribers every other
   * member as removed, members that are up and healthy in everyone else's view. Ending their
   * coordinators from there fenced every live member's decisions until it restarted (seen in
   * {@code ClusterRollingRestartTest}: a stopping member cut off by its own shutdown downed
   * itself and ended both survivors' coordinators, and hundreds of their transactions aborted
   * {@code participant_unavailable} "another node ended this node's coordinators"). The cluster
   * removes a member only from down or exiting, so a removal from any other status is that
   * local view; and once this member's cluster is terminated, nothing it observes is the
   * cluster's decision.
   */
  static boolean endsCoordinators(MemberStatus previousStatus, boolean clusterTerminated) {
    return !clusterTerminated
        && (previousStatus == MemberStatus.down() || previousStatus == MemberStatus.exiting());
  }

  static Behavior<ClusterEvent.MemberRemoved> create(int localNode, PartitionOwner ownership,
      Executor blocking) {
    return Behaviors.setup(context -> {
      ActorRef<ClusterEvent.MemberRemoved> self = context.getSelf();
      Cluster cluster = Cluster.get(context.getSystem());
      cluster.subscriptions().tell(Subscribe.create(self, ClusterEvent.MemberRemoved.class));
      return Behaviors.receiveMessage(removed -> {
        Member member = removed.member();
        if (!endsCoordinators(removed.previousStatus(), cluster.isTerminated())) {
          log.info("member {} is gone from this member's view only (this member's cluster has"
              + " shut down, previous status {}): its coordinators are left to the cluster",
              member.address(), removed.previousStatus());
          return Behaviors.same();
        }
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
