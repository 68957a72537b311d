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
 * {@code troupe bench ycsb} end to end, small: a real Troupe node, the PostgreSQL baseline over a
 * real throwaway PostgreSQL, and the bare server, all started and stopped by the benchmark.
 */
class YcsbBenchmarkTest {
  @TempDir Path directory;

  @Test
  void runsEveryTargetAndWritesTheReport() throws Exception {
    Path reportDirectory = directory.resolve("report");
    JsonNode report = BenchmarkRuns.run(directory, "ycsb", "--workload", "a,c", "--records",
        "300", "--threads", "4", "--duration", "0.3", "--warmup-seconds", "0.1", "--rounds", "2",
        "--warmup-rounds", "0", "--idle-window-millis", "10", "--idle-max-wait-seconds", "0",
        "--target", "all", "--report", reportDirectory.toString());
    for (String workload : new String[] {"a", "c"}) {
      for (String target : new String[] {"troupe", "postgres", "postgres-rc", "bare"}) {
        BenchmarkRuns.assertPositiveResults(report, workload + "/" + target,
            "throughput_per_second", "read_p50_milliseconds", "read_p99_milliseconds",
            "throughput_min_per_second", "throughput_max_per_second",
            "cpu_microseconds_per_operation", "cpu_cores");
        assertEquals(0, report.path("results").path(workload + "/" + target)
            .path("failed_operations").asLong(-1));
      }
    }
    BenchmarkRuns.assertPositiveResults(report, "a/troupe", "update_p95_milliseconds");
    BenchmarkRuns.assertPositiveResults(report, "load/troupe", "records_per_second");
    // Every insert reaches an entity with no actor: one activation per record loaded.
    assertEquals(1.0, report.path("results").path("load/troupe")
        .path("entity_activations_per_record").asDouble(), 0.01, report.toString());
    assertTrue(report.path("results").path("a/troupe")
        .path("entity_activations_per_operation").asDouble(-1) >= 0, report.toString());
    assertTrue(report.path("results").path("a/postgres")
        .path("entity_activations_per_operation").isMissingNode(), report.toString());
    BenchmarkRuns.assertPositiveResults(report, "load/postgres", "records_per_second");
    // Both sides sync their commits: a load makes the machine's disk write (issue 20's write
    // amplification figure, per record), unless the temporary files live in memory (tmpfs).
    boolean onADevice = !Files.getFileStore(directory).type().equals("tmpfs");
    for (String load : new String[] {"load/troupe", "load/postgres"}) {
      double written = report.path("results").path(load)
          .path("disk_written_bytes_per_record").asDouble(-1);
      assertTrue(onADevice ? written > 0 : written >= 0, load + " wrote " + written);
      // The data directory holds the records: more than their 1 KB each (keys, WAL, indexes).
      double stored = report.path("results").path(load)
          .path("data_directory_bytes_per_record").asDouble(-1);
      assertTrue(stored > 1000, load + " keeps " + stored + " bytes per record");
    }
    for (JsonNode round : report.path("rounds")) {
      assertTrue(round.path("disk_written_bytes_per_operation").asDouble(-1) >= 0
          && round.path("disk_read_bytes_per_operation").asDouble(-1) >= 0, round.toString());
    }
    assertTrue(report.path("results").path("a/troupe")
        .path("disk_written_bytes_per_operation").asDouble(-1) > (onADevice ? 0 : -1),
        "YCSB A's updates are synced: " + report.path("results").path("a/troupe"));
    assertTrue(report.path("ratios").has("troupe/postgres a"), report.toString());
    assertTrue(report.path("ratios").has("troupe/postgres c"), report.toString());
    assertTrue(report.path("ratios").has("troupe/bare c"), report.toString());
    // READ COMMITTED beside SERIALIZABLE, both ratios with the spread of their rounds.
    for (String ratio : new String[] {"troupe/postgres a", "troupe/postgres-rc a",
        "troupe/postgres-rc c", "troupe/bare c"}) {
      assertTrue(report.path("ratios").has(ratio), ratio + ": " + report);
      assertEquals(2, report.path("ratio_spreads").path(ratio).path("rounds").asInt(), ratio);
    }
    // Two workloads, two rounds, four targets; the order rotates.
    assertEquals(16, report.path("rounds").size());
    assertEquals("a/troupe", report.path("rounds").get(0).path("system").asText());
    assertEquals("a/postgres", report.path("rounds").get(4).path("system").asText());
    // The bare ceiling answers a record about the size of Troupe's (YCSB's 1 KB).
    double troupeBytes = report.path("results").path("troupe-record")
        .path("read_response_bytes").asDouble();
    double bareBytes = report.path("results").path("bare-record")
        .path("read_response_bytes").asDouble();
    assertTrue(troupeBytes > 1000 && Math.abs(bareBytes - troupeBytes) / troupeBytes < 0.25,
        "troupe " + troupeBytes + " bytes, bare " + bareBytes);
    // A write's answer, asked for no state ({"version","state":{}}), is the same size from
    // every target (the version's digits aside: the PostgreSQL baseline counts from 1).
    double troupeWriteBytes = report.path("results").path("troupe-record")
        .path("write_response_bytes").asDouble();
    assertTrue(troupeWriteBytes > 20 && troupeWriteBytes < 50, "troupe " + troupeWriteBytes);
    assertEquals(troupeWriteBytes, report.path("results").path("bare-record")
        .path("write_response_bytes").asDouble(), report.toString());
    double postgresWriteBytes = report.path("results").path("postgres-record")
        .path("write_response_bytes").asDouble();
    assertTrue(postgresWriteBytes > 20 && postgresWriteBytes <= troupeWriteBytes,
        "postgres " + postgresWriteBytes);

    String html = Files.readString(reportDirectory.resolve("index.html"));
    assertTrue(html.contains("troupe/postgres a") && html.contains("data:image/png;base64,"),
        "the page holds the ratios and embeds the charts");
    byte[] pngSignature = {(byte) 0x89, 'P', 'N', 'G'};
    for (String chart : new String[] {"throughput.png", "latency-a.png", "latency-c.png"}) {
      byte[] bytes = Files.readAllBytes(reportDirectory.resolve(chart));
      assertArrayEquals(pngSignature, Arrays.copyOf(bytes, 4), chart + " is a PNG");
      assertTrue(bytes.length > 5_000, chart + " has a picture in it");
    }
    assertEquals(report, dev.troupe.model.Json.MAPPER.readTree(
        reportDirectory.resolve("report.json").toFile()));
  }

  @Test
  void refusesUnknownWorkloadsAndTargets() {
    CommandLine command = new CommandLine(new BenchCommand());
    assertNotEquals(0, command.execute("ycsb", "--workload", "g", "--records", "10"));
    assertNotEquals(0, command.execute("ycsb", "--target", "mysql", "--records", "10"));
  }
}
