package dev.troupe.bench;

import java.nio.file.Path;
import picocli.CommandLine.Option;

/**
 * The {@code --report DIRECTORY} option of the benchmarks that draw charts (picocli mixin): writes
 * {@code report.json}, the PNG charts and {@code index.html} with {@link HtmlReport}.
 */
final class HtmlReportOption {
  @Option(names = "--report", paramLabel = "DIRECTORY",
      description = "Also write report.json, charts (PNG) and index.html to DIRECTORY.")
  Path directory;

  /** Writes the report's files if the option was given, and says where. */
  void write(BenchReport report, HtmlReport.Layout layout) {
    if (directory != null) {
      HtmlReport.write(directory, report.toJson(), layout);
      System.out.println("report written to " + directory.resolve("index.html").toAbsolutePath());
    }
  }
}
