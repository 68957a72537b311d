package dev.troupe.runtime.cluster;

import com.typesafe.config.Config;
import dev.troupe.model.EntityLocator;
import dev.troupe.runtime.EntityRegistry;
import dev.troupe.txn.port.Transport;
import dev.troupe.txn.wire.Envelope;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.BiConsumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.sharding.ShardRegion;
import org.apache.pekko.cluster.sharding.typed.GetClusterShardingStats;
import org.apache.pekko.cluster.sharding.typed.ShardingEnvelope;
import org.apache.pekko.cluster.sharding.typed.ShardingMessageExtractor;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * This node as a member of a cluster (troupe.cluster.enabled): the actor system's cluster
 * settings, sharding of the store's partitions ({@link PartitionHost}), the node's inbox actor,
 * the {@link ClusterTransport}, the refusal of a duplicate node id ({@link NodeIdGuard}) and the
 * view of the cluster ({@link #view}). Kept out of the engine's facade; the engine calls it.
 */
public final class ClusterNode {
  /** The name of the sharded entity type. */
  public static final String PARTITION_TYPE_NAME = "troupe-partition";

  /** The sharded entity type: one entity per storage partition. */
  public static final EntityTypeKey<PartitionHost.Command> PARTITION_TYPE =
      EntityTypeKey.create(PartitionHost.Command.class, PARTITION_TYPE_NAME);

  private final ActorSystem<?> system;
  private final ClusterSettings settings;
  private final HostedPartitions hosted;
  private final ClusterTransport transport;
  private final HandOffMetrics handOffs = new HandOffMetrics();
  private final MemberVerdicts verdicts = new MemberVerdicts();
  /** Asks the other members for their numbers, and answers them with this node's. */
  private volatile NodeStatusQueries statuses;
  /** This member's REST API base URL once its HTTP server is bound ({@link #advertiseHttpUrl}). */
  private java.util.concurrent.atomic.AtomicReference<String> httpUrl =
      new java.util.concurrent.atomic.AtomicReference<>();
  private ActorRef<ShardingEnvelope<PartitionHost.Command>> region;

  private ClusterNode(ActorSystem<?> system, ClusterSettings settings, HostedPartitions hosted,
      ClusterTransport transport) {
    this.system = system;
    this.settings = settings;
    this.hosted = hosted;
    this.transport = transport;
  }

  /**
   * What this node reports of itself besides its hosted partitions and its heap ({@link
   * NodeStatus}): read whenever another member asks or the cluster's status is shown.
   */
  public interface LocalNumbers {
    /** Its entity actors in memory now. */
    long activeEntities();

    /** Its object cache's estimated weight now, in bytes. */
    long cacheBytes();

    /** For a member with no engine (tests of placement): no entities, no cache. */
    LocalNumbers NONE = of(() -> 0, () -> 0);

    /** The numbers {@code activeEntities} and {@code cacheBytes} read when asked. */
    static LocalNumbers of(LongSupplier activeEntities, LongSupplier cacheBytes) {
      return new LocalNumbers() {
        @Override
        public long activeEntities() {
          return activeEntities.getAsLong();
        }

        @Override
        public long cacheBytes() {
          return cacheBytes.getAsLong();
        }
      };
    }
  }

  /** The configuration of a member's actor system: the cluster's settings over {@code config}. */
  public static Config actorSystemConfig(ClusterSettings settings, int nodeId, Config config) {
    return actorSystemConfig(settings, nodeId, 0, config);
  }

  /**
   * As {@link #actorSystemConfig(ClusterSettings, int, Config)}, the member's roles carrying the
   * coordinator epoch its store acquired at open ({@code Store.coordinatorEpoch}), so that the
   * survivors end this incarnation's coordinators when it is removed ({@link RemovedCoordinators}).
   */
  public static Config actorSystemConfig(ClusterSettings settings, int nodeId,
      long coordinatorEpoch, Config config) {
    return settings.pekkoConfig(nodeId, coordinatorEpoch).withFallback(config);
  }

  /**
   * Makes the node's cluster parts on {@code system} (created with {@link #actorSystemConfig}):
   * its inbox actor and transport, and the guard against a duplicate node id. Sharding starts
   * with {@link #startSharding}, once what the partitions' registries need exists.
   *
   * @param inbox the node's inbox: what a decoded envelope is handed to
   * @param onRemoved called if this node must stop serving: its id is another member's, or it
   *     was removed from the cluster (downed by the split brain resolver) while not closing
   */
  public static ClusterNode create(ActorSystem<?> system, ClusterSettings settings, int nodeId,
      int partitions, EntityLocator locator, BiConsumer<Envelope, Transport> inbox,
      Runnable onRemoved) {
    return create(system, settings, nodeId, partitions, locator, inbox, onRemoved,
        LocalNumbers.NONE);
  }

  /**
   * As {@link #create(ActorSystem, ClusterSettings, int, int, EntityLocator, BiConsumer,
   * Runnable)}, with what the node reports of itself to the other members ({@link NodeStatus}).
   * The node status messages between members are answered here, never handed to {@code inbox}.
   */
  public static ClusterNode create(ActorSystem<?> system, ClusterSettings settings, int nodeId,
      int partitions, EntityLocator locator, BiConsumer<Envelope, Transport> inbox,
      Runnable onRemoved, LocalNumbers numbers) {
    HostedPartitions hosted = new HostedPartitions(partitions);
    java.util.concurrent.atomic.AtomicReference<String> httpUrl =
        new java.util.concurrent.atomic.AtomicReference<>();
    NodeStatusQueries statuses = new NodeStatusQueries(nodeId, () -> NodeStatus.ofThisProcess(
        nodeId, hosted.hostedPartitions(), numbers.activeEntities(), numbers.cacheBytes(),
        httpUrl.get()));
    ClusterTransport transport = new ClusterTransport(nodeId, locator, system,
        (envelope, replies) -> {
          if (NodeStatusQueries.handles(envelope.message())) {
            statuses.receive(envelope.senderNode(), envelope.message(), replies);
          } else {
            inbox.accept(envelope, replies);
          }
        });
    ClusterNode node = new ClusterNode(system, settings, hosted, transport);
    node.statuses = statuses;
    node.httpUrl = httpUrl;
    hosted.useNotHostedHere(system.systemActorOf(
        HostedPartitions.notHostedHere(), "troupe-not-hosted-here", Props.empty()));
    Behavior<WireFrame> inboxActor = Behaviors.receiveMessage(frame -> {
      transport.deliverArrived(frame);
      return Behaviors.same();
    });
    transport.useLocalInbox(
        system.systemActorOf(inboxActor, ClusterTransport.INBOX_NAME, Props.empty()));
    system.systemActorOf(NodeIdGuard.create(nodeId, onRemoved), "troupe-node-id-guard",
        Props.empty());
    return node;
  }

  /**
   * Starts sharding of the partitions ({@value #PARTITION_TYPE_NAME}) and keeps every partition
   * started ({@link PartitionStarter}: at boot, when a member is removed, and periodically), so
   * all are started, spread over the members and moved off a dead one without waiting for
   * traffic.
   *
   * @param registry makes a partition's registry (the host runs it once the partition is acquired)
   */
  public void startSharding(PartitionOwner ownership,
      Supplier<Behavior<EntityRegistry.Command>> registry) {
    Executor blocking = system.dispatchers().lookup(DispatcherSelector.blocking());
    ownership.onPartitionLost(hosted::lost);
    region = ClusterSharding.get(system).init(
        Entity.of(PARTITION_TYPE, context -> PartitionHost.create(
                Integer.parseInt(context.getEntityId()), ownership, hosted, transport, blocking,
                registry, settings.stashedMessagesPerPartition(), handOffs))
            .withStopMessage(new PartitionHost.HandOff())
            .withMessageExtractor(new PartitionExtractor()));
    transport.useRegion(region);
    system.systemActorOf(RemovedCoordinators.create(transport.localNode(), ownership, blocking),
        "troupe-removed-coordinators", Props.empty());
    system.systemActorOf(PartitionStarter.create(region, hosted.partitions(),
            Duration.ofMillis(settings.startPartitionsIntervalMillis())),
        "troupe-partition-starter", Props.empty());
  }

  /** Shard id = entity id = the partition's number: one partition per shard. */
  private static final class PartitionExtractor
      extends ShardingMessageExtractor<ShardingEnvelope<PartitionHost.Command>,
          PartitionHost.Command> {
    @Override
    public String entityId(ShardingEnvelope<PartitionHost.Command> envelope) {
      return envelope.entityId();
    }

    @Override
    public String shardId(String entityId) {
      return entityId;
    }

    @Override
    public PartitionHost.Command unwrapMessage(ShardingEnvelope<PartitionHost.Command> envelope) {
      return envelope.message();
    }
  }

  /**
   * The base URL of this member's REST API ({@code http://host:port}), told by the server once it
   * is bound: every member reports it in its {@link NodeStatus}, so {@code GET /v1/cluster} shows
   * where to send a request for each partition (a partition-aware client sends each request to
   * its entity's owner and saves the hop between members).
   */
  public void advertiseHttpUrl(String url) {
    httpUrl.set(url);
  }

  public ClusterTransport transport() {
    return transport;
  }

  public HostedPartitions hosted() {
    return hosted;
  }

  /** How this node's partitions came and went: hand-off durations and counts. */
  public HandOffMetrics handOffs() {
    return handOffs;
  }

  /**
   * Passes the membership's verdicts on the other members (unreachable, reachable, declared down,
   * removed) to {@code listener} from now on (failover: the node's reply table).
   */
  public void watchMembers(MemberVerdicts.Listener listener) {
    system.systemActorOf(verdicts.watch(transport.localNode(), listener),
        "troupe-member-verdicts", Props.empty());
  }

  /** When members were declared down, as this node saw it. */
  public MemberVerdicts verdicts() {
    return verdicts;
  }

  /** The node status queries of this node (its own numbers; its queries in flight). */
  public NodeStatusQueries statuses() {
    return statuses;
  }

  /**
   * The cluster as this member sees it: the members from its membership state, the partitions
   * each member's shard region holds (asked of every region), and each member's own numbers
   * ({@link NodeStatus}: asked of every other up, reachable member with a node id, by a {@link
   * dev.troupe.txn.wire.WireMessage.NodeStatusQuery} through the transport), all waiting at most
   * {@code troupe.cluster.status-timeout-millis}; what did not answer in time is unknown.
   */
  public CompletableFuture<ClusterView> view() {
    Duration timeout = Duration.ofMillis(settings.statusTimeoutMillis());
    Map<Integer, CompletableFuture<NodeStatus>> asked = new HashMap<>();
    Cluster cluster = Cluster.get(system);
    var unreachable = cluster.state().getUnreachable();
    for (Member member : cluster.state().getMembers()) {
      int nodeId = nodeIdOf(member);
      boolean up = member.status() == MemberStatus.up()
          || member.status() == MemberStatus.weaklyUp();
      if (nodeId >= 0 && (member.equals(cluster.selfMember())
          || (up && !unreachable.contains(member)))) {
        asked.put(nodeId, statuses.ask(transport, nodeId, settings.statusTimeoutMillis()));
      }
    }
    CompletableFuture<ClusterView> membership = AskPattern.<
            org.apache.pekko.cluster.sharding.typed.ClusterShardingQuery,
            ShardRegion.ClusterShardingStats>ask(
            ClusterSharding.get(system).shardState(),
            replyTo -> new GetClusterShardingStats(PARTITION_TYPE, timeout, replyTo),
            timeout.plusSeconds(1), system.scheduler())
        .toCompletableFuture()
        .thenApply(this::viewOf);
    return CompletableFuture.allOf(asked.values().toArray(CompletableFuture[]::new))
        .thenCombine(membership, (ignored, view) -> {
          Map<Integer, NodeStatus> answered = new HashMap<>();
          asked.forEach((nodeId, answer) -> {
            NodeStatus status = answer.join();
            if (status != null) {
              answered.put(nodeId, status);
            }
          });
          return view.withNodeStatuses(answered);
        });
  }

  private static int nodeIdOf(Member member) {
    int nodeId = -1;
    for (String role : member.getRoles()) {
      nodeId = Math.max(nodeId, ClusterSettings.nodeIdOfRole(role));
    }
    return nodeId;
  }

  private ClusterView viewOf(ShardRegion.ClusterShardingStats stats) {
    Cluster cluster = Cluster.get(system);
    Map<Address, List<Integer>> partitionsByAddress = new HashMap<>();
    stats.getRegions().forEach((address, region) -> {
      List<Integer> partitions = new ArrayList<>();
      region.getStats().forEach((shard, entities) -> partitions.add(Integer.parseInt(shard)));
      partitions.sort(Comparator.naturalOrder());
      partitionsByAddress.put(address, partitions);
    });
    List<ClusterView.MemberView> members = new ArrayList<>();
    var unreachable = cluster.state().getUnreachable();
    for (Member member : cluster.state().getMembers()) {
      int nodeId = nodeIdOf(member);
      List<Integer> partitions = partitionsByAddress.get(member.address());
      members.add(new ClusterView.MemberView(member.address().toString(),
          member.status().toString().toLowerCase(java.util.Locale.ROOT),
          !unreachable.contains(member), nodeId, member.getRoles().stream().sorted().toList(),
          partitions == null ? List.of() : partitions, partitions != null, null));
    }
    return new ClusterView(cluster.selfMember().address().toString(), hosted.partitions(),
        members);
  }
}
