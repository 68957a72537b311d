package dev.troupe.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import me.tongfei.progressbar.ProgressBar;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code troupe bench memory}: a small heap and many more entities than it holds (issue 14, item
 * 5). The same server, with the same {@code -Xmx}, twice: once with the memory budget (the
 * defaults: actors, object cache and rendered states share a budget derived from the heap, shed
 * before the heap fills, refuse past its high-water mark), and once configured as the engine was
 * before the budget (the baseline: up to {@code --baseline-max-actors} actors whatever they weigh,
 * a budget of 90% of the heap and marks at 99%, so nothing sheds or refuses for memory).
 *
 * <p>Load: {@code --clients} closed-loop clients, each writing a {@code --value-bytes} register to
 * a new entity with every request, for {@code --seconds} (under async durability by default, so
 * that the clients and the heap, not the disk, set the pace). Figures per server: acknowledged
 * writes per second, the share of the run the JVM spent collecting garbage (from {@code /metrics}:
 * {@code troupe_jvm_gc_seconds_total} over {@code troupe_jvm_uptime_seconds}, deltas over the
 * measured window), refusals (429, 503), requests that got no answer, the most entity actors active
 * at once, and whether the server survived; ratios budget / baseline.
 */
@Command(
    name = "memory",
    mixinStandardHelpOptions = true,
    description = "A small heap and many more entities than it holds: the memory budget vs the"
        + " fixed actor limit of before; writes/s, GC share, refusals, actors.")
final class MemoryBenchmark extends Benchmark {
  private static final Duration START_TIMEOUT = Duration.ofSeconds(120);
  private static final long SAMPLE_INTERVAL_MILLIS = 1000;

  @Option(names = "--heap", defaultValue = "512m",
      description = "The servers' -Xmx (default: ${DEFAULT-VALUE}).")
  String heap;

  @Option(names = "--clients", defaultValue = "12",
      description = "Concurrent writers (default: ${DEFAULT-VALUE}).")
  int clients;

  @Option(names = "--seconds", defaultValue = "60",
      description = "Measured seconds per server (default: ${DEFAULT-VALUE}).")
  double seconds;

  @Option(names = "--value-bytes", defaultValue = "1000",
      description = "Bytes of each entity's one value (default: ${DEFAULT-VALUE}).")
  int valueBytes;

  @Option(names = "--durability", defaultValue = "async",
      description = "The servers' troupe.storage.durability (default: ${DEFAULT-VALUE}).")
  String durability;

  @Option(names = "--baseline-max-actors", defaultValue = "100000",
      description = "The baseline's fixed actor limit, the default before the budget"
          + " (default: ${DEFAULT-VALUE}).")
  int baselineMaxActors;

  @Option(names = "--server-jvm-option", paramLabel = "FLAG",
      description = "An extra JVM flag for both servers (repeatable), e.g. -XX:+UseParallelGC"
          + " instead of the launcher's G1.")
  List<String> serverJvmFlags = new ArrayList<>();

  /** The two servers compared, with the settings that make each. */
  private enum Variant {
    budget(List.of()),
    baseline(null);

    final List<String> settings;

    Variant(List<String> settings) {
      this.settings = settings;
    }
  }

  /** What one server did in the measured window. */
  private record Run(long acknowledged, long refused, long noAnswer, double seconds,
      double garbageCollectionShare, long mostActiveActors, boolean survived) {}

  @Override
  BenchReport run() throws Exception {
    if (clients < 1 || valueBytes < 1 || baselineMaxActors < 1) {
      throw new IllegalArgumentException(
          "need --clients >= 1, --value-bytes >= 1, --baseline-max-actors >= 1");
    }
    Duration window = duration(seconds, "--seconds");
    BenchReport report = new BenchReport("memory",
        "a small heap and many more entities than it holds: memory budget vs fixed actor limit");
    report.parameter("heap", heap).parameter("clients", clients).parameter("seconds", seconds)
        .parameter("value_bytes", valueBytes).parameter("durability", durability)
        .parameter("baseline_max_actors", baselineMaxActors)
        .parameter("server_jvm_options", String.join(" ", serverJvmFlags));
    try (TemporaryDirectory work = TemporaryDirectory.create("memory");
        ProgressBar progress = ProgressBars.start("memory", 2 * window.toMillis(), "s", 1000)) {
      for (Variant variant : Variant.values()) {
        List<String> settings = new ArrayList<>(List.of("troupe.storage.durability=" + durability));
        settings.addAll(variant.settings != null ? variant.settings : List.of(
            "troupe.entity.max-actors=" + baselineMaxActors,
            "troupe.memory.budget-heap-percent=90",
            "troupe.memory.actor-budget-percent=99",
            "troupe.memory.shed-above-old-generation-percent=99",
            "troupe.memory.refuse-above-old-generation-percent=99",
            "troupe.memory.resume-below-old-generation-percent=98"));
        progress.setExtraMessage(variant.name());
        List<String> jvmFlags = new ArrayList<>(List.of("-Xmx" + heap));
        jvmFlags.addAll(serverJvmFlags);
        try (TroupeProcess server = TroupeProcess.start(work.resolve(variant.name()),
            work.resolve(variant.name() + ".log"), jvmFlags, settings)) {
          server.awaitHealthy(START_TIMEOUT);
          Run run = drive(server, variant.name(), window, progress);
          record(report, variant.name(), run);
        }
      }
    }
    report.ratio("budget / baseline acknowledged writes per second",
        report.result("budget", "writes_per_second"),
        report.result("baseline", "writes_per_second"), null);
    report.ratio("budget / baseline share of time in GC",
        report.result("budget", "gc_share"), report.result("baseline", "gc_share"), null);
    return report;
  }

  private Run drive(TroupeProcess server, String name, Duration window, ProgressBar progress)
      throws Exception {
    HttpConnection[] connections = new HttpConnection[clients];
    int[] lastStatus = new int[clients];
    long[] acknowledged = new long[clients];
    long[] refused = new long[clients];
    long[] noAnswer = new long[clients];
    for (int client = 0; client < clients; client++) {
      connections[client] = server.connect();
    }
    AtomicLong nextEntity = new AtomicLong();
    AtomicLong mostActive = new AtomicLong();
    byte[] padding = "x".repeat(valueBytes).getBytes(StandardCharsets.US_ASCII);
    Map<String, Double> before;
    try (HttpConnection metrics = server.connect()) {
      before = metrics(metrics);
    }
    Thread sampler = Thread.ofPlatform().name(name + "-metrics").start(() -> {
      try (HttpConnection metrics = server.connect()) {
        while (!Thread.currentThread().isInterrupted()) {
          Double active = metrics(metrics).get("troupe_active_entities");
          if (active != null) {
            mostActive.accumulateAndGet(active.longValue(), Math::max);
          }
          Thread.sleep(SAMPLE_INTERVAL_MILLIS);
        }
      } catch (InterruptedException stopped) {
        // The window is over.
      } catch (IOException | RuntimeException unreachable) {
        // The server stopped answering: the run reports whether it survived.
      }
    });
    ClosedLoopLoad.Operation write = new ClosedLoopLoad.Operation() {
      @Override
      public void perform(int worker, long sequence) throws Exception {
        long entity = nextEntity.getAndIncrement();
        byte[] body = new byte[padding.length + 2];
        body[0] = '"';
        System.arraycopy(padding, 0, body, 1, padding.length);
        body[body.length - 1] = '"';
        try {
          lastStatus[worker] = connections[worker]
              .put("/v1/entities/Doc/d" + entity + "/keys/v", body).status();
        } catch (IOException timedOut) {
          lastStatus[worker] = 0;
        }
        if (lastStatus[worker] == 429 || lastStatus[worker] == 503) {
          Thread.sleep(100); // honour back-pressure, as a client would
        }
      }

      @Override
      public void counted(int worker) {
        switch (lastStatus[worker]) {
          case 200 -> acknowledged[worker]++;
          case 429, 503 -> refused[worker]++;
          case 0 -> noAnswer[worker]++;
          default -> throw new BenchmarkException(
              "a write was answered " + lastStatus[worker] + ": neither done nor refused");
        }
      }
    };
    ClosedLoopLoad.Window measured;
    try {
      measured = ClosedLoopLoad.run(name, clients, Duration.ZERO, window, write, progress);
    } finally {
      sampler.interrupt();
      sampler.join();
      for (HttpConnection connection : connections) {
        connection.close();
      }
    }
    Map<String, Double> after;
    boolean survived;
    try (HttpConnection metrics = server.connect()) {
      after = metrics(metrics);
      survived = true;
    } catch (IOException | RuntimeException gone) {
      after = before;
      survived = false;
    }
    double uptime = after.get("troupe_jvm_uptime_seconds") - before.get("troupe_jvm_uptime_seconds");
    double collecting = after.get("troupe_jvm_gc_seconds_total")
        - before.get("troupe_jvm_gc_seconds_total");
    return new Run(sum(acknowledged), sum(refused), sum(noAnswer), measured.seconds(),
        uptime > 0 ? collecting / uptime : Double.NaN, mostActive.get(), survived);
  }

  private static long sum(long[] values) {
    long total = 0;
    for (long value : values) {
      total += value;
    }
    return total;
  }

  private static void record(BenchReport report, String system, Run run) {
    report.result(system, "acknowledged", run.acknowledged())
        .result(system, "writes_per_second", run.acknowledged() / run.seconds())
        .result(system, "refused", run.refused())
        .result(system, "no_answer", run.noAnswer())
        .result(system, "gc_share", run.garbageCollectionShare())
        .result(system, "most_active_actors", run.mostActiveActors())
        .result(system, "survived", run.survived() ? 1 : 0);
  }

  /** {@code /metrics} as sample name (with labels) to value. */
  private static Map<String, Double> metrics(HttpConnection connection) throws IOException {
    HttpConnection.Response response = connection.get("/metrics");
    if (response.status() != 200) {
      throw new BenchmarkException("/metrics answered " + response.status());
    }
    Map<String, Double> values = new HashMap<>();
    for (String line : response.text().split("\n")) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      int space = line.lastIndexOf(' ');
      values.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
    }
    return values;
  }
}
