package dev.troupe.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import me.tongfei.progressbar.ProgressBar;
import org.HdrHistogram.Histogram;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.Styler;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code troupe bench growth}: how throughput and p99 grow with the data (issue 20): YCSB
 * workloads (A and C by default) against Troupe and PostgreSQL SERIALIZABLE behind the same REST
 * API at several record counts, drawn as one chart.
 *
 * <p>Per record count, both targets are fresh server processes on empty data (as {@code bench
 * ycsb} starts them, {@link YcsbBenchmark.Servers}), loaded with the same records; then per
 * workload one unmeasured round of each and {@code --rounds} measured rounds whose order rotates,
 * each after waiting for an idle machine. The figure per count is the median round's throughput
 * and the p99 of every measured read (and update) together. The ratio Troupe / PostgreSQL is
 * reported per count and workload. Memory is held equal across counts (the servers' own settings,
 * {@code --server-jvm-option}, {@code --postgres-shared-buffers-mb}), so the larger counts show
 * what data beyond the caches costs each side.
 */
@Command(
    name = "growth",
    mixinStandardHelpOptions = true,
    description = "YCSB throughput and p99 per record count, Troupe vs PostgreSQL SERIALIZABLE"
        + " behind the same REST API, fresh servers per count; one chart (--chart).")
final class GrowthBenchmark extends Benchmark {
  private static final List<YcsbBenchmark.Target> TARGETS =
      List.of(YcsbBenchmark.Target.troupe, YcsbBenchmark.Target.postgres);

  @Option(names = "--records", split = ",", defaultValue = "10000,100000,1000000,2000000",
      description = "Record counts, comma-separated (default: ${DEFAULT-VALUE}).")
  List<Long> recordCounts;

  @Option(names = "--workload", split = ",", defaultValue = "a,c",
      description = "Workloads, comma-separated (default: ${DEFAULT-VALUE}).")
  List<String> workloadNames;

  @Option(names = "--threads", defaultValue = "64",
      description = "YCSB client threads (default: ${DEFAULT-VALUE}).")
  int threads;

  @Option(names = "--duration", defaultValue = "10",
      description = "Measured seconds per round and target (default: ${DEFAULT-VALUE}).")
  double durationSeconds;

  @Option(names = "--warmup-seconds", defaultValue = "3",
      description = "Unmeasured seconds at the start of every round (default: ${DEFAULT-VALUE}).")
  double warmupSeconds;

  @Option(names = "--rounds", defaultValue = "3",
      description = "Measured rounds per target, workload and count (default: ${DEFAULT-VALUE}).")
  int rounds;

  @Mixin IdleOptions idle;

  @Option(names = "--postgres-shared-buffers-mb", defaultValue = "1024",
      description = "PostgreSQL shared_buffers in MB (default: ${DEFAULT-VALUE}).")
  int sharedBuffersMegabytes;

  @Option(names = "--server-jvm-option", paramLabel = "FLAG",
      description = "Extra JVM flag for every server process (repeatable), e.g."
          + " -Dtroupe.storage.cache-max-weight-bytes=268435456.")
  List<String> serverJvmOptions = new ArrayList<>();

  @Option(names = "--chart", paramLabel = "FILE", defaultValue = "growth.png",
      description = "The chart to write: throughput and p99 per record count (PNG; default:"
          + " ${DEFAULT-VALUE}).")
  Path chartFile;

  /** One point of the curve: a workload and target's figures at one record count. */
  private record Point(long records, double throughputPerSecond, double p99Milliseconds) {}

  @Override
  BenchReport run() throws Exception {
    List<YcsbWorkloads.Workload> workloads = workloadNames.stream()
        .map(String::strip).map(YcsbWorkloads::named).toList();
    if (recordCounts.isEmpty() || recordCounts.stream().anyMatch(count -> count < 1)
        || threads < 1 || rounds < 1) {
      throw new IllegalArgumentException("--records, --threads and --rounds must be positive");
    }
    IdleWait idleWait = IdleWait.onThisMachine(idle.settings());
    Duration warmup = duration(warmupSeconds, "--warmup-seconds");
    Duration measurement = duration(durationSeconds, "--duration");
    BenchReport report = new BenchReport("growth",
        "YCSB throughput and p99 per record count: Troupe vs PostgreSQL SERIALIZABLE behind the"
            + " same REST API");
    report.parameter("records", recordCounts)
        .parameter("workloads", workloads.stream().map(YcsbWorkloads.Workload::name).toList())
        .parameter("threads", threads)
        .parameter("rounds", rounds)
        .parameter("warmup_seconds", warmup.toMillis() / 1000.0)
        .parameter("seconds_per_round", measurement.toMillis() / 1000.0)
        .parameter("postgres_shared_buffers_mb", sharedBuffersMegabytes)
        .parameter("server_jvm_options", String.join(" ", serverJvmOptions))
        .parameter("machine", Machine.describe());
    idle.settings().describe(report);
    Map<String, List<Point>> curves = new LinkedHashMap<>();
    counts:
    for (long records : recordCounts) {
      try (TemporaryDirectory work = TemporaryDirectory.create("growth");
          YcsbBenchmark.Servers servers = YcsbBenchmark.Servers.start(TARGETS, work, null,
              sharedBuffersMegabytes, serverJvmOptions, report)) {
        for (YcsbBenchmark.Target target : TARGETS) {
          Properties properties = YcsbWorkloads.properties(workloads.get(0), records);
          servers.address(target, properties);
          YcsbRunner.PhaseResult loaded;
          try (ProgressBar progress = ProgressBars.start("load " + target + " " + records,
              records, "records", 1)) {
            loaded = YcsbRunner.load(properties, threads, RestEntityDb::new, progress);
          }
          report.result("load/" + target + "/" + records, "records_per_second",
              loaded.throughputPerSecond());
          if (loaded.failureCount() > 0 || loaded.transactions() != records) {
            // The counts measured so far still make a curve: draw it, and measure no larger count.
            report.failure("loading " + target + " with " + records + " records inserted "
                + loaded.transactions() + "; failures: " + loaded.failures());
            break counts;
          }
        }
        for (YcsbWorkloads.Workload workload : workloads) {
          measure(report, servers, workload, records, idleWait, warmup, measurement, curves);
        }
      }
    }
    if (!curves.isEmpty()) {
      drawChart(curves, workloads);
      report.parameter("chart", chartFile.toAbsolutePath().toString());
    }
    return report;
  }

  /** One workload at one record count: rounds alternating, figures, the ratio. */
  private void measure(BenchReport report, YcsbBenchmark.Servers servers,
      YcsbWorkloads.Workload workload, long records, IdleWait idleWait, Duration warmup,
      Duration measurement, Map<String, List<Point>> curves) throws Exception {
    Map<YcsbBenchmark.Target, List<YcsbRunner.PhaseResult>> byTarget = new LinkedHashMap<>();
    TARGETS.forEach(target -> byTarget.put(target, new ArrayList<>()));
    long millis = (warmup.toMillis() + measurement.toMillis()) * (rounds + 1) * TARGETS.size();
    try (ProgressBar progress = ProgressBars.start(
        "workload " + workload.name() + " " + records, millis, "s", 1000)) {
      for (int round = 0; round <= rounds; round++) {
        boolean measured = round > 0;
        for (YcsbBenchmark.Target target : AlternatingComparison.order(TARGETS, round)) {
          if (measured) {
            idleWait.await();
          }
          Properties properties = YcsbWorkloads.properties(workload, records);
          servers.address(target, properties);
          YcsbRunner.PhaseResult result = YcsbRunner.transactions(properties, threads,
              RestEntityDb::new, warmup, measurement, progress,
              measured ? servers.cpu(target) : CpuMeter.NONE);
          if (measured) {
            byTarget.get(target).add(result);
          }
        }
      }
    }
    Map<YcsbBenchmark.Target, Double> medians = new LinkedHashMap<>();
    byTarget.forEach((target, results) -> {
      String system = workload.name() + "/" + target + "/" + records;
      List<Double> throughputs = results.stream()
          .map(YcsbRunner.PhaseResult::throughputPerSecond).sorted().toList();
      double median = YcsbBenchmark.median(throughputs);
      medians.put(target, median);
      Histogram all = new Histogram(3);
      long failed = 0;
      for (YcsbRunner.PhaseResult result : results) {
        result.latencyNanoseconds().values().forEach(all::add);
        failed += result.failureCount();
      }
      double p99 = all.getValueAtPercentile(99) / 1e6;
      report.result(system, "throughput_per_second", median)
          .result(system, "p99_milliseconds", p99)
          .result(system, "p50_milliseconds", all.getValueAtPercentile(50) / 1e6)
          .result(system, "failed_operations", failed);
      if (failed > 0) {
        report.failure(system + ": " + failed + " operations failed");
      }
      curves.computeIfAbsent(workload.name() + " " + target, ignored -> new ArrayList<>())
          .add(new Point(records, median, p99));
    });
    report.ratio("troupe/postgres " + workload.name() + " " + records,
        medians.get(YcsbBenchmark.Target.troupe), medians.get(YcsbBenchmark.Target.postgres),
        null, Spread.ofRatios(
            byTarget.get(YcsbBenchmark.Target.troupe).stream()
                .map(YcsbRunner.PhaseResult::throughputPerSecond).toList(),
            byTarget.get(YcsbBenchmark.Target.postgres).stream()
                .map(YcsbRunner.PhaseResult::throughputPerSecond).toList()));
  }

  /** Throughput (left) and p99 (right) against the record count, both axes logarithmic. */
  private void drawChart(Map<String, List<Point>> curves, List<YcsbWorkloads.Workload> workloads)
      throws java.io.IOException {
    System.setProperty("java.awt.headless", "true");
    XYChart throughput = new XYChartBuilder().width(700).height(480)
        .title("Throughput by record count").xAxisTitle("records").yAxisTitle("operations/s")
        .build();
    XYChart latency = new XYChartBuilder().width(700).height(480)
        .title("p99 latency by record count").xAxisTitle("records").yAxisTitle("p99 ms").build();
    for (XYChart chart : List.of(throughput, latency)) {
      chart.getStyler().setXAxisLogarithmic(true).setYAxisLogarithmic(true)
          .setLegendPosition(Styler.LegendPosition.InsideSW).setMarkerSize(8);
    }
    curves.forEach((name, points) -> {
      List<Double> records = points.stream().map(point -> (double) point.records()).toList();
      throughput.addSeries(name, records,
          points.stream().map(Point::throughputPerSecond).toList());
      latency.addSeries(name, records, points.stream().map(Point::p99Milliseconds).toList());
    });
    Path parent = chartFile.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    String name = chartFile.toString().replaceFirst("\\.png$", "");
    BitmapEncoder.saveBitmap(List.of(throughput, latency), 1, 2, name,
        BitmapEncoder.BitmapFormat.PNG);
  }
}
