package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityLocator;
import dev.troupe.model.Json;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The parts of {@code bench cluster} and {@code bench failover} that decide figures: reading
 * /metrics samples (the /v1/cluster placement reader is the server's ClusterPlacementTest), the failover probes' keys and the check of what a
 * probe may hold. (The benchmarks themselves start a PostgreSQL and three server JVMs: run them
 * with {@code ./troupe bench cluster} and {@code ./troupe bench failover}.)
 */
class ClusterBenchmarkTest {
  @Test
  void readsOneSampleByItsNameAndLabels() {
    String metrics = """
        # HELP troupe_cluster_transport_sent_total Messages between cores.
        # TYPE troupe_cluster_transport_sent_total counter
        troupe_cluster_transport_sent_total{to="partition"} 1234
        troupe_cluster_transport_sent_total{to="node"} 99
        troupe_http_requests_total 5000
        troupe_http_requests_total_other 7
        troupe_memory_heap_after_collection_bytes 1.5E8
        """;
    assertEquals(1234, PrometheusText.value(metrics,
        "troupe_cluster_transport_sent_total{to=\"partition\"}", -1));
    assertEquals(99, PrometheusText.value(metrics,
        "troupe_cluster_transport_sent_total{to=\"node\"}", -1));
    assertEquals(5000, PrometheusText.value(metrics, "troupe_http_requests_total", -1));
    assertEquals(1.5e8, PrometheusText.value(metrics,
        "troupe_memory_heap_after_collection_bytes", -1));
    assertEquals(-1, PrometheusText.value(metrics, "troupe_active_entities", -1));
  }

  @Test
  void everyPartitionHasAProbeThatItHolds() {
    Map<Integer, String> probes = FailoverBenchmark.probeKeys(12);
    assertEquals(12, probes.size());
    probes.forEach((partition, key) -> assertEquals(partition,
        EntityLocator.partitionOf(new EntityId("usertable", key), 12)));
  }

  @Test
  void aProbeHoldsAnAcknowledgedOrUnknownWriteNeverALostOrRefusedOne() {
    Map<String, FailoverBenchmark.Outcome> none = Map.of();
    assertNull(FailoverBenchmark.problem("initial", "initial", none));
    Map<String, FailoverBenchmark.Outcome> unknownOnly =
        Map.of("kill-1-attempt-0", FailoverBenchmark.Outcome.UNKNOWN);
    assertNull(FailoverBenchmark.problem("initial", "initial", unknownOnly));
    assertNull(FailoverBenchmark.problem("kill-1-attempt-0", "initial", unknownOnly));
    Map<String, FailoverBenchmark.Outcome> mixed = Map.of(
        "kill-1-attempt-0", FailoverBenchmark.Outcome.UNKNOWN,
        "kill-1-attempt-1", FailoverBenchmark.Outcome.REFUSED,
        "kill-1-attempt-2", FailoverBenchmark.Outcome.ACKNOWLEDGED);
    assertNull(FailoverBenchmark.problem("kill-1-attempt-2", "initial", mixed));
    assertNull(FailoverBenchmark.problem("kill-1-attempt-0", "initial", mixed),
        "an attempt stuck in a buffer may commit after the acknowledged one");
    assertTrue(FailoverBenchmark.problem("initial", "initial", mixed).contains("before an"
        + " acknowledged write"));
    assertTrue(FailoverBenchmark.problem("kill-1-attempt-1", "initial", mixed)
        .contains("refused"));
    assertTrue(FailoverBenchmark.problem("kill-9-attempt-9", "initial", mixed)
        .contains("no attempt"));
    assertTrue(FailoverBenchmark.problem(null, "initial", none).contains("no value"));
  }

  @Test
  void refusesAClusterOfOneAndTooFewPartitions() {
    CommandLine command = new CommandLine(new BenchCommand());
    assertEquals(1, command.execute("cluster", "--nodes", "1"));
    assertEquals(1, command.execute("cluster", "--partitions", "2"));
    assertEquals(1, command.execute("failover", "--nodes", "2"));
  }

  @Test
  void heapInUseSumsTheGenerationsOfGcHeapInfoWithoutMetaspace() {
    String parallel = """
        12345:
         PSYoungGen      total 95744K, used 1000K [0x00000000f9580000, 0x0000000100000000)
          eden space 82432K, 1% used [0x00000000f9580000,0x00000000fe2aa150,0x00000000fe600000)
          from space 13312K, 0% used [0x00000000fe600000,0x00000000ff225178,0x00000000ff300000)
          to   space 13312K, 0% used [0x00000000ff300000,0x00000000ff300000,0x0000000100000000)
         ParOldGen       total 218624K, used 24000K [0x00000000ec000000, 0x00000000f9580000)
          object space 218624K, 10% used [0x00000000ec000000,0x00000000ec125ab8,0x00000000f9580000)
         Metaspace       used 49338K, committed 50048K, reserved 1114112K
          class space    used 6000K, committed 6336K, reserved 1048576K
        """;
    assertEquals(25_000 * 1024.0, MemorySpread.heapUsedBytes(parallel));
    String g1 = """
        12345:
         garbage-first heap   total 262144K, used 51200K [0x00000000f0000000, 0x0000000100000000)
          region size 1024K, 3 young (3072K), 0 survivors (0K)
         Metaspace       used 49338K, committed 50048K, reserved 1114112K
        """;
    assertEquals(51_200 * 1024.0, MemorySpread.heapUsedBytes(g1));
  }
}
