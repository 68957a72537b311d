package dev.troupe.bench;

import dev.troupe.storage.postgres.PostgresInstance;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import me.tongfei.progressbar.ProgressBar;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code troupe bench system-of-record}: does the system-of-record exporter keep up? One Troupe
 * node runs {@code serve --system-of-record} against a PostgreSQL of the benchmark's own, YCSB
 * workload A (50% reads, 50% updates, zipfian) runs over the REST API, and {@code /metrics} is
 * sampled every {@code --sample-millis}: the journal records Troupe committed and the exporter
 * applied over the same interval (their ratio: 1 keeps up), and the exporter's lag gauge (the
 * age of the oldest committed record not yet in the tables) as a distribution.
 *
 * <p>Goals (issue 19): the exporter applies at least 0.95 of what Troupe commits in the same run,
 * and its lag p99 is at most 1 s.
 */
@Command(
    name = "system-of-record",
    mixinStandardHelpOptions = true,
    description = "Exporter throughput and lag under YCSB A with serve --system-of-record, vs"
        + " Troupe's committed rate in the same run.")
final class SystemOfRecordBenchmark extends Benchmark {
  static final Goal KEEPS_UP_GOAL = Goal.atLeast(0.95);
  static final Goal LAG_GOAL = Goal.atMost(1.0, "s");
  private static final Duration START_TIMEOUT = Duration.ofSeconds(120);

  @Option(names = "--records", defaultValue = "10000",
      description = "YCSB records loaded (default: ${DEFAULT-VALUE}).")
  long records;

  @Option(names = "--threads", defaultValue = "32",
      description = "YCSB client threads (default: ${DEFAULT-VALUE}).")
  int threads;

  @Option(names = "--duration", defaultValue = "20",
      description = "Measured seconds of workload A (default: ${DEFAULT-VALUE}).")
  double durationSeconds;

  @Option(names = "--sample-millis", defaultValue = "100",
      description = "How often /metrics is sampled (default: ${DEFAULT-VALUE}).")
  long sampleMillis;

  @Option(names = "--server-jvm-option", paramLabel = "FLAG",
      description = "Extra JVM flag for the server process (repeatable).")
  List<String> serverJvmOptions = new ArrayList<>();

  @Override
  BenchReport run() throws Exception {
    if (records < 1 || threads < 1 || durationSeconds <= 0 || sampleMillis < 1) {
      throw new IllegalArgumentException("--records, --threads, --duration and --sample-millis"
          + " must be positive");
    }
    BenchReport report = new BenchReport("system-of-record",
        "The PostgreSQL system-of-record exporter under YCSB A: applied vs committed, lag");
    report.parameter("records", records).parameter("threads", threads)
        .parameter("seconds", durationSeconds).parameter("sample_millis", sampleMillis)
        .parameter("machine", Machine.describe());
    YcsbWorkloads.Workload workload = YcsbWorkloads.named("a");
    try (TemporaryDirectory work = TemporaryDirectory.create("system-of-record");
        PostgresInstance postgres = PostgresInstance.start(256)) {
      postgres.createDatabase("reports");
      TroupeProcess server = TroupeProcess.serve(work.resolve("troupe-data"),
          work.resolve("troupe.log"), serverJvmOptions,
          List.of("--system-of-record", postgres.jdbcUrl("reports")), List.of());
      try {
        server.awaitHealthy(START_TIMEOUT);
        Properties properties = YcsbWorkloads.properties(workload, records);
        properties.setProperty(RestEntityDb.HOST_PROPERTY, "127.0.0.1");
        properties.setProperty(RestEntityDb.PORT_PROPERTY, Integer.toString(server.port()));
        try (ProgressBar progress = ProgressBars.start("load", records, "records", 1)) {
          YcsbRunner.PhaseResult loaded =
              YcsbRunner.load(properties, threads, RestEntityDb::new, progress);
          if (loaded.failureCount() > 0) {
            report.failure("loading failed: " + loaded.failures());
            return report;
          }
        }
        catchUp(server, Duration.ofSeconds(120));

        Histogram lagMillis = new Histogram(3);
        AtomicBoolean sampling = new AtomicBoolean(true);
        double[] before = sample(server);
        Thread sampler = Thread.ofPlatform().name("system-of-record-sampler").start(() -> {
          try (HttpConnection connection = server.connect()) {
            while (sampling.get()) {
              String metrics = new String(connection.get("/metrics").body(),
                  java.nio.charset.StandardCharsets.UTF_8);
              double lag = PrometheusText.value(metrics, "troupe_system_of_record_lag_seconds",
                  0);
              lagMillis.recordValue(Math.round(lag * 1000));
              Thread.sleep(sampleMillis);
            }
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        });
        long started = System.nanoTime();
        YcsbRunner.PhaseResult result;
        Duration measured = Duration.ofMillis(Math.round(durationSeconds * 1000));
        try (ProgressBar progress = ProgressBars.start("workload a, exporter on",
            measured.toMillis(), "s", 1000)) {
          result = YcsbRunner.transactions(properties, threads, RestEntityDb::new, Duration.ZERO,
              measured, progress);
        }
        double[] after = sample(server);
        double seconds = (System.nanoTime() - started) / 1e9;
        sampling.set(false);
        sampler.join();
        double caughtUpSeconds = catchUp(server, Duration.ofSeconds(120));

        double committed = (after[0] - before[0]) / seconds;
        double applied = (after[1] - before[1]) / seconds;
        report.result("troupe", "ycsb_operations_per_second", result.throughputPerSecond());
        report.result("troupe", "journal_records_committed_per_second", committed);
        report.result("exporter", "journal_records_applied_per_second", applied);
        report.result("exporter", "rows_applied_per_second", (after[2] - before[2]) / seconds);
        report.result("exporter", "batches_per_second", (after[3] - before[3]) / seconds);
        report.result("exporter", "lag_p50_seconds", lagMillis.getValueAtPercentile(50) / 1000.0);
        report.result("exporter", "lag_p99_seconds", lagMillis.getValueAtPercentile(99) / 1000.0);
        report.result("exporter", "lag_max_seconds", lagMillis.getMaxValue() / 1000.0);
        report.result("exporter", "lag_samples", lagMillis.getTotalCount());
        report.result("exporter", "seconds_to_catch_up_after_the_run", caughtUpSeconds);
        report.result("exporter", "errors", after[4]);
        report.ratio("applied/committed", applied, committed, KEEPS_UP_GOAL);
        report.goal("exporter lag p99 (s)", lagMillis.getValueAtPercentile(99) / 1000.0,
            LAG_GOAL);
        if (result.failureCount() > 0) {
          report.failure("YCSB operations failed: " + result.failures());
        }
      } finally {
        server.close();
      }
    }
    return report;
  }

  /** Commits, records applied, rows applied, batches, errors: from {@code /metrics}. */
  private static double[] sample(TroupeProcess server) throws java.io.IOException {
    try (HttpConnection connection = server.connect()) {
      String metrics = new String(connection.get("/metrics").body(),
          java.nio.charset.StandardCharsets.UTF_8);
      return new double[] {
        PrometheusText.value(metrics, "troupe_commits_total", 0),
        PrometheusText.value(metrics, "troupe_system_of_record_records_applied_total", 0),
        PrometheusText.value(metrics, "troupe_system_of_record_rows_applied_total", 0),
        PrometheusText.value(metrics, "troupe_system_of_record_batches_total", 0),
        PrometheusText.value(metrics, "troupe_system_of_record_errors_total", 0)};
    }
  }

  /**
   * Waits until the exporter has applied every journal record committed so far (its applied
   * count stops changing and its lag is 0); returns the seconds it took.
   */
  private static double catchUp(TroupeProcess server, Duration timeout) throws Exception {
    long began = System.nanoTime();
    long deadline = began + timeout.toNanos();
    double previous = -1;
    while (System.nanoTime() < deadline) {
      try (HttpConnection connection = server.connect()) {
        String metrics = new String(connection.get("/metrics").body(),
            java.nio.charset.StandardCharsets.UTF_8);
        double applied = PrometheusText.value(metrics,
            "troupe_system_of_record_records_applied_total", 0);
        double lag = PrometheusText.value(metrics, "troupe_system_of_record_lag_seconds", 0);
        if (PrometheusText.value(metrics, "troupe_system_of_record_stopped", 0) > 0) {
          throw new BenchmarkException("the exporter stopped; see " + server.logTail());
        }
        if (lag == 0 && applied == previous) {
          return (System.nanoTime() - began) / 1e9;
        }
        previous = applied;
      }
      Thread.sleep(200);
    }
    throw new BenchmarkException("the exporter did not catch up within " + timeout.toSeconds()
        + " s");
  }
}
