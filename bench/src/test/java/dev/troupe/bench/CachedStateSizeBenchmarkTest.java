package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CachedStateSizeBenchmarkTest {
  @TempDir Path directory;

  @Test
  void measuresHeapBytesPerCachedRecordAgainstItsPayloadAndEncodedState() throws Exception {
    JsonNode report = BenchmarkRuns.run(directory, "cached-size", "--records", "3000",
        "--fields", "10", "--field-bytes", "100");
    BenchmarkRuns.assertPositiveResults(report, "cached_state", "heap_bytes_per_record",
        "estimated_bytes_per_record");
    BenchmarkRuns.assertPositiveResults(report, "encoded_state", "bytes_per_record");
    // The cache holds states encoded; what an actor holding one decoded is weighed at is beside.
    BenchmarkRuns.assertPositiveResults(report, "decoded_state", "estimated_bytes_per_record");
    assertEquals(1000, report.path("results").path("payload").path("bytes_per_record").asInt());
    // A state holds at least its payload (a gross measuring error would not).
    assertTrue(report.path("results").path("cached_state").path("heap_bytes_per_record")
        .asDouble() > 1000, report.toString());
    assertTrue(report.path("ratios").has("heap / encoded state bytes per record"),
        report.toString());
  }
}
