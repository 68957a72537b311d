package dev.troupe.bench;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Option;

/**
 * What every {@code troupe bench} subcommand shares: run, print the report, optionally write it as
 * JSON. Exit code 0 when the run completed (goals may still be missed: that is a result, printed as
 * MISS), 1 when it found a correctness failure or could not run.
 */
abstract class Benchmark implements Callable<Integer> {
  @Option(names = "--json", paramLabel = "FILE",
      description = "Also write the report as JSON to FILE.")
  Path jsonFile;

  /** Runs the benchmark and returns its report; throws if it could not run at all. */
  abstract BenchReport run() throws Exception;

  /** Called after the report is printed and written; a benchmark may write more files. */
  void afterPrint(BenchReport report) {}

  /** A duration given in (possibly fractional) seconds by the option {@code option}. */
  static Duration duration(double seconds, String option) {
    if (!(seconds >= 0) || Double.isInfinite(seconds)) {
      throw new IllegalArgumentException(option + " must be a non-negative number of seconds");
    }
    return Duration.ofNanos(Math.round(seconds * 1e9));
  }

  @Override
  public final Integer call() throws Exception {
    BenchReport report = run();
    report.print(System.out);
    if (jsonFile != null) {
      report.writeJson(jsonFile);
      System.out.println("report written to " + jsonFile.toAbsolutePath());
    }
    afterPrint(report);
    return report.failed() ? 1 : 0;
  }
}
