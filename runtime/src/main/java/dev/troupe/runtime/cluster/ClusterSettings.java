package dev.troupe.runtime.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The {@code troupe.cluster} settings (runtime's reference.conf documents each one and its unit),
 * parsed once: whether this node is a member of a Pekko cluster of several nodes sharing one data
 * centre's store, and the cluster's timings. Immutable.
 *
 * <p>Off (the default), the node keeps a local actor system with no remoting at all. On, {@link
 * #pekkoConfig} turns the node's settings into Pekko's (Artery TCP, seed nodes, the split brain
 * resolver, the failure detector, sharding's hand-off), so that Pekko's own settings never need
 * to be set by hand.
 *
 * @param enabled whether this node joins a cluster ({@code troupe.cluster.enabled})
 * @param host the address Artery binds and other members reach this node at
 * @param port the Artery TCP port (0: a free one, for tests of one node only)
 * @param seedNodes the members contacted to join, as {@code host:port}; this node's own address
 *     first on the node that forms the cluster
 * @param stableAfterMillis how long membership must be unchanged (no member becoming unreachable
 *     or reachable again) before the split brain resolver downs the unreachable side
 * @param failureDetectorPauseMillis the heartbeat pause the failure detector accepts before it
 *     marks a member unreachable
 * @param handOffTimeoutMillis the longest a partition's hand-off (its host releasing it) may
 *     take before sharding starts it elsewhere anyway
 * @param stashedMessagesPerPartition most messages a partition's host keeps while it acquires
 *     the partition; past it, arrivals are dropped (the cores resend or ask again)
 * @param statusTimeoutMillis how long {@code GET /v1/cluster} waits for every member's shard
 *     region to say which partitions it holds, and for every other member's {@link NodeStatus}
 * @param startPartitionsIntervalMillis how often each member asks for every partition (besides
 *     at boot and when a member is removed), so that a partition no message reaches is started
 * @param typesRefreshMillis how long a member trusts that a type name it found undeclared in the
 *     shared store is still undeclared (schemaless) before it reads the definitions again
 * @param drainTimeoutMillis on SIGTERM, the longest a member waits for the transactions it
 *     started to end (after its REST server stopped taking requests) before it leaves the
 *     cluster and hands its partitions off ({@link Drain})
 */
public record ClusterSettings(
    boolean enabled,
    String host,
    int port,
    List<String> seedNodes,
    long stableAfterMillis,
    long failureDetectorPauseMillis,
    long handOffTimeoutMillis,
    int stashedMessagesPerPartition,
    long statusTimeoutMillis,
    long startPartitionsIntervalMillis,
    long typesRefreshMillis,
    long drainTimeoutMillis) {

  /** The name of the actor system, the same on every member (it is part of their addresses). */
  public static final String SYSTEM_NAME = "troupe";

  /** Prefix of the member role that carries a node's id: {@code troupe-node-<id>}. */
  public static final String NODE_ROLE_PREFIX = "troupe-node-";

  /** The prefix of the member role that carries its coordinator epoch ({@link #coordinatorEpochRole}). */
  public static final String COORDINATOR_EPOCH_ROLE_PREFIX = "troupe-coordinator-epoch-";

  public ClusterSettings {
    seedNodes = List.copyOf(seedNodes);
  }

  /** Parses {@code troupe.cluster} from the {@code troupe} section. */
  public static ClusterSettings fromConfig(Config troupe) {
    Config cluster = troupe.getConfig("cluster");
    List<String> seeds = new ArrayList<>();
    for (String seed : cluster.getStringList("seed-nodes")) {
      seeds.add(checkedHostAndPort(seed));
    }
    int port = cluster.getInt("port");
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("troupe.cluster.port must be in 0..65535, was " + port);
    }
    return new ClusterSettings(
        cluster.getBoolean("enabled"),
        cluster.getString("host"),
        port,
        seeds,
        positive(cluster, "stable-after-millis"),
        positive(cluster, "failure-detector-pause-millis"),
        positive(cluster, "hand-off-timeout-millis"),
        (int) positive(cluster, "stashed-messages-per-partition"),
        positive(cluster, "status-timeout-millis"),
        positive(cluster, "start-partitions-interval-millis"),
        positive(cluster, "types-refresh-millis"),
        positive(cluster, "drain-timeout-millis"));
  }

  /** The member role of node {@code nodeId}. */
  public static String nodeRole(int nodeId) {
    return NODE_ROLE_PREFIX + nodeId;
  }

  /**
   * The member role that carries the owner epoch of this incarnation's coordinator partition
   * (storage's {@code CoordinatorPartitions}; acquired when its store opened, before it joined),
   * so that a survivor ends exactly that incarnation's coordinators when the member is removed
   * ({@code Store.endCoordinator(nodeId, epoch)}), never a restarted one's.
   */
  public static String coordinatorEpochRole(long epoch) {
    return COORDINATOR_EPOCH_ROLE_PREFIX + epoch;
  }

  /** The coordinator epoch among a member's roles, or 0 if none carries one. */
  public static long coordinatorEpochOfRoles(java.util.Set<String> roles) {
    for (String role : roles) {
      if (role.startsWith(COORDINATOR_EPOCH_ROLE_PREFIX)) {
        try {
          return Long.parseLong(role.substring(COORDINATOR_EPOCH_ROLE_PREFIX.length()));
        } catch (NumberFormatException notAnEpoch) {
          return 0;
        }
      }
    }
    return 0;
  }

  /** The node id a member role names, or -1 if it names none. */
  public static int nodeIdOfRole(String role) {
    if (!role.startsWith(NODE_ROLE_PREFIX)) {
      return -1;
    }
    try {
      return Integer.parseInt(role.substring(NODE_ROLE_PREFIX.length()));
    } catch (NumberFormatException notANode) {
      return -1;
    }
  }

  /**
   * Pekko's settings for a member with node id {@code nodeId}, to lay over the configuration:
   * the cluster provider, Artery TCP at {@link #host}:{@link #port}, the seed nodes, the member
   * role, keep-majority downing with {@link #stableAfterMillis}, the failure detector's pause,
   * sharding's hand-off timeout, and no automatic passivation (a partition's host lives as long
   * as its node hosts the partition).
   */
  public Config pekkoConfig(int nodeId) {
    return pekkoConfig(nodeId, 0);
  }

  /**
   * As {@link #pekkoConfig(int)}, the member's roles also carrying {@code coordinatorEpoch} (see
   * {@link #coordinatorEpochRole}) when it is positive.
   */
  public Config pekkoConfig(int nodeId, long coordinatorEpoch) {
    List<String> roles = coordinatorEpoch > 0
        ? List.of(nodeRole(nodeId), coordinatorEpochRole(coordinatorEpoch))
        : List.of(nodeRole(nodeId));
    List<String> seedAddresses = seedNodes.stream()
        .map(seed -> "pekko://" + SYSTEM_NAME + "@" + seed).toList();
    return ConfigFactory.parseMap(Map.ofEntries(
        Map.entry("pekko.actor.provider", "cluster"),
        Map.entry("pekko.remote.artery.transport", "tcp"),
        Map.entry("pekko.remote.artery.canonical.hostname", host),
        Map.entry("pekko.remote.artery.canonical.port", port),
        Map.entry("pekko.cluster.roles", roles),
        Map.entry("pekko.cluster.downing-provider-class",
            "org.apache.pekko.cluster.sbr.SplitBrainResolverProvider"),
        Map.entry("pekko.cluster.split-brain-resolver.active-strategy", "keep-majority"),
        Map.entry("pekko.cluster.split-brain-resolver.stable-after", stableAfterMillis + "ms"),
        Map.entry("pekko.cluster.failure-detector.acceptable-heartbeat-pause",
            failureDetectorPauseMillis + "ms"),
        Map.entry("pekko.cluster.sharding.handoff-timeout", handOffTimeoutMillis + "ms"),
        Map.entry("pekko.cluster.sharding.remember-entities", "off"),
        Map.entry("pekko.cluster.sharding.passivation.strategy", "none"),
        // The engine's close leaves the cluster (handing its partitions off) before the store
        // closes; Pekko's own JVM hook would race it and stop the actors under the store. The
        // server's shutdown sequence (stop HTTP, drain, close) is registered instead with
        // CoordinatedShutdown.addJvmShutdownHook, which Artery's JVM hook waits for before it
        // stops remoting: a plain JVM hook left the member cut off from the others at SIGTERM.
        Map.entry("pekko.coordinated-shutdown.run-by-jvm-shutdown-hook", "off")))
        .withValue("pekko.cluster.seed-nodes", ConfigValueFactory.fromIterable(seedAddresses));
  }

  private static String checkedHostAndPort(String seed) {
    int colon = seed.lastIndexOf(':');
    boolean valid = colon > 0 && colon < seed.length() - 1;
    if (valid) {
      try {
        int port = Integer.parseInt(seed.substring(colon + 1));
        valid = port > 0 && port <= 65535;
      } catch (NumberFormatException notAPort) {
        valid = false;
      }
    }
    if (!valid) {
      throw new IllegalArgumentException(
          "troupe.cluster.seed-nodes: expected HOST:PORT (e.g. 10.0.0.1:7355), was '" + seed + "'");
    }
    return seed;
  }

  /** A positive number (of milliseconds, or of messages) at {@code troupe.cluster.<path>}. */
  private static long positive(Config config, String path) {
    long value = config.getLong(path);
    if (value <= 0) {
      throw new IllegalArgumentException(
          "troupe.cluster." + path + " must be positive, was " + value);
    }
    return value;
  }
}
