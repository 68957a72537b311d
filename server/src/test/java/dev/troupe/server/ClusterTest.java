package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.server.ServerProcess.Answer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three real server processes form a Pekko cluster on loopback (issue 18): every partition is
 * hosted by exactly one member and every member's {@code GET /v1/cluster} agrees; a member killed
 * with SIGKILL is downed by the survivors' split brain resolver (keep-majority: two of three) and
 * its partitions move to them within a bound (the time from the kill to every partition hosted
 * again is measured and printed); restarted, it rejoins; a member stopped with SIGTERM hands its
 * partitions off to the others (measured and printed too). The members share one store, a real
 * PostgreSQL started by the test: a write through one member to an entity another hosts reads
 * back through the third, a transaction spanning partitions of different members commits, and
 * every acknowledged write survives the kill and the hand-offs. The members, PostgreSQL and the
 * placement wait are the harness {@link ThreeNodeCluster}'s (one cluster for the whole run).
 */
class ClusterTest {
  @TempDir Path directory;
  /** The three members (ThreeNodeCluster: PostgreSQL, ports, settings, the placement wait). */
  private ThreeNodeCluster cluster;
  /** The single node of {@link #aNodeThatIsNotAMemberHasNoCluster}. */
  private ServerProcess single;

  @AfterEach
  void stop() throws InterruptedException {
    if (cluster != null) {
      cluster.close();
    }
    if (single != null) {
      single.close();
    }
  }

  /** Member {@code index} (0..2), running. */
  private ServerProcess node(int index) {
    return cluster.node(index);
  }

  @Test
  void partitionsAreHostedOnceMoveOffAKilledNodeAndItRejoins() throws Exception {
    // Formed: three up members, every partition hosted once, every member agreeing, and (once
    // sharding has rebalanced) every member hosting some (ThreeNodeCluster.start waits for it).
    cluster = ThreeNodeCluster.start(directory, ThreeNodeCluster.Options.defaults());
    cluster.check(() -> checkFormationFailoverRejoinAndHandOff());
  }

  private void checkFormationFailoverRejoinAndHandOff() throws Exception {
    ThreeNodeCluster.Options options = cluster.options;
    Map<Integer, Integer> placement = cluster.awaitPlacement(List.of(0, 1, 2), 90_000, true);
    Answer metrics = node(0).get("/metrics");
    assertEquals(200, metrics.status(), metrics.text());
    assertTrue(metrics.text().contains("troupe_cluster_hosted_partitions "), metrics.text());
    assertTrue(metrics.text().contains("troupe_cluster_transport_sent_total{to=\"partition\"}"));

    // One shared store: a type declared through one member is known to the others; writes
    // through every member, to entities every member hosts, read back through the others; a
    // transaction across members' partitions commits.
    Answer declared = node(0).send("PUT", "/v1/types/Counter",
        "{\"keys\": {\"n\": {\"kind\": \"counter\"}}}");
    assertEquals(200, declared.status(), declared.text());
    for (int member = 1; member < 3; member++) {
      Answer known = node(member).get("/v1/types/Counter");
      assertEquals(200, known.status(), "node " + (member + 1) + ": " + known.text());
    }
    Map<String, Long> written = writeThroughEveryMember(List.of(0, 1, 2), "before");
    assertReadBack(written, List.of(0, 1, 2));
    Answer transfer = node(1).send("POST", "/v1/transactions", """
        {"ops": [%s]}""".formatted(String.join(", ", written.keySet().stream().limit(6)
        .map(entity -> "{\"entity\": \"" + entity
            + "\", \"op\": \"increment\", \"key\": \"n\", \"by\": 1000}")
        .toList())));
    assertEquals(200, transfer.status(), transfer.text());
    written.keySet().stream().limit(6).toList()
        .forEach(entity -> written.merge(entity, 1000L, Long::sum));
    assertReadBack(written, List.of(2, 0));
    assertStatusListsEveryNode();

    // A member dies: its partitions move to the two survivors.
    int victim = 2;
    long victimHosted = placement.values().stream().filter(node -> node == victim + 1).count();
    long acquiredBefore = acquisitions(0) + acquisitions(1);
    long killedAt = System.nanoTime();
    cluster.kill(victim);
    Map<Integer, Integer> after =
        cluster.awaitPlacement(List.of(0, 1), options.failoverBoundMillis(), false);
    long failoverMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
    System.out.printf("failover: every partition hosted again %d ms after kill -9 of node %d"
        + " (failure detector pause %d ms, stable-after %d ms): partition -> node %s%n",
        failoverMillis, victim + 1, options.failureDetectorPauseMillis(),
        options.stableAfterMillis(), after);
    assertTrue(after.values().stream().noneMatch(node -> node == victim + 1), after.toString());
    assertHandOffMetrics(victimHosted, acquiredBefore);
    // Everything acknowledged before the kill is there, served by the survivors, who write on.
    assertReadBack(written, List.of(0, 1));
    written.putAll(writeThroughEveryMember(List.of(0, 1), "after-kill"));
    assertReadBack(written, List.of(1, 0));

    // It comes back on the same ports and data: it rejoins, and the three agree again.
    long restartedAt = System.nanoTime();
    cluster.start(victim);
    Map<Integer, Integer> rejoined = cluster.awaitPlacement(List.of(0, 1, 2), 90_000, false);
    System.out.printf("rejoin: three members agreeing %d ms after the restart: partition -> node"
        + " %s%n", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - restartedAt), rejoined);
    assertReadBack(written, List.of(victim, 0, 1));

    // A member stopped gracefully (SIGTERM, as in a rolling restart) leaves: its partitions are
    // handed off to the others without waiting for the failure detector or the resolver.
    int leaving = 1;
    long stoppedAt = System.nanoTime();
    cluster.stop(leaving);
    long exitMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stoppedAt);
    Map<Integer, Integer> handedOff =
        cluster.awaitPlacement(List.of(0, 2), options.failoverBoundMillis(), false);
    System.out.printf("graceful stop of node %d: exited %d ms after SIGTERM, every partition"
        + " hosted by the others %d ms after it: partition -> node %s%n", leaving + 1, exitMillis,
        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stoppedAt), handedOff);
  }

  /**
   * Writes 24 entities (of every partition, with 4) through {@code members} in turn; answers each
   * entity's expected counter.
   */
  private Map<String, Long> writeThroughEveryMember(List<Integer> members, String prefix)
      throws Exception {
    Map<String, Long> written = new TreeMap<>();
    for (int i = 0; i < 24; i++) {
      String entity = "Counter/" + prefix + "-" + i;
      ServerProcess through = node(members.get(i % members.size()));
      Answer answer = through.send("POST", "/v1/entities/" + entity + "/keys/n/increment",
          "{\"by\": " + (i + 1) + "}");
      assertEquals(200, answer.status(), entity + " through " + through + ": " + answer.text());
      written.put(entity, (long) (i + 1));
    }
    return written;
  }

  /** Every entity of {@code expected} reads its counter through each of {@code members}. */
  private void assertReadBack(Map<String, Long> expected, List<Integer> members)
      throws Exception {
    for (Map.Entry<String, Long> entry : expected.entrySet()) {
      for (int member : members) {
        Answer answer = node(member).get("/v1/entities/" + entry.getKey());
        assertEquals(200, answer.status(), entry.getKey() + ": " + answer.text());
        assertEquals(entry.getValue().longValue(),
            answer.body().path("state").path("n").asLong(-1),
            entry.getKey() + " through node " + (member + 1) + ": " + answer.text());
      }
    }
  }

  /** The store's partition count the cluster runs with. */
  private int partitions() {
    return cluster.options.partitions();
  }

  /**
   * {@code GET /v1/cluster} matches the OpenAPI document, and {@code troupe status} against node 1
   * lists the three nodes, up and reachable, their partitions summing to the partition count, with
   * heap figures and the written entities active somewhere: every member's numbers came from it.
   */
  private void assertStatusListsEveryNode() throws Exception {
    Answer view = node(0).get("/v1/cluster");
    assertEquals(List.of(), OpenApiDocument.load()
        .validate("/components/schemas/ClusterView", view.text()));

    // The CLI against node 1, run as CliTest runs it; every member's numbers came from it.
    String status = null;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      status = troupeStatus(node(0));
      if (status.contains("cluster: 3 members (3 answered), " + partitions() + " of " + partitions()
          + " partitions hosted")) {
        break;
      }
      Thread.sleep(250);
    }
    System.out.println("troupe status against node 1:\n" + status);
    List<String> rows = status.lines().dropWhile(line -> !line.startsWith("NODE ")).skip(1)
        .toList();
    assertEquals(3, rows.size(), status);
    int partitionsListed = 0;
    long entities = 0;
    java.util.Set<Integer> nodeIds = new java.util.TreeSet<>();
    for (String row : rows) {
      String[] columns = row.trim().split("\\s+");
      nodeIds.add(Integer.parseInt(columns[0]));
      assertEquals("up", columns[2], row);
      assertEquals("yes", columns[3], row);
      partitionsListed += Integer.parseInt(columns[4]);
      entities += Long.parseLong(columns[6]);
      assertTrue(Double.parseDouble(columns[7].replace("MiB", "")) > 0, "heap used: " + row);
      assertTrue(Double.parseDouble(columns[8].replace("MiB", "")) > 0, "heap max: " + row);
    }
    assertEquals(java.util.Set.of(1, 2, 3), nodeIds, status);
    assertTrue(entities > 0, "the written entities are active somewhere: " + status);
    assertEquals(partitions(), partitionsListed, status);
    assertPlacementIsPublished();
  }

  /**
   * What an owner-aware client relies on (docs/ARCHITECTURE.md, "Clients that reach the owner"):
   * every member reports the URL it serves HTTP at, and an answer for an entity of a partition the
   * answering member does not host carries {@code Troupe-Forwarded: true}, one it hosts none.
   */
  private void assertPlacementIsPublished() throws Exception {
    JsonNode view = node(0).get("/v1/cluster").body();
    java.util.Set<Integer> hostedByFirst = new java.util.TreeSet<>();
    for (JsonNode member : view.path("members")) {
      int nodeId = member.path("nodeId").asInt();
      assertEquals("http://127.0.0.1:" + node(nodeId - 1).port(),
          member.path("node").path("httpUrl").asText(), member.toString());
      if (nodeId == 1) {
        member.path("node").path("hostedPartitions").forEach(p -> hostedByFirst.add(p.asInt()));
      }
    }
    boolean sawHosted = false;
    boolean sawForwarded = false;
    for (int i = 0; i < 200 && !(sawHosted && sawForwarded); i++) {
      dev.troupe.model.EntityId entity = new dev.troupe.model.EntityId("Placed", "p" + i);
      boolean hosted = hostedByFirst.contains(
          dev.troupe.model.EntityLocator.partitionOf(entity, partitions()));
      if (hosted ? sawHosted : sawForwarded) {
        continue;
      }
      Answer answer = node(0).send("PUT", "/v1/entities/Placed/p" + i + "/keys/k", "1");
      assertEquals(200, answer.status(), answer.text());
      assertEquals(hosted ? java.util.Optional.empty() : java.util.Optional.of("true"),
          answer.header("Troupe-Forwarded"), "partition hosted by node 1: " + hosted);
      sawHosted |= hosted;
      sawForwarded |= !hosted;
    }
    assertTrue(sawHosted && sawForwarded, "node 1 hosts " + hostedByFirst);
  }

  /**
   * After node 3's failover: the survivors acquired at least the partitions it hosted, and node 1's
   * {@code /metrics} times the hand-offs.
   */
  private void assertHandOffMetrics(long victimHosted, long acquiredBefore) throws Exception {
    long acquiredAfter = acquisitions(0) + acquisitions(1);
    Answer metrics = node(0).get("/metrics");
    System.out.println("hand-off metrics of node 1 after the failover:\n" + metrics.text().lines()
        .filter(line -> line.startsWith("troupe_cluster_partition")).collect(
            java.util.stream.Collectors.joining("\n")));
    assertTrue(acquiredAfter - acquiredBefore >= victimHosted, "acquisitions " + acquiredBefore
        + " -> " + acquiredAfter + ", node 3 hosted " + victimHosted);
    assertTrue(metrics.text().contains("troupe_cluster_partition_acquire_seconds_bucket{le=\"+Inf\"}"));
    assertTrue(metrics.text().contains("troupe_cluster_partition_release_seconds_count "));
    assertTrue(metrics.text().contains("troupe_cluster_partitions_lost_total "));
  }

  /** Node {@code index}'s acquisitions since start, from its {@code /metrics}. */
  private long acquisitions(int index) throws Exception {
    Answer metrics = node(index).get("/metrics");
    assertEquals(200, metrics.status(), metrics.text());
    return metrics.text().lines()
        .filter(line -> line.startsWith("troupe_cluster_partitions_acquired_total "))
        .mapToLong(line -> Long.parseLong(line.substring(line.indexOf(' ') + 1)))
        .findFirst().orElseThrow();
  }

  /** {@code troupe status --url URL} run in this JVM (as CliTest runs the CLI): what it printed. */
  private static synchronized String troupeStatus(ServerProcess node) {
    java.io.PrintStream originalOut = System.out;
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    System.setOut(new java.io.PrintStream(out, true, java.nio.charset.StandardCharsets.UTF_8));
    try {
      int code = dev.troupe.server.cli.TroupeCli.commandLine()
          .execute("status", "--url", node.baseUrl());
      assertEquals(0, code, out.toString(java.nio.charset.StandardCharsets.UTF_8));
    } finally {
      System.setOut(originalOut);
    }
    return out.toString(java.nio.charset.StandardCharsets.UTF_8);
  }

  @Test
  void aNodeThatIsNotAMemberHasNoCluster() throws Exception {
    single = ServerProcess.start(directory.resolve("single"));
    Answer answer = single.get("/v1/cluster");
    assertEquals(404, answer.status(), answer.text());
    assertEquals("not_found", answer.errorCode());
  }
}
