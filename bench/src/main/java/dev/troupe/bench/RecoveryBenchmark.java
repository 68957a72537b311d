package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Json;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import me.tongfei.progressbar.ProgressBar;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code troupe bench recovery}: how long a real server takes to serve again after {@code kill -9}
 * with a large journal, and whether every acknowledged write survived.
 *
 * <p>Steps: (1) start a server on an empty directory and time it until {@code /v1/health} answers
 * 200 and a first entity read is answered (the baseline); (2) start a server on the data directory and write {@code --megabytes} of
 * values through REST ({@code PUT} of {@code --value-bytes} strings, one new entity per write,
 * {@code --threads} concurrent clients); (3) SIGKILL it the moment that much is acknowledged, with
 * writes still in flight; (4) restart it and time it from process start until {@code /v1/health}
 * answers 200 and the newest acknowledged write reads back exactly (the recovery time: the node
 * serves, with what it acknowledged), then until a sample of acknowledged writes reads back exactly
 * (the most recent ones, which a crash endangers most, and others at random; read on {@code
 * --threads} connections: cold random reads, which measure the disk as much as recovery; the
 * connections are opened and served once before the first read, their set-up reported apart
 * from the reads); also read the
 * storage recovery time it reports ({@code troupe_recovery_seconds} on {@code /metrics}), and read
 * a second sample of other entities (cold reads on the JVM the first sample warmed); (5) time
 * further empty starts ({@code --empty-starts}); the baseline is their mean. With {@code --load
 * embedded}, steps 2 and 3 are replaced by writing the same entities through a storage engine in
 * this process, closed cleanly: much faster, for the cold reads after the restart (issue 20), not
 * for recovery.
 *
 * <p>Fair because the baseline is the same server, JVM, flags and machine, timed the same way, with
 * nothing to recover; the ratio is what recovery adds. Any acknowledged write missing or different
 * after the restart is a failure, whatever the times. Goal: serving again within 5 s.
 */
@Command(
    name = "recovery",
    mixinStandardHelpOptions = true,
    description = "Write MB through REST to a server process, kill -9 it, and time its restart "
        + "until healthy with acknowledged writes verified, against an empty start. "
        + "Goal: recovery <= 5 s, no acknowledged write lost.")
final class RecoveryBenchmark extends Benchmark {
  static final Goal GOAL = Goal.atMost(5, "s");
  private static final Duration START_TIMEOUT = Duration.ofMinutes(5);
  private static final String TYPE = "Load";
  private static final String KEY = "value";
  private static final long MEGABYTE = 1L << 20;
  private static final long PROGRESS_TICK_MILLIS = 200;

  @Option(names = "--megabytes", defaultValue = "1024",
      description = "Megabytes of values to write before the kill (default: ${DEFAULT-VALUE}).")
  double megabytes;

  @Option(names = "--value-bytes", defaultValue = "1000",
      description = "Characters per written string value (default: ${DEFAULT-VALUE}).")
  int valueBytes;

  @Option(names = "--threads", defaultValue = "64",
      description = "Concurrent writing clients (default: ${DEFAULT-VALUE}).")
  int threads;

  @Option(names = "--sample", defaultValue = "1000",
      description = "Acknowledged writes read back after the restart: half the most recent, half"
          + " at random (default: ${DEFAULT-VALUE}).")
  int sampleSize;

  @Option(names = "--empty-starts", defaultValue = "2",
      description = "Starts on an empty directory to average for the baseline: the first before"
          + " the load, the others after the recovery (default: ${DEFAULT-VALUE}).")
  int emptyStarts;

  @Option(names = "--load", defaultValue = "rest", paramLabel = "rest|embedded",
      description = "How the data is written: rest (through a server process, then kill -9, what"
          + " the recovery figures measure) or embedded (through the storage engine in this"
          + " process, many times faster, then closed cleanly: for the cold reads after the"
          + " restart, not for recovery) (default: ${DEFAULT-VALUE}).")
  String loadMode;

  @Option(names = "--drop-page-cache", defaultValue = "false",
      description = "Before the restart, write out and drop the operating system's page cache"
          + " (Linux, needs root: /proc/sys/vm/drop_caches), so that the reads after the restart"
          + " come from the disk itself (default: ${DEFAULT-VALUE}).")
  boolean dropPageCache;

  @Option(names = "--server-jvm-option", paramLabel = "FLAG",
      description = "A JVM flag added after the launcher's for every server process, e.g."
          + " --server-jvm-option=-Xmx4g (repeatable).")
  List<String> serverJvmFlags = new ArrayList<>();

  @Override
  BenchReport run() throws Exception {
    if (!(megabytes > 0) || valueBytes < 16 || threads < 1 || sampleSize < 1 || emptyStarts < 1) {
      throw new IllegalArgumentException("--megabytes, --threads, --sample and --empty-starts must"
          + " be positive and --value-bytes at least 16");
    }
    if (!loadMode.equals("rest") && !loadMode.equals("embedded")) {
      throw new IllegalArgumentException("--load must be rest or embedded, was '" + loadMode + "'");
    }
    long targetBytes = Math.max(valueBytes, Math.round(megabytes * MEGABYTE));
    BenchReport report = new BenchReport("recovery",
        "restart after kill -9 with a large journal vs start on an empty directory");
    report.parameter("megabytes", megabytes)
        .parameter("value_bytes", valueBytes)
        .parameter("threads", threads)
        .parameter("sample", sampleSize)
        .parameter("empty_starts", emptyStarts)
        .parameter("load", loadMode)
        .parameter("drop_page_cache", dropPageCache);
    if (!serverJvmFlags.isEmpty()) {
      report.parameter("server_jvm_options", String.join(" ", serverJvmFlags));
    }
    try (TemporaryDirectory work = TemporaryDirectory.create("recovery");
        ProgressBar progress = ProgressBars.start("recovery", targetBytes, "MB", MEGABYTE)) {
      progress.setExtraMessage("empty start");
      List<Double> emptyStartSeconds = new ArrayList<>();
      emptyStartSeconds.add(emptyStart(work, 1));

      Path data = work.resolve("data");
      Load load;
      if (loadMode.equals("embedded")) {
        progress.setExtraMessage("writing in process");
        load = writeEmbedded(data, targetBytes, progress);
      } else {
        try (TroupeProcess server =
            TroupeProcess.start(data, work.resolve("loaded.log"), serverJvmFlags)) {
          server.awaitHealthy(START_TIMEOUT);
          progress.setExtraMessage("writing");
          load = writeThenKill(server, targetBytes, progress);
        }
      }

      if (dropPageCache) {
        dropPageCache();
      }
      progress.setExtraMessage("recovering");
      List<Long> sample = sample(load.acknowledged(), load.issued());
      List<Long> secondSample = otherSample(load.acknowledged(), sample);
      long newest = load.acknowledged().previousSetBit(Math.toIntExact(load.issued()));
      Restart restart = restartAndVerify(data, work.resolve("recovered.log"), newest, sample,
          secondSample);

      progress.setExtraMessage("empty start");
      for (int attempt = 2; attempt <= emptyStarts; attempt++) {
        emptyStartSeconds.add(emptyStart(work, attempt));
      }
      progress.setExtraMessage("done");

      addFigures(report, emptyStartSeconds, load, sample, restart);
    }
    return report;
  }

  /** Adds the run's figures, its ratio and goal, and any lost write as a failure. */
  private void addFigures(BenchReport report, List<Double> emptyStartSeconds, Load load,
      List<Long> sample, Restart restart) {
    double emptyStartMean = emptyStartSeconds.stream().mapToDouble(Double::doubleValue).average()
        .orElseThrow();
    report.result("empty_start", "serving_seconds", emptyStartMean);
    for (int attempt = 1; attempt <= emptyStarts; attempt++) {
      report.result("empty_start", "start_" + attempt + "_seconds",
          emptyStartSeconds.get(attempt - 1));
    }
    report.result("recovery", "serving_seconds", restart.servingSeconds())
        .result("recovery", "health_seconds", restart.healthSeconds())
        .result("recovery", "sample_verified_seconds", restart.verifiedSeconds())
        .result("recovery", "storage_recovery_seconds", restart.storageRecoverySeconds());
    long acknowledgedCount = load.acknowledged().cardinality();
    report.result("load", "acknowledged_megabytes",
            acknowledgedCount * valueBytes / (double) MEGABYTE)
        .result("load", "acknowledged_writes", acknowledgedCount)
        .result("load", "unacknowledged_writes", load.issued() - acknowledgedCount)
        .result("load", "seconds", load.seconds())
        .result("load", "writes_per_second", acknowledgedCount / load.seconds());
    List<Long> lost = restart.verification().lost();
    Histogram readLatency = restart.verification().readLatencyNanoseconds();
    report.result("verification", "sampled_writes", sample.size())
        .result("verification", "lost_writes", lost.size())
        .result("verification", "read_p50_milliseconds",
            readLatency.getValueAtPercentile(50) / 1e6)
        .result("verification", "read_p99_milliseconds",
            readLatency.getValueAtPercentile(99) / 1e6)
        .result("verification", "read_max_milliseconds", readLatency.getMaxValue() / 1e6);
    connectionSetUp(report, "verification", restart.verification());
    Histogram secondLatency = restart.second().readLatencyNanoseconds();
    report.result("verification_second", "sampled_writes", secondLatency.getTotalCount())
        .result("verification_second", "lost_writes", restart.second().lost().size())
        .result("verification_second", "read_p50_milliseconds",
            secondLatency.getValueAtPercentile(50) / 1e6)
        .result("verification_second", "read_p99_milliseconds",
            secondLatency.getValueAtPercentile(99) / 1e6)
        .result("verification_second", "read_max_milliseconds",
            secondLatency.getMaxValue() / 1e6);
    connectionSetUp(report, "verification_second", restart.second());
    if (!restart.second().lost().isEmpty()) {
      report.failure(restart.second().lost().size() + " acknowledged writes of the second sample"
          + " were lost or changed after the restart, e.g. "
          + entityPath(restart.second().lost().get(0)));
    }
    report.ratio("recovery / empty_start serving time", restart.servingSeconds(), emptyStartMean,
        null);
    report.goal("recovery time (serving, newest acknowledged write read back)",
        restart.servingSeconds(), GOAL);
    if (!lost.isEmpty()) {
      report.failure(lost.size() + " of " + sample.size() + " sampled acknowledged writes were"
          + " lost or changed after the restart, e.g. " + entityPath(lost.get(0)));
    }
  }

  /** A sample's connection set-up figures, apart from its reads'. */
  private static void connectionSetUp(BenchReport report, String section,
      Verification verification) {
    Histogram setUp = verification.connectionSetUpNanoseconds();
    report.result(section, "connections", setUp.getTotalCount())
        .result(section, "connection_set_up_p50_milliseconds",
            setUp.getValueAtPercentile(50) / 1e6)
        .result(section, "connection_set_up_p99_milliseconds",
            setUp.getValueAtPercentile(99) / 1e6)
        .result(section, "connection_set_up_max_milliseconds", setUp.getMaxValue() / 1e6);
  }

  /**
   * Starts a server on a fresh empty directory and times it until it serves: {@code /v1/health}
   * answers 200 and a first entity read is answered (404, nothing was written), as the restarted
   * server's time to serve includes its first read. Then stops it.
   */
  private double emptyStart(TemporaryDirectory work, int attempt) throws Exception {
    Path directory = work.resolve("empty-" + attempt);
    try (TroupeProcess server = TroupeProcess.start(directory,
        work.resolve("empty-" + attempt + ".log"), serverJvmFlags)) {
      server.awaitHealthy(START_TIMEOUT);
      try (HttpConnection connection = server.connect()) {
        HttpConnection.Response response = connection.get(entityPath(0));
        if (response.status() != 404) {
          throw new BenchmarkException("an empty server answered " + response.status()
              + " to GET " + entityPath(0));
        }
      }
      return server.nanosSinceStart() / 1e9;
    } finally {
      TemporaryDirectory.deleteRecursively(directory);
    }
  }

  /**
   * What the restart after the kill showed.
   *
   * @param healthSeconds from process start until {@code /v1/health} answered 200
   * @param servingSeconds from process start until, in addition, the newest acknowledged write was
   *     read back: the node serves, with what it acknowledged before the crash
   * @param verifiedSeconds from process start until, in addition, the whole sample was read back
   *     (cold reads of random entities: this measures the disk as much as recovery)
   * @param storageRecoverySeconds the server's own {@code troupe_recovery_seconds}
   * @param verification what reading the sample back found
   * @param second what reading a second sample of other entities back found, right after
   */
  private record Restart(double healthSeconds, double servingSeconds, double verifiedSeconds,
      double storageRecoverySeconds, Verification verification, Verification second) {}

  /**
   * @param lost indices of sampled acknowledged writes missing or different, in order
   * @param readLatencyNanoseconds latency of each read of the sample, on connections already
   *     open and served once (their set-up is apart)
   * @param connectionSetUpNanoseconds per connection the sample was read on: from opening it
   *     until the server answered its first request ({@code GET /v1/health}), all opened at once
   *     before the sample's first read (the server's cost of a client reconnecting after a
   *     restart, reported apart from the reads; issue 20)
   */
  private record Verification(List<Long> lost, Histogram readLatencyNanoseconds,
      Histogram connectionSetUpNanoseconds) {}

  private Restart restartAndVerify(Path data, Path log, long newest, List<Long> sample,
      List<Long> secondSample) throws Exception {
    // The fixed admission limit only, as bench ycsb runs Troupe: the adaptive limits track the
    // long-term read latency, which cold reads right after a restart exceed, so they refused
    // some of the 64 sample connections' reads with 429 (issue 20, sixth session: a run failed
    // on "now 46"), and this benchmark measures the reads, not the shedding (bench overload's).
    try (TroupeProcess server = TroupeProcess.start(data, log, serverJvmFlags,
        List.of(RestSmallBank.FIXED_ADMISSION))) {
      double healthSeconds = server.awaitHealthy(START_TIMEOUT);
      Verification first = verify(server, List.of(newest));
      if (!first.lost().isEmpty()) {
        throw new BenchmarkException("the newest acknowledged write, " + entityPath(newest)
            + ", was lost in the crash");
      }
      double servingSeconds = server.nanosSinceStart() / 1e9;
      Verification verification = verify(server, sample);
      double verifiedSeconds = server.nanosSinceStart() / 1e9;
      // Then as many other entities, still uncached, on the JVM the first sample warmed: what a
      // cold read costs once the process is no longer cold itself.
      Verification second = verify(server, secondSample);
      try (HttpConnection connection = server.connect()) {
        return new Restart(healthSeconds, servingSeconds, verifiedSeconds,
            storageRecoverySeconds(connection), verification, second);
      }
    }
  }

  /**
   * What the load phase did.
   *
   * @param acknowledged indices of the writes answered 200
   * @param issued writes sent (indices 0 to issued - 1), acknowledged or not
   * @param seconds from the first write until the target was acknowledged
   */
  private record Load(BitSet acknowledged, long issued, double seconds) {}

  /**
   * Writes until {@code targetBytes} of values are acknowledged, then kills the server at once,
   * while writers still have requests in flight: those have an unknown outcome and are not checked.
   */
  private Load writeThenKill(TroupeProcess server, long targetBytes, ProgressBar progress)
      throws InterruptedException {
    AtomicLong nextIndex = new AtomicLong();
    AtomicLong acknowledgedBytes = new AtomicLong();
    AtomicBoolean killing = new AtomicBoolean();
    AtomicReference<Exception> failure = new AtomicReference<>();
    List<BitSet> acknowledgedByWriter = new ArrayList<>();
    List<Thread> writers = new ArrayList<>();
    long start = System.nanoTime();
    for (int writer = 0; writer < threads; writer++) {
      BitSet acknowledged = new BitSet();
      acknowledgedByWriter.add(acknowledged);
      writers.add(Thread.ofPlatform().name("recovery-writer-" + writer).start(() -> {
        try (HttpConnection connection = server.connect()) {
          while (!killing.get() && failure.get() == null) {
            long index = nextIndex.getAndIncrement();
            HttpConnection.Response response =
                connection.put(entityPath(index), jsonString(valueOf(index)));
            if (response.status() != 200) {
              throw new BenchmarkException("PUT " + entityPath(index) + " answered "
                  + response.status() + ": " + response.text());
            }
            acknowledged.set(Math.toIntExact(index));
            acknowledgedBytes.addAndGet(valueBytes);
          }
        } catch (IOException e) {
          if (!killing.get()) {
            failure.compareAndSet(null, e);
          }
        } catch (RuntimeException e) {
          failure.compareAndSet(null, e);
        }
      }));
    }
    while (acknowledgedBytes.get() < targetBytes && failure.get() == null) {
      Thread.sleep(PROGRESS_TICK_MILLIS);
      progress.stepTo(Math.min(acknowledgedBytes.get(), targetBytes));
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    killing.set(true);
    server.kill();
    for (Thread writer : writers) {
      writer.join();
    }
    progress.stepTo(targetBytes);
    if (failure.get() != null) {
      throw new BenchmarkException("writing failed before the kill: " + failure.get().getMessage(),
          failure.get());
    }
    BitSet acknowledged = new BitSet();
    acknowledgedByWriter.forEach(acknowledged::or);
    return new Load(acknowledged, nextIndex.get(), seconds);
  }

  /**
   * Writes the same entities as {@link #writeThenKill} (one {@code Assign} of the string value to
   * key {@code value} per entity, one commit each, as a REST {@code PUT} commits it) through a
   * storage engine in this process under {@code async} durability, at most 256 commits in flight,
   * then closes the engine cleanly (everything written is on disk). Much faster than REST, so
   * that the cold reads after the restart can be measured over a large data set in a short run.
   */
  private Load writeEmbedded(Path data, long targetBytes, ProgressBar progress)
      throws InterruptedException {
    long count = (targetBytes + valueBytes - 1) / valueBytes;
    dev.troupe.storage.StorageSettings settings = dev.troupe.runtime.RuntimeSettings
        .forDirectory(data).storage().withDurability(dev.troupe.storage.Durability.ASYNC);
    java.util.concurrent.Semaphore inFlight = new java.util.concurrent.Semaphore(256);
    AtomicReference<Throwable> failure = new AtomicReference<>();
    long start = System.nanoTime();
    try (dev.troupe.storage.RocksStore store =
        dev.troupe.storage.RocksStore.open(settings, System::currentTimeMillis)) {
      for (long index = 0; index < count && failure.get() == null; index++) {
        inFlight.acquire();
        dev.troupe.model.EntityId entity = new dev.troupe.model.EntityId(TYPE, "e" + index);
        store.commit(store.newTransactionId(), List.of(new dev.troupe.storage.EntityWrite(entity,
                List.of(new dev.troupe.model.Operation.Assign(KEY,
                    com.fasterxml.jackson.databind.node.TextNode.valueOf(valueOf(index)))))))
            .whenComplete((committed, error) -> {
              if (error != null) {
                failure.compareAndSet(null, error);
              }
              inFlight.release();
            });
        if (index % 1024 == 0) {
          progress.stepTo(Math.min(index * valueBytes, targetBytes));
        }
      }
      inFlight.acquire(256);
    }
    if (failure.get() != null) {
      throw new BenchmarkException("writing in process failed: " + failure.get().getMessage(),
          failure.get());
    }
    progress.stepTo(targetBytes);
    BitSet acknowledged = new BitSet();
    acknowledged.set(0, Math.toIntExact(count));
    return new Load(acknowledged, count, (System.nanoTime() - start) / 1e9);
  }

  /** Writes dirty pages out and drops the page cache (the kernel's {@code drop_caches} = 1). */
  private static void dropPageCache() throws IOException, InterruptedException {
    Process sync = new ProcessBuilder("sync").inheritIO().start();
    if (sync.waitFor() != 0) {
      throw new BenchmarkException("sync failed before dropping the page cache");
    }
    try {
      java.nio.file.Files.writeString(Path.of("/proc/sys/vm/drop_caches"), "1");
    } catch (IOException e) {
      throw new BenchmarkException("--drop-page-cache needs root on Linux: " + e.getMessage(), e);
    }
  }

  /**
   * Up to {@code sampleSize} acknowledged writes: half the highest indices (the most recently
   * issued, closest to the kill), the rest uniformly at random among the others.
   */
  /**
   * Up to {@code sampleSize} acknowledged writes at random, none of {@code first} (fewer if there
   * are not that many others).
   */
  private List<Long> otherSample(BitSet acknowledged, List<Long> first) {
    java.util.Set<Long> excluded = new java.util.HashSet<>(first);
    TreeSet<Long> chosen = new TreeSet<>();
    long available = acknowledged.cardinality() - excluded.size();
    Random random = new Random(acknowledged.length() + 1L);
    while (chosen.size() < Math.min(sampleSize, available)) {
      int index = random.nextInt(acknowledged.length());
      if (acknowledged.get(index) && !excluded.contains((long) index)) {
        chosen.add((long) index);
      }
    }
    return List.copyOf(chosen);
  }

  private List<Long> sample(BitSet acknowledged, long issued) {
    TreeSet<Long> chosen = new TreeSet<>();
    int total = acknowledged.cardinality();
    if (total <= sampleSize) {
      acknowledged.stream().forEach(index -> chosen.add((long) index));
      return List.copyOf(chosen);
    }
    for (int index = acknowledged.previousSetBit(acknowledged.length() - 1);
        index >= 0 && chosen.size() < sampleSize / 2;
        index = acknowledged.previousSetBit(index - 1)) {
      chosen.add((long) index);
    }
    Random random = new Random(issued);
    while (chosen.size() < sampleSize) {
      int index = random.nextInt(acknowledged.length());
      if (acknowledged.get(index)) {
        chosen.add((long) index);
      }
    }
    return List.copyOf(chosen);
  }

  /**
   * Reads every sampled write back, on as many connections in parallel as there were writers (a
   * restarted service gets concurrent traffic too).
   */
  private Verification verify(TroupeProcess server, List<Long> sample) throws Exception {
    if (sample.isEmpty()) {
      // No other write to read.
      return new Verification(List.of(), new Histogram(3), new Histogram(3));
    }
    int readers = Math.min(threads, sample.size());
    List<Future<Verification>> slices = new ArrayList<>();
    CountDownLatch connected = new CountDownLatch(readers);
    try (ExecutorService executor = Executors.newFixedThreadPool(readers)) {
      for (int reader = 0; reader < readers; reader++) {
        int first = reader;
        slices.add(executor.submit(() -> {
          List<Long> lost = new ArrayList<>();
          Histogram latency = new Histogram(3);
          Histogram setUp = new Histogram(3);
          try (HttpConnection connection = server.connect()) {
            // Every connection opened and served once before any read of the sample: a read's
            // latency is then the read's, and the connections' set-up a figure of its own.
            try {
              long opened = System.nanoTime();
              HttpConnection.Response health = connection.get("/v1/health");
              setUp.recordValue(System.nanoTime() - opened);
              if (health.status() != 200) {
                throw new BenchmarkException("/v1/health answered " + health.status()
                    + " on a new connection after the restart");
              }
            } finally {
              connected.countDown();
            }
            if (!connected.await(START_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
              throw new BenchmarkException("the sample's connections were not all served within "
                  + START_TIMEOUT);
            }
            for (int position = first; position < sample.size(); position += readers) {
              long index = sample.get(position);
              long start = System.nanoTime();
              boolean readsBack = readsBack(connection, index);
              latency.recordValue(System.nanoTime() - start);
              if (!readsBack) {
                lost.add(index);
              }
            }
          }
          return new Verification(lost, latency, setUp);
        }));
      }
    }
    List<Long> lost = new ArrayList<>();
    Histogram latency = new Histogram(3);
    Histogram setUp = new Histogram(3);
    for (Future<Verification> slice : slices) {
      try {
        lost.addAll(slice.get().lost());
        latency.add(slice.get().readLatencyNanoseconds());
        setUp.add(slice.get().connectionSetUpNanoseconds());
      } catch (ExecutionException e) {
        throw new BenchmarkException("reading back acknowledged writes failed: "
            + e.getCause().getMessage(), e.getCause());
      }
    }
    lost.sort(null);
    return new Verification(lost, latency, setUp);
  }

  /** Whether write {@code index} reads back with exactly its value. */
  private boolean readsBack(HttpConnection connection, long index) throws IOException {
    HttpConnection.Response response = connection.get(entityPath(index));
    if (response.status() == 404) {
      return false;
    }
    if (response.status() != 200) {
      throw new BenchmarkException("GET " + entityPath(index) + " after the restart answered "
          + response.status() + ": " + response.text());
    }
    JsonNode value = Json.parse(response.body()).path("value");
    return value.isTextual() && value.asText().equals(valueOf(index));
  }

  private static double storageRecoverySeconds(HttpConnection connection) throws IOException {
    HttpConnection.Response metrics = connection.get("/metrics");
    for (String line : metrics.text().split("\n")) {
      if (line.startsWith("troupe_recovery_seconds ")) {
        return Double.parseDouble(line.substring(line.indexOf(' ') + 1).trim());
      }
    }
    throw new BenchmarkException("/metrics has no troupe_recovery_seconds");
  }

  private static String entityPath(long index) {
    return "/v1/entities/" + TYPE + "/e" + index + "/keys/" + KEY;
  }

  /** The value of write {@code index}: its index, then letters depending on it, valueBytes long. */
  private String valueOf(long index) {
    StringBuilder value = new StringBuilder(valueBytes).append('e').append(index).append(':');
    for (int position = value.length(); position < valueBytes; position++) {
      value.append((char) ('a' + (index + position) % 26));
    }
    return value.toString();
  }

  private static byte[] jsonString(String plainText) {
    return ("\"" + plainText + "\"").getBytes(StandardCharsets.UTF_8);
  }
}
