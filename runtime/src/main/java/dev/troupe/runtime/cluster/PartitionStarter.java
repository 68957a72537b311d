package dev.troupe.runtime.cluster;

import java.time.Duration;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.sharding.typed.ShardingEnvelope;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Subscribe;

/**
 * Keeps every partition started. Sharding has no remembered entities here, so a partition whose
 * host died with its member would start again only with the next message for it: this actor asks
 * for every partition ({@link PartitionHost.StartPartition}) at boot, whenever a member is removed
 * (its partitions are then placed on the survivors at once, without waiting for traffic), and
 * every {@code troupe.cluster.start-partitions-interval-millis} (a host that stopped because its
 * acquisition failed, or a request that reached the coordinator before it knew the member was
 * gone). Asking for a running partition does nothing.
 */
final class PartitionStarter {
  private PartitionStarter() {}

  private sealed interface Command {}

  private record Tick() implements Command {}

  private record MemberRemoved(ClusterEvent.MemberRemoved event) implements Command {}

  static Behavior<Command> create(ActorRef<ShardingEnvelope<PartitionHost.Command>> region,
      int partitions, Duration interval) {
    return Behaviors.setup(context -> {
      ActorRef<ClusterEvent.MemberRemoved> removals =
          context.messageAdapter(ClusterEvent.MemberRemoved.class, MemberRemoved::new);
      Cluster.get(context.getSystem()).subscriptions()
          .tell(Subscribe.create(removals, ClusterEvent.MemberRemoved.class));
      return Behaviors.withTimers(timers -> {
        timers.startTimerWithFixedDelay(new Tick(), interval);
        startAll(region, partitions);
        return Behaviors.receive(Command.class)
            .onMessage(Command.class, any -> {
              startAll(region, partitions);
              return Behaviors.same();
            })
            .build();
      });
    });
  }

  private static void startAll(ActorRef<ShardingEnvelope<PartitionHost.Command>> region,
      int partitions) {
    for (int partition = 0; partition < partitions; partition++) {
      region.tell(new ShardingEnvelope<>(Integer.toString(partition),
          PartitionHost.StartPartition.INSTANCE));
    }
  }
}
