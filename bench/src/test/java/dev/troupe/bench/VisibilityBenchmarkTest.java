package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code troupe bench visibility} end to end, small: two real DC server processes behind latency
 * proxies, a second of workload, every probe seen at the other DC, the report and its CDF chart.
 */
class VisibilityBenchmarkTest {
  @TempDir Path directory;

  @Test
  void measuresEveryProbeAtTheOtherDataCentre() throws Exception {
    Path reportDirectory = directory.resolve("report");
    JsonNode report = BenchmarkRuns.run(directory, "visibility", "--rtt-millis", "20",
        "--seconds", "1", "--warmup-seconds", "0.5", "--rate", "100", "--clients", "2",
        "--records", "50", "--probes-per-second", "40", "--report", reportDirectory.toString());
    BenchmarkRuns.assertPositiveResults(report, "visibility_at_b", "probes", "p50_milliseconds",
        "p95_milliseconds", "max_milliseconds");
    BenchmarkRuns.assertPositiveResults(report, "link", "measured_rtt_milliseconds");
    BenchmarkRuns.assertPositiveResults(report, "workload_at_a", "operations_per_second");
    assertTrue(report.at("/results/link/measured_rtt_milliseconds").asDouble() >= 20,
        "the proxy adds the round trip: " + report.at("/results/link"));
    assertTrue(report.at("/results/visibility_at_b/probes").asLong() >= 20,
        "about 40 probes in a second: " + report.at("/results/visibility_at_b"));
    assertEquals("visibility p95 - RTT/2 (ms)", report.at("/goals/0/name").asText());
    byte[] png = Files.readAllBytes(reportDirectory.resolve("cdf.png"));
    assertArrayEquals(new byte[] {(byte) 0x89, 'P', 'N', 'G'}, Arrays.copyOf(png, 4));
    String html = Files.readString(reportDirectory.resolve("index.html"));
    assertTrue(html.contains("visibility p95 - RTT/2 (ms)") && html.contains("data:image/png"),
        "the page holds the goal and embeds the CDF");
  }

  @Test
  void refusesASingleDataCentre() {
    assertNotEquals(0, new CommandLine(new BenchCommand()).execute("visibility", "--dcs", "1"));
  }
}
