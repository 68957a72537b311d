package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code troupe bench smallbank} end to end, small: every Troupe contender and a real PostgreSQL
 * (started and stopped by the command), both mixes, the money checks and the HTML report.
 */
class SmallBankBenchmarkTest {
  @TempDir Path directory;

  @Test
  void runsBothMixesOnEveryContenderAndChecksTheMoney() throws Exception {
    Path reportDirectory = directory.resolve("report");
    JsonNode report = BenchmarkRuns.run(directory, "smallbank", "--branches", "8",
        "--customers-per-branch", "10", "--actor-skew", "25", "--threads", "8", "--seconds",
        "0.5", "--warmup-seconds", "0.2", "--rounds", "1", "--idle-window-millis", "10", "--idle-max-wait-seconds", "0", "--report",
        reportDirectory.toString());
    for (String mix : new String[] {"multitransfer", "smallbank"}) {
      for (String target : SmallBankBenchmark.ALL_TARGETS) {
        BenchmarkRuns.assertPositiveResults(report, mix + "/" + target, "completed_per_second",
            "committed", "p50_milliseconds", "p99_milliseconds");
      }
      assertTrue(report.path("ratios").has(mix + ": keys / serial, planned"), report.toString());
      assertTrue(report.path("ratios").has(mix + ": keys / serial, dynamic"), report.toString());
      // The money check ran for every system (a failure would have failed the run).
      assertTrue(report.path("ratios").has(mix + ": troupe over REST (rest-keys-planned) /"
          + " postgres"), report.toString());
      assertTrue(report.path("ratio_spreads").has(mix + ": troupe embedded (keys-planned) /"
          + " postgres"), report.toString());
      for (String target : new String[] {"postgres", "rest-keys-planned", "keys-planned"}) {
        BenchmarkRuns.assertPositiveResults(report, mix + "/" + target,
            "cpu_microseconds_per_operation", "throughput_min_per_second");
      }
      for (String system : new String[] {"troupe-keys", "troupe-serial", "postgres",
          "troupe-rest"}) {
        assertTrue(report.path("results").path(system).path("money_total_after_" + mix)
            .asLong() > 0, system + " " + mix);
      }
    }
    // MultiTransfer conserves money exactly.
    for (String system : new String[] {"postgres", "troupe-rest"}) {
      assertEquals(8 * 10 * 2 * SmallBankBenchmark.OPENING_BALANCE,
          report.path("results").path(system).path("money_total_after_multitransfer")
              .asLong(), system);
    }
    BenchmarkRuns.assertPositiveResults(report, "smallbank/rest-keys-planned",
        "SendPayment_p50_milliseconds", "Amalgamate_p50_milliseconds", "Balance_p99_milliseconds");
    BenchmarkRuns.assertPositiveResults(report, "smallbank/keys-planned",
        "SendPayment_p50_milliseconds", "Amalgamate_p50_milliseconds", "Balance_p99_milliseconds");
    assertTrue(Files.size(reportDirectory.resolve("index.html")) > 0);
    assertTrue(Files.size(reportDirectory.resolve("throughput.png")) > 0);
    assertTrue(Files.size(reportDirectory.resolve("latency-smallbank.png")) > 0);
  }

  @Test
  void refusesUnknownMixesTargetsAndShapes() {
    CommandLine command = new CommandLine(new BenchCommand());
    assertNotEquals(0, command.execute("smallbank", "--mix", "tpcc"));
    assertNotEquals(0, command.execute("smallbank", "--targets", "mysql"));
    assertNotEquals(0, command.execute("smallbank", "--actor-skew", "0"));
    assertNotEquals(0, command.execute("smallbank", "--branches", "3"));
  }
}
