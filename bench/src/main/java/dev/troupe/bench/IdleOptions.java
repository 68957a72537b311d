package dev.troupe.bench;

import picocli.CommandLine.Option;

/** Command-line options of the wait for an idle machine before each measured round ({@link IdleWait}). */
final class IdleOptions {
  @Option(names = "--idle-percent", defaultValue = "80",
      description = "Before each measured round, wait until the machine's CPU is at least this"
          + " many percent idle over one window; 0 waits for nothing (default: ${DEFAULT-VALUE}).")
  double idlePercent;

  @Option(names = "--idle-window-millis", defaultValue = "250",
      description = "How long each measurement of the idle share lasts"
          + " (default: ${DEFAULT-VALUE}).")
  long idleWindowMillis;

  @Option(names = "--idle-max-wait-seconds", defaultValue = "5",
      description = "The longest wait for an idle machine before a round (the machine may be"
          + " shared) (default: ${DEFAULT-VALUE}).")
  double idleMaxWaitSeconds;

  IdleWait.Settings settings() {
    return new IdleWait.Settings(idlePercent, java.time.Duration.ofMillis(idleWindowMillis),
        Benchmark.duration(idleMaxWaitSeconds, "--idle-max-wait-seconds"));
  }
}
