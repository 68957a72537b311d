package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Json;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import picocli.CommandLine;

/** Runs a benchmark through its command line, as {@code troupe bench} does, and checks the JSON. */
final class BenchmarkRuns {
  private BenchmarkRuns() {}

  /**
   * Runs {@code troupe bench ARGUMENTS --json FILE}, asserts it exited 0 and wrote a report with
   * the benchmark's name, results, and only positive finite ratios; returns the report.
   */
  static JsonNode run(Path directory, String... arguments) throws IOException {
    Path json = directory.resolve(arguments[0] + ".json");
    List<String> all = new ArrayList<>(List.of(arguments));
    all.add("--json");
    all.add(json.toString());
    int exitCode = new CommandLine(new BenchCommand()).execute(all.toArray(String[]::new));
    assertEquals(0, exitCode, "exit code of troupe bench " + String.join(" ", arguments));
    JsonNode report = Json.MAPPER.readTree(json.toFile());
    assertEquals(arguments[0], report.path("benchmark").asText());
    assertTrue(report.path("results").isObject() && !report.path("results").isEmpty(),
        "results: " + report);
    assertTrue(report.path("ratios").isObject() && !report.path("ratios").isEmpty(),
        "ratios: " + report);
    for (Iterator<Map.Entry<String, JsonNode>> ratios = report.get("ratios").fields();
        ratios.hasNext(); ) {
      Map.Entry<String, JsonNode> ratio = ratios.next();
      assertPositive(ratio.getKey(), ratio.getValue());
    }
    for (JsonNode goal : report.path("goals")) {
      assertTrue(goal.path("verdict").asText().matches("PASS|MISS"), "goal: " + goal);
    }
    assertTrue(report.path("failures").isEmpty(), "failures: " + report.path("failures"));
    return report;
  }

  /** Asserts that each of {@code figures} of {@code system} is a positive finite number. */
  static void assertPositiveResults(JsonNode report, String system, String... figures) {
    JsonNode results = report.path("results").path(system);
    assertFalse(results.isMissingNode(), "no results for " + system + " in " + report);
    for (String figure : figures) {
      assertPositive(system + "." + figure, results.path(figure));
    }
  }

  private static void assertPositive(String name, JsonNode value) {
    assertTrue(value.isNumber(), name + " is not a number: " + value);
    double number = value.asDouble();
    assertTrue(number > 0 && Double.isFinite(number), name + " is not positive: " + number);
  }
}
