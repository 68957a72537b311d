package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MemoryBenchmarkTest {
  @TempDir Path directory;

  @Test
  void drivesBothServersAndReportsWritesGarbageCollectionAndActors() throws Exception {
    JsonNode report = BenchmarkRuns.run(directory, "memory", "--seconds", "2", "--clients", "4",
        "--heap", "256m");
    for (String system : new String[] {"budget", "baseline"}) {
      BenchmarkRuns.assertPositiveResults(report, system, "acknowledged", "writes_per_second",
          "most_active_actors", "survived");
      assertEquals(1, report.path("results").path(system).path("survived").asInt(),
          system + " survived: " + report);
    }
  }
}
