package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RestBenchmarkTest {
  @TempDir Path directory;

  @Test
  void comparesRestReadsWithTheBareServer() throws Exception {
    JsonNode report = BenchmarkRuns.run(directory, "rest", "--threads", "4",
        "--seconds", "0.25", "--warmup-seconds", "0.05");
    for (String system : new String[] {"troupe_rest", "bare_http"}) {
      BenchmarkRuns.assertPositiveResults(report, system, "throughput_per_second",
          "p50_milliseconds", "p99_milliseconds", "response_bytes");
    }
  }
}
