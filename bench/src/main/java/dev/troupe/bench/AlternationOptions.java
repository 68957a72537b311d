package dev.troupe.bench;

import picocli.CommandLine.Option;

/**
 * Command-line options of every benchmark that alternates a system and its baseline (picocli
 * mixin): how long each round is and how many rounds each side gets.
 */
final class AlternationOptions {
  @Option(names = "--seconds", defaultValue = "10",
      description = "Measured seconds per round (default: ${DEFAULT-VALUE}).")
  double seconds;

  @Option(names = "--warmup-seconds", defaultValue = "2",
      description = "Unmeasured seconds at the start of every round (default: ${DEFAULT-VALUE}).")
  double warmupSeconds;

  @Option(names = "--rounds", defaultValue = "2",
      description = "Measured rounds per side, alternating the system and its baseline, after one"
          + " unmeasured round each (default: ${DEFAULT-VALUE}).")
  int rounds;

  /** The comparison's settings for {@code workers} concurrent workers. */
  AlternatingComparison.Settings settings(int workers) {
    return new AlternatingComparison.Settings(workers, rounds,
        Benchmark.duration(warmupSeconds, "--warmup-seconds"),
        Benchmark.duration(seconds, "--seconds"));
  }
}
