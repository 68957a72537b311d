package dev.troupe.bench;

import dev.troupe.server.http.ClusterPlacement;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A data centre of several Troupe server processes on this machine, members of one Pekko cluster
 * on loopback sharing one PostgreSQL database (issue 18), started as an operator starts them:
 * {@code serve --storage postgres --jdbc-url URL --node-id N --cluster-port P --seed-nodes
 * 127.0.0.1:P1,...}. Member {@code i} (from 0) has node id {@code i + 1} and keeps its cluster port
 * across restarts, so a killed member comes back at the same address, as under a supervisor.
 *
 * <p>With a link delay, each member binds Artery at a private port and advertises the port of a
 * {@code LoopbackProxy} (the one the multi-DC benchmarks delay their links with) in front of it,
 * so every message between two members is delayed. Without
 * a JDBC URL each member runs on a RocksDB store of its own (placement and routing only, no
 * shared data: what {@code troupe cluster} ran before the shared store).
 */
final class LocalCluster implements AutoCloseable {
  private static final String HOST = "127.0.0.1";
  private static final Duration PLACEMENT_POLL = Duration.ofMillis(100);
  /** Partitions sharding may move in one rebalance round (Pekko's default moves one). */
  private static final int REBALANCE_LIMIT = 1000;

  private final Path work;
  private final String jdbcUrl;
  private final List<String> jvmFlags;
  private final List<String> settingOverrides;
  private final int[] clusterPorts;
  private final int[] bindPorts;
  private final List<dev.troupe.server.proxy.LoopbackProxy> proxies = new ArrayList<>();
  private final TroupeProcess[] members;
  private final int[] incarnations;

  private LocalCluster(Path work, String jdbcUrl, List<String> jvmFlags,
      List<String> settingOverrides, int size) {
    this.work = work;
    this.jdbcUrl = jdbcUrl;
    this.jvmFlags = List.copyOf(jvmFlags);
    this.settingOverrides = List.copyOf(settingOverrides);
    this.clusterPorts = new int[size];
    this.bindPorts = new int[size];
    this.members = new TroupeProcess[size];
    this.incarnations = new int[size];
  }

  /**
   * Starts {@code size} members on the database at {@code jdbcUrl}, each with {@code jvmFlags}
   * and the settings {@code settingOverrides} ({@code PATH=VALUE}); returns at once (see {@link
   * #awaitHealthy} and {@link #awaitPlacement}).
   */
  static LocalCluster start(int size, Path work, String jdbcUrl, List<String> jvmFlags,
      List<String> settingOverrides) throws IOException {
    return start(size, work, jdbcUrl, jvmFlags, settingOverrides, 0);
  }

  /**
   * As {@link #start(int, Path, String, List, List)}, every message between members delayed by
   * {@code linkDelayMillis} (0: no proxy); {@code jdbcUrl} null: each member on its own RocksDB.
   */
  static LocalCluster start(int size, Path work, String jdbcUrl, List<String> jvmFlags,
      List<String> settingOverrides, long linkDelayMillis) throws IOException {
    LocalCluster cluster = new LocalCluster(work, jdbcUrl, jvmFlags, settingOverrides, size);
    try {
      for (int i = 0; i < size; i++) {
        if (linkDelayMillis > 0) {
          // The proxy's port is the member's address; Artery binds privately behind it.
          cluster.bindPorts[i] = freePort();
          dev.troupe.server.proxy.LoopbackProxy proxy =
              dev.troupe.server.proxy.LoopbackProxy.start(linkDelayMillis, cluster.bindPorts[i]);
          cluster.proxies.add(proxy);
          cluster.clusterPorts[i] = proxy.port();
        } else {
          cluster.clusterPorts[i] = freePort();
        }
      }
      for (int i = 0; i < size; i++) {
        cluster.startMember(i);
      }
      return cluster;
    } catch (IOException | RuntimeException e) {
      cluster.close();
      throw e;
    }
  }

  private void startMember(int index) throws IOException {
    List<String> seeds = new ArrayList<>();
    for (int port : clusterPorts) {
      seeds.add(HOST + ":" + port);
    }
    List<String> arguments = new ArrayList<>();
    if (jdbcUrl != null) {
      arguments.addAll(List.of("--storage", "postgres", "--jdbc-url", jdbcUrl));
    }
    // Sharding moves one partition per rebalance round (10 s) by default: a cluster formed on one
    // member would take minutes to spread twelve; a benchmark lets it move them all at once.
    arguments.addAll(List.of("--set",
        "pekko.cluster.sharding.least-shard-allocation-strategy.rebalance-absolute-limit="
            + REBALANCE_LIMIT,
        "--set", "pekko.cluster.sharding.least-shard-allocation-strategy.rebalance-relative-limit"
            + "=1.0"));
    if (bindPorts[index] != 0) {
      arguments.addAll(List.of("--set", "pekko.remote.artery.bind.port=" + bindPorts[index]));
    }
    arguments.addAll(List.of(
        "--node-id", Integer.toString(index + 1),
        "--cluster-port", Integer.toString(clusterPorts[index]),
        "--seed-nodes", String.join(",", seeds)));
    for (String override : settingOverrides) {
      arguments.add("--set");
      arguments.add(override);
    }
    incarnations[index]++;
    String name = "member-" + (index + 1);
    members[index] = TroupeProcess.serve(work.resolve(name + "-data"),
        work.resolve(name + "-" + incarnations[index] + ".log"), jvmFlags, arguments, List.of());
  }

  int size() {
    return members.length;
  }

  /** Member {@code index} (from 0), null while it is killed and not restarted. */
  TroupeProcess member(int index) {
    return members[index];
  }

  /** The HTTP ports of the running members, comma-separated (for RestEntityDb.PORTS_PROPERTY). */
  String httpPorts() {
    List<String> ports = new ArrayList<>();
    for (TroupeProcess member : members) {
      if (member != null) {
        ports.add(Integer.toString(member.port()));
      }
    }
    return String.join(",", ports);
  }

  /** Waits until every running member answers {@code /v1/health}. */
  void awaitHealthy(Duration timeout) throws IOException, InterruptedException {
    for (TroupeProcess member : members) {
      if (member != null) {
        member.awaitHealthy(timeout);
      }
    }
  }

  /** SIGKILL of member {@code index}: nothing flushed, no leaving; the others must down it. */
  void kill(int index) throws InterruptedException {
    members[index].kill();
    members[index] = null;
  }

  /** Starts member {@code index} again at its cluster port (a new incarnation, new HTTP port). */
  void restart(int index) throws IOException {
    if (members[index] != null) {
      throw new IllegalStateException("member " + (index + 1) + " is running");
    }
    startMember(index);
  }

  /**
   * Waits until every running member sees exactly the running members up and reachable and
   * every one of {@code partitions} hosted by exactly one of them, all agreeing (and, if {@code
   * balanced}, sharding done rebalancing: the members' counts of partitions differ by at most
   * one, each hosting some); answers partition -> node id.
   *
   * @throws BenchmarkException if that does not happen within {@code timeout}
   */
  Map<Integer, Integer> awaitPlacement(int partitions, boolean balanced,
      Duration timeout) throws InterruptedException {
    List<ClusterPlacement.Member> running = new ArrayList<>();
    for (TroupeProcess member : members) {
      if (member != null) {
        running.add(() -> {
          try (HttpConnection connection = member.connect()) {
            HttpConnection.Response answer = connection.get("/v1/cluster");
            return new ClusterPlacement.Answer(answer.status(), answer.body());
          }
        });
      }
    }
    try {
      return ClusterPlacement.await(running, partitions,
          placement -> !balanced || ClusterPlacement.balanced(placement, running.size()),
          timeout, PLACEMENT_POLL);
    } catch (ClusterPlacement.PlacementTimeoutException timedOut) {
      throw new BenchmarkException(timedOut.getMessage());
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(HOST))) {
      return socket.getLocalPort();
    }
  }

  /** The last lines of every member's current log, for a failure message. */
  String logTails() {
    StringBuilder tails = new StringBuilder();
    for (int i = 0; i < members.length; i++) {
      if (members[i] != null) {
        try {
          tails.append("\n--- member ").append(i + 1).append(":\n").append(members[i].logTail());
        } catch (IOException unreadable) {
          tails.append("\n--- member ").append(i + 1).append(": ").append(unreadable);
        }
      }
    }
    return tails.toString();
  }

  /** Stops every running member (SIGTERM, so each leaves the cluster; SIGKILL after 60 s). */
  @Override
  public void close() {
    // In parallel: a member leaving hands its partitions to the others, one after the other
    // would make every hand-off wait for the last.
    List<Thread> stopping = new ArrayList<>();
    for (int i = 0; i < members.length; i++) {
      TroupeProcess member = members[i];
      members[i] = null;
      if (member != null) {
        stopping.add(Thread.ofPlatform().start(member::close));
      }
    }
    for (Thread thread : stopping) {
      try {
        thread.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    proxies.forEach(dev.troupe.server.proxy.LoopbackProxy::close);
  }
}
