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
 * <p>Every partition has one probe entity, written once before the kills. During a failover a new
 * write attempt (a new value, a connection of its own, through a survivor) to each moved partition
 * not yet written starts every {@code --probe-interval-millis}, so a write stuck on the dead member
 * until its timeout delays no later one. After each failover every probe is read back through a
 * survivor and must hold a value it may hold (see {@link #problem}): an acknowledged write lost or
 * a refused one applied is a correctness failure.
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
  private static final String INITIAL_VALUE = "initial";

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

  @Option(names = "--probe-interval-millis", defaultValue = "250",
      description = "How often a new write attempt to each moved partition not yet written starts"
          + " during a failover: the resolution of the figures (default: ${DEFAULT-VALUE}).")
  long probeIntervalMillis;

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
    if (kills < 1 || nodes < 3 || partitions < nodes || probeIntervalMillis < 1) {
      throw new IllegalArgumentException("--kills and --probe-interval-millis must be positive,"
          + " --nodes at least 3 (a majority must survive) and --partitions at least --nodes");
    }
    BenchReport report = new BenchReport("failover", "kill -9 of a member of a " + nodes
        + "-node data centre: time to the first write to a moved partition");
    report.parameter("kills", kills).parameter("nodes", nodes).parameter("partitions", partitions)
        .parameter("failure_detector_pause_millis", failureDetectorPauseMillis)
        .parameter("stable_after_millis", stableAfterMillis)
        .parameter("start_partitions_interval_millis", startPartitionsIntervalMillis)
        .parameter("probe_interval_millis", probeIntervalMillis).parameter("seed", seed).parameter("heap", heap)
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
    List<Double> declaredDownAfterKillMillis = new ArrayList<>();
    List<Double> firstWriteAfterDownMillis = new ArrayList<>();

    try (TemporaryDirectory work = TemporaryDirectory.create("failover");
        PostgresInstance postgres = PostgresInstance.startForTroupe(128)) {
      postgres.createDatabase("failover");
      try (LocalCluster cluster = LocalCluster.start(nodes, work.resolve("cluster"),
          postgres.jdbcUrl("failover"), List.of("-Xmx" + heap), memberSettings)) {
        cluster.awaitHealthy(START_TIMEOUT);
        Map<Integer, Integer> placement = cluster.awaitPlacement(partitions, true, START_TIMEOUT);
        Map<String, Map<String, Outcome>> attempts = new ConcurrentHashMap<>();
        Map<String, String> baselines = new java.util.TreeMap<>();
        try (HttpConnection connection = cluster.member(0).connect()) {
          for (String key : probes.values()) {
            baselines.put(key, INITIAL_VALUE);
            HttpConnection.Response answer = write(connection, key, INITIAL_VALUE);
            if (answer.status() != 200) {
              report.failure("writing probe " + key + " answered " + answer.status() + ": "
                  + answer.text());
              return report;
            }
          }
        }
        try (ProgressBar progress = ProgressBars.start("failover", kills, "kills", 1)) {
          for (int kill = 1; kill <= kills; kill++) {
            // A member that hosts partitions (one just restarted may host none until sharding
            // rebalances): killing it moves some.
            List<Integer> hosting = placement.values().stream().distinct().sorted().toList();
            int victimNodeId = hosting.get(random.nextInt(hosting.size()));
            int victim = victimNodeId - 1;
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
            long killedAtEpochMillis = System.currentTimeMillis();
            cluster.kill(victim);
            Timings timings = probe(moved, survivors, attempts, killedAt,
                Duration.ofSeconds(timeoutSeconds), kill);
            if (timings == null) {
              report.failure("kill " + kill + " (member " + victimNodeId + "): no write to a moved"
                  + " partition succeeded within " + timeoutSeconds + " s" + cluster.logTails());
              return report;
            }
            firstWriteMillis.add(timings.firstMillis());
            everyPartitionMillis.add(timings.everyMillis());
            // "Declared down": the earliest a survivor recorded it (its metric), from the kill.
            double downedMillis = declaredDownMillis(survivors, killedAtEpochMillis);
            if (downedMillis >= 0) {
              declaredDownAfterKillMillis.add(downedMillis);
              firstWriteAfterDownMillis.add(timings.firstMillis() - downedMillis);
              report.result("kill-" + kill, "declared_down_after_kill_milliseconds",
                  downedMillis);
              report.result("kill-" + kill, "first_write_after_declared_down_milliseconds",
                  timings.firstMillis() - downedMillis);
            }
            report.result("kill-" + kill, "member_killed", victimNodeId);
            report.result("kill-" + kill, "partitions_moved", moved.size());
            report.result("kill-" + kill, "first_write_after_kill_milliseconds",
                timings.firstMillis());
            report.result("kill-" + kill, "every_moved_partition_written_milliseconds",
                timings.everyMillis());
            report.result("kill-" + kill, "failed_write_attempts", timings.failedAttempts());
            report.parameter("kill_" + kill + "_failed_attempts_by_answer", timings.failures());
            checkProbes(report, survivors.get(0), attempts, baselines, "after kill " + kill);
            attempts.clear(); // all answered and checked: the values read are the baselines

            long restartedAt = System.nanoTime();
            cluster.restart(victim);
            // Only the restarted member: a survivor's wait is bounded from its own start, which
            // a run of more than three kills is past (it then failed at once).
            cluster.member(victim).awaitHealthy(START_TIMEOUT);
            placement = cluster.awaitPlacement(partitions, false, START_TIMEOUT);
            double rejoined = (System.nanoTime() - restartedAt) / 1e6;
            rejoinMillis.add(rejoined);
            report.result("kill-" + kill, "rejoined_after_restart_milliseconds", rejoined);
            report.result("kill-" + kill, "load_average_1_minute",
                ClusterBenchmark.loadAverageOneMinute());
            progress.step();
          }
        }
        checkProbes(report, cluster.member(0), attempts, baselines, "at the end");
      }
    }
    summary(report, "first_write_after_kill", firstWriteMillis);
    summary(report, "every_moved_partition_written", everyPartitionMillis);
    summary(report, "declared_down_after_kill", declaredDownAfterKillMillis);
    summary(report, "first_write_after_declared_down", firstWriteAfterDownMillis);
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

  /**
   * Milliseconds from the kill to the earliest record of a member declared down among {@code
   * survivors} (their metric troupe_cluster_last_member_downed_timestamp_seconds, epoch seconds);
   * -1 when none recorded one since the kill.
   */
  private static double declaredDownMillis(List<TroupeProcess> survivors,
      long killedAtEpochMillis) {
    double earliest = Double.MAX_VALUE;
    for (TroupeProcess survivor : survivors) {
      try (HttpConnection connection = survivor.connect()) {
        HttpConnection.Response metrics = connection.get("/metrics");
        for (String line : metrics.text().lines().toList()) {
          if (line.startsWith("troupe_cluster_last_member_downed_timestamp_seconds ")) {
            double millis = Double.parseDouble(line.substring(line.indexOf(' ') + 1).trim())
                * 1000 - killedAtEpochMillis;
            if (millis >= 0) {
              earliest = Math.min(earliest, millis);
            }
          }
        }
      } catch (Exception unanswered) {
        // A survivor that does not answer its metrics adds nothing.
      }
    }
    return earliest == Double.MAX_VALUE ? -1 : earliest;
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

  /**
   * @param failures per answer ("503 not_owner") or exception, the failed attempts: what the
   *     clients met during the failover
   */
  record Timings(double firstMillis, double everyMillis, long failedAttempts,
      Map<String, Long> failures) {}

  /** What became of one write attempt. */
  enum Outcome { ACKNOWLEDGED, REFUSED, UNKNOWN }

  /**
   * From the kill on, starts a write attempt to every moved partition's probe not yet written
   * every {@code --probe-interval-millis}, each on a connection of its own to a survivor (in
   * turn), so that a write stuck on the dead member (answered only after its timeout) delays no
   * later attempt; stops starting them once every moved partition took a write, then waits for
   * the attempts in flight. Null if {@code timeout} passes first.
   */
  private Timings probe(List<String> moved, List<TroupeProcess> survivors,
      Map<String, Map<String, Outcome>> attempts, long killedAt, Duration timeout, int kill)
      throws InterruptedException {
    Map<String, Long> firstSuccessNanos = new ConcurrentHashMap<>();
    java.util.concurrent.atomic.AtomicLong failed = new java.util.concurrent.atomic.AtomicLong();
    Map<String, Long> failures = new ConcurrentHashMap<>();
    long deadline = killedAt + timeout.toNanos();
    List<Thread> inFlight = new ArrayList<>();
    long attempt = 0;
    while (firstSuccessNanos.size() < moved.size() && System.nanoTime() < deadline) {
      for (String key : moved) {
        if (firstSuccessNanos.containsKey(key)) {
          continue;
        }
        TroupeProcess through = survivors.get((int) (attempt % survivors.size()));
        String value = "kill-" + kill + "-attempt-" + attempt++;
        Map<String, Outcome> ofKey = attempts.computeIfAbsent(key, k -> new ConcurrentHashMap<>());
        ofKey.put(value, Outcome.UNKNOWN);
        inFlight.add(Thread.ofVirtual().start(() -> {
          try (HttpConnection connection = through.connect()) {
            HttpConnection.Response answer = write(connection, key, value);
            if (answer.status() == 200) {
              ofKey.put(value, Outcome.ACKNOWLEDGED);
              firstSuccessNanos.putIfAbsent(key, System.nanoTime());
              return;
            }
            failed.incrementAndGet();
            String code = answer.status() >= 400 && answer.status() < 600
                ? Json.parse(answer.body()).path("error").asText("") : "";
            failures.merge(answer.status() + " " + code, 1L, Long::sum);
            // Refusals that guarantee nothing was written; any other answer may have committed.
            if (code.equals("not_owner") || code.equals("overloaded")) {
              ofKey.put(value, Outcome.REFUSED);
            }
          } catch (IOException | RuntimeException noAnswer) {
            failed.incrementAndGet();
            failures.merge(noAnswer.getClass().getSimpleName(), 1L, Long::sum);
          }
        }));
      }
      Thread.sleep(probeIntervalMillis);
    }
    long settledAt = System.nanoTime();
    for (Thread thread : inFlight) {
      thread.join(); // each ends by its answer or the connection's read timeout
    }
    if (firstSuccessNanos.size() < moved.size() || moved.isEmpty()) {
      return moved.isEmpty() ? new Timings(0, 0, failed.get(), failures) : null;
    }
    long first = firstSuccessNanos.values().stream().mapToLong(Long::longValue).min().orElseThrow();
    long every = Math.min(settledAt,
        firstSuccessNanos.values().stream().mapToLong(Long::longValue).max().orElseThrow());
    return new Timings((first - killedAt) / 1e6, (every - killedAt) / 1e6, failed.get(),
        new java.util.TreeMap<>(failures));
  }

  /**
   * Reads every probe through {@code through} and checks it with {@link #problem}; the value read
   * becomes the probe's baseline for the next failover.
   */
  static void checkProbes(BenchReport report, TroupeProcess through,
      Map<String, Map<String, Outcome>> attempts, Map<String, String> baselines, String when)
      throws IOException {
    List<String> keys = List.copyOf(baselines.keySet());
    try (HttpConnection connection = through.connect()) {
      for (String key : keys) {
        HttpConnection.Response answer = connection.get("/v1/entities/" + TYPE + "/" + key);
        JsonNode state = answer.status() == 200 ? Json.parse(answer.body()).path("state") : null;
        String value = state == null ? null : state.path("value").asText(null);
        String problem = problem(value, baselines.get(key), attempts.getOrDefault(key, Map.of()));
        if (problem != null) {
          report.failure(when + ": probe " + key + " (answer " + answer.status() + "): "
              + problem);
        } else {
          baselines.put(key, value);
        }
      }
    }
  }

  /**
   * Why a probe cannot hold {@code value} after {@code attempts} (all answered or timed out) from
   * {@code baseline} (the value checked before them); null if it can. With no acknowledged
   * attempt it holds the baseline or an attempt's of unknown outcome; with one, an attempt's
   * value that was not refused (every attempt of a key started before its first acknowledged one
   * ended, so any of them may be the last), never the baseline (an acknowledged write lost) and
   * never a refused attempt's (a refusal that wrote).
   */
  static String problem(String value, String baseline, Map<String, Outcome> attempts) {
    boolean acknowledged = attempts.containsValue(Outcome.ACKNOWLEDGED);
    if (value == null) {
      return "no value";
    }
    if (value.equals(baseline)) {
      return acknowledged ? "holds " + value + ", its value before an acknowledged write" : null;
    }
    Outcome outcome = attempts.get(value);
    if (outcome == null) {
      return "holds " + value + ", which no attempt of this key wrote";
    }
    return outcome == Outcome.REFUSED ? "holds " + value + ", a write refused with not_owner"
        : null;
  }

  private static HttpConnection.Response write(HttpConnection connection, String key,
      String value) throws IOException {
    return connection.send("PATCH", "/v1/entities/" + TYPE + "/" + key,
        ("{\"value\":\"" + value + "\"}").getBytes(StandardCharsets.UTF_8));
  }
}
