package dev.troupe.bench;

import dev.troupe.storage.postgres.PostgresInstance;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import me.tongfei.progressbar.ProgressBar;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code troupe bench cluster} (issue 18): YCSB over the entity REST API through a data centre of
 * three nodes sharing one PostgreSQL database, the client threads spread over the nodes, against
 * one node on the same PostgreSQL backend and one node on RocksDB, in one run.
 *
 * <p><b>What it compares.</b> Throughput and p99 of each; and, because this machine's cores are
 * shared (three server JVMs and PostgreSQL on two cores cannot show scale-out as throughput),
 * throughput per CPU-second consumed by the server processes (each JVM's user and system time from
 * {@code /proc/<pid>/stat}) plus PostgreSQL's (its postmaster and backends) for the two PostgreSQL
 * configurations. The efficiency goal: the cluster's operations per CPU-second at least 0.6 of one
 * node's on the same backend, i.e. spreading a data centre over three nodes costs at most 1/0.6 of
 * the CPU per operation. Also reported: the share of requests that needed a hop to another node
 * (the members' {@code troupe_cluster_transport_sent_total{to="partition"}} over their HTTP
 * requests), and, after loading, each member's entities and heap (its old generation after a full
 * collection forced with {@code jcmd GC.run}) with max/min (goal at most 1.2).
 *
 * <p><b>Fair because</b> every configuration runs the same server command, JVM flags, heap and
 * partition count, is loaded with the same records by the same YCSB binding and threads in this JVM,
 * and is measured after the same unmeasured warm-up. The configurations run one after the other
 * (three JVMs at most at a time), not alternating, so the machine's load can differ between them:
 * the load average is recorded with every figure.
 */
@Command(
    name = "cluster",
    mixinStandardHelpOptions = true,
    description = "YCSB through a 3-node data centre on one PostgreSQL vs one node on PostgreSQL vs"
        + " one node on RocksDB: throughput, p99, operations per CPU-second, remote hops, and the"
        + " spread of entities and heap over the nodes.")
final class ClusterBenchmark extends Benchmark {
  static final Goal EFFICIENCY_GOAL = Goal.atLeast(0.6);
  private static final Duration START_TIMEOUT = Duration.ofSeconds(180);
  private static final long IDLE_MEASUREMENT_MILLIS = 3000;

  /** What a run can measure. */
  enum Configuration { cluster, postgres, rocksdb }

  @Option(names = "--workload", split = ",", defaultValue = "a,c",
      description = "YCSB workloads, comma-separated (default: ${DEFAULT-VALUE}).")
  List<String> workloadNames;

  @Option(names = "--configurations", split = ",", defaultValue = "cluster,postgres,rocksdb",
      description = "cluster (the nodes on one PostgreSQL), postgres (one node on it), rocksdb"
          + " (one node on RocksDB) (default: ${DEFAULT-VALUE}).")
  List<Configuration> configurations;

  /** How the client threads pick the member of the cluster configuration they send to. */
  enum Routing {
    /** Each client thread keeps one member, the threads spread round-robin (2/3 of hops at 3). */
    any,
    /** Each request goes to the member hosting its record ({@code troupe.rest.owner-aware}). */
    owner
  }

  @Option(names = "--client-routing", split = ",", defaultValue = "any,owner",
      description = "How clients of the cluster configuration pick a member, each measured on the"
          + " same cluster: any (threads spread round-robin) and owner (each request to the member"
          + " hosting its record, from GET /v1/cluster) (default: ${DEFAULT-VALUE}).")
  List<Routing> routings;

  @Option(names = "--cluster-storage", defaultValue = "postgres",
      description = "postgres: the members share one PostgreSQL database, the only store a"
          + " cluster runs on (default: ${DEFAULT-VALUE}).")
  String clusterStorage;

  @Option(names = "--nodes", defaultValue = "3",
      description = "Members of the cluster configuration (default: ${DEFAULT-VALUE}).")
  int nodes;

  @Option(names = "--records", defaultValue = "20000",
      description = "Records loaded into every configuration (default: ${DEFAULT-VALUE}).")
  long records;

  @Option(names = "--threads", defaultValue = "16",
      description = "YCSB client threads, spread round-robin over the nodes"
          + " (default: ${DEFAULT-VALUE}).")
  int threads;

  @Option(names = "--duration", defaultValue = "10",
      description = "Measured seconds per workload and configuration (default: ${DEFAULT-VALUE}).")
  double durationSeconds;

  @Option(names = "--warmup-seconds", defaultValue = "3",
      description = "Unmeasured seconds before each measurement (default: ${DEFAULT-VALUE}).")
  double warmupSeconds;

  @Option(names = "--partitions", defaultValue = "12",
      description = "Storage partitions of every configuration; a multiple of --nodes spreads"
          + " them evenly (default: ${DEFAULT-VALUE}).")
  int partitions;

  @Option(names = "--heap", defaultValue = "320m",
      description = "Maximum heap of every server JVM (default: ${DEFAULT-VALUE}).")
  String heap;

  @Option(names = "--postgres-shared-buffers-mb", defaultValue = "256",
      description = "PostgreSQL shared_buffers in MB (default: ${DEFAULT-VALUE}).")
  int sharedBuffersMegabytes;

  @Option(names = "--set", paramLabel = "PATH=VALUE",
      description = "A setting for every server (repeatable), e.g."
          + " troupe.storage.durability=async.")
  List<String> settings = new ArrayList<>();

  @Option(names = "--server-jvm-option", paramLabel = "FLAG",
      description = "Extra JVM flag for every server process (repeatable).")
  List<String> serverJvmOptions = new ArrayList<>();

  @Override
  BenchReport run() throws Exception {
    List<YcsbWorkloads.Workload> workloads = workloadNames.stream()
        .map(String::strip).map(YcsbWorkloads::named).toList();
    if (!clusterStorage.equals("postgres")) {
      throw new IllegalArgumentException("--cluster-storage must be postgres: a cluster's members"
          + " share one store (serve refuses a cluster member on RocksDB)");
    }
    if (records < 1 || threads < 1 || nodes < 2 || partitions < nodes) {
      throw new IllegalArgumentException("--records and --threads must be positive, --nodes at"
          + " least 2 and --partitions at least --nodes");
    }
    Duration warmup = duration(warmupSeconds, "--warmup-seconds");
    Duration measurement = duration(durationSeconds, "--duration");
    BenchReport report = new BenchReport("cluster", "YCSB through a data centre of " + nodes
        + " nodes on one PostgreSQL vs one node on PostgreSQL vs one node on RocksDB");
    report.parameter("workloads", workloads.stream().map(YcsbWorkloads.Workload::name).toList())
        .parameter("configurations", configurations.stream().map(Enum::name).toList())
        .parameter("nodes", nodes)
        .parameter("cluster_storage", clusterStorage)
        .parameter("records", records)
        .parameter("record_bytes", 1000)
        .parameter("threads", threads)
        .parameter("client_routings", routings.stream().map(Enum::name).toList())
        .parameter("partitions", partitions)
        .parameter("heap", heap)
        .parameter("warmup_seconds", warmup.toMillis() / 1000.0)
        .parameter("seconds_per_measurement", measurement.toMillis() / 1000.0)
        .parameter("settings", settings)
        .parameter("machine", Machine.describe())
        .parameter("load_average_at_start", loadAverage());

    List<String> jvmFlags = new ArrayList<>(List.of("-Xmx" + heap));
    jvmFlags.addAll(serverJvmOptions);
    List<String> serverSettings = new ArrayList<>(List.of(
        "troupe.storage.partitions=" + partitions,
        // A writer can hold three connections (see the PostgreSQL storage section of
        // docs/ARCHITECTURE.md); one node of the single configuration owns every partition.
        "troupe.storage.postgres.maximum-pool-size=" + (3 * partitions + 16)));
    serverSettings.addAll(settings);

    Map<String, Map<String, Double>> perCpuSecond = new LinkedHashMap<>();
    Map<String, Map<String, Double>> throughputs = new LinkedHashMap<>();
    try (TemporaryDirectory work = TemporaryDirectory.create("cluster");
        PostgresInstance postgres = configurations.contains(Configuration.cluster)
            || configurations.contains(Configuration.postgres)
            ? PostgresInstance.startForTroupe(sharedBuffersMegabytes) : null) {
      for (Configuration configuration : configurations) {
        try (Deployment deployment = Deployment.start(configuration, nodes, work, postgres,
            clusterStorage.equals("rocksdb"), jvmFlags, serverSettings)) {
          deployment.awaitReady(partitions);
          Properties loadProperties = YcsbWorkloads.properties(workloads.get(0), records);
          loadProperties.setProperty(RestEntityDb.PORTS_PROPERTY, deployment.httpPorts());
          YcsbRunner.PhaseResult loaded;
          try (ProgressBar progress = ProgressBars.start("load " + configuration, records,
              "records", 1)) {
            loaded = YcsbRunner.load(loadProperties, threads, RestEntityDb::new, progress);
          }
          report.result("load/" + configuration, "records_per_second",
              loaded.throughputPerSecond());
          if (loaded.failureCount() > 0 || loaded.transactions() != records) {
            report.failure("loading " + configuration + " inserted " + loaded.transactions()
                + " of " + records + " records; failures: " + loaded.failures()
                + deployment.logTails());
            return report;
          }
          if (configuration == Configuration.cluster) {
            MemorySpread.measure(report, deployment.servers(), Map.of());
          }
          // What the servers burn with no request at all (heartbeats, gossip, timers, pollers):
          // the fixed part of the CPU per operation below.
          Usage idleBefore = deployment.usage();
          long idleStart = System.nanoTime();
          Thread.sleep(IDLE_MEASUREMENT_MILLIS);
          Usage idleAfter = deployment.usage();
          report.result("idle/" + configuration, "cpu_cores_busy",
              (idleAfter.serverCpuSeconds() - idleBefore.serverCpuSeconds()
                  + idleAfter.postgresCpuSeconds() - idleBefore.postgresCpuSeconds())
                  / ((System.nanoTime() - idleStart) / 1e9));
          for (YcsbWorkloads.Workload workload : workloads) {
           for (Routing routing : configuration == Configuration.cluster ? routings
               : List.of(Routing.any)) {
            String label = systemLabel(configuration, routing);
            String system = workload.name() + "/" + label;
            Properties properties = YcsbWorkloads.properties(workload, records);
            properties.setProperty(RestEntityDb.PORTS_PROPERTY, deployment.httpPorts());
            properties.setProperty(RestEntityDb.OWNER_AWARE_PROPERTY,
                Boolean.toString(routing == Routing.owner));
            try (ProgressBar progress = ProgressBars.start(system,
                warmup.toMillis() + measurement.toMillis(), "s", 1000)) {
              YcsbRunner.transactions(properties, threads, RestEntityDb::new, Duration.ZERO,
                  warmup, progress);
              Usage before = deployment.usage();
              YcsbRunner.PhaseResult result = YcsbRunner.transactions(properties, threads,
                  RestEntityDb::new, Duration.ZERO, measurement, progress);
              Usage after = deployment.usage();
              summarize(report, system, result, before, after, deployment.usesPostgres());
              perCpuSecond.computeIfAbsent(workload.name(), name -> new LinkedHashMap<>())
                  .put(label, report.result(system, "operations_per_cpu_second"));
              throughputs.computeIfAbsent(workload.name(), name -> new LinkedHashMap<>())
                  .put(label, result.throughputPerSecond());
            }
           }
          }
        }
      }
    }
    for (String workload : perCpuSecond.keySet()) {
      String suffix = workloads.size() == 1 ? "" : " " + workload;
      Map<String, Double> efficiency = perCpuSecond.get(workload);
      Map<String, Double> throughput = throughputs.get(workload);
      String postgres = Configuration.postgres.name();
      String rocksdb = Configuration.rocksdb.name();
      for (Routing routing : routings) {
        String cluster = systemLabel(Configuration.cluster, routing);
        if (efficiency.containsKey(cluster) && efficiency.containsKey(postgres)) {
          report.ratio(cluster + "/postgres operations per CPU-second" + suffix,
              efficiency.get(cluster), efficiency.get(postgres), EFFICIENCY_GOAL);
          report.ratio(cluster + "/postgres throughput" + suffix, throughput.get(cluster),
              throughput.get(postgres), null);
        }
      }
      if (throughput.containsKey(postgres) && throughput.containsKey(rocksdb)) {
        report.ratio("postgres/rocksdb throughput" + suffix, throughput.get(postgres),
            throughput.get(rocksdb), null);
        report.ratio("postgres/rocksdb operations per CPU-second" + suffix,
            efficiency.get(postgres), efficiency.get(rocksdb), null);
      }
    }
    report.parameter("load_average_at_end", loadAverage());
    return report;
  }

  /**
   * The name of a measured system: the configuration, and for the cluster the client routing
   * ({@code cluster} for any member, as before; {@code cluster-owner-aware}).
   */
  static String systemLabel(Configuration configuration, Routing routing) {
    return configuration == Configuration.cluster && routing == Routing.owner
        ? "cluster-owner-aware" : configuration.name();
  }

  /** One measurement's figures. */
  private static void summarize(BenchReport report, String system, YcsbRunner.PhaseResult result,
      Usage before, Usage after, boolean withPostgres) {
    report.result(system, "throughput_per_second", result.throughputPerSecond());
    result.latencyNanoseconds().forEach((operation, histogram) -> {
      report.result(system, operation + "_operations", histogram.getTotalCount());
      report.result(system, operation + "_p50_milliseconds",
          histogram.getValueAtPercentile(50) / 1e6);
      report.result(system, operation + "_p99_milliseconds",
          histogram.getValueAtPercentile(99) / 1e6);
    });
    Histogram all = new Histogram(3);
    result.latencyNanoseconds().values().forEach(all::add);
    report.result(system, "p99_milliseconds", all.getValueAtPercentile(99) / 1e6);
    long failed = result.failureCount();
    report.result(system, "failed_operations", failed);
    if (failed > 0) {
      report.failure(system + ": " + failed + " operations failed: " + result.failures());
    }
    double serverSeconds = after.serverCpuSeconds() - before.serverCpuSeconds();
    double postgresSeconds = after.postgresCpuSeconds() - before.postgresCpuSeconds();
    report.result(system, "server_cpu_seconds", serverSeconds);
    if (withPostgres) {
      report.result(system, "postgres_cpu_seconds", postgresSeconds);
    }
    report.result(system, "cpu_cores_busy", (serverSeconds + postgresSeconds) / result.seconds());
    report.result(system, "operations_per_cpu_second",
        result.transactions() / (serverSeconds + postgresSeconds));
    report.result(system, "operations_per_server_cpu_second",
        result.transactions() / serverSeconds);
    double requests = after.httpRequests() - before.httpRequests();
    if (after.sentToPartitions() >= 0) {
      report.result(system, "remote_hop_share",
          requests == 0 ? 0 : (after.sentToPartitions() - before.sentToPartitions()) / requests);
      report.result(system, "messages_to_nodes_per_request",
          requests == 0 ? 0 : (after.sentToNodes() - before.sentToNodes()) / requests);
    }
    report.result(system, "load_average_1_minute", loadAverageOneMinute());
  }

  static String metricsOf(TroupeProcess server) throws IOException {
    try (HttpConnection connection = server.connect()) {
      HttpConnection.Response response = connection.get("/metrics");
      if (response.status() != 200) {
        throw new BenchmarkException("/metrics answered " + response.status() + ": "
            + response.text());
      }
      return response.text();
    }
  }

  /** The 1-, 5- and 15-minute load averages ({@code /proc/loadavg}), as uptime prints them. */
  static String loadAverage() {
    try {
      String[] fields = Files.readString(Path.of("/proc/loadavg")).strip().split(" ");
      return String.join(" ", fields[0], fields[1], fields[2]);
    } catch (IOException | RuntimeException unknown) {
      return "unknown";
    }
  }

  /** The 1-minute load average as a number (-1 if unknown). */
  static double loadAverageOneMinute() {
    try {
      return Double.parseDouble(loadAverage().split(" ")[0]);
    } catch (NumberFormatException unknown) {
      return -1;
    }
  }

  /**
   * Counters read from every server at one moment: CPU seconds of the server processes and of
   * PostgreSQL, HTTP requests, and (cluster members only, else -1) messages sent over the cluster.
   */
  record Usage(double serverCpuSeconds, double postgresCpuSeconds, double httpRequests,
      double sentToPartitions, double sentToNodes) {}

  /** The servers of one configuration. */
  record Deployment(Configuration configuration, List<TroupeProcess> servers,
      LocalCluster cluster, PostgresInstance postgres) implements AutoCloseable {

    static Deployment start(Configuration configuration, int nodes, TemporaryDirectory work,
        PostgresInstance postgres, boolean clusterOnRocksDb, List<String> jvmFlags,
        List<String> settings) throws IOException {
      List<String> overrides = new ArrayList<>();
      for (String setting : settings) {
        overrides.addAll(List.of("--set", setting));
      }
      return switch (configuration) {
        case cluster -> {
          String jdbcUrl = null;
          if (!clusterOnRocksDb) {
            postgres.createDatabase("cluster");
            jdbcUrl = postgres.jdbcUrl("cluster");
          }
          LocalCluster cluster = LocalCluster.start(nodes, work.resolve("cluster"), jdbcUrl,
              jvmFlags, settings);
          List<TroupeProcess> members = new ArrayList<>();
          for (int i = 0; i < nodes; i++) {
            members.add(cluster.member(i));
          }
          yield new Deployment(configuration, members, cluster,
              clusterOnRocksDb ? null : postgres);
        }
        case postgres -> {
          postgres.createDatabase("single");
          List<String> arguments = new ArrayList<>(List.of("--storage", "postgres",
              "--jdbc-url", postgres.jdbcUrl("single")));
          arguments.addAll(overrides);
          yield new Deployment(configuration, List.of(TroupeProcess.serve(
              work.resolve("postgres-data"), work.resolve("postgres-node.log"), jvmFlags,
              arguments, List.of())), null, postgres);
        }
        case rocksdb -> new Deployment(configuration, List.of(TroupeProcess.serve(
            work.resolve("rocksdb-data"), work.resolve("rocksdb-node.log"), jvmFlags, overrides,
            List.of())), null, null);
      };
    }

    boolean usesPostgres() {
      return postgres != null;
    }

    void awaitReady(int partitions) throws IOException, InterruptedException {
      for (TroupeProcess server : servers) {
        server.awaitHealthy(START_TIMEOUT);
      }
      if (cluster != null) {
        cluster.awaitPlacement(partitions, true, START_TIMEOUT);
      }
    }

    /** The ends of the servers' logs, for a failure message. */
    String logTails() {
      if (cluster != null) {
        return cluster.logTails();
      }
      StringBuilder tails = new StringBuilder();
      for (TroupeProcess server : servers) {
        try {
          tails.append("\n--- ").append(configuration).append(":\n").append(server.logTail());
        } catch (IOException unreadable) {
          tails.append("\n--- ").append(configuration).append(": ").append(unreadable);
        }
      }
      return tails.toString();
    }

    String httpPorts() {
      return String.join(",", servers.stream().map(s -> Integer.toString(s.port())).toList());
    }

    Usage usage() throws IOException {
      double cpu = 0;
      double requests = 0;
      double sentToPartitions = cluster == null ? -1 : 0;
      double sentToNodes = cluster == null ? -1 : 0;
      for (TroupeProcess server : servers) {
        cpu += ProcessCpu.secondsOf(server.pid());
        String metrics = metricsOf(server);
        requests += PrometheusText.value(metrics, "troupe_http_requests_total", 0);
        if (cluster != null) {
          sentToPartitions += PrometheusText.value(metrics,
              "troupe_cluster_transport_sent_total{to=\"partition\"}", 0);
          sentToNodes += PrometheusText.value(metrics,
              "troupe_cluster_transport_sent_total{to=\"node\"}", 0);
        }
      }
      double postgresCpu = postgres == null ? 0
          : ProcessCpu.secondsWithChildren(ProcessCpu.postmasterPid(postgres.dataDirectory()));
      return new Usage(cpu, postgresCpu, requests, sentToPartitions, sentToNodes);
    }

    @Override
    public void close() {
      if (cluster != null) {
        cluster.close();
      } else {
        servers.forEach(TroupeProcess::close);
      }
    }
  }

  static String format(double value) {
    return String.format(Locale.ROOT, "%.2f", value);
  }
}
