package dev.troupe.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import me.tongfei.progressbar.ProgressBar;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import site.ycsb.generator.ScrambledZipfianGenerator;

/**
 * {@code troupe bench causal-cost}: what replicating to other data centres costs the data centre
 * that takes the load, in response time (issue 17; TTCC's YCSB+MT evaluation).
 *
 * <p><b>Replicated</b>: DC a of {@code --dcs} server processes on loopback ({@link DataCentreSet},
 * links of {@code --rtt-millis}), which writes every commit's replication log entries and serves
 * its peers' pulls; the peers apply what they pull. <b>Alone</b>: the same server with no data
 * centre name (one process, replication off: no log, no pulls) — Troupe before issue 17.
 *
 * <p><b>Workloads</b> (TTCC's YCSB+MT): A = 90 % reads, 5 % updates, 5 % messages; B = 5 %
 * reads, 90 % updates, 5 % messages; zipfian keys over {@code --records} YCSB records (10 fields
 * of 100 bytes); a read reads a whole record, an update writes one field. <b>Messages</b> (causal
 * {@code send} between entities) do not exist yet: until they do, a message is run as an update of
 * another record, measured and reported on its own ({@link Kind#MESSAGE} is where a real send
 * goes).
 *
 * <p><b>Fair because</b> both run in the same run, driven by the same closed-loop clients in this
 * JVM ({@code --threads}, TTCC used 16), one at a time, alternating rounds (replicated, alone,
 * replicated, ...) after one unmeasured round each, both loaded with the same records. After every
 * replicated round the benchmark waits until the peers have applied everything, so no round pays
 * for the previous one's replication. On one machine the peers' applying competes for the CPU with
 * DC a, which in a deployment it would not: peers run under {@code nice} ({@code
 * --peer-niceness}), so they mostly take what DC a leaves.
 *
 * <p>Reported per workload, kind and side: p50, p95 and mean response time; the ratios replicated
 * / alone for each, with the goal (the issue's) mean at most 1.2 for reads, updates and messages.
 * TTCC, for reference: 1.55, 1.14 and 2.43 (reads, writes, messages) for its unified protocol over
 * its non-unified one.
 */
@Command(
    name = "causal-cost",
    mixinStandardHelpOptions = true,
    description = "YCSB+MT workloads A and B at a DC replicating to others vs the same DC alone,"
        + " alternating rounds; response-time ratios. Goal: replicated / alone mean <= 1.2.")
final class CausalCostBenchmark extends Benchmark {
  static final Goal GOAL = Goal.atMost(1.2, "");
  static final String TTCC = "TTCC (unified over non-unified protocol): reads 1.55x, writes"
      + " 1.14x, messages 2.43x";
  static final String MESSAGES_NOTE = "causal messages (send) do not exist yet: each message is"
      + " run as an update of another record";
  private static final String TABLE = "usertable";
  private static final int FIELDS = 10;
  private static final int FIELD_BYTES = 100;
  private static final int LOAD_THREADS = 8;
  private static final Duration START_TIMEOUT = Duration.ofSeconds(120);
  private static final Duration DRAIN_TIMEOUT = Duration.ofSeconds(300);

  /** An operation of the workload. */
  enum Kind {
    READ,
    UPDATE,
    /**
     * A causal message to another entity. Until {@code send} exists it is an update of another
     * record; replace {@link Session#message} by a real send when it does.
     */
    MESSAGE;

    String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** A YCSB+MT mix: shares of reads, updates and messages. */
  record Mix(String name, double reads, double updates, double messages) {
    static Mix named(String name) {
      return switch (name.strip().toLowerCase(Locale.ROOT)) {
        case "a" -> new Mix("A", 0.90, 0.05, 0.05);
        case "b" -> new Mix("B", 0.05, 0.90, 0.05);
        default -> throw new IllegalArgumentException("unknown workload '" + name
            + "'; known: a (90/5/5), b (5/90/5)");
      };
    }

    Kind pick(double uniform) {
      return uniform < reads ? Kind.READ : uniform < reads + updates ? Kind.UPDATE : Kind.MESSAGE;
    }
  }

  @Option(names = "--workload", split = ",", defaultValue = "a,b",
      description = "YCSB+MT workloads, comma-separated: a (90 % reads, 5 % updates, 5 %"
          + " messages), b (5/90/5) (default: ${DEFAULT-VALUE}).")
  List<String> workloadNames;

  @Option(names = "--dcs", defaultValue = "3",
      description = "Data centres of the replicated side (default: ${DEFAULT-VALUE}).")
  int dataCentres;

  @Option(names = "--rtt-millis", defaultValue = "50",
      description = "Round trip between two DCs of the replicated side"
          + " (default: ${DEFAULT-VALUE}).")
  long rttMillis;

  @Option(names = "--records", defaultValue = "10000",
      description = "Records loaded into both sides (default: ${DEFAULT-VALUE}).")
  int records;

  @Option(names = "--threads", defaultValue = "16",
      description = "Closed-loop clients, one connection each (default: ${DEFAULT-VALUE}).")
  int threads;

  @Option(names = "--peer-niceness", defaultValue = "19",
      description = "Niceness of the peer DCs' processes (0: none) (default: ${DEFAULT-VALUE}).")
  int peerNiceness;

  @Option(names = "--set", paramLabel = "PATH=VALUE",
      description = "A setting for every server of both sides (repeatable).")
  List<String> settings = new ArrayList<>();

  @Option(names = "--server-jvm-option", paramLabel = "FLAG",
      description = "Extra JVM flag for every server process (repeatable).")
  List<String> serverJvmOptions = new ArrayList<>();

  @Mixin AlternationOptions alternation;

  @Mixin HtmlReportOption htmlReport;

  static final HtmlReport.Layout LAYOUT = new HtmlReport.Layout(
      "Causal cost: a DC replicating to others vs the same DC alone",
      "throughput_per_second", "operations per second",
      List.of(Kind.READ.label(), Kind.UPDATE.label(), Kind.MESSAGE.label()));

  @Override
  BenchReport run() throws Exception {
    List<Mix> mixes = workloadNames.stream().map(Mix::named).toList();
    if (records < 1 || dataCentres < 2) {
      throw new IllegalArgumentException("need positive --records and --dcs >= 2");
    }
    AlternatingComparison.Settings timing = alternation.settings(threads);
    BenchReport report = new BenchReport("causal-cost",
        "YCSB+MT at a DC replicating to others vs the same DC alone");
    timing.describe(report);
    report.parameter("workloads", mixes.stream().map(Mix::name).toList())
        .parameter("data_centres", dataCentres)
        .parameter("rtt_milliseconds", rttMillis)
        .parameter("records", records)
        .parameter("record_bytes", FIELDS * FIELD_BYTES)
        .parameter("key_distribution", "zipfian")
        .parameter("peer_niceness", peerNiceness)
        .parameter("settings", settings)
        .parameter("messages", MESSAGES_NOTE)
        .parameter("reference", TTCC)
        .parameter("machine", Machine.describe())
        .parameter("load_average_at_start", VisibilityBenchmark.loadAverage());
    System.out.println("note: " + MESSAGES_NOTE);
    try (TemporaryDirectory work = TemporaryDirectory.create("causal-cost");
        TroupeProcess alone = TroupeProcess.serve(work.resolve("alone"),
            work.resolve("alone.log"), serverJvmOptions, settingArguments(), List.of());
        DataCentreSet dcs = DataCentreSet.start(work, dataCentres, rttMillis / 2, settings,
            serverJvmOptions, peerNiceness)) {
      alone.awaitHealthy(START_TIMEOUT);
      TroupeProcess replicated = dcs.process("a");
      load("alone", alone);
      load("replicated", replicated);
      report.result("load", "replicated_drain_seconds", dcs.awaitApplied("a", DRAIN_TIMEOUT));
      Map<String, Side> sides = new LinkedHashMap<>();
      for (Mix mix : mixes) {
        sides.put(mix.name() + "/replicated", new Side(replicated, dcs));
        sides.put(mix.name() + "/alone", new Side(alone, null));
        long millisPerRound = timing.warmup().toMillis() + timing.measurement().toMillis();
        try (ProgressBar progress = ProgressBars.start("causal-cost " + mix.name(),
            millisPerRound * (timing.rounds() + 1) * 2, "s", 1000)) {
          for (int round = 0; round <= timing.rounds(); round++) {
            for (String side : List.of("replicated", "alone")) {
              progress.setExtraMessage(side + (round == 0 ? " warm-up round" : " round " + round));
              sides.get(mix.name() + "/" + side).round(mix, timing, round > 0, progress);
            }
          }
        }
        summarize(report, mix, sides.get(mix.name() + "/replicated"),
            sides.get(mix.name() + "/alone"));
      }
      report.parameter("load_average_at_end", VisibilityBenchmark.loadAverage());
    }
    return report;
  }

  @Override
  void afterPrint(BenchReport report) {
    htmlReport.write(report, LAYOUT);
  }

  private List<String> settingArguments() {
    List<String> arguments = new ArrayList<>();
    for (String setting : settings) {
      arguments.add("--set");
      arguments.add(setting);
    }
    return arguments;
  }

  /** Writes every record with all its fields, {@link #LOAD_THREADS} clients. */
  private void load(String name, TroupeProcess server) throws Exception {
    List<Thread> loaders = new ArrayList<>();
    java.util.concurrent.atomic.AtomicReference<Exception> failure =
        new java.util.concurrent.atomic.AtomicReference<>();
    try (ProgressBar progress = ProgressBars.start("load " + name, records, "records", 1)) {
      for (int thread = 0; thread < LOAD_THREADS; thread++) {
        int first = thread;
        loaders.add(Thread.ofPlatform().start(() -> {
          try (HttpConnection connection = server.connect()) {
            for (int record = first; record < records; record += LOAD_THREADS) {
              StringBuilder body = new StringBuilder("{");
              for (int field = 0; field < FIELDS; field++) {
                body.append(field == 0 ? "" : ", ").append("\"field").append(field)
                    .append("\": \"").append(text()).append('"');
              }
              patch(connection, record, body.append('}').toString());
              progress.step();
            }
          } catch (Exception e) {
            failure.compareAndSet(null, e);
          }
        }));
      }
      for (Thread loader : loaders) {
        loader.join();
      }
    }
    if (failure.get() != null) {
      throw new BenchmarkException("loading " + name + " failed: " + failure.get(),
          failure.get());
    }
  }

  private static String text() {
    char[] text = new char[FIELD_BYTES];
    ThreadLocalRandom random = ThreadLocalRandom.current();
    for (int i = 0; i < text.length; i++) {
      text[i] = (char) ('a' + random.nextInt(26));
    }
    return new String(text);
  }

  private static void patch(HttpConnection connection, long record, String body)
      throws IOException {
    HttpConnection.Response response = connection.send("PATCH",
        "/v1/entities/" + TABLE + "/user" + record, body.getBytes(StandardCharsets.UTF_8));
    if (response.status() != 200) {
      throw new BenchmarkException("a write answered " + response.status() + ": "
          + response.text());
    }
  }

  /** One side of one workload: its rounds' throughputs and latencies per kind. */
  private final class Side {
    final TroupeProcess server;
    /** The replicated side's DCs (whose drain ends each round), or null. */
    final DataCentreSet dcs;
    final List<Double> throughputs = new ArrayList<>();
    final Map<Kind, Histogram> latencies = new EnumMap<>(Kind.class);
    double drainSeconds;

    Side(TroupeProcess server, DataCentreSet dcs) {
      this.server = server;
      this.dcs = dcs;
      for (Kind kind : Kind.values()) {
        latencies.put(kind, new Histogram(3));
      }
    }

    void round(Mix mix, AlternatingComparison.Settings timing, boolean measured,
        ProgressBar progress) throws Exception {
      Session session = new Session(server, mix, timing.workers());
      ClosedLoopLoad.Window window;
      try {
        window = ClosedLoopLoad.run("causal-cost-" + mix.name(), timing.workers(),
            timing.warmup(), timing.measurement(), session, progress);
      } finally {
        session.close();
      }
      if (dcs != null) {
        // The peers apply this round's writes before the next round of either side starts.
        double drained = dcs.awaitApplied("a", DRAIN_TIMEOUT);
        if (measured) {
          drainSeconds = Math.max(drainSeconds, drained);
        }
      }
      if (measured) {
        throughputs.add(window.throughputPerSecond());
        session.latencies.forEach((kind, histograms) ->
            histograms.forEach(latencies.get(kind)::add));
      }
    }
  }

  /** One round's clients: a connection, a key generator and per-kind histograms per worker. */
  private final class Session implements ClosedLoopLoad.Operation {
    final Mix mix;
    final HttpConnection[] connections;
    final ScrambledZipfianGenerator[] keys;
    final Kind[] lastKind;
    final long[] lastNanos;
    final Map<Kind, List<Histogram>> latencies = new EnumMap<>(Kind.class);

    Session(TroupeProcess server, Mix mix, int workers) {
      this.mix = mix;
      connections = new HttpConnection[workers];
      keys = new ScrambledZipfianGenerator[workers];
      lastKind = new Kind[workers];
      lastNanos = new long[workers];
      for (Kind kind : Kind.values()) {
        List<Histogram> perWorker = new ArrayList<>();
        for (int worker = 0; worker < workers; worker++) {
          perWorker.add(new Histogram(3));
        }
        latencies.put(kind, perWorker);
      }
      for (int worker = 0; worker < workers; worker++) {
        connections[worker] = server.connect();
        keys[worker] = new ScrambledZipfianGenerator(records);
      }
    }

    @Override
    public void perform(int worker, long sequence) throws IOException {
      ThreadLocalRandom random = ThreadLocalRandom.current();
      Kind kind = mix.pick(random.nextDouble());
      long record = keys[worker].nextValue();
      long start = System.nanoTime();
      switch (kind) {
        case READ -> read(connections[worker], record);
        case UPDATE -> patch(connections[worker], record, field(random));
        case MESSAGE -> message(connections[worker], keys[worker].nextValue(), random);
      }
      lastNanos[worker] = System.nanoTime() - start;
      lastKind[worker] = kind;
    }

    @Override
    public void counted(int worker) {
      latencies.get(lastKind[worker]).get(worker).recordValue(lastNanos[worker]);
    }

    private void read(HttpConnection connection, long record) throws IOException {
      HttpConnection.Response response =
          connection.get("/v1/entities/" + TABLE + "/user" + record);
      if (response.status() != 200) {
        throw new BenchmarkException("a read answered " + response.status() + ": "
            + response.text());
      }
    }

    /**
     * A message to the entity {@code record}: for now an update of it (see {@link Kind#MESSAGE});
     * a real causal send replaces this.
     */
    private void message(HttpConnection connection, long record, ThreadLocalRandom random)
        throws IOException {
      patch(connection, record, field(random));
    }

    private String field(ThreadLocalRandom random) {
      return "{\"field" + random.nextInt(FIELDS) + "\": \"" + text() + "\"}";
    }

    void close() {
      for (HttpConnection connection : connections) {
        connection.close();
      }
    }
  }

  private static void summarize(BenchReport report, Mix mix, Side replicated, Side alone) {
    Map<String, Side> sides = new LinkedHashMap<>();
    sides.put(mix.name() + "/replicated", replicated);
    sides.put(mix.name() + "/alone", alone);
    sides.forEach((system, side) -> {
      List<Double> sorted = side.throughputs.stream().sorted().toList();
      report.result(system, "throughput_per_second", YcsbBenchmark.median(sorted));
      for (Kind kind : Kind.values()) {
        Histogram histogram = side.latencies.get(kind);
        report.result(system, kind.label() + "_operations", histogram.getTotalCount());
        report.result(system, kind.label() + "_p50_milliseconds", millis(histogram, 50));
        report.result(system, kind.label() + "_p95_milliseconds", millis(histogram, 95));
        report.result(system, kind.label() + "_p99_milliseconds", millis(histogram, 99));
        report.result(system, kind.label() + "_mean_milliseconds",
            histogram.getTotalCount() == 0 ? 0 : histogram.getMean() / 1e6);
      }
      if (side.dcs != null) {
        report.result(system, "peers_drain_seconds_max", side.drainSeconds);
      }
    });
    for (Kind kind : Kind.values()) {
      Histogram with = replicated.latencies.get(kind);
      Histogram without = alone.latencies.get(kind);
      if (with.getTotalCount() == 0 || without.getTotalCount() == 0) {
        continue;
      }
      String name = mix.name() + " " + kind.label() + (kind == Kind.MESSAGE ? " (as update)" : "");
      report.ratio(name + " mean replicated/alone", with.getMean(), without.getMean(), GOAL);
      report.ratio(name + " p50 replicated/alone", millis(with, 50), millis(without, 50), null);
      report.ratio(name + " p95 replicated/alone", millis(with, 95), millis(without, 95), null);
    }
  }

  private static double millis(Histogram histogram, double percentile) {
    return histogram.getTotalCount() == 0 ? 0 : histogram.getValueAtPercentile(percentile) / 1e6;
  }
}
