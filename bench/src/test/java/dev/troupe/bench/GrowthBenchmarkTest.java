package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertNotEquals;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * {@code bench growth} starts fresh servers per record count, so even its smallest run costs
 * minutes: too long for the suite (its YCSB machinery is {@code YcsbBenchmarkTest}'s). What is
 * cheap is checked here: bad options are refused before anything starts. A tiny run is recorded in
 * docs/BENCHMARKS.md ("Issue 20: larger than memory").
 */
class GrowthBenchmarkTest {
  @Test
  void refusesBadOptionsBeforeStartingAnything() {
    CommandLine command = new CommandLine(new BenchCommand());
    assertNotEquals(0, command.execute("growth", "--records", "0"));
    assertNotEquals(0, command.execute("growth", "--records", "1000", "--threads", "0"));
    assertNotEquals(0, command.execute("growth", "--records", "1000", "--rounds", "0"));
    assertNotEquals(0, command.execute("growth", "--workload", "z"));
  }
}
