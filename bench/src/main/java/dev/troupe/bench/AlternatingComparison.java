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
 * round (A B A B ...), so that whatever else the machine does during the run (other processes,
 * thermal state, page cache) falls on both. Each round opens a fresh session of its system, warms
 * it up, measures, and closes it before the next system runs: only one is under load at a time.
 * One unmeasured round of each system comes first, so that the JIT compiles both code paths before
 * anything is measured; otherwise the first system measured would pay for its compilation alone.
 *
 * <p>Reported per system: the median of the rounds' throughputs and the latency percentiles over
 * every measured operation of every round.
 */
final class AlternatingComparison {
  private AlternatingComparison() {}

  /** One side of the comparison. */
  interface Contender {
    /** Name used in the report, e.g. "engine" or "raw_rocksdb". */
    String name();

    /** Prepares a fresh instance for one round of {@code workers} workers (not measured). */
    Session open(int workers) throws Exception;
  }

  /** One round's instance: performs operations, then is closed. */
  interface Session extends ClosedLoopLoad.Operation, AutoCloseable {
    @Override
    void close();
  }

  /**
   * @param workers concurrent closed-loop workers
   * @param rounds measured rounds per contender, after one unmeasured round each
   * @param warmup unmeasured load at the start of every round
   * @param measurement measured load of every round
   */
  record Settings(int workers, int rounds, Duration warmup, Duration measurement) {
    Settings {
      if (workers < 1 || rounds < 1 || measurement.isZero() || measurement.isNegative()
          || warmup.isNegative()) {
        throw new IllegalArgumentException("need at least one worker, one round and a positive"
            + " measurement time");
      }
    }

    void describe(BenchReport report) {
      report.parameter("threads", workers)
          .parameter("unmeasured_rounds_per_system", 1)
          .parameter("rounds_per_system", rounds)
          .parameter("warmup_seconds", warmup.toMillis() / 1000.0)
          .parameter("seconds_per_round", measurement.toMillis() / 1000.0);
    }
  }

  /** The rounds of one contender. */
  record Outcome(List<Double> throughputs, Histogram latencyNanoseconds) {
    double medianThroughput() {
      List<Double> sorted = throughputs.stream().sorted().toList();
      int middle = sorted.size() / 2;
      return sorted.size() % 2 == 1
          ? sorted.get(middle)
          : (sorted.get(middle - 1) + sorted.get(middle)) / 2;
    }
  }

  /**
   * Runs the rounds and adds per contender {@code throughput_per_second} (median of rounds), each
   * round's throughput, {@code p50_milliseconds}, {@code p99_milliseconds} and the counted
   * operations to {@code report}.
   */
  static Map<String, Outcome> run(String benchmark, Settings settings, List<Contender> contenders,
      BenchReport report) throws Exception {
    Map<String, Outcome> outcomes = new LinkedHashMap<>();
    for (Contender contender : contenders) {
      outcomes.put(contender.name(), new Outcome(new ArrayList<>(), new Histogram(3)));
    }
    long millisPerRound = settings.warmup().toMillis() + settings.measurement().toMillis();
    try (ProgressBar progress = ProgressBars.start(benchmark,
        millisPerRound * (settings.rounds() + 1) * contenders.size(), "s", 1000)) {
      for (int round = 0; round <= settings.rounds(); round++) {
        for (Contender contender : contenders) {
          progress.setExtraMessage(
              contender.name() + (round == 0 ? " warm-up round" : " round " + round));
          ClosedLoopLoad.Window window;
          try (Session session = contender.open(settings.workers())) {
            // The first round only warms up: none of its operations is counted.
            ClosedLoopLoad.Operation load = round > 0 ? session : session::perform;
            window = ClosedLoopLoad.run(benchmark + "-" + contender.name(), settings.workers(),
                settings.warmup(), settings.measurement(), load, progress);
          }
          if (round > 0) {
            Outcome outcome = outcomes.get(contender.name());
            outcome.throughputs().add(window.throughputPerSecond());
            outcome.latencyNanoseconds().add(window.latencyNanoseconds());
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
    });
    return outcomes;
  }
}
