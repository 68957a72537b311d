package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StorageBenchmarkTest {
  @TempDir Path directory;

  @Test
  void comparesEngineWritesWithRawRocksDbAndReportsTheRatio() throws Exception {
    JsonNode report = BenchmarkRuns.run(directory, "storage", "--threads", "8",
        "--seconds", "0.25", "--warmup-seconds", "0.05", "--value-bytes", "50", "--rounds", "2",
        "--idle-window-millis", "10", "--idle-max-wait-seconds", "0");
    for (String system : new String[] {"engine", "raw_rocksdb"}) {
      BenchmarkRuns.assertPositiveResults(report, system, "throughput_per_second",
          "round_1_per_second", "round_2_per_second", "p50_milliseconds", "p99_milliseconds",
          "operations");
    }
  }
}
