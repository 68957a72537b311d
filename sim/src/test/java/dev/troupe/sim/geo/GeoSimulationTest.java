package dev.troupe.sim.geo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Several simulated data centres under faults: every checker passes, and seeds replay. */
class GeoSimulationTest {
  private static void passes(GeoOptions options, int seeds) {
    List<String> failures = new ArrayList<>();
    for (long seed = 1; seed <= seeds; seed++) {
      GeoSimulation.Result result = GeoSimulation.run(seed, options);
      if (!result.passed()) {
        failures.add(result.summary() + ": " + result.failure() + "\n" + result.trace());
      }
    }
    assertTrue(failures.isEmpty(), failures.size() + " seeds failed; first: "
        + (failures.isEmpty() ? "" : failures.get(0)));
  }

  @Test
  void threeDataCentresPassEveryCheck() {
    passes(GeoOptions.DEFAULTS, 200);
  }

  @Test
  void twoAndFiveDataCentresPassEveryCheck() {
    passes(GeoOptions.DEFAULTS.withDataCentres(2), 40);
    passes(GeoOptions.DEFAULTS.withDataCentres(5), 30);
  }

  @Test
  void contendedRegistersOnOneClockConverge() {
    passes(GeoOptions.DEFAULTS.withContention(2, 3), 30);
  }

  @Test
  void aSeedReplaysExactly() {
    GeoSimulation.Result first = GeoSimulation.run(7, GeoOptions.DEFAULTS);
    GeoSimulation.Result second = GeoSimulation.run(7, GeoOptions.DEFAULTS);
    assertEquals(first.summary(), second.summary());
    assertEquals(PlumeHistory.format(first.history()), PlumeHistory.format(second.history()));
  }

  /** The runs exercise batched application: applications hold more transactions than their count. */
  @Test
  void remoteTransactionsAreAppliedInBatches() {
    long applications = 0;
    long transactions = 0;
    for (long seed = 1; seed <= 10; seed++) {
      java.util.regex.Matcher matcher = java.util.regex.Pattern.compile(
          "(\\d+) remote applications of (\\d+) transactions")
          .matcher(GeoSimulation.run(seed, GeoOptions.DEFAULTS).summary());
      assertTrue(matcher.find());
      applications += Long.parseLong(matcher.group(1));
      transactions += Long.parseLong(matcher.group(2));
    }
    System.out.println("batched application: " + transactions + " remote transactions in "
        + applications + " applications over seeds 1-10");
    assertTrue(transactions > applications * 11 / 10, transactions + " transactions in "
        + applications + " applications");
  }
}
