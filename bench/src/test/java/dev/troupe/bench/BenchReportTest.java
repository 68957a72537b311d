package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Json;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BenchReportTest {
  @TempDir Path directory;

  private static BenchReport sample() {
    BenchReport report = new BenchReport("demo", "a demonstration");
    report.parameter("threads", 4)
        .result("system", "throughput_per_second", 1500.5)
        .result("system", "operations", 12)
        .result("baseline", "throughput_per_second", 2000);
    report.ratio("system / baseline throughput", 1500.5, 2000, Goal.atLeast(0.7));
    report.ratio("informative", 3, 1, null);
    report.goal("start time", 6.5, Goal.atMost(5, "s"));
    return report;
  }

  @Test
  void writesResultsRatiosAndGoalsWithVerdictsAsJson() throws Exception {
    Path file = directory.resolve("nested/report.json");
    sample().writeJson(file);
    JsonNode json = Json.MAPPER.readTree(file.toFile());
    assertEquals("demo", json.get("benchmark").asText());
    assertEquals(4, json.get("parameters").get("threads").asInt());
    assertEquals(1500.5, json.get("results").get("system").get("throughput_per_second").asDouble());
    assertTrue(json.get("results").get("system").get("operations").isIntegralNumber());
    assertEquals(0.75025, json.get("ratios").get("system / baseline throughput").asDouble(), 1e-9);
    assertEquals(3.0, json.get("ratios").get("informative").asDouble());
    assertEquals(2, json.get("goals").size(), "only figures with goals: " + json.get("goals"));
    assertEquals("PASS", json.get("goals").get(0).get("verdict").asText());
    assertEquals(">= 0.7", json.get("goals").get(0).get("goal").asText());
    assertEquals("MISS", json.get("goals").get(1).get("verdict").asText());
    assertEquals("<= 5 s", json.get("goals").get(1).get("goal").asText());
    assertTrue(json.get("failures").isEmpty());
  }

  @Test
  void printsTablesWithGoalsNextToRatiosAndFailures() {
    BenchReport report = sample();
    report.failure("1 acknowledged write lost");
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    report.print(new PrintStream(bytes, true, StandardCharsets.UTF_8));
    String text = bytes.toString(StandardCharsets.UTF_8);
    assertTrue(text.contains("== demo: a demonstration =="), text);
    assertTrue(text.matches("(?s).*system / baseline throughput +0\\.750 +>= 0\\.7 +PASS.*"), text);
    assertTrue(text.matches("(?s).*informative +3 +- +-.*"), text);
    assertTrue(text.matches("(?s).*start time +6\\.50 +<= 5 s +MISS.*"), text);
    assertTrue(text.contains("2,000"), text);
    assertTrue(text.contains("FAIL: 1 acknowledged write lost"), text);
    assertTrue(report.failed());
  }
}
