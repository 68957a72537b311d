package dev.troupe.bench;

import dev.troupe.storage.postgres.PostgresInstance;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import me.tongfei.progressbar.ProgressBar;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code troupe bench ycsb}: YCSB (the real core library, in this JVM) over the entity REST API,
 * against a Troupe node and the same REST API over PostgreSQL SERIALIZABLE (the D-Thespis paper's
 * DB_1S_1DC baseline), optionally also against the bare HTTP ceiling.
 *
 * <p><b>Fair because</b> every target is a server process of its own started the same way (same
 * JVM, flags and HTTP stack), driven by the same YCSB binding and client threads in this JVM, one
 * target at a time, alternating A B A B for every round; each target is loaded with the same
 * records first. PostgreSQL runs with its defaults for durability (fsync and synchronous commit on,
 * as Troupe's default {@code sync}), shared buffers that hold the whole data set, and the
 * connection pool size that served it best on this machine ({@code reference.conf}).
 *
 * <p><b>Fair measurement</b> (issue 20): one unmeasured round of every target first, then {@code
 * --rounds} measured rounds (default 5) whose order rotates every round (A B, B A, ...); before
 * every measured round the harness waits for an idle machine ({@link IdleWait}); each target's
 * server CPU during its measured windows is reported per operation and per second, and every
 * ratio with the spread of its rounds. The PostgreSQL baseline runs at SERIALIZABLE ({@code
 * postgres}) and, as a control, at READ COMMITTED ({@code postgres-rc}: the same guarantees for
 * the one-statement operations YCSB makes), two server processes over the same PostgreSQL and
 * data.
 *
 * <p>Goals (the targets): Troupe at least 3x PostgreSQL on workloads A, B, C and F; on the
 * read-only workload C, Troupe at least 0.7 of the bare HTTP endpoint.
 */
@Command(
    name = "ycsb",
    mixinStandardHelpOptions = true,
    description = "YCSB over the REST API: Troupe vs the same API over PostgreSQL SERIALIZABLE "
        + "(and the bare HTTP ceiling), alternating rounds in one run; median ratios.",
    footer = {"", "Workloads: a, b, c, d, e, f (YCSB core; e scans through the listing) and 90-10,"
        + " 80-20, 65-35 (D-Thespis mixes)."})
final class YcsbBenchmark extends Benchmark {
  static final Goal POSTGRES_GOAL = Goal.atLeast(3.0);
  /** Issue 15: tokens and idempotency keys cost under 5% of throughput. */
  static final Goal SECURED_GOAL = Goal.atLeast(0.95);
  static final Goal BARE_GOAL = Goal.atLeast(0.7);
  static final Set<String> POSTGRES_GOAL_WORKLOADS = Set.of("a", "b", "c", "f");
  private static final Duration START_TIMEOUT = Duration.ofSeconds(120);

  /** The servers a run can measure. */
  /**
   * {@code authenticated}: Troupe with a bearer token required (and sent) on every request;
   * {@code secured}: the same and a fresh {@code Idempotency-Key} on every write. Compared with
   * {@code troupe} they price authentication, and authentication with idempotent retries.
   */
  enum Target {
    troupe, authenticated, secured, postgres,
    /** The PostgreSQL baseline at READ COMMITTED: the control run of issue 20. */
    postgres_rc,
    bare;

    /** Its name on the command line and in the report, e.g. {@code postgres-rc}. */
    @Override
    public String toString() {
      return name().replace('_', '-');
    }

    static Target named(String name) {
      return valueOf(name.strip().replace('-', '_'));
    }

    boolean isPostgres() {
      return this == postgres || this == postgres_rc;
    }
  }

  @Option(names = "--workload", split = ",", defaultValue = "a",
      description = "Workloads, comma-separated (default: ${DEFAULT-VALUE}).")
  List<String> workloadNames;

  @Option(names = "--records", defaultValue = "100000",
      description = "Records loaded into every target (default: ${DEFAULT-VALUE}).")
  long records;

  @Option(names = "--threads", defaultValue = "64",
      description = "YCSB client threads, one keep-alive connection each"
          + " (default: ${DEFAULT-VALUE}).")
  int threads;

  @Option(names = "--duration", defaultValue = "10",
      description = "Measured seconds per round and target (default: ${DEFAULT-VALUE}).")
  double durationSeconds;

  @Option(names = "--warmup-seconds", defaultValue = "3",
      description = "Unmeasured seconds at the start of every round (default: ${DEFAULT-VALUE}).")
  double warmupSeconds;

  @Option(names = "--rounds", defaultValue = "5",
      description = "Measured rounds per target and workload, the targets' order rotating every"
          + " round (default: ${DEFAULT-VALUE}).")
  int rounds;

  @Option(names = "--warmup-rounds", defaultValue = "1",
      description = "Unmeasured rounds of every target per workload first"
          + " (default: ${DEFAULT-VALUE}).")
  int warmupRounds;

  @Mixin IdleOptions idle;

  @Option(names = "--target", defaultValue = "both",
      description = "troupe, authenticated (troupe with a bearer token on every request),"
          + " secured (authenticated and an Idempotency-Key on every write), postgres"
          + " (SERIALIZABLE), postgres-rc (READ COMMITTED), bare, a comma-separated list of them,"
          + " both (troupe, postgres and postgres-rc) or all (those and bare)"
          + " (default: ${DEFAULT-VALUE}).")
  String target;

  @Option(names = "--request-distribution", paramLabel = "zipfian|uniform|latest|hotspot",
      description = "Overrides the workloads' key distribution (default: each workload's own).")
  String requestDistribution;

  @Option(names = "--postgres-pool-size", description = "Connections of the PostgreSQL baseline"
      + " (default: troupe.baseline.postgres.pool-size).")
  Integer postgresPoolSize;

  @Option(names = "--postgres-shared-buffers-mb", defaultValue = "1024",
      description = "PostgreSQL shared_buffers in MB (default: ${DEFAULT-VALUE}).")
  int sharedBuffersMegabytes;

  @Option(names = "--server-jvm-option", paramLabel = "FLAG",
      description = "Extra JVM flag for every target server process (repeatable), e.g."
          + " -XX:StartFlightRecording=filename=troupe.jfr to profile.")
  List<String> serverJvmOptions = new ArrayList<>();

  @Option(names = "--driver", defaultValue = "connection", paramLabel = "connection|java-client",
      description = "The YCSB binding's HTTP client: connection (RestEntityDb on its minimal"
          + " keep-alive connection, what the recorded figures use) or java-client"
          + " (ClientEntityDb on client-java, what an application on the Java client gets)"
          + " (default: ${DEFAULT-VALUE}).")
  String driver;

  @Mixin HtmlReportOption htmlReport;

  /** The YCSB binding of {@code --driver}. */
  java.util.function.Supplier<site.ycsb.DB> databases() {
    return switch (driver) {
      case "connection" -> RestEntityDb::new;
      case "java-client" -> ClientEntityDb::new;
      default -> throw new IllegalArgumentException(
          "--driver must be connection or java-client, was '" + driver + "'");
    };
  }

  List<Target> targets() {
    return switch (target.toLowerCase(java.util.Locale.ROOT)) {
      case "both" -> List.of(Target.troupe, Target.postgres, Target.postgres_rc);
      case "all" -> List.of(Target.troupe, Target.postgres, Target.postgres_rc, Target.bare);
      default -> {
        List<Target> named = new ArrayList<>();
        for (String name : target.toLowerCase(java.util.Locale.ROOT).split(",")) {
          try {
            Target each = Target.named(name);
            if (!named.contains(each)) {
              named.add(each);
            }
          } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--target must be troupe, authenticated, secured,"
                + " postgres, postgres-rc, bare"
                + " (or a comma-separated list of them), both or all, was '" + target + "'");
          }
        }
        yield named;
      }
    };
  }

  @Override
  BenchReport run() throws Exception {
    List<YcsbWorkloads.Workload> workloads = workloadNames.stream()
        .map(String::strip).map(YcsbWorkloads::named).toList();
    List<Target> targets = targets();
    if (records < 1 || threads < 1 || rounds < 1 || warmupRounds < 0) {
      throw new IllegalArgumentException("--records, --threads and --rounds must be positive"
          + " and --warmup-rounds not negative");
    }
    IdleWait idleWait = IdleWait.onThisMachine(idle.settings());
    Duration warmup = duration(warmupSeconds, "--warmup-seconds");
    Duration measurement = duration(durationSeconds, "--duration");
    BenchReport report = new BenchReport("ycsb",
        "YCSB over the entity REST API: Troupe vs PostgreSQL (SERIALIZABLE, and READ COMMITTED"
            + " as a control) behind the same API");
    report.parameter("workloads", workloads.stream().map(YcsbWorkloads.Workload::name).toList())
        .parameter("targets", targets.stream().map(Target::toString).toList())
        .parameter("records", records)
        .parameter("record_bytes", 1000)
        .parameter("threads", threads)
        .parameter("driver", driver)
        .parameter("request_distribution",
            requestDistribution == null ? "the workload's" : requestDistribution)
        .parameter("rounds", rounds)
        .parameter("unmeasured_rounds", warmupRounds)
        .parameter("order", "rotates every round")
        .parameter("warmup_seconds", warmup.toMillis() / 1000.0)
        .parameter("seconds_per_round", measurement.toMillis() / 1000.0)
        .parameter("machine", Machine.describe());
    idle.settings().describe(report);

    try (TemporaryDirectory work = TemporaryDirectory.create("ycsb");
        Servers servers = Servers.start(targets, work, postgresPoolSize,
            sharedBuffersMegabytes, serverJvmOptions, report)) {
      for (Target each : targets) {
        if (each == Target.bare) {
          continue; // nothing to load: the bare server answers a constant record
        }
        if (each == Target.postgres_rc && targets.contains(Target.postgres)) {
          continue; // the same PostgreSQL and table as the SERIALIZABLE baseline, loaded once
        }
        Properties properties = YcsbWorkloads.properties(workloads.get(0), records);
        servers.address(each, properties);
        long activationsBefore = servers.entityActivations(each);
        YcsbRunner.PhaseResult loaded;
        try (ProgressBar progress = ProgressBars.start("load " + each, records, "records", 1)) {
          loaded = YcsbRunner.load(properties, threads, databases(), progress,
              DiskMeter.MACHINE);
        }
        report.result("load/" + each, "records_per_second", loaded.throughputPerSecond());
        report.result("load/" + each, "seconds", loaded.seconds());
        diskFigures(loaded.disk(), loaded.transactions(), "record",
            (name, value) -> report.result("load/" + each, name, value));
        // What the loaded data takes on disk (space amplification), right after the load.
        report.result("load/" + each, "data_directory_bytes_per_record",
            (double) directoryBytes(servers.dataDirectory(each)) / Math.max(1,
                loaded.transactions()));
        if (activationsBefore >= 0) {
          report.result("load/" + each, "entity_activations_per_record",
              (double) (servers.entityActivations(each) - activationsBefore)
                  / Math.max(1, loaded.transactions()));
        }
        if (loaded.failureCount() > 0 || loaded.transactions() != records) {
          report.failure("loading " + each + " inserted " + loaded.transactions() + " of "
              + records + " records; failures: " + loaded.failures());
          return report;
        }
      }

      servers.reportResponseBytes(report);
      Map<String, Object> cpuMeasured = new LinkedHashMap<>();
      targets.forEach(each -> cpuMeasured.put(each.toString(), servers.cpu(each).describe()));
      report.parameter("cpu_measured", cpuMeasured);
      report.parameter("disk_measured", "the machine's storage devices (/sys/block)");
      long millisPerPhase = warmup.toMillis() + measurement.toMillis();
      for (YcsbWorkloads.Workload workload : workloads) {
        long retriesBefore = servers.postgresRetries();
        Map<Target, List<YcsbRunner.PhaseResult>> byTarget = new LinkedHashMap<>();
        Map<Target, Double> idleWaitSeconds = new LinkedHashMap<>();
        // Entity actors the Troupe side started during its measured rounds (entityActivations).
        Map<Target, Long> activations = new LinkedHashMap<>();
        targets.forEach(each -> {
          byTarget.put(each, new ArrayList<>());
          idleWaitSeconds.put(each, 0.0);
        });
        int allRounds = warmupRounds + rounds;
        try (ProgressBar progress = ProgressBars.start("workload " + workload.name(),
            millisPerPhase * allRounds * targets.size(), "s", 1000)) {
          for (int round = 0; round < allRounds; round++) {
            boolean measured = round >= warmupRounds;
            int measuredRound = round - warmupRounds + 1;
            List<Target> ordered = AlternatingComparison.order(targets, round);
            for (int place = 0; place < ordered.size(); place++) {
              Target each = ordered.get(place);
              IdleWait.Outcome idled = IdleWait.Outcome.SKIPPED;
              if (measured) {
                progress.setExtraMessage(each + " round " + measuredRound
                    + ": waiting for an idle machine");
                idled = idleWait.await();
              }
              progress.setExtraMessage(each
                  + (measured ? " round " + measuredRound : " warm-up round " + (round + 1))
                  + (Double.isNaN(idled.idlePercent()) ? ""
                      : String.format(java.util.Locale.ROOT, " (waited %.1f s, idle %.0f%%)",
                          idled.waitedSeconds(), idled.idlePercent())));
              Properties properties = YcsbWorkloads.properties(workload, records);
              if (requestDistribution != null) {
                properties.setProperty("requestdistribution", requestDistribution);
              }
              servers.address(each, properties);
              long activationsBefore = measured ? servers.entityActivations(each) : -1;
              YcsbRunner.PhaseResult result = YcsbRunner.transactions(properties, threads,
                  databases(), warmup, measurement, progress,
                  measured ? servers.cpu(each) : CpuMeter.NONE,
                  measured ? DiskMeter.MACHINE : DiskMeter.NONE);
              if (activationsBefore >= 0) {
                activations.merge(each, servers.entityActivations(each) - activationsBefore,
                    Long::sum);
              }
              if (measured) {
                byTarget.get(each).add(result);
                idleWaitSeconds.merge(each, idled.waitedSeconds(), Double::sum);
                Map<String, Object> row = AlternatingComparison.roundRow(measuredRound,
                    place + 1, workload.name() + "/" + each, idled,
                    result.throughputPerSecond(), result.cpuSeconds(), result.transactions(),
                    result.seconds());
                diskFigures(result.disk(), result.transactions(), "operation", row::put);
                report.round(row);
              } else if (result.failureCount() > 0) {
                report.failure(workload.name() + "/" + each + " warm-up round: "
                    + result.failureCount() + " operations failed: " + result.failures());
              }
            }
          }
        }
        summarize(report, workload, byTarget, workloads.size() == 1);
        idleWaitSeconds.forEach((each, seconds) -> report.result(
            workload.name() + "/" + each, "idle_wait_seconds", seconds));
        activations.forEach((each, started) -> {
          // The counter is read around a whole round, its warm-up seconds included, so the
          // round's operations are estimated at its measured rate over those seconds too.
          double operations = byTarget.get(each).stream()
              .mapToDouble(result -> result.throughputPerSecond() * millisPerPhase / 1000.0)
              .sum();
          report.result(workload.name() + "/" + each, "entity_activations_per_operation",
              started / Math.max(1.0, operations));
        });
        if (byTarget.containsKey(Target.postgres) || byTarget.containsKey(Target.postgres_rc)) {
          // Both baselines' retries: READ COMMITTED has no serialization failures, only deadlocks.
          report.result(workload.name() + "/postgres", "serialization_retries",
              servers.postgresRetries() - retriesBefore);
        }
      }
    }
    return report;
  }

  @Override
  void afterPrint(BenchReport report) {
    htmlReport.write(report, HtmlReport.Layout.YCSB);
  }

  /**
   * The bytes of the regular files under {@code root}. A file a running server deletes meanwhile
   * (RocksDB's compaction, PostgreSQL's WAL recycling) counts as gone.
   */
  static long directoryBytes(Path root) throws java.io.IOException {
    long[] bytes = {0};
    Files.walkFileTree(root, new java.nio.file.SimpleFileVisitor<>() {
      @Override
      public java.nio.file.FileVisitResult visitFile(Path file,
          java.nio.file.attribute.BasicFileAttributes attributes) {
        if (attributes.isRegularFile()) {
          bytes[0] += attributes.size();
        }
        return java.nio.file.FileVisitResult.CONTINUE;
      }

      @Override
      public java.nio.file.FileVisitResult visitFileFailed(Path file,
          java.io.IOException failure) throws java.io.IOException {
        if (failure instanceof java.nio.file.NoSuchFileException) {
          return java.nio.file.FileVisitResult.CONTINUE;
        }
        throw failure;
      }
    });
    return bytes[0];
  }

  /**
   * Gives {@code figure} {@code disk_read_bytes_per_UNIT} and {@code disk_written_bytes_per_UNIT}
   * (bytes the machine's storage devices read and wrote in the window, per operation or per loaded
   * record) unless unmeasured or nothing was counted.
   */
  static void diskFigures(DiskMeter.DiskBytes disk, long count, String unit,
      java.util.function.BiConsumer<String, Double> figure) {
    if (count > 0 && !Double.isNaN(disk.readBytes())) {
      figure.accept("disk_read_bytes_per_" + unit, disk.readBytes() / count);
      figure.accept("disk_written_bytes_per_" + unit, disk.writtenBytes() / count);
    }
  }

  /** Adds one workload's figures, ratios and failures to the report. */
  static void summarize(BenchReport report, YcsbWorkloads.Workload workload,
      Map<Target, List<YcsbRunner.PhaseResult>> byTarget, boolean onlyWorkload) {
    Map<Target, Double> medians = new LinkedHashMap<>();
    byTarget.forEach((target, results) -> {
      String system = workload.name() + "/" + target;
      List<Double> throughputs = results.stream()
          .map(YcsbRunner.PhaseResult::throughputPerSecond).sorted().toList();
      double median = median(throughputs);
      medians.put(target, median);
      report.result(system, "throughput_per_second", median);
      for (int round = 0; round < results.size(); round++) {
        report.result(system, "round_" + (round + 1) + "_per_second",
            results.get(round).throughputPerSecond());
      }
      double cpuSeconds = results.stream().mapToDouble(YcsbRunner.PhaseResult::cpuSeconds).sum();
      long transactions = results.stream().mapToLong(YcsbRunner.PhaseResult::transactions).sum();
      double seconds = results.stream().mapToDouble(YcsbRunner.PhaseResult::seconds).sum();
      AlternatingComparison.spreadAndCpu(report, system, Spread.of(throughputs),
          transactions == 0 ? Double.NaN : cpuSeconds * 1e6 / transactions,
          cpuSeconds / seconds, 0);
      diskFigures(results.stream().map(YcsbRunner.PhaseResult::disk)
          .reduce(new DiskMeter.DiskBytes(0, 0), DiskMeter.DiskBytes::plus), transactions,
          "operation", (name, value) -> report.result(system, name, value));
      Map<String, Histogram> latencies = new LinkedHashMap<>();
      Map<String, Long> failures = new LinkedHashMap<>();
      for (YcsbRunner.PhaseResult result : results) {
        result.latencyNanoseconds().forEach((operation, histogram) ->
            latencies.computeIfAbsent(operation, ignored -> new Histogram(3)).add(histogram));
        result.failures().forEach((what, count) -> failures.merge(what, count, Long::sum));
      }
      latencies.forEach((operation, histogram) -> {
        report.result(system, operation + "_operations", histogram.getTotalCount());
        report.result(system, operation + "_p50_milliseconds",
            histogram.getValueAtPercentile(50) / 1e6);
        report.result(system, operation + "_p95_milliseconds",
            histogram.getValueAtPercentile(95) / 1e6);
        report.result(system, operation + "_p99_milliseconds",
            histogram.getValueAtPercentile(99) / 1e6);
      });
      long failed = failures.values().stream().mapToLong(Long::longValue).sum();
      report.result(system, "failed_operations", failed);
      if (failed > 0) {
        report.failure(system + ": " + failed + " operations failed: " + failures);
      }
    });
    String suffix = onlyWorkload ? "" : " " + workload.name();
    for (Target postgres : List.of(Target.postgres, Target.postgres_rc)) {
      if (medians.containsKey(Target.troupe) && medians.containsKey(postgres)) {
        report.ratio("troupe/" + postgres + suffix, medians.get(Target.troupe),
            medians.get(postgres),
            postgres == Target.postgres && POSTGRES_GOAL_WORKLOADS.contains(workload.name())
                ? POSTGRES_GOAL : null,
            roundRatios(byTarget, Target.troupe, postgres));
      }
    }
    if (medians.containsKey(Target.troupe) && medians.containsKey(Target.bare)) {
      // Every workload's ratio to the ceiling is reported; only the read-only one has a goal.
      report.ratio("troupe/bare" + suffix, medians.get(Target.troupe), medians.get(Target.bare),
          workload.readOnly() ? BARE_GOAL : null, roundRatios(byTarget, Target.troupe,
              Target.bare));
    }
    for (Target secured : List.of(Target.authenticated, Target.secured)) {
      if (medians.containsKey(Target.troupe) && medians.containsKey(secured)) {
        report.ratio(secured + "/troupe" + suffix, medians.get(secured),
            medians.get(Target.troupe), SECURED_GOAL,
            roundRatios(byTarget, secured, Target.troupe));
      }
    }
  }

  /** The spread of the per-round ratios of two targets' throughputs. */
  private static Spread roundRatios(Map<Target, List<YcsbRunner.PhaseResult>> byTarget,
      Target numerator, Target denominator) {
    return Spread.ofRatios(
        byTarget.get(numerator).stream().map(YcsbRunner.PhaseResult::throughputPerSecond).toList(),
        byTarget.get(denominator).stream().map(YcsbRunner.PhaseResult::throughputPerSecond)
            .toList());
  }

  static double median(List<Double> sorted) {
    int middle = sorted.size() / 2;
    return sorted.size() % 2 == 1
        ? sorted.get(middle)
        : (sorted.get(middle - 1) + sorted.get(middle)) / 2;
  }

  /** The target servers of one run, each a process of its own; PostgreSQL itself too. */
  static final class Servers implements AutoCloseable {
    private final Map<Target, TroupeProcess> processes = new LinkedHashMap<>();
    /** The token the {@code authenticated} and {@code secured} targets require, minted per run. */
    private final SecuredAccess securedAccess = SecuredAccess.mint();
    private PostgresInstance postgres;
    /** Where the Troupe sides keep their data directories ({@link #troupeDataDirectory}). */
    private TemporaryDirectory work;

    static Servers start(List<Target> targets, TemporaryDirectory work, Integer postgresPoolSize,
        int sharedBuffersMegabytes, List<String> jvmFlags, BenchReport report)
        throws Exception {
      Servers servers = new Servers();
      servers.work = work;
      try {
        for (Target target : targets) {
          // Troupe's sides run with the fixed admission limit only, as SmallBank's REST side
          // (RestSmallBank.FIXED_ADMISSION): PostgreSQL's side sheds nothing, and with data
          // larger than the object cache the adaptive limits refused 27 % of 64 clients' cold
          // reads with 429 (issue 20, BENCHMARKS "larger than memory"), which YCSB counts as
          // failed operations inside the throughput. Shedding is bench overload's to measure.
          Path data = servers.troupeDataDirectory(target);
          TroupeProcess process = switch (target) {
            case troupe -> TroupeProcess.start(data,
                work.resolve("troupe.log"), jvmFlags, List.of(RestSmallBank.FIXED_ADMISSION));
            case authenticated, secured -> TroupeProcess.start(
                data, work.resolve(target + ".log"), jvmFlags,
                List.of(servers.securedAccess.settingOverride(), RestSmallBank.FIXED_ADMISSION));
            case postgres, postgres_rc -> {
              if (servers.postgres == null) {
                servers.postgres = PostgresInstance.start(sharedBuffersMegabytes);
              }
              List<String> command = new ArrayList<>(List.of("serve-postgres", "--jdbc-url",
                  servers.postgres.jdbcUrl(), "--set", "troupe.baseline.postgres.isolation="
                      + (target == Target.postgres ? "serializable" : "read-committed")));
              if (postgresPoolSize != null) {
                command.addAll(List.of("--set",
                    "troupe.baseline.postgres.pool-size=" + postgresPoolSize));
                report.parameter("postgres_pool_size", postgresPoolSize);
              }
              yield TroupeProcess.launch(command, work.resolve(target + "-baseline.log"),
                  jvmFlags);
            }
            case bare -> TroupeProcess.launch(List.of("serve-bare"), work.resolve("bare.log"),
                jvmFlags);
          };
          servers.processes.put(target, process);
          process.awaitHealthy(START_TIMEOUT);
          if (target == Target.authenticated || target == Target.secured) {
            servers.checkRefusesAnonymous(process);
          }
        }
        return servers;
      } catch (Exception | Error e) {
        servers.close();
        throw e;
      }
    }

    /**
     * Where {@code target} keeps its data: a Troupe server's data directory, PostgreSQL's (its
     * tables, indexes and WAL).
     */
    Path dataDirectory(Target target) {
      return switch (target) {
        case troupe, authenticated, secured -> troupeDataDirectory(target);
        case postgres, postgres_rc -> postgres.dataDirectory();
        case bare -> throw new IllegalArgumentException("the bare ceiling keeps no data");
      };
    }

    /** A Troupe side's data directory (unused for the other targets). */
    private Path troupeDataDirectory(Target target) {
      return work.resolve(target + "-data");
    }

    /** Fails the run unless the secured target really refuses a request without its token. */
    private void checkRefusesAnonymous(TroupeProcess process) throws java.io.IOException {
      try (HttpConnection anonymous = process.connect()) {
        HttpConnection.Response response = anonymous.get("/v1/entities/usertable/user1");
        if (response.status() != 401) {
          throw new BenchmarkException("the secured target answered a request without a token"
              + " with " + response.status() + " instead of 401: " + response.text());
        }
      }
    }

    /**
     * The CPU of what serves {@code target}: its server process, and for the PostgreSQL
     * baselines also PostgreSQL's postmaster and backends (the other baseline's backends are idle
     * while this one runs).
     */
    CpuMeter cpu(Target target) {
      CpuMeter server = CpuMeter.process(processes.get(target).pid(), "server process");
      return target.isPostgres()
          ? server.plus(CpuMeter.postgres(postgres.dataDirectory(), "PostgreSQL and its backends"))
          : server;
    }

    /**
     * Adds {@code read_response_bytes} per target: the size of one record's answer to a GET (the
     * first record YCSB loads), so that the bare ceiling's record can be compared with Troupe's;
     * and {@code write_response_bytes}: the size of the answer to a PATCH as the binding sends it
     * ({@code ?state=none}), which the bare ceiling must match too.
     */
    void reportResponseBytes(BenchReport report) throws java.io.IOException {
      String key = "user" + site.ycsb.Utils.hash(0);
      for (Map.Entry<Target, TroupeProcess> each : processes.entrySet()) {
        try (HttpConnection connection = each.getKey() == Target.authenticated
            || each.getKey() == Target.secured
            ? new HttpConnection("127.0.0.1", each.getValue().port(), securedAccess.token())
            : each.getValue().connect()) {
          HttpConnection.Response response = connection.get("/v1/entities/usertable/" + key);
          if (response.status() == 200) {
            report.result(each.getKey() + "-record", "read_response_bytes",
                response.body().length);
            // A write as the binding sends it (asking no state back), of field0's own value so
            // the record stays as loaded: the size of a write's answer.
            com.fasterxml.jackson.databind.JsonNode field0 =
                dev.troupe.model.Json.parse(response.body()).path("state").path("field0");
            com.fasterxml.jackson.databind.node.ObjectNode patch =
                dev.troupe.model.Json.NODES.objectNode();
            patch.set("field0", field0.isMissingNode() ? patch.textNode("x") : field0);
            HttpConnection.Response written = connection.send("PATCH", "/v1/entities/usertable/"
                + key + RestEntityDb.NO_STATE, dev.troupe.model.Json.writeBytes(patch));
            if (written.status() == 200) {
              report.result(each.getKey() + "-record", "write_response_bytes",
                  written.body().length);
            }
          }
        }
      }
    }

    /** Points YCSB's binding at {@code target}. */
    void address(Target target, Properties properties) {
      properties.setProperty(RestEntityDb.HOST_PROPERTY, "127.0.0.1");
      properties.setProperty(RestEntityDb.PORT_PROPERTY,
          Integer.toString(processes.get(target).port()));
      if (target == Target.authenticated || target == Target.secured) {
        properties.setProperty(RestEntityDb.TOKEN_PROPERTY, securedAccess.token());
      }
      if (target == Target.secured) {
        properties.setProperty(RestEntityDb.IDEMPOTENCY_KEYS_PROPERTY, "true");
      }
    }

    /**
     * Entity actors the {@code troupe} side has started so far (its {@code /metrics} counter
     * {@code troupe_entity_activations_total}); -1 for every other target. Each write to an
     * entity with no actor starts one, so per operation it tells how often writes reach entities
     * not written recently (docs/OPERATIONS.md, "Sizing a node's memory").
     */
    long entityActivations(Target target) throws java.io.IOException {
      return target == Target.troupe
          ? counter(processes.get(target), "troupe_entity_activations_total") : -1;
    }

    /**
     * Statements the PostgreSQL baseline has retried after serialization failures so far (from its
     * {@code /metrics}); 0 when it is not a target.
     */
    long postgresRetries() throws java.io.IOException {
      TroupeProcess baseline = processes.get(Target.postgres);
      return baseline == null ? 0 : counter(baseline, "postgres_serialization_retries_total");
    }

    /** The counter {@code name} of the server's {@code /metrics}; a missing one is an error. */
    private static long counter(TroupeProcess server, String name) throws java.io.IOException {
      String metrics = ClusterBenchmark.metricsOf(server);
      double value = PrometheusText.value(metrics, name, -1);
      if (value < 0) {
        throw new BenchmarkException("/metrics has no " + name + ": " + metrics);
      }
      return (long) value;
    }

    @Override
    public void close() {
      processes.values().forEach(TroupeProcess::close);
      if (postgres != null) {
        postgres.close();
      }
    }
  }
}
