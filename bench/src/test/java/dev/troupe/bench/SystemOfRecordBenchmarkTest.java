package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SystemOfRecordBenchmarkTest {
  @TempDir Path directory;

  @Test
  void measuresTheExporterAgainstTheCommittedRate() throws Exception {
    JsonNode report = BenchmarkRuns.run(directory, "system-of-record", "--records", "200",
        "--threads", "4", "--duration", "1", "--sample-millis", "50");
    BenchmarkRuns.assertPositiveResults(report, "troupe", "ycsb_operations_per_second",
        "journal_records_committed_per_second");
    BenchmarkRuns.assertPositiveResults(report, "exporter", "journal_records_applied_per_second",
        "rows_applied_per_second", "batches_per_second", "lag_samples");
  }
}
