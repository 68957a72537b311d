package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Json;
import dev.troupe.server.proxy.LoopbackProxy;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import me.tongfei.progressbar.ProgressBar;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code troupe bench visibility}: how long after an update commits in one data centre it becomes
 * visible in another, over a link with a given round trip (issue 17; D-Thespis §5.7–5.8).
 *
 * <p><b>Set-up.</b> {@code --dcs} server processes on loopback ({@link DataCentreSet}), each
 * pulling each peer through a {@link LoopbackProxy} that adds RTT/2 in each direction. DC a runs a
 * 65 % read / 35 % write workload (uniform keys over {@code --records} records of one 100-byte
 * field, at a fixed total rate by {@code --clients} clients, or closed loop with {@code --rate
 * 0}) for {@code --seconds}, after {@code --warmup-seconds}.
 *
 * <p><b>What is measured.</b> Alongside the workload a probe writer at a writes a probe every
 * {@code 1/--probes-per-second} s: probe {@code n} sets key {@code k(n mod K)} of the entity
 * {@code VisibilityProbe/p} to {@code n}; a poller at b reads that entity in a loop ({@code
 * --poll-pause-millis} between reads) and notes when each probe number first appears. A probe's
 * visibility is the time the poller first saw it minus the time a acknowledged its write, minus
 * RTT/2 (the link's one-way delay, which no replication can beat). Both times come from this JVM's
 * monotonic clock. A probe overwritten at a before the poller saw it (its key was written again)
 * is counted at the moment the newer value was seen: an upper bound, counted separately; with
 * enough keys there are none. Every probe must appear at b: one that never does is a lost write,
 * and fails the run.
 *
 * <p><b>Bias.</b> The acknowledgement is taken as the start: the commit happened a little
 * before (the write's latency at a is reported); the poller's resolution is one read plus the
 * pause (about a millisecond); the poller's and the workload's requests share the machine with
 * the servers. Reported: p50, p95, p99, max of visibility over RTT/2 (HdrHistogram), a CDF plot
 * with {@code --report}, and the goal: p95 at most 50 ms over RTT/2. D-Thespis, for reference:
 * most updates within 300 ms over the RTT, p95 about 2.4 s, at an RTT of 135 ms.
 */
@Command(
    name = "visibility",
    mixinStandardHelpOptions = true,
    description = "Update visibility between data centres: a 65/35 read/write workload at DC a,"
        + " probes polled at DC b over a link of the given RTT. Goal: p95 of visibility - RTT/2"
        + " <= 50 ms.")
final class VisibilityBenchmark extends Benchmark {
  static final Goal GOAL = Goal.atMost(50, "ms");
  static final String D_THESPIS = "D-Thespis (2 DCs, RTT 135 ms): most updates within 300 ms"
      + " over the RTT, p95 about 2.4 s";
  private static final String PROBE_PATH = "/v1/entities/VisibilityProbe/p";
  private static final String RECORD_TYPE = "usertable";
  private static final int FIELD_BYTES = 100;
  private static final int LOAD_THREADS = 8;
  private static final Duration DRAIN_TIMEOUT = Duration.ofSeconds(60);
  private static final int LINK_PINGS = 20;

  @Option(names = "--dcs", defaultValue = "2",
      description = "Data centres, one server process each (default: ${DEFAULT-VALUE}).")
  int dataCentres;

  @Option(names = "--rtt-millis", defaultValue = "100",
      description = "Round trip between two DCs; each link adds half in each direction"
          + " (default: ${DEFAULT-VALUE}).")
  long rttMillis;

  @Option(names = "--seconds", defaultValue = "30",
      description = "Measured seconds of workload (default: ${DEFAULT-VALUE}).")
  double seconds;

  @Option(names = "--warmup-seconds", defaultValue = "5",
      description = "Unmeasured seconds of workload first (default: ${DEFAULT-VALUE}).")
  double warmupSeconds;

  @Option(names = "--clients", defaultValue = "16",
      description = "Concurrent clients at DC a, one connection each (default: ${DEFAULT-VALUE}).")
  int clients;

  @Option(names = "--rate", defaultValue = "500",
      description = "Workload operations per second at DC a, all clients together; 0: closed"
          + " loop, as fast as answered (default: ${DEFAULT-VALUE}).")
  double rate;

  @Option(names = "--read-proportion", defaultValue = "0.65",
      description = "Share of reads in the workload; the rest are writes"
          + " (default: ${DEFAULT-VALUE}).")
  double readProportion;

  @Option(names = "--records", defaultValue = "1000",
      description = "Records the workload reads and writes (default: ${DEFAULT-VALUE}).")
  int records;

  @Option(names = "--probes-per-second", defaultValue = "50",
      description = "Probe writes per second at DC a (default: ${DEFAULT-VALUE}).")
  double probesPerSecond;

  @Option(names = "--probe-keys", defaultValue = "64",
      description = "Keys the probes rotate over: a key is rewritten every probe-keys probes"
          + " (default: ${DEFAULT-VALUE}).")
  int probeKeys;

  @Option(names = "--poll-pause-millis", defaultValue = "1",
      description = "Pause between two reads of the probes at DC b (default: ${DEFAULT-VALUE}).")
  long pollPauseMillis;

  @Option(names = "--set", paramLabel = "PATH=VALUE",
      description = "A setting for every DC (repeatable), e.g."
          + " troupe.replication.pull-interval-millis=10.")
  List<String> settings = new ArrayList<>();

  @Option(names = "--server-jvm-option", paramLabel = "FLAG",
      description = "Extra JVM flag for every server process (repeatable).")
  List<String> serverJvmOptions = new ArrayList<>();

  @Mixin HtmlReportOption htmlReport;

  /** Probe number -> nanoTime of its acknowledgement at a / send / first sight at b. */
  private final Map<Long, Long> acknowledged = new ConcurrentHashMap<>();
  private final Map<Long, Long> sent = new ConcurrentHashMap<>();
  private final Map<Long, Long> seen = new ConcurrentHashMap<>();
  /** Probes seen only through a newer value of their key. */
  private final Map<Long, Boolean> overwritten = new ConcurrentHashMap<>();
  private double[] sortedVisibilityMillis = new double[0];

  @Override
  BenchReport run() throws Exception {
    if (dataCentres < 2 || clients < 1 || records < 1 || probeKeys < 1 || probesPerSecond <= 0
        || rttMillis < 0 || rate < 0 || readProportion < 0 || readProportion > 1) {
      throw new IllegalArgumentException("need --dcs >= 2, positive --clients, --records,"
          + " --probe-keys and --probes-per-second, a non-negative --rtt-millis and --rate, and"
          + " --read-proportion within 0..1");
    }
    Duration warmup = duration(warmupSeconds, "--warmup-seconds");
    Duration measurement = duration(seconds, "--seconds");
    long oneWayMillis = rttMillis / 2;
    BenchReport report = new BenchReport("visibility",
        "update visibility at DC b of writes at DC a, minus RTT/2");
    report.parameter("data_centres", dataCentres)
        .parameter("rtt_milliseconds", rttMillis)
        .parameter("seconds", measurement.toMillis() / 1000.0)
        .parameter("warmup_seconds", warmup.toMillis() / 1000.0)
        .parameter("clients", clients)
        .parameter("rate_per_second", rate == 0 ? "closed loop" : rate)
        .parameter("read_proportion", readProportion)
        .parameter("records", records)
        .parameter("probes_per_second", probesPerSecond)
        .parameter("probe_keys", probeKeys)
        .parameter("poll_pause_milliseconds", pollPauseMillis)
        .parameter("settings", settings)
        .parameter("reference", D_THESPIS)
        .parameter("machine", Machine.describe())
        .parameter("load_average_at_start", loadAverage());
    try (TemporaryDirectory work = TemporaryDirectory.create("visibility");
        DataCentreSet dcs = DataCentreSet.start(work, dataCentres, oneWayMillis, settings,
            serverJvmOptions, 0)) {
      TroupeProcess origin = dcs.process("a");
      TroupeProcess observer = dcs.process("b");
      report.result("link", "measured_rtt_milliseconds", measureRtt(observer, oneWayMillis));
      load(origin);
      dcs.awaitApplied("a", DRAIN_TIMEOUT);

      AtomicBoolean polling = new AtomicBoolean(true);
      AtomicReference<Exception> pollFailure = new AtomicReference<>();
      long[] polls = new long[1];
      Thread poller = Thread.ofPlatform().name("visibility-poller").start(() -> {
        try {
          polls[0] = poll(observer, polling);
        } catch (Exception e) {
          pollFailure.set(e);
        }
      });
      Workload workload;
      long pullsBefore = pulls(dcs, "b", "a");
      long pullsAfter;
      try {
        workload = runWorkload(origin, warmup, measurement);
        pullsAfter = pulls(dcs, "b", "a");
        awaitProbes(pollFailure);
      } finally {
        polling.set(false);
        poller.join();
      }
      if (pollFailure.get() != null) {
        throw new BenchmarkException("the poller at b failed: " + pollFailure.get(),
            pollFailure.get());
      }
      report.parameter("load_average_at_end", loadAverage());
      summarize(report, workload, oneWayMillis, polls[0]);
      // How often b pulled a (each pull a round trip): the replication's own cadence.
      report.result("link", "pulls_b_from_a_per_second",
          (pullsAfter - pullsBefore) / ((workload.windowEndNanos() - workload.windowStartNanos()
              + warmup.toNanos()) / 1e9));
    }
    return report;
  }

  @Override
  void afterPrint(BenchReport report) {
    if (htmlReport.directory != null) {
      HtmlReport.writeCdf(htmlReport.directory, report.toJson(),
          "Update visibility between data centres (RTT " + rttMillis + " ms)",
          "visibility at b minus RTT/2 (milliseconds)",
          Map.of("probes", sortedVisibilityMillis));
      System.out.println("report written to "
          + htmlReport.directory.resolve("index.html").toAbsolutePath());
    }
  }

  /** Pulls {@code puller} made of {@code peer}'s log so far (its replication status). */
  private static long pulls(DataCentreSet dcs, String puller, String peer) throws IOException {
    for (JsonNode link : dcs.status(puller).path("peers")) {
      if (link.path("name").asText().equals(peer)) {
        return link.path("link").path("pulls").asLong();
      }
    }
    throw new BenchmarkException(puller + " reports no link to " + peer);
  }

  /** The 1-minute load average of the machine (other processes included). */
  static double loadAverage() {
    return java.lang.management.ManagementFactory.getOperatingSystemMXBean()
        .getSystemLoadAverage();
  }

  /** Median round trip of {@code GET /v1/health} through a proxy like a DC link's. */
  private static double measureRtt(TroupeProcess server, long oneWayMillis) throws IOException {
    try (LoopbackProxy proxy = LoopbackProxy.start(oneWayMillis, server.port());
        HttpConnection connection = new HttpConnection("127.0.0.1", proxy.port())) {
      double[] millis = new double[LINK_PINGS];
      for (int ping = 0; ping < LINK_PINGS; ping++) {
        long start = System.nanoTime();
        if (connection.get("/v1/health").status() != 200) {
          throw new BenchmarkException("GET /v1/health through the proxy did not answer 200");
        }
        millis[ping] = (System.nanoTime() - start) / 1e6;
      }
      Arrays.sort(millis);
      // The first request also opens the connection (a round trip more): the median skips it.
      return millis[LINK_PINGS / 2];
    }
  }

  private void load(TroupeProcess origin) throws Exception {
    AtomicReference<Exception> failure = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    try (ProgressBar progress = ProgressBars.start("load a", records, "records", 1)) {
      for (int thread = 0; thread < LOAD_THREADS; thread++) {
        int first = thread;
        threads.add(Thread.ofPlatform().start(() -> {
          try (HttpConnection connection = origin.connect()) {
            for (int record = first; record < records; record += LOAD_THREADS) {
              write(connection, record);
              progress.step();
            }
          } catch (Exception e) {
            failure.compareAndSet(null, e);
          }
        }));
      }
      for (Thread thread : threads) {
        thread.join();
      }
    }
    if (failure.get() != null) {
      throw new BenchmarkException("loading the records failed: " + failure.get(),
          failure.get());
    }
  }

  private static void write(HttpConnection connection, int record) throws IOException {
    byte[] body = ("{\"field0\": \"" + randomText() + "\"}").getBytes(StandardCharsets.UTF_8);
    HttpConnection.Response response =
        connection.send("PATCH", "/v1/entities/" + RECORD_TYPE + "/user" + record, body);
    if (response.status() != 200) {
      throw new BenchmarkException("a write at a answered " + response.status() + ": "
          + response.text());
    }
  }

  private static void read(HttpConnection connection, int record) throws IOException {
    int status = connection.get("/v1/entities/" + RECORD_TYPE + "/user" + record).status();
    if (status != 200) {
      throw new BenchmarkException("a read at a answered " + status);
    }
  }

  private static String randomText() {
    char[] text = new char[FIELD_BYTES];
    ThreadLocalRandom random = ThreadLocalRandom.current();
    for (int i = 0; i < text.length; i++) {
      text[i] = (char) ('a' + random.nextInt(26));
    }
    return new String(text);
  }

  /** What the workload at a did in the measurement window. */
  private record Workload(long reads, long writes, double seconds, Histogram readNanos,
      Histogram writeNanos, Histogram probeWriteNanos, long windowStartNanos,
      long windowEndNanos) {}

  /** Runs the clients and the probe writer at a for warm-up plus measurement. */
  private Workload runWorkload(TroupeProcess origin, Duration warmup, Duration measurement)
      throws Exception {
    long start = System.nanoTime();
    long windowStart = start + warmup.toNanos();
    long windowEnd = windowStart + measurement.toNanos();
    AtomicReference<Exception> failure = new AtomicReference<>();
    List<Histogram> readHistograms = new ArrayList<>();
    List<Histogram> writeHistograms = new ArrayList<>();
    long[][] counts = new long[clients][2];
    List<Thread> threads = new ArrayList<>();
    long clientIntervalNanos = rate == 0 ? 0 : Math.round(clients * 1e9 / rate);
    for (int client = 0; client < clients; client++) {
      Histogram reads = new Histogram(3);
      Histogram writes = new Histogram(3);
      readHistograms.add(reads);
      writeHistograms.add(writes);
      int index = client;
      threads.add(Thread.ofPlatform().name("visibility-client-" + client).start(() -> {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        // Clients start spread over one interval, so the rate is even.
        long next = start + (clientIntervalNanos * index) / clients;
        try (HttpConnection connection = origin.connect()) {
          while (failure.get() == null) {
            if (clientIntervalNanos > 0) {
              sleepUntil(next);
              next += clientIntervalNanos;
            }
            long operationStart = System.nanoTime();
            if (operationStart >= windowEnd) {
              return;
            }
            boolean isRead = random.nextDouble() < readProportion;
            if (isRead) {
              read(connection, random.nextInt(records));
            } else {
              write(connection, random.nextInt(records));
            }
            long operationEnd = System.nanoTime();
            if (operationStart >= windowStart && operationEnd <= windowEnd) {
              (isRead ? reads : writes).recordValue(operationEnd - operationStart);
              counts[index][isRead ? 0 : 1]++;
            }
          }
        } catch (Exception e) {
          failure.compareAndSet(null, e);
        }
      }));
    }
    Histogram probeWrites = new Histogram(3);
    threads.add(Thread.ofPlatform().name("visibility-probe-writer").start(() -> {
      long intervalNanos = Math.round(1e9 / probesPerSecond);
      long next = start;
      long number = 0;
      try (HttpConnection connection = origin.connect()) {
        while (failure.get() == null) {
          sleepUntil(next);
          next += intervalNanos;
          long sendNanos = System.nanoTime();
          if (sendNanos >= windowEnd) {
            return;
          }
          sent.put(number, sendNanos);
          HttpConnection.Response response = connection.put(
              PROBE_PATH + "/keys/k" + (number % probeKeys),
              Long.toString(number).getBytes(StandardCharsets.UTF_8));
          long acknowledgedNanos = System.nanoTime();
          if (response.status() != 200) {
            throw new BenchmarkException("a probe write at a answered " + response.status()
                + ": " + response.text());
          }
          acknowledged.put(number, acknowledgedNanos);
          if (sendNanos >= windowStart) {
            probeWrites.recordValue(acknowledgedNanos - sendNanos);
          }
          number++;
        }
      } catch (Exception e) {
        failure.compareAndSet(null, e);
      }
    }));
    try (ProgressBar progress = ProgressBars.start("visibility",
        (windowEnd - start) / 1_000_000, "s", 1000)) {
      long reported = 0;
      for (Thread thread : threads) {
        while (thread.isAlive()) {
          thread.join(200);
          long elapsed = Math.min((System.nanoTime() - start) / 1_000_000,
              (windowEnd - start) / 1_000_000);
          progress.stepBy(elapsed - reported);
          reported = elapsed;
        }
      }
    }
    if (failure.get() != null) {
      throw new BenchmarkException("the workload at a failed: " + failure.get(), failure.get());
    }
    Histogram reads = new Histogram(3);
    Histogram writes = new Histogram(3);
    readHistograms.forEach(reads::add);
    writeHistograms.forEach(writes::add);
    long readCount = 0;
    long writeCount = 0;
    for (long[] count : counts) {
      readCount += count[0];
      writeCount += count[1];
    }
    return new Workload(readCount, writeCount, measurement.toNanos() / 1e9, reads, writes,
        probeWrites, windowStart, windowEnd);
  }

  private static void sleepUntil(long nanoTime) throws InterruptedException {
    long wait = nanoTime - System.nanoTime();
    if (wait > 0) {
      Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
    }
  }

  /**
   * Reads the probe entity at b until {@code polling} turns false, noting when each probe number
   * first appears; returns the number of reads.
   */
  private long poll(TroupeProcess observer, AtomicBoolean polling) throws Exception {
    long[] lastSeen = new long[probeKeys];
    for (int key = 0; key < probeKeys; key++) {
      lastSeen[key] = key - probeKeys; // none yet: the key's first probe is number `key`
    }
    long reads = 0;
    try (HttpConnection connection = observer.connect()) {
      while (polling.get()) {
        HttpConnection.Response response = connection.get(PROBE_PATH);
        long now = System.nanoTime();
        reads++;
        if (response.status() == 200) {
          JsonNode state = Json.parse(response.body()).path("state");
          for (int key = 0; key < probeKeys; key++) {
            JsonNode value = state.get("k" + key);
            if (value == null || value.asLong() <= lastSeen[key]) {
              continue;
            }
            long newest = value.asLong();
            for (long number = lastSeen[key] + probeKeys; number < newest;
                number += probeKeys) {
              seen.putIfAbsent(number, now);
              overwritten.put(number, true);
            }
            seen.putIfAbsent(newest, now);
            lastSeen[key] = newest;
          }
        } else if (response.status() != 404) {
          throw new BenchmarkException("reading the probes at b answered " + response.status()
              + ": " + response.text());
        }
        if (pollPauseMillis > 0) {
          Thread.sleep(pollPauseMillis);
        }
      }
    }
    return reads;
  }

  /** Waits until every acknowledged probe was seen at b; fails the run after the drain bound. */
  private void awaitProbes(AtomicReference<Exception> pollFailure) throws InterruptedException {
    long deadline = System.nanoTime() + DRAIN_TIMEOUT.toNanos();
    while (System.nanoTime() < deadline && pollFailure.get() == null) {
      if (seen.keySet().containsAll(acknowledged.keySet())) {
        return;
      }
      Thread.sleep(10);
    }
  }

  private void summarize(BenchReport report, Workload workload, long oneWayMillis, long polls) {
    Histogram visibility = new Histogram(3);
    List<Double> values = new ArrayList<>();
    long unseen = 0;
    long belowOneWay = 0;
    long overwrittenMeasured = 0;
    for (Map.Entry<Long, Long> probe : acknowledged.entrySet()) {
      long sendNanos = sent.get(probe.getKey());
      if (sendNanos < workload.windowStartNanos() || sendNanos >= workload.windowEndNanos()) {
        continue;
      }
      Long seenNanos = seen.get(probe.getKey());
      if (seenNanos == null) {
        unseen++;
        continue;
      }
      long overNanos = seenNanos - probe.getValue() - oneWayMillis * 1_000_000;
      if (overNanos < 0) {
        belowOneWay++;
        overNanos = 0;
      }
      if (overwritten.containsKey(probe.getKey())) {
        overwrittenMeasured++;
      }
      visibility.recordValue(overNanos / 1_000);
      values.add(overNanos / 1e6);
    }
    sortedVisibilityMillis = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    String system = "visibility_at_b";
    report.result(system, "probes", visibility.getTotalCount());
    if (visibility.getTotalCount() > 0) {
      report.result(system, "p50_milliseconds", visibility.getValueAtPercentile(50) / 1e3);
      report.result(system, "p95_milliseconds", visibility.getValueAtPercentile(95) / 1e3);
      report.result(system, "p99_milliseconds", visibility.getValueAtPercentile(99) / 1e3);
      report.result(system, "max_milliseconds", visibility.getMaxValue() / 1e3);
      report.result(system, "min_milliseconds", visibility.getMinValue() / 1e3);
      report.result(system, "mean_milliseconds", visibility.getMean() / 1e3);
    }
    report.result(system, "overwritten_before_seen", overwrittenMeasured);
    report.result(system, "below_rtt_half", belowOneWay);
    report.result(system, "polls", polls);
    String load = "workload_at_a";
    report.result(load, "operations_per_second",
        (workload.reads() + workload.writes()) / workload.seconds());
    report.result(load, "writes_per_second", workload.writes() / workload.seconds());
    report.result(load, "read_p50_milliseconds", percentile(workload.readNanos(), 50));
    report.result(load, "read_p99_milliseconds", percentile(workload.readNanos(), 99));
    report.result(load, "write_p50_milliseconds", percentile(workload.writeNanos(), 50));
    report.result(load, "write_p99_milliseconds", percentile(workload.writeNanos(), 99));
    report.result(load, "probe_write_p50_milliseconds",
        percentile(workload.probeWriteNanos(), 50));
    if (unseen > 0) {
      report.failure(unseen + " probes acknowledged at a never became visible at b within "
          + DRAIN_TIMEOUT.toSeconds() + " s");
    }
    if (visibility.getTotalCount() == 0) {
      report.failure("no probe was measured: measure for longer");
      return;
    }
    double p95 = visibility.getValueAtPercentile(95) / 1e3;
    report.goal("visibility p95 - RTT/2 (ms)", p95, GOAL);
    if (rttMillis > 0) {
      // How many round trips an update takes to be visible (the one-way delay included).
      report.ratio("visibility p95 / RTT", p95 + oneWayMillis, rttMillis, null);
    }
  }

  private static double percentile(Histogram histogram, double percentile) {
    return histogram.getTotalCount() == 0 ? 0 : histogram.getValueAtPercentile(percentile) / 1e6;
  }
}
