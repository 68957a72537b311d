package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A data centre joins a running set without a restart (docs/OPERATIONS.md, "Adding a data
 * centre"): {@code a} and {@code b} run and take writes; {@code c} starts empty with both as
 * peers; {@code troupe peer add c=URL} (the CLI, against the real servers) on {@code a} and
 * {@code b}; then writes made at {@code c} become visible at {@code a} and {@code b}, and theirs,
 * those made before {@code c} joined included (their logs still hold them), at {@code c}. Copying
 * a running DC's state into a new one (bootstrap) is another piece: here the logs were never
 * truncated past a write, so {@code c} needs none.
 */
class AddDataCentreTest {
  private static final String SECRET = "add-data-centre-test-secret-0123456789";
  private static final String[] SETTINGS = {
      "troupe.replication.forward-after-millis=500",
      "troupe.replication.pull-interval-millis=50",
      "troupe.replication.pull-backoff-initial-millis=50",
      "troupe.replication.pull-backoff-max-millis=300",
      "troupe.replication.pull-timeout-millis=5000",
      // One truncation right after start (nothing written yet, so nothing deleted), then none
      // for the test's length: the writes made before c joins stay in the logs.
      "troupe.replication.truncate-interval-millis=3600000"};
  private static final long VISIBLE_MILLIS = 30_000;

  @TempDir Path data;

  @Test
  void aDataCentreAddedToARunningSetReplicatesBothWays() throws Exception {
    DataCentreCluster cluster = DataCentreCluster.builder(data).dataCentres("a", "b")
        .secret(SECRET).settings(SETTINGS).requestTimeout(Duration.ofSeconds(20)).start();
    ServerProcess c = null;
    try {
      // Both links up and heartbeats through: the one early truncation is behind us.
      awaitTrue(() -> stableEntries(cluster.send("a", "GET", "/v1/replication/status", null)
          .body()) == 2, "a's stable vector covers a and b");
      Thread.sleep(300);
      write(cluster.server("a"), "before-a");
      write(cluster.server("b"), "before-b");

      c = launchNewcomer(cluster, SETTINGS);
      String cUrl = c.baseUrl();
      for (String running : List.of("a", "b")) {
        ServerProcess.Finished added = ServerProcess.run(List.of("peer", "add", "c=" + cUrl,
            "--url", cluster.server(running).baseUrl()));
        assertEquals(0, added.exitStatus(), added.output());
        assertTrue(added.output().contains("\"added\""), added.output());
      }
      ServerProcess.Finished listed = ServerProcess.run(List.of("peer", "list", "--url",
          cluster.server("a").baseUrl()));
      assertTrue(listed.output().contains("added at runtime"), listed.output());

      write(c, "after-c");
      write(cluster.server("a"), "after-a");
      write(cluster.server("b"), "after-b");
      for (String name : List.of("after-c", "after-b")) {
        awaitVisible(cluster.server("a"), name);
      }
      for (String name : List.of("after-c", "after-a")) {
        awaitVisible(cluster.server("b"), name);
      }
      for (String name : List.of("before-a", "before-b", "after-a", "after-b")) {
        awaitVisible(c, name);
      }
      // The newcomer is a peer like the others in status and metrics.
      ServerProcess.Finished status = ServerProcess.run(List.of("status", "--url",
          cluster.server("a").baseUrl()));
      assertEquals(0, status.exitStatus(), status.output());
      assertTrue(status.output().lines().anyMatch(line -> line.startsWith("c ")
          && line.contains(" up ")), status.output());
      String metrics = cluster.send("b", "GET", "/metrics", null).text();
      assertTrue(metrics.contains("peer=\"c\""), metrics);
      // c counts in the stable vector once it reports: a's covers all three DCs.
      awaitTrue(() -> stableEntries(cluster.send("a", "GET", "/v1/replication/status", null)
          .body()) == 3, "a's stable vector covers a, b and c");
    } catch (Throwable failure) {
      printLogs(cluster, c);
      throw failure;
    } finally {
      stop(cluster, c);
    }
  }

  @Test
  void aNewDataCentreWhosePeersTruncatedWhatItNeedsIsToldSoNotGivenAGap() throws Exception {
    String[] settings = {
        "troupe.replication.pull-interval-millis=50",
        "troupe.replication.pull-backoff-initial-millis=50",
        "troupe.replication.pull-backoff-max-millis=300",
        "troupe.replication.forward-after-millis=500",
        "troupe.replication.applied-record-interval-millis=100",
        "troupe.replication.truncate-interval-millis=100"};
    DataCentreCluster cluster = DataCentreCluster.builder(data).dataCentres("a", "b")
        .secret(SECRET).settings(settings).requestTimeout(Duration.ofSeconds(20)).start();
    ServerProcess c = null;
    try {
      write(cluster.server("a"), "early-a");
      write(cluster.server("b"), "early-b");
      awaitVisible(cluster.server("b"), "early-a");
      awaitVisible(cluster.server("a"), "early-b");
      // Both logs truncated past the early writes: every DC had them.
      for (String name : List.of("a", "b")) {
        awaitTrue(() -> cluster.send(name, "GET", "/v1/replication/status", null).body()
            .path("logEntries").asLong() == 0, name + "'s log truncated");
      }
      c = launchNewcomer(cluster, settings);
      ServerProcess newcomer = c;
      for (String running : List.of("a", "b")) {
        assertEquals(0, ServerProcess.run(List.of("peer", "add", "c=" + c.baseUrl(), "--url",
            cluster.server(running).baseUrl())).exitStatus());
      }
      // c's pulls of a's and b's entries from 0 are refused (410 truncated), not answered with
      // what is left: its status says so, and it warned once per origin.
      awaitTrue(() -> {
        com.fasterxml.jackson.databind.JsonNode status =
            newcomer.get("/v1/replication/status").body();
        int truncated = 0;
        for (com.fasterxml.jackson.databind.JsonNode peer : status.path("peers")) {
          if (peer.path("link").path("lastFailureTruncated").asBoolean()) {
            truncated++;
          }
        }
        return truncated == 2;
      }, "c's links to a and b show the truncation");
      ServerProcess.Finished status = ServerProcess.run(List.of("status", "--url",
          c.baseUrl()));
      assertTrue(status.output().contains("truncated"), status.output());
      Thread.sleep(1_000);
      long warnings = c.log().lines()
          .filter(line -> line.contains("no longer holds what this DC needs")).count();
      assertTrue(warnings >= 1 && warnings <= 4, "one WARN per (peer, origin): " + c.log());
      ServerProcess.Answer early = c.get("/v1/entities/Note/early-a/keys/v");
      assertEquals(404, early.status(), "c has none of what was truncated: " + early.text());
      // c's own writes still reach the others: only what c needs is missing.
      write(c, "late-c");
      awaitVisible(cluster.server("a"), "late-c");
      awaitVisible(cluster.server("b"), "late-c");
    } catch (Throwable failure) {
      printLogs(cluster, c);
      throw failure;
    } finally {
      stop(cluster, c);
    }
  }

  /** How many DCs have a nonzero entry in a status's stable vector. */
  /** After a failure: the last lines of every cluster DC's log and of c's, if it started. */
  private static void printLogs(DataCentreCluster cluster, ServerProcess c) throws IOException {
    cluster.printLogs(8_000);
    if (c != null) {
      String log = c.log();
      System.out.println("log of c:\n" + log.substring(Math.max(0, log.length() - 8_000)));
    }
  }

  /** Kills c, if it started, and closes the cluster. */
  private static void stop(DataCentreCluster cluster, ServerProcess c)
      throws InterruptedException {
    if (c != null) {
      c.kill();
    }
    cluster.close();
  }

  /**
   * Starts the new DC {@code c} (not in the cluster) with {@code settings}, peered with the
   * cluster's a and b; returns once it listens.
   */
  private ServerProcess launchNewcomer(DataCentreCluster cluster, String[] settings) throws Exception {
    Path secret = data.resolve("c-secret");
    Files.writeString(secret, SECRET);
    List<String> arguments = new ArrayList<>(List.of("serve", "--data",
        data.resolve("c").toString(), "--port", "0", "--dc", "c",
        "--replication-secret-file", secret.toString(),
        "--peer", "a=" + cluster.server("a").baseUrl(),
        "--peer", "b=" + cluster.server("b").baseUrl()));
    for (String setting : settings) {
      arguments.add("--set");
      arguments.add(setting);
    }
    return ServerProcess.launch(arguments);
  }

  private static long stableEntries(com.fasterxml.jackson.databind.JsonNode status) {
    long count = 0;
    for (var entry : (Iterable<Map.Entry<String, com.fasterxml.jackson.databind.JsonNode>>)
        status.path("stableVector")::fields) {
      if (entry.getValue().asLong() > 0) {
        count++;
      }
    }
    return count;
  }

  private static void write(ServerProcess server, String name) throws Exception {
    ServerProcess.Answer written = server.send("PUT", "/v1/entities/Note/" + name + "/keys/v",
        "\"" + name + "\"");
    assertEquals(200, written.status(), written.text());
  }

  private static void awaitVisible(ServerProcess server, String name) throws Exception {
    awaitTrue(() -> {
      ServerProcess.Answer read = server.get("/v1/entities/Note/" + name + "/keys/v");
      return read.status() == 200 && read.text().contains(name);
    }, name + " visible at " + server.baseUrl());
  }

  @FunctionalInterface
  private interface Condition {
    boolean holds() throws Exception;
  }

  private static void awaitTrue(Condition condition, String what) throws Exception {
    long deadline = System.currentTimeMillis() + VISIBLE_MILLIS;
    while (!condition.holds()) {
      assertTrue(System.currentTimeMillis() < deadline, "never: " + what);
      Thread.sleep(50);
    }
  }

}
