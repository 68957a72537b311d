package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CacheBenchmarkTest {
  @TempDir Path directory;

  @Test
  void measuresWarmColdAndCheckpointAssistedReads() throws Exception {
    JsonNode report = BenchmarkRuns.run(directory, "cache", "--operations", "300",
        "--warm-reads", "2000", "--repetitions", "3");
    for (String system : new String[] {
        "warm_store_read", "warm_troupe_get", "cold_materialization",
        "cold_materialization_unverified", "checkpoint_assisted"}) {
      BenchmarkRuns.assertPositiveResults(report, system, "p50_microseconds", "p99_microseconds",
          "samples");
    }
  }
}
