package dev.troupe.bench;

import dev.troupe.model.Json;
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
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
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
 * centre name (one process, no peers: its log is only read by its own message delivery, nothing is
 * pulled).
 *
 * <p><b>Workloads</b> (TTCC's YCSB+MT): A = 90 % reads, 5 % updates, 5 % messages; B = 5 %
 * reads, 90 % updates, 5 % messages; zipfian keys over {@code --records} YCSB records (10 fields
 * of 100 bytes) of the declared type {@value #TABLE}; a read reads a whole record, an update writes
 * one field. A <b>message</b> is a causal message (docs/ARCHITECTURE.md, "Causal messages"): the
 * action {@code message} of one record, whose turn writes nothing and sends its argument to the
 * action {@code receive} of another record, which writes it into {@code field0} in a turn of its
 * own, later. Its response time is the sending request's (the sender's transaction commits with
 * the message in it; delivery follows), the figure TTCC reports as message response time.
 *
 * <p><b>Delivery</b>, besides: a probe client (one of its own, not in the mix) sends one message
 * every {@value #PROBE_INTERVAL_MILLIS} ms to a record outside the YCSB keys and polls the
 * receiver until its effect is visible; the time from sending to seeing it is reported as {@code
 * delivery} (at most {@value #PROBE_POLL_MILLIS} ms coarser than the truth, and bounded below by
 * the delivery's poll interval, {@code troupe.messages.poll-interval-millis}). Every round ends
 * once every message sent in it was delivered, so no round pays for the previous one's deliveries.
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
  static final String MESSAGES_NOTE = "a message is a causal send: the action 'message' of one"
      + " record sends to the action 'receive' of another, which writes field0; its response time"
      + " is the sending request's; delivery (sent to visible) is measured by a probe";
  private static final String TABLE = "usertable";
  /** The probe's records, outside the YCSB keys ({@code user<n>}). */
  private static final String PROBE_SENDER = "probe-sender";
  private static final String PROBE_RECEIVER = "probe-receiver";
  /** How often the probe sends a message: rare enough to add no load that matters. */
  static final long PROBE_INTERVAL_MILLIS = 100;
  /** How often the probe looks whether its message arrived. */
  static final long PROBE_POLL_MILLIS = 1;
  private static final int FIELDS = 10;
  private static final int FIELD_BYTES = 100;
  private static final int LOAD_THREADS = 8;
  private static final Duration START_TIMEOUT = Duration.ofSeconds(120);
  private static final Duration DRAIN_TIMEOUT = Duration.ofSeconds(300);
  private static final long DELIVERY_POLL_MILLIS = 20;
  /**
   * The records' type: ten string fields, and the message's two ends. {@code message} writes
   * nothing (its transaction holds only the message); {@code receive} writes one field.
   */
  static final String TYPE_DECLARATION = typeDeclaration();

  /** An operation of the workload. */
  enum Kind {
    READ,
    UPDATE,
    /** A causal message to another record: the sending request's response time. */
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
      description = "YCSB+MT workloads, comma-separated: a (90 %% reads, 5 %% updates, 5 %%"
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
    if (records < 2 || dataCentres < 2) {
      throw new IllegalArgumentException("need --records >= 2 (a message goes to another record)"
          + " and --dcs >= 2");
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
    try (TemporaryDirectory work = TemporaryDirectory.create("causal-cost");
        TroupeProcess alone = TroupeProcess.serve(work.resolve("alone"),
            work.resolve("alone.log"), serverJvmOptions, settingArguments(), List.of());
        DataCentreSet dcs = DataCentreSet.start(work, dataCentres, rttMillis / 2, settings,
            serverJvmOptions, peerNiceness)) {
      alone.awaitHealthy(START_TIMEOUT);
      TroupeProcess replicated = dcs.process("a");
      // Declared in every DC: a declaration replicates but reaches a running registry only after
      // a restart (docs/ARCHITECTURE.md, "The replication shell").
      declare(alone);
      for (String name : dcs.names()) {
        declare(dcs.process(name));
      }
      load("alone", alone);
      load("replicated", replicated);
      report.result("load", "replicated_drain_seconds", dcs.awaitApplied("a", DRAIN_TIMEOUT));
      Map<String, Side> sides = new LinkedHashMap<>();
      // Messages sent to each server so far, every workload's: what its delivery count must reach.
      AtomicLong sentToReplicated = new AtomicLong();
      AtomicLong sentToAlone = new AtomicLong();
      for (Mix mix : mixes) {
        sides.put(mix.name() + "/replicated", new Side(replicated, dcs, sentToReplicated));
        sides.put(mix.name() + "/alone", new Side(alone, null, sentToAlone));
        long millisPerRound = timing.warmup().toMillis() + timing.measurement().toMillis();
        int allRounds = timing.warmupRounds() + timing.rounds();
        IdleWait idleWait = IdleWait.onThisMachine(timing.idle());
        try (ProgressBar progress = ProgressBars.start("causal-cost " + mix.name(),
            millisPerRound * allRounds * 2, "s", 1000)) {
          for (int round = 0; round < allRounds; round++) {
            boolean measured = round >= timing.warmupRounds();
            // The order rotates every round (issue 20): neither side always follows the other.
            for (String side : AlternatingComparison.order(List.of("replicated", "alone"),
                round)) {
              if (measured) {
                progress.setExtraMessage(side + ": waiting for an idle machine");
                idleWait.await();
              }
              progress.setExtraMessage(side + (measured
                  ? " round " + (round - timing.warmupRounds() + 1) : " warm-up round"));
              sides.get(mix.name() + "/" + side).round(mix, timing, measured, progress);
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

  private static String typeDeclaration() {
    StringBuilder keys = new StringBuilder();
    for (int field = 0; field < FIELDS; field++) {
      keys.append(field == 0 ? "" : ", ").append("\"field").append(field)
          .append("\": {\"kind\": \"register\", \"default\": \"\"}");
    }
    return "{\"keys\": {" + keys + "}, \"actions\": {"
        + "\"message\": {\"params\": {\"to\": \"string\", \"value\": \"string\"},"
        + " \"send\": [{\"entity\": \"" + TABLE + "/{to}\", \"action\": \"receive\","
        + " \"args\": {\"value\": \"value\"}}]},"
        + "\"receive\": {\"params\": {\"value\": \"string\"},"
        + " \"effect\": {\"field0\": \"value\"}}}}";
  }

  private static void declare(TroupeProcess server) throws IOException {
    try (HttpConnection connection = server.connect()) {
      HttpConnection.Response response = connection.put("/v1/types/" + TABLE,
          TYPE_DECLARATION.getBytes(StandardCharsets.UTF_8));
      if (response.status() != 200) {
        throw new BenchmarkException("declaring " + TABLE + " answered " + response.status()
            + ": " + response.text());
      }
    }
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
    /** Messages sent to {@link #server} so far (shared by the workloads on it). */
    final AtomicLong sent;
    final List<Double> throughputs = new ArrayList<>();
    final Map<Kind, Histogram> latencies = new EnumMap<>(Kind.class);
    /** The probe's messages, from sending to the receiver's effect visible. */
    final Histogram delivery = new Histogram(3);
    double drainSeconds;
    double deliveryDrainSeconds;

    Side(TroupeProcess server, DataCentreSet dcs, AtomicLong sent) {
      this.server = server;
      this.dcs = dcs;
      this.sent = sent;
      for (Kind kind : Kind.values()) {
        latencies.put(kind, new Histogram(3));
      }
    }

    void round(Mix mix, AlternatingComparison.Settings timing, boolean measured,
        ProgressBar progress) throws Exception {
      Session session = new Session(server, mix, timing.workers(), sent);
      ClosedLoopLoad.Window window;
      try (DeliveryProbe probe = DeliveryProbe.start(server, timing.warmup(),
          timing.measurement(), sent)) {
        try {
          window = ClosedLoopLoad.run("causal-cost-" + mix.name(), timing.workers(),
              timing.warmup(), timing.measurement(), session, progress);
        } finally {
          session.close();
        }
        Histogram probed = probe.finish();
        if (measured) {
          delivery.add(probed);
        }
      }
      // Every message of this round delivered before the next round of either side starts (and,
      // replicated, before the drain below, which then includes the receiving turns).
      double delivered = awaitDelivered(server, sent.get());
      if (measured) {
        deliveryDrainSeconds = Math.max(deliveryDrainSeconds, delivered);
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

  /**
   * Waits until {@code server} has delivered {@code sent} messages; the seconds it took.
   *
   * @throws BenchmarkException if a message failed (its receiving action did not run: the figures
   *     would not be those of a message) or they are not delivered within {@link #DRAIN_TIMEOUT}
   */
  private static double awaitDelivered(TroupeProcess server, long sent) throws Exception {
    long start = System.nanoTime();
    long deadline = start + DRAIN_TIMEOUT.toNanos();
    try (HttpConnection connection = server.connect()) {
      while (true) {
        long delivered = 0;
        long failed = 0;
        HttpConnection.Response metrics = connection.get("/metrics");
        for (String line : metrics.text().split("\n")) {
          if (line.startsWith("troupe_messages_delivered_total ")) {
            delivered = (long) Double.parseDouble(line.substring(line.indexOf(' ') + 1).trim());
          } else if (line.startsWith("troupe_messages_failed_total{")) {
            failed += (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1).trim());
          }
        }
        if (failed > 0) {
          throw new BenchmarkException(failed + " messages failed at " + server.port()
              + " (troupe_messages_failed_total)");
        }
        if (delivered >= sent) {
          return (System.nanoTime() - start) / 1e9;
        }
        if (System.nanoTime() > deadline) {
          throw new BenchmarkException("only " + delivered + " of " + sent
              + " messages delivered within " + DRAIN_TIMEOUT.toSeconds() + " s");
        }
        Thread.sleep(DELIVERY_POLL_MILLIS);
      }
    }
  }

  /**
   * One client apart from the mix: every {@link #PROBE_INTERVAL_MILLIS} ms it sends a message to
   * {@link #PROBE_RECEIVER} and polls it until the message's value shows, recording the time from
   * sending to seeing it when both lie in the measurement window.
   */
  private static final class DeliveryProbe implements AutoCloseable {
    private final HttpConnection connection;
    private final long windowStartNanos;
    private final long windowEndNanos;
    private final AtomicLong sent;
    private final Histogram delivery = new Histogram(3);
    private final AtomicReference<Exception> failure = new AtomicReference<>();
    private volatile boolean stopped;
    private Thread thread;

    private DeliveryProbe(TroupeProcess server, Duration warmup, Duration measurement,
        AtomicLong sent) {
      this.connection = server.connect();
      this.windowStartNanos = System.nanoTime() + warmup.toNanos();
      this.windowEndNanos = windowStartNanos + measurement.toNanos();
      this.sent = sent;
    }

    static DeliveryProbe start(TroupeProcess server, Duration warmup, Duration measurement,
        AtomicLong sent) {
      DeliveryProbe probe = new DeliveryProbe(server, warmup, measurement, sent);
      probe.thread = Thread.ofPlatform().name("causal-cost-probe").start(probe::run);
      return probe;
    }

    private void run() {
      long sequence = 0;
      try {
        while (!stopped && System.nanoTime() < windowEndNanos) {
          String value = "probe-" + System.nanoTime() + "-" + sequence++;
          long start = System.nanoTime();
          send(connection, PROBE_SENDER, PROBE_RECEIVER, value);
          sent.incrementAndGet();
          while (!value.equals(field0(PROBE_RECEIVER))) {
            if (stopped || System.nanoTime() - start > DRAIN_TIMEOUT.toNanos()) {
              return;
            }
            Thread.sleep(PROBE_POLL_MILLIS);
          }
          long end = System.nanoTime();
          if (start >= windowStartNanos && end <= windowEndNanos) {
            delivery.recordValue(end - start);
          }
          Thread.sleep(Math.max(0, PROBE_INTERVAL_MILLIS - (end - start) / 1_000_000));
        }
      } catch (Exception e) {
        failure.set(e);
      }
    }

    private String field0(String record) throws IOException {
      HttpConnection.Response response =
          connection.get("/v1/entities/" + TABLE + "/" + record + "/keys/field0");
      if (response.status() == 404) {
        return "";
      }
      if (response.status() != 200) {
        throw new BenchmarkException("the probe's read answered " + response.status() + ": "
            + response.text());
      }
      return Json.parse(response.body()).path("value").asText();
    }

    /** Waits for the probe to stop (at the end of the window); what it measured. */
    Histogram finish() throws InterruptedException {
      thread.join(DRAIN_TIMEOUT.toMillis());
      if (failure.get() != null) {
        throw new BenchmarkException("the delivery probe failed: " + failure.get().getMessage(),
            failure.get());
      }
      return delivery;
    }

    @Override
    public void close() throws InterruptedException {
      stopped = true;
      thread.join();
      connection.close();
    }
  }

  /** Sends {@code value} from the record {@code sender} to the record {@code receiver}. */
  private static void send(HttpConnection connection, String sender, String receiver,
      String value) throws IOException {
    HttpConnection.Response response = connection.send("POST",
        "/v1/entities/" + TABLE + "/" + sender + "/actions/message",
        ("{\"to\": \"" + receiver + "\", \"value\": \"" + value + "\"}")
            .getBytes(StandardCharsets.UTF_8));
    if (response.status() != 200) {
      throw new BenchmarkException("a message answered " + response.status() + ": "
          + response.text());
    }
  }

  /** One round's clients: a connection, a key generator and per-kind histograms per worker. */
  private final class Session implements ClosedLoopLoad.Operation {
    final Mix mix;
    final AtomicLong sent;
    final HttpConnection[] connections;
    final ScrambledZipfianGenerator[] keys;
    final Kind[] lastKind;
    final long[] lastNanos;
    final Map<Kind, List<Histogram>> latencies = new EnumMap<>(Kind.class);

    Session(TroupeProcess server, Mix mix, int workers, AtomicLong sent) {
      this.mix = mix;
      this.sent = sent;
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
        case MESSAGE -> message(connections[worker], record, keys[worker].nextValue());
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

    /** A causal message from {@code sender} to {@code receiver} (another record if the same). */
    private void message(HttpConnection connection, long sender, long receiver)
        throws IOException {
      long to = receiver == sender ? (receiver + 1) % records : receiver;
      send(connection, "user" + sender, "user" + to, text());
      sent.incrementAndGet();
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
      report.result(system, "delivery_operations", side.delivery.getTotalCount());
      report.result(system, "delivery_p50_milliseconds", millis(side.delivery, 50));
      report.result(system, "delivery_p95_milliseconds", millis(side.delivery, 95));
      report.result(system, "delivery_mean_milliseconds",
          side.delivery.getTotalCount() == 0 ? 0 : side.delivery.getMean() / 1e6);
      report.result(system, "messages_drain_seconds_max", side.deliveryDrainSeconds);
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
      String name = mix.name() + " " + kind.label();
      report.ratio(name + " mean replicated/alone", with.getMean(), without.getMean(), GOAL);
      report.ratio(name + " p50 replicated/alone", millis(with, 50), millis(without, 50), null);
      report.ratio(name + " p95 replicated/alone", millis(with, 95), millis(without, 95), null);
    }
    // Delivery end to end: no goal (TTCC compares the sending request's time), for the record.
    if (replicated.delivery.getTotalCount() > 0 && alone.delivery.getTotalCount() > 0) {
      String name = mix.name() + " delivery";
      report.ratio(name + " mean replicated/alone", replicated.delivery.getMean(),
          alone.delivery.getMean(), null);
      report.ratio(name + " p95 replicated/alone", millis(replicated.delivery, 95),
          millis(alone.delivery, 95), null);
    }
  }

  private static double millis(Histogram histogram, double percentile) {
    return histogram.getTotalCount() == 0 ? 0 : histogram.getValueAtPercentile(percentile) / 1e6;
  }
}
