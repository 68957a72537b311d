package dev.troupe.runtime.cluster;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Subscribe;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The membership's verdicts on the other members, by node id, passed to what must act on them at
 * once (docs/ARCHITECTURE.md, "Failing over fast"): the node's reply table holds messages for an
 * unreachable member's partitions, answers the callers waiting on a member declared down, and
 * sends again once the partitions have new homes. Also records when a member was last declared
 * down (logged, and the metric {@code troupe_cluster_last_member_downed_timestamp_seconds}), the
 * moment from which the failover bound is measured.
 */
public final class MemberVerdicts {
  private static final Logger log = LoggerFactory.getLogger(MemberVerdicts.class);

  /** What acts on the verdicts; called on the watching actor's thread, so it must not block. */
  public interface Listener {
    void unreachable(int nodeId);

    void reachable(int nodeId);

    void downed(int nodeId);

    void removed(int nodeId);
  }

  private final LongAdder downed = new LongAdder();
  private final AtomicLong lastDownedEpochMillis = new AtomicLong();

  /** Members this node saw declared down since start. */
  public long downedCount() {
    return downed.sum();
  }

  /** When this node last saw a member declared down (epoch milliseconds; 0: never). */
  public long lastDownedEpochMillis() {
    return lastDownedEpochMillis.get();
  }

  Behavior<ClusterEvent.ClusterDomainEvent> watch(int localNode, Listener listener) {
    return Behaviors.setup(context -> {
      Cluster cluster = Cluster.get(context.getSystem());
      for (Class<? extends ClusterEvent.ClusterDomainEvent> kind : java.util.List.of(
          ClusterEvent.UnreachableMember.class, ClusterEvent.ReachableMember.class,
          ClusterEvent.MemberDowned.class, ClusterEvent.MemberRemoved.class)) {
        cluster.subscriptions().tell(Subscribe.create(context.getSelf().narrow(), kind));
      }
      return Behaviors.receiveMessage(event -> {
        switch (event) {
          case ClusterEvent.UnreachableMember unreachable -> {
            int nodeId = nodeIdOf(unreachable.member());
            if (nodeId >= 0 && nodeId != localNode) {
              log.info("member node {} ({}) is unreachable: messages for its partitions wait",
                  nodeId, unreachable.member().address());
              listener.unreachable(nodeId);
            }
          }
          case ClusterEvent.ReachableMember reachable -> {
            int nodeId = nodeIdOf(reachable.member());
            if (nodeId >= 0 && nodeId != localNode) {
              log.info("member node {} ({}) is reachable again", nodeId,
                  reachable.member().address());
              listener.reachable(nodeId);
            }
          }
          case ClusterEvent.MemberDowned down -> {
            int nodeId = nodeIdOf(down.member());
            if (nodeId >= 0 && nodeId != localNode) {
              downed.increment();
              lastDownedEpochMillis.set(System.currentTimeMillis());
              log.warn("member node {} ({}) declared down: its callers are answered, its"
                  + " partitions move", nodeId, down.member().address());
              listener.downed(nodeId);
            }
          }
          case ClusterEvent.MemberRemoved removed -> {
            int nodeId = nodeIdOf(removed.member());
            if (nodeId >= 0 && nodeId != localNode) {
              log.info("member node {} ({}) removed: its partitions move to new homes", nodeId,
                  removed.member().address());
              listener.removed(nodeId);
            }
          }
          default -> {}
        }
        return Behaviors.same();
      });
    });
  }

  static int nodeIdOf(Member member) {
    int nodeId = -1;
    for (String role : member.getRoles()) {
      nodeId = Math.max(nodeId, ClusterSettings.nodeIdOfRole(role));
    }
    return nodeId;
  }
}
