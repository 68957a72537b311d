package dev.troupe.runtime.cluster;

import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Leave;
import org.apache.pekko.cluster.typed.Subscribe;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Refuses a second member with this node's id. Node ids must be unique in a cluster (every
 * timestamp a node issues carries its id, so two nodes with one id could issue the same
 * transaction id). Each member watches the members coming up; when two up members carry the same
 * role {@code troupe-node-<id>}, both see the same pair and the <b>younger</b> one (the later to
 * come up; Pekko's {@code Member.isOlderThan}) leaves the cluster and reports a fatal error (the
 * server exits with a message naming the duplicate id), so the older one keeps its partitions.
 */
final class NodeIdGuard {
  private static final Logger log = LoggerFactory.getLogger(NodeIdGuard.class);

  private NodeIdGuard() {}

  static Behavior<ClusterEvent.MemberUp> create(int nodeId, Runnable onDuplicate) {
    String role = ClusterSettings.nodeRole(nodeId);
    return Behaviors.setup(context -> {
      Cluster cluster = Cluster.get(context.getSystem());
      cluster.subscriptions().tell(Subscribe.create(context.getSelf(), ClusterEvent.MemberUp.class));
      return Behaviors.receiveMessage(up -> {
        Member self = cluster.selfMember();
        for (Member member : cluster.state().getMembers()) {
          if (member.hasRole(role) && !member.uniqueAddress().equals(self.uniqueAddress())
              && member.status() == MemberStatus.up() && member.isOlderThan(self)) {
            log.error("another member ({}) already has node id {} (role {}); node ids must be"
                + " unique in a cluster: this node leaves", member.address(), nodeId, role);
            cluster.manager().tell(Leave.create(self.address()));
            onDuplicate.run();
            return Behaviors.stopped();
          }
        }
        return Behaviors.same();
      });
    });
  }
}
