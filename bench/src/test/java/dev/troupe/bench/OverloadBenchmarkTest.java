package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class OverloadBenchmarkTest {
  @TempDir Path directory;

  @Test
  void drivesBothServersAndReportsAdmittedLatencyAndHealth() throws Exception {
    JsonNode report = BenchmarkRuns.run(directory, "overload", "--clients", "8",
        "--seconds", "1.5", "--capacity-seconds", "1", "--warmup-seconds", "0.5",
        "--entities", "50",
        // C1 only: the two server JVMs start faster on a 2-core machine.
        "--server-jvm-option=-XX:TieredStopAtLevel=1");
    for (String system : new String[] {"adaptive_capacity", "adaptive_overload",
        "fixed_capacity", "fixed_overload"}) {
      BenchmarkRuns.assertPositiveResults(report, system, "clients", "admitted_per_second",
          "p50_milliseconds", "p99_milliseconds", "health_p99_milliseconds");
    }
  }
}
