package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RecoveryBenchmarkTest {
  @TempDir Path directory;

  @Test
  void killsTheServerRestartsItAndFindsEveryAcknowledgedWrite() throws Exception {
    JsonNode report = BenchmarkRuns.run(directory, "recovery", "--megabytes", "0.05",
        "--value-bytes", "100", "--threads", "16", "--sample", "50", "--empty-starts", "1",
        // C1 only: the three server JVMs start about a second faster each on a 2-core machine.
        "--server-jvm-option=-XX:TieredStopAtLevel=1");
    BenchmarkRuns.assertPositiveResults(report, "empty_start", "serving_seconds");
    BenchmarkRuns.assertPositiveResults(report, "recovery", "serving_seconds", "health_seconds",
        "sample_verified_seconds");
    BenchmarkRuns.assertPositiveResults(report, "load", "acknowledged_writes");
    BenchmarkRuns.assertPositiveResults(report, "verification", "sampled_writes", "connections",
        "connection_set_up_p50_milliseconds", "connection_set_up_max_milliseconds");
    assertEquals(16, report.path("results").path("verification").path("connections").asInt(-1),
        "the sample is read on --threads connections, each set up before the first read");
    assertEquals(0, report.path("results").path("verification").path("lost_writes").asInt(-1));
  }
}
