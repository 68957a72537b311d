package dev.troupe.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import me.tongfei.progressbar.ProgressBar;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code troupe bench overload}: what a server does with about twice the load it can serve, with
 * request admission's adaptive per-class limits (load shedding) and without them (the baseline: one
 * fixed limit of {@code max-in-flight-requests}, 4,096, as before issue 14).
 *
 * <p>For each of the two, a fresh {@code troupe serve} process is started, {@code --entities}
 * entities are written, then a closed-loop load of {@code --clients} clients (reads and writes of
 * those entities, {@code --read-percent} reads) measures the server's capacity, and {@code
 * --overload-factor} times as many clients drive it for {@code --seconds}: twice the concurrency
 * that already saturates it. A refused client (429) pauses {@code --refused-pause-millis} before
 * its next request, as a client honouring back-pressure would (rather than the whole {@code
 * Retry-After}, which would simply take it out of the load). Meanwhile a probe asks {@code
 * GET /v1/health} ten times a second.
 *
 * <p>Figures: the status mix (200, 429, 503, other, and requests that got no answer at all: a
 * connect or read timeout), the throughput of admitted requests (any answer but 429), and the p50 and p99 latency of admitted requests and of the health probes;
 * ratios adaptive / fixed. The client is {@link HttpConnection}, one keep-alive connection per
 * client, in this JVM for both servers.
 */
@Command(
    name = "overload",
    mixinStandardHelpOptions = true,
    description = "About 2x the load a server can serve: adaptive request admission (load"
        + " shedding) vs the old fixed in-flight limit; status mix and admitted p50/p99.")
final class OverloadBenchmark extends Benchmark {
  /** The status recorded for a request that got no answer at all (connect or read timeout). */
  private static final int NO_ANSWER = 0;

  private static final Duration START_TIMEOUT = Duration.ofSeconds(120);
  private static final long HEALTH_PROBE_INTERVAL_MILLIS = 100;
  private static final String TYPE = "Load";

  @Option(names = "--clients", defaultValue = "256",
      description = "Concurrent clients of the capacity phase, one keep-alive connection each"
          + " (default: ${DEFAULT-VALUE}).")
  int clients;

  @Option(names = "--overload-factor", defaultValue = "2",
      description = "Clients of the overload phase, as a multiple of --clients"
          + " (default: ${DEFAULT-VALUE}).")
  double overloadFactor;

  @Option(names = "--seconds", defaultValue = "30",
      description = "Measured seconds of the overload phase (default: ${DEFAULT-VALUE}).")
  double seconds;

  @Option(names = "--capacity-seconds", defaultValue = "10",
      description = "Measured seconds of the capacity phase (default: ${DEFAULT-VALUE}).")
  double capacitySeconds;

  @Option(names = "--warmup-seconds", defaultValue = "5",
      description = "Unmeasured seconds at the start of each phase (default: ${DEFAULT-VALUE}).")
  double warmupSeconds;

  @Option(names = "--entities", defaultValue = "1000",
      description = "Entities read and written (default: ${DEFAULT-VALUE}).")
  int entities;

  @Option(names = "--read-percent", defaultValue = "50",
      description = "Share of reads, the rest writes (default: ${DEFAULT-VALUE}).")
  int readPercent;

  @Option(names = "--refused-pause-millis", defaultValue = "10",
      description = "Pause of a client after a 429 (default: ${DEFAULT-VALUE}).")
  long refusedPauseMillis;

  @Option(names = "--server-jvm-option", paramLabel = "FLAG",
      description = "An extra JVM flag for the server processes (repeatable).")
  List<String> serverJvmFlags = new ArrayList<>();

  /** The two servers compared. */
  private enum Variant {
    adaptive(true),
    fixed(false);

    final boolean adaptiveLimits;

    Variant(boolean adaptive) {
      this.adaptiveLimits = adaptive;
    }
  }

  /** What one phase saw: answers by status, admitted latency, health probes. */
  private record Phase(int clients, double seconds, long ok, long refused, long unavailable,
      long other, long noAnswer, Histogram admittedNanoseconds, Histogram healthNanoseconds,
      long healthFailures) {
    long admitted() {
      return ok + unavailable + other;
    }

    long answers() {
      return admitted() + refused;
    }
  }

  @Override
  BenchReport run() throws Exception {
    if (clients < 1 || overloadFactor < 1 || entities < 1 || readPercent < 0 || readPercent > 100
        || refusedPauseMillis < 0) {
      throw new IllegalArgumentException("need --clients >= 1, --overload-factor >= 1,"
          + " --entities >= 1, --read-percent 0..100, --refused-pause-millis >= 0");
    }
    int overloadClients = (int) Math.round(clients * overloadFactor);
    Duration warmup = duration(warmupSeconds, "--warmup-seconds");
    Duration capacityWindow = duration(capacitySeconds, "--capacity-seconds");
    Duration overloadWindow = duration(seconds, "--seconds");
    BenchReport report = new BenchReport("overload",
        "about 2x capacity: adaptive request admission vs the fixed in-flight limit");
    report.parameter("clients", clients).parameter("overload_clients", overloadClients)
        .parameter("seconds", seconds).parameter("capacity_seconds", capacitySeconds)
        .parameter("warmup_seconds", warmupSeconds).parameter("entities", entities)
        .parameter("read_percent", readPercent)
        .parameter("refused_pause_millis", refusedPauseMillis);
    long totalMillis = 2 * (2 * warmup.toMillis() + capacityWindow.toMillis()
        + overloadWindow.toMillis());
    try (TemporaryDirectory work = TemporaryDirectory.create("overload");
        ProgressBar progress = ProgressBars.start("overload", totalMillis, "s", 1000)) {
      for (Variant variant : Variant.values()) {
        try (TroupeProcess server = TroupeProcess.start(work.resolve(variant.name()),
            work.resolve(variant.name() + ".log"), serverJvmFlags,
            List.of("troupe.http.request-admission.adaptive=" + variant.adaptiveLimits))) {
          server.awaitHealthy(START_TIMEOUT);
          preload(server);
          progress.setExtraMessage(variant + " capacity");
          Phase capacity = drive(server, variant + "-capacity", clients, warmup, capacityWindow,
              progress);
          progress.setExtraMessage(variant + " overload");
          Phase overload = drive(server, variant + "-overload", overloadClients, warmup,
              overloadWindow, progress);
          record(report, variant + "_capacity", capacity);
          record(report, variant + "_overload", overload);
        }
      }
    }
    ratio(report, "p99_milliseconds");
    ratio(report, "p50_milliseconds");
    ratio(report, "admitted_per_second");
    ratio(report, "health_p99_milliseconds");
    return report;
  }

  private static void ratio(BenchReport report, String figure) {
    report.ratio("adaptive / fixed overload " + figure,
        report.result("adaptive_overload", figure), report.result("fixed_overload", figure), null);
  }

  private static void record(BenchReport report, String system, Phase phase) {
    report.result(system, "clients", phase.clients());
    report.result(system, "status_200", phase.ok());
    report.result(system, "status_429", phase.refused());
    report.result(system, "status_503", phase.unavailable());
    report.result(system, "status_other", phase.other());
    report.result(system, "no_answer", phase.noAnswer());
    report.result(system, "refused_percent", 100.0 * phase.refused() / phase.answers());
    report.result(system, "admitted_per_second", phase.admitted() / phase.seconds());
    report.result(system, "p50_milliseconds",
        phase.admittedNanoseconds().getValueAtPercentile(50) / 1e6);
    report.result(system, "p99_milliseconds",
        phase.admittedNanoseconds().getValueAtPercentile(99) / 1e6);
    report.result(system, "health_p99_milliseconds",
        phase.healthNanoseconds().getValueAtPercentile(99) / 1e6);
    report.result(system, "health_failures", phase.healthFailures());
  }

  /** Writes every entity once, so that reads find them. */
  private void preload(TroupeProcess server) throws Exception {
    int writers = Math.min(clients, entities);
    List<Thread> threads = new ArrayList<>();
    List<Exception> failures = java.util.Collections.synchronizedList(new ArrayList<>());
    for (int writer = 0; writer < writers; writer++) {
      int first = writer;
      threads.add(Thread.ofPlatform().name("overload-preload-" + writer).start(() -> {
        try (HttpConnection connection = server.connect()) {
          for (int entity = first; entity < entities; entity += writers) {
            HttpConnection.Response response;
            do {
              response = connection.put(keyPath(entity), body(0));
            } while (response.status() == 429);
            if (response.status() != 200) {
              throw new BenchmarkException("preload: PUT " + keyPath(entity) + " answered "
                  + response.status() + ": " + response.text());
            }
          }
        } catch (Exception e) {
          failures.add(e);
        }
      }));
    }
    for (Thread thread : threads) {
      thread.join();
    }
    if (!failures.isEmpty()) {
      throw failures.get(0);
    }
  }

  private static String keyPath(int entity) {
    return "/v1/entities/" + TYPE + "/e" + entity + "/keys/n";
  }

  private static String entityPath(int entity) {
    return "/v1/entities/" + TYPE + "/e" + entity;
  }

  private static byte[] body(long value) {
    return Long.toString(value).getBytes(StandardCharsets.US_ASCII);
  }

  /** A closed-loop phase of {@code workers} clients, with the health probe running throughout. */
  private Phase drive(TroupeProcess server, String name, int workers, Duration warmup,
      Duration window, ProgressBar progress) throws Exception {
    HttpConnection[] connections = new HttpConnection[workers];
    int[] lastStatus = new int[workers];
    long[] lastNanoseconds = new long[workers];
    long[][] statusCounts = new long[workers][5];
    Histogram[] admitted = new Histogram[workers];
    for (int worker = 0; worker < workers; worker++) {
      connections[worker] = server.connect();
      admitted[worker] = new Histogram(3);
    }
    ClosedLoopLoad.Operation operation = new ClosedLoopLoad.Operation() {
      @Override
      public void perform(int worker, long sequence) throws Exception {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        int entity = random.nextInt(entities);
        long start = System.nanoTime();
        HttpConnection.Response response;
        try {
          response = random.nextInt(100) < readPercent
              ? connections[worker].get(entityPath(entity))
              : connections[worker].put(keyPath(entity), body(sequence));
        } catch (IOException noAnswer) {
          // Past what the server accepts at all (a connect or read timeout): counted as "other",
          // as a client would meet it, not a reason to stop the run. The next request reconnects.
          lastStatus[worker] = NO_ANSWER;
          return;
        }
        lastNanoseconds[worker] = System.nanoTime() - start;
        lastStatus[worker] = response.status();
        if (response.status() == 429 && refusedPauseMillis > 0) {
          Thread.sleep(refusedPauseMillis);
        }
      }

      @Override
      public void counted(int worker) {
        int status = lastStatus[worker];
        statusCounts[worker][switch (status) {
          case 200 -> 0;
          case 429 -> 1;
          case 503 -> 2;
          case NO_ANSWER -> 4;
          default -> 3;
        }]++;
        if (status != 429 && status != NO_ANSWER) {
          admitted[worker].recordValue(lastNanoseconds[worker]);
        }
      }
    };
    HealthProbe probe = new HealthProbe(server, warmup);
    ClosedLoopLoad.Window measured;
    try {
      measured = ClosedLoopLoad.run(name, workers, warmup, window, operation, progress);
    } finally {
      probe.stop();
      for (HttpConnection connection : connections) {
        connection.close();
      }
    }
    long[] totals = new long[5];
    Histogram admittedTotal = new Histogram(3);
    for (int worker = 0; worker < workers; worker++) {
      for (int status = 0; status < 5; status++) {
        totals[status] += statusCounts[worker][status];
      }
      admittedTotal.add(admitted[worker]);
    }
    return new Phase(workers, measured.seconds(), totals[0], totals[1], totals[2], totals[3],
        totals[4], admittedTotal, probe.latencyNanoseconds, probe.failures);
  }

  /** Asks {@code GET /v1/health} every 100 ms after the warm-up until stopped. */
  private static final class HealthProbe {
    private final Histogram latencyNanoseconds = new Histogram(3);
    private final AtomicBoolean stopped = new AtomicBoolean();
    private final Thread thread;
    private long failures;

    HealthProbe(TroupeProcess server, Duration warmup) {
      long measureFrom = System.nanoTime() + warmup.toNanos();
      thread = Thread.ofPlatform().name("overload-health-probe").start(() -> {
        try (HttpConnection connection = server.connect()) {
          while (!stopped.get()) {
            long start = System.nanoTime();
            boolean healthy;
            try {
              healthy = connection.get("/v1/health").status() == 200;
            } catch (IOException e) {
              healthy = false;
            }
            if (start >= measureFrom) {
              latencyNanoseconds.recordValue(System.nanoTime() - start);
              if (!healthy) {
                failures++;
              }
            }
            Thread.sleep(HEALTH_PROBE_INTERVAL_MILLIS);
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
    }

    /** Stops probing; the figures are complete when this returns. */
    void stop() throws InterruptedException {
      stopped.set(true);
      thread.join();
    }
  }
}
