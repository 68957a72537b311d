package dev.troupe.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import me.tongfei.progressbar.ProgressBar;
import org.HdrHistogram.Histogram;

/**
 * Measures a system against its baseline under the same closed-loop load, alternating them round by
 * round, so that whatever else the machine does during the run (other processes, thermal state,
 * page cache) falls on both. Each round opens a fresh session of its system, warms it up, measures,
 * and closes it before the next system runs: only one is under load at a time.
 *
 * <p>Fair measurement (issue 20):
 *
 * <ul>
 *   <li>unmeasured rounds of every system come first ({@link Settings#warmupRounds}, default one),
 *       so that the JIT compiles every code path before anything is measured; otherwise the first
 *       system measured would pay for its compilation alone;
 *   <li>the order rotates every round ({@link #order}: A B, then B A, ...; A B C, B C A, C A B for
 *       three), so no system always runs right after the same other one and inherits its
 *       background work;
 *   <li>before every measured session the harness waits for the machine to go idle ({@link
 *       IdleWait}), measuring the idle share and recording how long it waited;
 *   <li>each side's CPU time during its measured windows ({@link Contender#cpu}) is reported per
 *       operation and per second;
 *   <li>the spread of every side's rounds (min, max, relative standard deviation) is reported,
 *       and {@link #ratio} records a ratio with the spread of its rounds' own ratios.
 * </ul>
 *
 * <p>Reported per system: the median of the rounds' throughputs and the latency percentiles over
 * every measured operation of every round; per round a row of the report's rounds log.
 */
final class AlternatingComparison {
  private AlternatingComparison() {}

  /** One side of the comparison. */
  interface Contender {
    /** Name used in the report, e.g. "engine" or "raw_rocksdb". */
    String name();

    /** Prepares a fresh instance for one round of {@code workers} workers (not measured). */
    Session open(int workers) throws Exception;

    /**
     * The CPU time of what serves this side; by default this JVM, which holds the client and
     * whatever the benchmark embeds.
     */
    default CpuMeter cpu() {
      return CpuMeter.thisJvm("this JVM (the client and what it embeds)");
    }
  }

  /** One round's instance: performs operations, then is closed. */
  interface Session extends ClosedLoopLoad.Operation, AutoCloseable {
    @Override
    void close();
  }

  /**
   * @param workers concurrent closed-loop workers
   * @param rounds measured rounds per contender, after the unmeasured ones
   * @param warmup unmeasured load at the start of every round
   * @param measurement measured load of every round
   * @param warmupRounds unmeasured rounds of every contender first
   * @param idle the wait for an idle machine before every measured session
   */
  record Settings(int workers, int rounds, Duration warmup, Duration measurement,
      int warmupRounds, IdleWait.Settings idle) {
    Settings {
      if (workers < 1 || rounds < 1 || measurement.isZero() || measurement.isNegative()
          || warmup.isNegative() || warmupRounds < 0) {
        throw new IllegalArgumentException("need at least one worker, one round and a positive"
            + " measurement time");
      }
    }

    /** One unmeasured round and no idle wait. */
    Settings(int workers, int rounds, Duration warmup, Duration measurement) {
      this(workers, rounds, warmup, measurement, 1, IdleWait.Settings.NONE);
    }

    void describe(BenchReport report) {
      report.parameter("threads", workers)
          .parameter("unmeasured_rounds_per_system", warmupRounds)
          .parameter("rounds_per_system", rounds)
          .parameter("order", "rotates every round")
          .parameter("warmup_seconds", warmup.toMillis() / 1000.0)
          .parameter("seconds_per_round", measurement.toMillis() / 1000.0);
      idle.describe(report);
    }
  }

  /** The rounds of one contender, in the order they ran. */
  record Outcome(List<Double> throughputs, Histogram latencyNanoseconds, List<Double> cpuSeconds,
      List<Long> operations, List<Double> seconds) {
    Outcome() {
      this(new ArrayList<>(), new Histogram(3), new ArrayList<>(), new ArrayList<>(),
          new ArrayList<>());
    }

    double medianThroughput() {
      return throughputSpread().median();
    }

    Spread throughputSpread() {
      return Spread.of(throughputs);
    }

    /** CPU microseconds per counted operation over every measured round; NaN if not measured. */
    double cpuMicrosecondsPerOperation() {
      long counted = operations.stream().mapToLong(Long::longValue).sum();
      return counted == 0 ? Double.NaN : totalCpuSeconds() * 1e6 / counted;
    }

    /** Cores busy on average during the measured windows (CPU seconds per second). */
    double cpuCores() {
      double measured = seconds.stream().mapToDouble(Double::doubleValue).sum();
      return measured == 0 ? Double.NaN : totalCpuSeconds() / measured;
    }

    private double totalCpuSeconds() {
      return cpuSeconds.stream().mapToDouble(Double::doubleValue).sum();
    }
  }

  /**
   * The order of the contenders in round {@code round} (0 is the first): the list rotated left
   * by {@code round}, so every contender takes every place in turn.
   */
  static <T> List<T> order(List<T> contenders, int round) {
    int size = contenders.size();
    List<T> ordered = new ArrayList<>(size);
    for (int place = 0; place < size; place++) {
      ordered.add(contenders.get((place + round) % size));
    }
    return ordered;
  }

  /**
   * Runs the rounds and adds per contender {@code throughput_per_second} (median of rounds), each
   * round's throughput, the rounds' spread, {@code p50_milliseconds}, {@code p99_milliseconds}, the
   * counted operations and the CPU figures to {@code report}, and a row per measured round to its
   * rounds log.
   */
  static Map<String, Outcome> run(String benchmark, Settings settings, List<Contender> contenders,
      BenchReport report) throws Exception {
    return run(benchmark, settings, contenders, report,
        IdleWait.onThisMachine(settings.idle()));
  }

  /** As {@link #run(String, Settings, List, BenchReport)}, waiting with {@code idleWait}. */
  static Map<String, Outcome> run(String benchmark, Settings settings, List<Contender> contenders,
      BenchReport report, IdleWait idleWait) throws Exception {
    Map<String, Outcome> outcomes = new LinkedHashMap<>();
    Map<String, Double> idleWaitSeconds = new LinkedHashMap<>();
    Map<String, Object> cpuMeasured = new LinkedHashMap<>();
    for (Contender contender : contenders) {
      outcomes.put(contender.name(), new Outcome());
      idleWaitSeconds.put(contender.name(), 0.0);
      cpuMeasured.put(contender.name(), contender.cpu().describe());
    }
    report.parameter("cpu_measured", cpuMeasured);
    int allRounds = settings.warmupRounds() + settings.rounds();
    long millisPerRound = settings.warmup().toMillis() + settings.measurement().toMillis();
    try (ProgressBar progress = ProgressBars.start(benchmark,
        millisPerRound * allRounds * contenders.size(), "s", 1000)) {
      for (int round = 0; round < allRounds; round++) {
        boolean measured = round >= settings.warmupRounds();
        int measuredRound = round - settings.warmupRounds() + 1;
        List<Contender> ordered = order(contenders, round);
        for (int place = 0; place < ordered.size(); place++) {
          Contender contender = ordered.get(place);
          IdleWait.Outcome idle = IdleWait.Outcome.SKIPPED;
          if (measured) {
            progress.setExtraMessage(contender.name() + " round " + measuredRound
                + ": waiting for an idle machine");
            idle = idleWait.await();
          }
          progress.setExtraMessage(contender.name()
              + (measured ? " round " + measuredRound : " warm-up round " + (round + 1))
              + (Double.isNaN(idle.idlePercent()) ? ""
                  : String.format(java.util.Locale.ROOT, " (waited %.1f s, idle %.0f%%)",
                      idle.waitedSeconds(), idle.idlePercent())));
          ClosedLoopLoad.Window window;
          try (Session session = contender.open(settings.workers())) {
            // Unmeasured rounds only warm up: none of their operations is counted.
            ClosedLoopLoad.Operation load = measured ? session : session::perform;
            window = ClosedLoopLoad.run(benchmark + "-" + contender.name(), settings.workers(),
                settings.warmup(), settings.measurement(), load, progress,
                measured ? contender.cpu() : CpuMeter.NONE);
          }
          if (measured) {
            Outcome outcome = outcomes.get(contender.name());
            outcome.throughputs().add(window.throughputPerSecond());
            outcome.latencyNanoseconds().add(window.latencyNanoseconds());
            outcome.cpuSeconds().add(window.cpuSeconds());
            outcome.operations().add(window.operations());
            outcome.seconds().add(window.seconds());
            idleWaitSeconds.merge(contender.name(), idle.waitedSeconds(), Double::sum);
            report.round(roundRow(measuredRound, place + 1, contender.name(), idle,
                window.throughputPerSecond(), window.cpuSeconds(), window.operations(),
                window.seconds()));
          }
        }
      }
    }
    outcomes.forEach((name, outcome) -> {
      report.result(name, "throughput_per_second", outcome.medianThroughput());
      for (int round = 0; round < outcome.throughputs().size(); round++) {
        report.result(name, "round_" + (round + 1) + "_per_second",
            outcome.throughputs().get(round));
      }
      Histogram latency = outcome.latencyNanoseconds();
      report.result(name, "p50_milliseconds", latency.getValueAtPercentile(50) / 1e6);
      report.result(name, "p99_milliseconds", latency.getValueAtPercentile(99) / 1e6);
      report.result(name, "operations", latency.getTotalCount());
      spreadAndCpu(report, name, outcome.throughputSpread(),
          outcome.cpuMicrosecondsPerOperation(), outcome.cpuCores(), idleWaitSeconds.get(name));
    });
    return outcomes;
  }

  /** One row of the rounds log. */
  static Map<String, Object> roundRow(int round, int place, String system, IdleWait.Outcome idle,
      double throughputPerSecond, double cpuSeconds, long operations, double seconds) {
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("round", round);
    row.put("place", place);
    row.put("system", system);
    row.put("idle_wait_seconds", idle.waitedSeconds());
    row.put("idle_percent", idle.idlePercent());
    row.put("throughput_per_second", throughputPerSecond);
    row.put("cpu_cores", cpuSeconds / seconds);
    row.put("cpu_microseconds_per_operation",
        operations == 0 ? Double.NaN : cpuSeconds * 1e6 / operations);
    return row;
  }

  /**
   * Adds a side's spread over its rounds ({@code throughput_min_per_second}, {@code
   * throughput_max_per_second}, {@code throughput_rsd_percent}), its CPU ({@code
   * cpu_microseconds_per_operation}, {@code cpu_cores}; left out when not measured) and the
   * seconds it waited for an idle machine.
   */
  static void spreadAndCpu(BenchReport report, String system, Spread throughput,
      double cpuMicrosecondsPerOperation, double cpuCores, double idleWaitSeconds) {
    report.result(system, "throughput_min_per_second", throughput.min());
    report.result(system, "throughput_max_per_second", throughput.max());
    report.result(system, "throughput_rsd_percent", throughput.relativeStandardDeviationPercent());
    if (!Double.isNaN(cpuMicrosecondsPerOperation)) {
      report.result(system, "cpu_microseconds_per_operation", cpuMicrosecondsPerOperation);
      report.result(system, "cpu_cores", cpuCores);
    }
    report.result(system, "idle_wait_seconds", idleWaitSeconds);
  }

  /**
   * Records the ratio of two sides' median throughputs, scaled by {@code scale} (e.g. the share
   * of transactions that completed on each side), with the spread of the rounds' own ratios.
   */
  static double ratio(BenchReport report, String name, Outcome numerator, Outcome denominator,
      double scale, Goal goal) {
    Spread spread = Spread.ofRatios(numerator.throughputs(), denominator.throughputs())
        .scaled(scale);
    return report.ratio(name, numerator.medianThroughput() * scale,
        denominator.medianThroughput(), goal, spread);
  }
}
