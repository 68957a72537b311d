package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The help of every benchmark renders as written (a bare '%' once broke SmallBank's). */
class BenchCommandTest {
  @Test
  void everyBenchmarksHelpRendersWithoutAFormattingWarning() {
    PrintStream standardError = System.err;
    ByteArrayOutputStream warnings = new ByteArrayOutputStream();
    List<String> usages = new ArrayList<>();
    try {
      System.setErr(new PrintStream(warnings, true, StandardCharsets.UTF_8));
      CommandLine bench = new CommandLine(new BenchCommand());
      usages.add(bench.getUsageMessage(CommandLine.Help.Ansi.OFF));
      for (CommandLine benchmark : bench.getSubcommands().values()) {
        usages.add(benchmark.getUsageMessage(CommandLine.Help.Ansi.OFF));
      }
    } finally {
      System.setErr(standardError);
    }
    String printed = warnings.toString(StandardCharsets.UTF_8);
    assertEquals("", printed, "picocli warned while rendering the benchmarks' help");
    assertTrue(usages.size() > 10, "every benchmark's help was rendered");
    for (String usage : usages) {
      assertFalse(usage.contains("%n"), "an unformatted help text: " + usage);
    }
  }
}
