package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code troupe bench causal-cost} end to end, small: a DC replicating to one other (two server
 * processes) against the same DC alone, both YCSB+MT workloads, a short round each, with its
 * messages real causal sends delivered before each round ends.
 */
class CausalCostBenchmarkTest {
  @TempDir Path directory;

  @Test
  void comparesTheReplicatedDataCentreWithItselfAlone() throws Exception {
    JsonNode report = BenchmarkRuns.run(directory, "causal-cost", "--dcs", "2",
        "--records", "100", "--threads", "2", "--seconds", "1", "--warmup-seconds", "0.2",
        "--rounds", "1", "--rtt-millis", "10", "--idle-window-millis", "10", "--idle-max-wait-seconds", "0");
    for (String system : new String[] {"A/replicated", "A/alone", "B/replicated", "B/alone"}) {
      BenchmarkRuns.assertPositiveResults(report, system, "throughput_per_second",
          "update_p50_milliseconds", "update_mean_milliseconds");
    }
    BenchmarkRuns.assertPositiveResults(report, "A/alone", "read_p95_milliseconds");
    // Messages are real sends, measured apart, and delivered: the probe saw the receiver's effect.
    for (String system : new String[] {"B/replicated", "B/alone"}) {
      BenchmarkRuns.assertPositiveResults(report, system, "message_operations",
          "message_mean_milliseconds", "delivery_operations", "delivery_mean_milliseconds");
    }
    for (String ratio : new String[] {"A read mean replicated/alone",
        "B update mean replicated/alone", "B message mean replicated/alone",
        "B delivery mean replicated/alone"}) {
      assertTrue(report.path("ratios").has(ratio), ratio + " in " + report.path("ratios"));
    }
    assertTrue(report.at("/parameters/messages").asText().contains("causal send"),
        "the report says what a message is");
  }

  @Test
  void refusesUnknownWorkloads() {
    assertNotEquals(0, new CommandLine(new BenchCommand()).execute("causal-cost", "--workload",
        "c", "--records", "10"));
  }
}
