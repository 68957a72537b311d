package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code troupe bench bank} end to end, small: both policies on a contended bank. */
class BankBenchmarkTest {
  @TempDir Path directory;

  @Test
  void comparesPsacWithTwoPhaseCommitAndChecksTheMoney() throws Exception {
    java.nio.file.Path reportDirectory = directory.resolve("report");
    JsonNode report = BenchmarkRuns.run(directory, "bank", "--scenario", "sync1000,nosync",
        "--accounts", "30", "--threads", "16", "--seconds", "0.5", "--warmup-seconds", "0.2",
        "--rounds", "1", "--idle-window-millis", "10", "--idle-max-wait-seconds", "0", "--report", reportDirectory.toString());
    assertTrue(java.nio.file.Files.size(reportDirectory.resolve("throughput.png")) > 0);
    assertTrue(java.nio.file.Files.size(reportDirectory.resolve("latency-sync1000.png")) > 0);
    assertTrue(java.nio.file.Files.size(reportDirectory.resolve("index.html")) > 0);
    for (String system : new String[] {"sync1000/psac", "sync1000/2pc"}) {
      BenchmarkRuns.assertPositiveResults(report, system, "throughput_per_second",
          "committed_per_second", "p50_milliseconds", "p99_milliseconds");
      assertEquals(30 * 1_000_000L,
          report.path("results").path(system).path("money_total").asLong(-1), system);
    }
    BenchmarkRuns.assertPositiveResults(report, "nosync/psac", "committed_per_second",
        "transaction_p99_milliseconds");
    assertTrue(report.path("ratios").has("psac / 2pc committed throughput, sync1000"),
        report.toString());
    assertTrue(report.path("ratios").has("psac / 2pc committed throughput, nosync"),
        report.toString());
    // Each ratio with the spread of its rounds' own ratios (one round here).
    assertEquals(1, report.path("ratio_spreads").path("psac / 2pc committed throughput, sync1000")
        .path("rounds").asInt(), report.toString());
    JsonNode twoPhase = report.path("results").path("sync1000/2pc");
    assertTrue(twoPhase.path("psac_delays").asLong() > 0,
        "30 accounts and 16 clients contend under plain 2PC: planned bookings wait");
    assertEquals(0, twoPhase.path("wait_die_retries").asLong(-1),
        "planned bookings (the default mode) never die");
  }

  @Test
  void theHotScenarioBooksBetweenTenAccountsUnderTheContendedGoal() {
    assertEquals(10, BankBenchmark.accountsOf("sync10"));
    assertEquals(1_000, BankBenchmark.accountsOf("sync1000"));
    assertEquals(BankBenchmark.CONTENDED_GOAL, BankBenchmark.goalOf("sync10"));
    assertEquals(BankBenchmark.CONTENDED_GOAL, BankBenchmark.goalOf("sync1000"));
    assertEquals(BankBenchmark.UNCONTENDED_GOAL, BankBenchmark.goalOf("sync"));
  }

  @Test
  void refusesUnknownScenariosAndPolicies() {
    CommandLine command = new CommandLine(new BenchCommand());
    assertNotEquals(0, command.execute("bank", "--scenario", "sync5"));
    assertNotEquals(0, command.execute("bank", "--policy", "3pc"));
  }
}
