package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RestBenchmarkTest {
  @TempDir Path directory;

  @Test
  void comparesRestReadsWithTheBareServer() throws Exception {
    JsonNode report = BenchmarkRuns.run(directory, "rest", "--threads", "4",
        "--seconds", "0.25", "--warmup-seconds", "0.05", "--rounds", "2",
        "--idle-window-millis", "10", "--idle-max-wait-seconds", "0");
    for (String system : new String[] {"troupe_rest", "bare_http"}) {
      BenchmarkRuns.assertPositiveResults(report, system, "throughput_per_second",
          "p50_milliseconds", "p99_milliseconds", "response_bytes", "throughput_min_per_second",
          "throughput_max_per_second", "cpu_microseconds_per_operation", "cpu_cores");
    }
    // The bare ceiling answers the very record Troupe answers: 10 fields of 100 characters.
    long troupeBytes = report.path("results").path("troupe_rest").path("response_bytes")
        .asLong();
    assertTrue(troupeBytes > 1000, "a 1 KB record: " + troupeBytes);
    assertEquals(troupeBytes, report.path("results").path("bare_http").path("response_bytes")
        .asLong());
    JsonNode spread = report.path("ratio_spreads").path("troupe_rest / bare_http throughput");
    assertEquals(2, spread.path("rounds").asInt(), report.toString());
    // Three sides, two measured rounds each, in a rotating order.
    assertEquals(6, report.path("rounds").size());
    assertEquals("troupe_rest_secured", report.path("rounds").get(0).path("system").asText());
  }
}
