package dev.troupe.bench;

import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Command-line options of every benchmark that alternates a system and its baseline (picocli
 * mixin): how long each round is, how many rounds each side gets, and how long to wait for an
 * idle machine before each measured round.
 */
final class AlternationOptions {
  @Option(names = "--seconds", defaultValue = "10",
      description = "Measured seconds per round (default: ${DEFAULT-VALUE}).")
  double seconds;

  @Option(names = "--warmup-seconds", defaultValue = "2",
      description = "Unmeasured seconds at the start of every round (default: ${DEFAULT-VALUE}).")
  double warmupSeconds;

  @Option(names = "--rounds", defaultValue = "5",
      description = "Measured rounds per side, the order of the sides rotating every round,"
          + " after the unmeasured rounds (default: ${DEFAULT-VALUE}).")
  int rounds;

  @Option(names = "--warmup-rounds", defaultValue = "1",
      description = "Unmeasured rounds of every side first (default: ${DEFAULT-VALUE}).")
  int warmupRounds;

  @Mixin IdleOptions idle;

  /** The comparison's settings for {@code workers} concurrent workers. */
  AlternatingComparison.Settings settings(int workers) {
    return new AlternatingComparison.Settings(workers, rounds,
        Benchmark.duration(warmupSeconds, "--warmup-seconds"),
        Benchmark.duration(seconds, "--seconds"), warmupRounds, idle.settings());
  }
}
