package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MemoryBenchmarkTest {
  @TempDir Path directory;

  /**
   * Under ParallelGC, named as a server JVM option: it replaces the launcher's G1 (two collectors
   * would stop the JVM from starting), and the memory budget still reads ParallelGC's old
   * generation.
   */
  @Test
  void drivesBothServersAndReportsWritesGarbageCollectionAndActors() throws Exception {
    JsonNode report = BenchmarkRuns.run(directory, "memory", "--seconds", "2", "--clients", "4",
        "--heap", "256m", "--server-jvm-option=-XX:+UseParallelGC");
    assertEquals("-XX:+UseParallelGC",
        report.path("parameters").path("server_jvm_options").asText(), report.toString());
    for (String system : new String[] {"budget", "baseline"}) {
      BenchmarkRuns.assertPositiveResults(report, system, "acknowledged", "writes_per_second",
          "most_active_actors", "survived");
      assertEquals(1, report.path("results").path(system).path("survived").asInt(),
          system + " survived: " + report);
    }
  }
}
