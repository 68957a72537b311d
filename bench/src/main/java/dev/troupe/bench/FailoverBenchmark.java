package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityLocator;
import dev.troupe.model.Json;
import dev.troupe.storage.postgres.PostgresInstance;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import me.tongfei.progressbar.ProgressBar;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code troupe bench failover} (issue 18): a data centre of three nodes on one PostgreSQL; a
 * random member is killed with SIGKILL {@code --kills} times (restarted after each, and the
 * cluster left to settle again), and each time the benchmark measures, from the kill, the first
 * successful write (through a surviving member) to an entity of a partition the killed member
 * hosted, and the time until an entity of every such partition has been written.
 *
 * <p>Every partition has one probe entity, written once before the kills; during a failover
 * {@code --probers} threads write the moved partitions' probes through the survivors over and over
 * (each write carries a new value). After each failover every probe is read back through a survivor
 * and must hold the last value a write of it was acknowledged with (or a later attempt's, whose
 * answer was lost): otherwise an acknowledged write was lost, a correctness failure.
 *
 * <p>The failure detector's pause and the resolver's stable-after are passed to every member
 * explicitly and printed: failover is roughly their sum, plus sharding's removal margin (the
 * same stable-after), plus recovery of the moved partitions (docs/ARCHITECTURE.md, "Failover
 * timings").
 */
@Command(
    name = "failover",
    mixinStandardHelpOptions = true,
    description = "kill -9 a random member of a 3-node data centre N times: time from the kill to"
        + " the first write to a moved partition, and to every moved partition written; p50 and"
        + " max.")
final class FailoverBenchmark extends Benchmark {
  private static final String TYPE = "usertable";
  private static final Duration START_TIMEOUT = Duration.ofSeconds(180);
  private static final long PROBE_PAUSE_MILLIS = 20;

  @Option(names = "--kills", defaultValue = "3",
      description = "Members killed, one after the other (default: ${DEFAULT-VALUE}; the issue"
          + " asks 10, about a minute each).")
  int kills;

  @Option(names = "--nodes", defaultValue = "3",
      description = "Members of the data centre (default: ${DEFAULT-VALUE}).")
  int nodes;

  @Option(names = "--partitions", defaultValue = "12",
      description = "Storage partitions (default: ${DEFAULT-VALUE}).")
  int partitions;

  @Option(names = "--failure-detector-pause-millis", defaultValue = "2000",
      description = "troupe.cluster.failure-detector-pause-millis of every member"
          + " (default: ${DEFAULT-VALUE}; the setting's default is 3000).")
  long failureDetectorPauseMillis;

  @Option(names = "--stable-after-millis", defaultValue = "3000",
      description = "troupe.cluster.stable-after-millis of every member"
          + " (default: ${DEFAULT-VALUE}; the setting's default is 7000).")
  long stableAfterMillis;

  @Option(names = "--start-partitions-interval-millis", defaultValue = "2000",
      description = "troupe.cluster.start-partitions-interval-millis of every member"
          + " (default: ${DEFAULT-VALUE}).")
  long startPartitionsIntervalMillis;

  @Option(names = "--probers", defaultValue = "4",
      description = "Threads writing the moved partitions' entities during a failover"
          + " (default: ${DEFAULT-VALUE}).")
  int probers;

  @Option(names = "--timeout-seconds", defaultValue = "120",
      description = "Longest wait for a failover before the run fails (default: ${DEFAULT-VALUE}).")
  long timeoutSeconds;

  @Option(names = "--seed", defaultValue = "1",
      description = "Seed of the choice of the members killed (default: ${DEFAULT-VALUE}).")
  long seed;

  @Option(names = "--heap", defaultValue = "320m",
      description = "Maximum heap of every member (default: ${DEFAULT-VALUE}).")
  String heap;

  @Option(names = "--set", paramLabel = "PATH=VALUE",
      description = "A setting for every member (repeatable).")
  List<String> settings = new ArrayList<>();

  @Override
  BenchReport run() throws Exception {
    if (kills < 1 || nodes < 3 || partitions < nodes || probers < 1) {
      throw new IllegalArgumentException("--kills and --probers must be positive, --nodes at"
          + " least 3 (a majority must survive) and --partitions at least --nodes");
    }
    BenchReport report = new BenchReport("failover", "kill -9 of a member of a " + nodes
        + "-node data centre: time to the first write to a moved partition");
    report.parameter("kills", kills).parameter("nodes", nodes).parameter("partitions", partitions)
        .parameter("failure_detector_pause_millis", failureDetectorPauseMillis)
        .parameter("stable_after_millis", stableAfterMillis)
        .parameter("start_partitions_interval_millis", startPartitionsIntervalMillis)
        .parameter("probers", probers).parameter("seed", seed).parameter("heap", heap)
        .parameter("settings", settings)
        .parameter("machine", Machine.describe())
        .parameter("load_average_at_start", ClusterBenchmark.loadAverage());
    System.err.printf("failure detector pause %d ms, stable-after %d ms, start-partitions interval"
        + " %d ms%n", failureDetectorPauseMillis, stableAfterMillis,
        startPartitionsIntervalMillis);

    List<String> memberSettings = new ArrayList<>(List.of(
        "troupe.storage.partitions=" + partitions,
        "troupe.storage.postgres.maximum-pool-size=" + (3 * partitions + 16),
        "troupe.cluster.failure-detector-pause-millis=" + failureDetectorPauseMillis,
        "troupe.cluster.stable-after-millis=" + stableAfterMillis,
        "troupe.cluster.start-partitions-interval-millis=" + startPartitionsIntervalMillis));
    memberSettings.addAll(settings);
    Map<Integer, String> probes = probeKeys(partitions);
    Random random = new Random(seed);
    List<Double> firstWriteMillis = new ArrayList<>();
    List<Double> everyPartitionMillis = new ArrayList<>();
    List<Double> rejoinMillis = new ArrayList<>();

    try (TemporaryDirectory work = TemporaryDirectory.create("failover");
        PostgresInstance postgres = PostgresInstance.startForTroupe(128)) {
      postgres.createDatabase("failover");
      try (LocalCluster cluster = LocalCluster.start(nodes, work.resolve("cluster"),
          postgres.jdbcUrl("failover"), List.of("-Xmx" + heap), memberSettings)) {
        cluster.awaitHealthy(START_TIMEOUT);
        Map<Integer, Integer> placement = cluster.awaitPlacement(partitions, true, START_TIMEOUT);
        Map<String, String> acknowledged = new ConcurrentHashMap<>();
        try (HttpConnection connection = cluster.member(0).connect()) {
          for (String key : probes.values()) {
            String value = "initial";
            HttpConnection.Response answer = write(connection, key, value);
            if (answer.status() != 200) {
              report.failure("writing probe " + key + " answered " + answer.status() + ": "
                  + answer.text());
              return report;
            }
            acknowledged.put(key, value);
          }
        }
        try (ProgressBar progress = ProgressBars.start("failover", kills, "kills", 1)) {
          for (int kill = 1; kill <= kills; kill++) {
            int victim = random.nextInt(nodes);
            int victimNodeId = victim + 1;
            List<String> moved = new ArrayList<>();
            placement.forEach((partition, node) -> {
              if (node == victimNodeId) {
                moved.add(probes.get(partition));
              }
            });
            progress.setExtraMessage("kill member " + victimNodeId);
            List<TroupeProcess> survivors = new ArrayList<>();
            for (int i = 0; i < nodes; i++) {
              if (i != victim) {
                survivors.add(cluster.member(i));
              }
            }
            long killedAt = System.nanoTime();
            cluster.kill(victim);
            Timings timings = probe(moved, survivors, acknowledged, killedAt,
                Duration.ofSeconds(timeoutSeconds), kill);
            if (timings == null) {
              report.failure("kill " + kill + " (member " + victimNodeId + "): no write to a moved"
                  + " partition succeeded within " + timeoutSeconds + " s" + cluster.logTails());
              return report;
            }
            firstWriteMillis.add(timings.firstMillis());
            everyPartitionMillis.add(timings.everyMillis());
            report.result("kill-" + kill, "member_killed", victimNodeId);
            report.result("kill-" + kill, "partitions_moved", moved.size());
            report.result("kill-" + kill, "first_write_after_kill_milliseconds",
                timings.firstMillis());
            report.result("kill-" + kill, "every_moved_partition_written_milliseconds",
                timings.everyMillis());
            report.result("kill-" + kill, "failed_write_attempts", timings.failedAttempts());
            checkProbes(report, survivors.get(0), acknowledged, "after kill " + kill);

            long restartedAt = System.nanoTime();
            cluster.restart(victim);
            cluster.awaitHealthy(START_TIMEOUT);
            placement = cluster.awaitPlacement(partitions, false, START_TIMEOUT);
            double rejoined = (System.nanoTime() - restartedAt) / 1e6;
            rejoinMillis.add(rejoined);
            report.result("kill-" + kill, "rejoined_after_restart_milliseconds", rejoined);
            report.result("kill-" + kill, "load_average_1_minute",
                ClusterBenchmark.loadAverageOneMinute());
            progress.step();
          }
        }
        checkProbes(report, cluster.member(0), acknowledged, "at the end");
      }
    }
    summary(report, "first_write_after_kill", firstWriteMillis);
    summary(report, "every_moved_partition_written", everyPartitionMillis);
    summary(report, "rejoined_after_restart", rejoinMillis);
    report.parameter("load_average_at_end", ClusterBenchmark.loadAverage());
    return report;
  }

  private static void summary(BenchReport report, String name, List<Double> millis) {
    if (millis.isEmpty()) {
      return;
    }
    List<Double> sorted = millis.stream().sorted().toList();
    report.result("failover", name + "_p50_milliseconds", YcsbBenchmark.median(sorted));
    report.result("failover", name + "_max_milliseconds", sorted.get(sorted.size() - 1));
  }

  /** One key per partition: the first {@code probe-<p>-<n>} the placement puts in partition p. */
  static Map<Integer, String> probeKeys(int partitions) {
    Map<Integer, String> keys = new HashMap<>();
    for (int n = 0; keys.size() < partitions; n++) {
      for (int p = 0; p < partitions; p++) {
        String key = "probe-" + p + "-" + n;
        if (!keys.containsKey(p)
            && EntityLocator.partitionOf(new EntityId(TYPE, key), partitions) == p) {
          keys.put(p, key);
        }
      }
    }
    return keys;
  }

  record Timings(double firstMillis, double everyMillis, long failedAttempts) {}

  /**
   * Writes the moved partitions' probes through the survivors from {@code probers} threads until
   * every one was written once; null if {@code timeout} passes first.
   */
  private Timings probe(List<String> moved, List<TroupeProcess> survivors,
      Map<String, String> acknowledged, long killedAt, Duration timeout, int kill)
      throws InterruptedException {
    Map<String, Long> firstSuccessNanos = new ConcurrentHashMap<>();
    java.util.concurrent.atomic.AtomicLong failed = new java.util.concurrent.atomic.AtomicLong();
    AtomicBoolean stop = new AtomicBoolean();
    long deadline = killedAt + timeout.toNanos();
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < probers; t++) {
      int prober = t;
      TroupeProcess through = survivors.get(t % survivors.size());
      threads.add(Thread.ofPlatform().name("failover-prober-" + t).start(() -> {
        long attempt = 0;
        try (HttpConnection connection = through.connect()) {
          while (!stop.get() && System.nanoTime() < deadline) {
            for (int i = 0; i < moved.size() && !stop.get(); i++) {
              String key = moved.get((i + prober) % moved.size());
              String value = "kill-" + kill + "-prober-" + prober + "-" + attempt++;
              try {
                HttpConnection.Response answer = write(connection, key, value);
                if (answer.status() == 200) {
                  // A later attempt's value may be what the entity holds if its answer was lost;
                  // the check below accepts any value this run wrote after the acknowledged one.
                  acknowledged.put(key, value);
                  firstSuccessNanos.putIfAbsent(key, System.nanoTime());
                  if (firstSuccessNanos.size() == moved.size()) {
                    stop.set(true);
                  }
                } else {
                  failed.incrementAndGet();
                }
              } catch (IOException refusedOrTimedOut) {
                failed.incrementAndGet();
              }
            }
            Thread.sleep(PROBE_PAUSE_MILLIS);
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }));
    }
    for (Thread thread : threads) {
      thread.join();
    }
    if (firstSuccessNanos.size() < moved.size() || moved.isEmpty()) {
      return moved.isEmpty() ? new Timings(0, 0, failed.get()) : null;
    }
    long first = firstSuccessNanos.values().stream().mapToLong(Long::longValue).min().orElseThrow();
    long every = firstSuccessNanos.values().stream().mapToLong(Long::longValue).max().orElseThrow();
    return new Timings((first - killedAt) / 1e6, (every - killedAt) / 1e6, failed.get());
  }

  /**
   * Reads every probe through {@code through}: each must hold the last value acknowledged to a
   * writer, or a value of a later attempt (a write whose answer was lost may have committed).
   */
  private static void checkProbes(BenchReport report, TroupeProcess through,
      Map<String, String> acknowledged, String when) throws IOException {
    try (HttpConnection connection = through.connect()) {
      for (Map.Entry<String, String> probe : acknowledged.entrySet()) {
        HttpConnection.Response answer = connection.get("/v1/entities/" + TYPE + "/"
            + probe.getKey());
        JsonNode state = answer.status() == 200 ? Json.parse(answer.body()).path("state") : null;
        String value = state == null ? null : state.path("value").asText(null);
        if (value == null || !(value.equals(probe.getValue()) || later(value, probe.getValue()))) {
          report.failure(when + ": probe " + probe.getKey() + " holds " + value
              + " (answer " + answer.status() + "), acknowledged " + probe.getValue());
        }
      }
    }
  }

  /** Whether {@code value} was written by the same prober after {@code acknowledged}. */
  static boolean later(String value, String acknowledged) {
    int valueDash = value.lastIndexOf('-');
    int acknowledgedDash = acknowledged.lastIndexOf('-');
    return valueDash > 0 && acknowledgedDash > 0
        && value.substring(0, valueDash).equals(acknowledged.substring(0, acknowledgedDash))
        && Long.parseLong(value.substring(valueDash + 1))
            > Long.parseLong(acknowledged.substring(acknowledgedDash + 1));
  }

  private static HttpConnection.Response write(HttpConnection connection, String key,
      String value) throws IOException {
    return connection.send("PATCH", "/v1/entities/" + TYPE + "/" + key,
        ("{\"value\":\"" + value + "\"}").getBytes(StandardCharsets.UTF_8));
  }
}
