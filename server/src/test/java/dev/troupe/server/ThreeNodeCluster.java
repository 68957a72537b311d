package dev.troupe.server;

import dev.troupe.server.ServerProcess.Answer;
import dev.troupe.server.http.ClusterPlacement;
import dev.troupe.storage.postgres.PostgresInstance;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.time.Duration;
import java.util.Map;

/**
 * A data centre of three real server processes on loopback sharing one throwaway PostgreSQL
 * (issue 18), for the three-node integration tests: each member runs {@code serve --storage
 * postgres --jdbc-url URL --node-id N --cluster-port P --seed-nodes P1,P2,P3}; a member can be
 * killed ({@code kill -9}), stopped ({@code SIGTERM}) and started again on the same ports; {@link
 * #awaitPlacement} waits until the members up agree on one host per partition.
 *
 * <p>With {@code proxied}, each member's canonical cluster port (the one the others connect to)
 * is an in-process {@link TcpProxy} in front of the port Artery really binds ({@code
 * pekko.remote.artery.bind.port}), and each member's outbound Artery connections leave from a
 * loopback address of its own ({@code 127.0.0.<id+1>}, {@code
 * pekko.remote.artery.advanced.tcp.outbound-client-hostname}): {@link #isolate} then cuts a member
 * off from the others in both directions (its proxy refuses everyone, the others' proxies refuse
 * connections from its address), which is a network partition as Artery meets it; PostgreSQL and
 * the HTTP ports stay reachable from everywhere (the partition is between the members only).
 *
 * <p>Small heaps and the serial collector (at most three JVMs on a small machine), as in {@link
 * ClusterTest}.
 */
public final class ThreeNodeCluster implements AutoCloseable {
  static final List<String> JVM_OPTIONS =
      List.of("-Xmx320m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1");
  private static final Duration PLACEMENT_POLL = Duration.ofMillis(250);

  /**
   * What the cluster runs with.
   *
   * @param partitions the store's partitions (troupe.storage.partitions)
   * @param failureDetectorPauseMillis troupe.cluster.failure-detector-pause-millis
   * @param stableAfterMillis troupe.cluster.stable-after-millis
   * @param proxied whether the members reach each other through proxies (see the class comment)
   * @param settings more {@code --set PATH=VALUE} overrides for every member
   */
  public record Options(int partitions, long failureDetectorPauseMillis, long stableAfterMillis,
      boolean proxied, List<String> settings) {
    /** Failover timings shorter than the defaults (3000, 7000), as ClusterTest's. */
    public static Options defaults() {
      return new Options(4, Long.getLong("troupe.test.failure-detector-pause-millis", 2000),
          Long.getLong("troupe.test.stable-after-millis", 3000), false, List.of());
    }

    Options withProxies() {
      return new Options(partitions, failureDetectorPauseMillis, stableAfterMillis, true,
          settings);
    }

    Options with(String... more) {
      List<String> all = new ArrayList<>(settings);
      all.addAll(List.of(more));
      return new Options(partitions, failureDetectorPauseMillis, stableAfterMillis, proxied, all);
    }

    /**
     * The bound on failover from a kill -9 (unreachable after the failure detector's pause,
     * downed after stable-after, moved after sharding's removal margin: stable-after again), plus
     * slack for a loaded two-core machine: what ClusterTest holds placement to.
     */
    long failoverBoundMillis() {
      return 10_000 + 2 * failureDetectorPauseMillis + 3 * stableAfterMillis;
    }
  }

  final Options options;
  private final Path directory;
  private final PostgresInstance postgres;
  private final String jdbcUrl;
  private final ServerProcess[] nodes = new ServerProcess[3];
  /** The port the other members connect to (a proxy's when proxied). */
  private final int[] clusterPorts = new int[3];
  /** The port Artery binds (the cluster port when not proxied). */
  private final int[] bindPorts = new int[3];
  private final IsolatingProxy[] proxies = new IsolatingProxy[3];
  /**
   * The incarnations killed or stopped so far, oldest first: their logs (a stopped member's
   * shutdown: drain, leave, hand-off) are printed with the running members' when a test fails.
   */
  private final List<Ended> ended = new ArrayList<>();

  /** An incarnation of member {@code index} that was killed or stopped. */
  private record Ended(int index, ServerProcess process, String how) {}

  private ThreeNodeCluster(Path directory, Options options) throws IOException {
    this.directory = directory;
    this.options = options;
    this.postgres = PostgresInstance.startForTroupe(32);
    postgres.createDatabase("troupe");
    this.jdbcUrl = postgres.jdbcUrl("troupe");
    for (int i = 0; i < 3; i++) {
      bindPorts[i] = freePort();
      if (options.proxied()) {
        proxies[i] = IsolatingProxy.startIsolating(bindPorts[i]);
        clusterPorts[i] = proxies[i].port();
      } else {
        clusterPorts[i] = bindPorts[i];
      }
    }
  }

  /** Starts PostgreSQL and the three members, and waits until every partition is hosted. */
  public static ThreeNodeCluster start(Path directory, Options options) throws Exception {
    ThreeNodeCluster cluster = new ThreeNodeCluster(directory, options);
    try {
      for (int i = 0; i < 3; i++) {
        cluster.start(i);
      }
      Map<Integer, Integer> placement =
          cluster.awaitPlacement(List.of(0, 1, 2), 120_000, true);
      System.out.println("cluster formed: partition -> node " + placement);
      return cluster;
    } catch (Throwable failure) {
      cluster.printLogs();
      cluster.close();
      throw failure;
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  String jdbcUrl() {
    return jdbcUrl;
  }

  /** The node id of member {@code index} (0..2): index + 1. */
  static int nodeId(int index) {
    return index + 1;
  }

  /** Member {@code index}, or null while it is down. */
  public ServerProcess node(int index) {
    return nodes[index];
  }

  /** The indexes of the members running now. */
  List<Integer> running() {
    List<Integer> running = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      if (nodes[i] != null) {
        running.add(i);
      }
    }
    return running;
  }

  /** Starts member {@code index} (down) on its ports; returns once it listens for HTTP. */
  void start(int index) throws IOException, InterruptedException {
    if (nodes[index] != null) {
      throw new IllegalStateException("node " + nodeId(index) + " runs already");
    }
    List<String> seeds = new ArrayList<>();
    for (int port : clusterPorts) {
      seeds.add("127.0.0.1:" + port);
    }
    Path data = directory.resolve("node-" + nodeId(index));
    Files.createDirectories(data);
    List<String> arguments = new ArrayList<>(List.of("serve",
        "--data", data.toString(), "--port", "0",
        "--storage", "postgres", "--jdbc-url", jdbcUrl,
        "--node-id", Integer.toString(nodeId(index)),
        "--cluster-port", Integer.toString(clusterPorts[index]),
        "--seed-nodes", String.join(",", seeds)));
    List<String> settings = new ArrayList<>(List.of(
        "troupe.storage.partitions=" + options.partitions(),
        "troupe.cluster.failure-detector-pause-millis=" + options.failureDetectorPauseMillis(),
        "troupe.cluster.stable-after-millis=" + options.stableAfterMillis(),
        // A restarted member gets partitions back only when sharding rebalances: every 10 s by
        // Pekko's default, which the restart cycles of the failover and rolling restart tests
        // would wait out in full (CI time). Rebalancing more often changes no rule tested here.
        "pekko.cluster.sharding.rebalance-interval=2s"));
    if (options.proxied()) {
      settings.add("pekko.remote.artery.bind.hostname=\"127.0.0.1\"");
      settings.add("pekko.remote.artery.bind.port=" + bindPorts[index]);
      settings.add("pekko.remote.artery.advanced.tcp.outbound-client-hostname=\""
          + outboundAddress(index) + "\"");
    }
    settings.addAll(options.settings());
    for (String setting : settings) {
      arguments.add("--set");
      arguments.add(setting);
    }
    nodes[index] = ServerProcess.launchWithJvmOptions(JVM_OPTIONS, arguments);
  }

  /** The loopback address member {@code index}'s outbound cluster connections leave from. */
  private static String outboundAddress(int index) {
    return "127.0.0." + (index + 2);
  }

  /** kill -9 of member {@code index}: no shutdown hook, no hand-off. */
  void kill(int index) throws InterruptedException {
    nodes[index].kill();
    ended.add(new Ended(index, nodes[index], "killed"));
    nodes[index] = null;
  }

  /**
   * SIGTERM to member {@code index} (it leaves the cluster, handing its partitions off); waits
   * for its exit.
   */
  void stop(int index) throws InterruptedException {
    nodes[index].close();
    ended.add(new Ended(index, nodes[index], "stopped"));
    nodes[index] = null;
  }

  /**
   * Cuts member {@code index} off from the two others in both directions (proxied only): open
   * connections between them are closed, new ones refused.
   */
  void isolate(int index) {
    if (!options.proxied()) {
      throw new IllegalStateException("isolate needs a proxied cluster");
    }
    for (int i = 0; i < 3; i++) {
      if (i == index) {
        proxies[i].partition();
      } else {
        proxies[i].refuseFrom(outboundAddress(index));
      }
    }
  }

  /** Heals every cut made by {@link #isolate}. */
  void heal() {
    for (IsolatingProxy proxy : proxies) {
      proxy.heal();
      proxy.refuseFrom(null);
    }
  }

  /**
   * Waits until each of {@code members} sees exactly those members up and reachable and every
   * partition hosted by exactly one of them, the same on all (and, if {@code everyMemberHosts},
   * each of them hosting some); answers partition -> node id.
   */
  Map<Integer, Integer> awaitPlacement(List<Integer> members, long timeoutMillis,
      boolean everyMemberHosts) throws InterruptedException {
    List<ClusterPlacement.Member> asked = new ArrayList<>();
    for (int index : members) {
      asked.add(() -> {
        Answer answer = nodes[index].get("/v1/cluster");
        return new ClusterPlacement.Answer(answer.status(),
            answer.text().getBytes(java.nio.charset.StandardCharsets.UTF_8));
      });
    }
    try {
      return ClusterPlacement.await(asked, options.partitions(),
          placement -> !everyMemberHosts
              || ClusterPlacement.everyMemberHosts(placement, members.size()),
          Duration.ofMillis(timeoutMillis), PLACEMENT_POLL);
    } catch (ClusterPlacement.PlacementTimeoutException timedOut) {
      throw new AssertionError("nodes " + members.stream().map(ThreeNodeCluster::nodeId).toList()
          + ": " + timedOut.getMessage());
    }
  }

  /**
   * The placement once the three members agree, preferably (waiting up to 30 s for sharding to
   * rebalance) with every member hosting a partition: a restarted member gets partitions back
   * only when sharding rebalances.
   */
  Map<Integer, Integer> awaitPlacementOfAll() throws Exception {
    try {
      return awaitPlacement(List.of(0, 1, 2), 30_000, true);
    } catch (AssertionError notRebalancedYet) {
      return awaitPlacement(List.of(0, 1, 2), 90_000, false);
    }
  }

  /**
   * The prepared parts in the shared store now (rows of {@code troupe_transactions} whose key is
   * a prepared part's: tag 'P', partition, transaction id, entity), one line each: what a failed
   * test prints to show a part left in doubt.
   */
  List<String> preparedParts() {
    List<String> parts = new ArrayList<>();
    try (java.sql.Connection connection = java.sql.DriverManager.getConnection(jdbcUrl);
        java.sql.Statement statement = connection.createStatement();
        java.sql.ResultSet rows = statement.executeQuery("SELECT key FROM troupe_transactions")) {
      while (rows.next()) {
        java.nio.ByteBuffer key = java.nio.ByteBuffer.wrap(rows.getBytes(1));
        if (key.get() != 'P') {
          continue;
        }
        int partition = key.getShort() & 0xFFFF;
        long transaction = key.getLong();
        int length = key.getShort() & 0xFFFF;
        byte[] entity = new byte[Math.min(length, key.remaining())];
        key.get(entity);
        parts.add("partition " + partition + " transaction " + transaction + " (node "
            + dev.troupe.model.time.TransactionIds.nodeOf(transaction) + ") entity "
            + new String(entity, java.nio.charset.StandardCharsets.UTF_8).replace('\0', '/'));
      }
    } catch (java.sql.SQLException | RuntimeException e) {
      parts.add("cannot read the prepared parts: " + e);
    }
    return parts;
  }

  /** A test's checks on a running cluster. */
  @FunctionalInterface
  public interface Checks {
    void run() throws Exception;
  }

  /** Runs {@code checks}; if they fail, prints every member's log first, then rethrows. */
  public void check(Checks checks) throws Exception {
    try {
      checks.run();
    } catch (Throwable failure) {
      printLogs();
      throw failure;
    }
  }

  /**
   * The logs of every incarnation of the members so far (killed, stopped, running), for checks
   * on what the members said.
   */
  List<String> memberLogs() throws IOException {
    List<String> logs = new ArrayList<>();
    for (Ended incarnation : ended) {
      logs.add(incarnation.process().log());
    }
    for (ServerProcess node : nodes) {
      if (node != null) {
        logs.add(node.log());
      }
    }
    return logs;
  }

  /** Prints the log of every member running, and the end of each ended one's (for a failed test). */
  public void printLogs() {
    System.out.println("---- prepared parts in the store: " + preparedParts());
    for (Ended incarnation : ended) {
      try {
        String log = incarnation.process().log();
        System.out.println("---- node " + nodeId(incarnation.index()) + " (" + incarnation.how()
            + ") log (last 8000 chars):\n" + log.substring(Math.max(0, log.length() - 8_000)));
      } catch (IOException ignored) {
        // Nothing to print.
      }
    }
    for (int i = 0; i < 3; i++) {
      if (nodes[i] != null) {
        try {
          String log = nodes[i].log();
          System.out.println("---- node " + nodeId(i) + " log (last 20000 chars):\n"
              + log.substring(Math.max(0, log.length() - 20_000)));
        } catch (IOException ignored) {
          // Nothing to print.
        }
      }
    }
  }

  /** Kills every member still running (a test's end: nothing is checked after it), PostgreSQL. */
  @Override
  public void close() throws InterruptedException {
    for (int i = 0; i < 3; i++) {
      if (nodes[i] != null) {
        kill(i);
      }
    }
    for (IsolatingProxy proxy : proxies) {
      if (proxy != null) {
        proxy.close();
      }
    }
    postgres.close();
  }

  /**
   * The proxy in front of a member's Artery port: a {@link TcpProxy} that can also refuse the
   * connections coming from one loopback address (another member's outbound address).
   */
  static final class IsolatingProxy extends TcpProxy {
    private volatile InetAddress refused;

    private IsolatingProxy(int targetPort) throws IOException {
      super(targetPort);
    }

    static IsolatingProxy startIsolating(int targetPort) throws IOException {
      IsolatingProxy proxy = new IsolatingProxy(targetPort);
      proxy.accept();
      return proxy;
    }

    /** Refuses connections from {@code address} (null: from none) and closes the open ones. */
    void refuseFrom(String address) {
      try {
        refused = address == null ? null : InetAddress.getByName(address);
      } catch (IOException notAnAddress) {
        throw new IllegalArgumentException(address, notAnAddress);
      }
      if (refused != null) {
        closeConnectionsFrom(refused);
      }
    }

    @Override
    protected boolean forwarding(java.net.Socket client) {
      InetAddress from = refused;
      return super.forwarding(client)
          && (from == null || !from.equals(client.getInetAddress()));
    }
  }
}
