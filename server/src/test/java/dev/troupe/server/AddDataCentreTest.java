package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

      Path secret = data.resolve("c-secret");
      Files.writeString(secret, SECRET);
      List<String> arguments = new ArrayList<>(List.of("serve", "--data",
          data.resolve("c").toString(), "--port", "0", "--dc", "c",
          "--replication-secret-file", secret.toString(),
          "--peer", "a=" + cluster.server("a").baseUrl(),
          "--peer", "b=" + cluster.server("b").baseUrl()));
      for (String setting : SETTINGS) {
        arguments.add("--set");
        arguments.add(setting);
      }
      c = ServerProcess.launch(arguments);
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
      cluster.printLogs(8_000);
      if (c != null) {
        String log = c.log();
        System.out.println("log of c:\n" + log.substring(Math.max(0, log.length() - 8_000)));
      }
      throw failure;
    } finally {
      if (c != null) {
        c.kill();
      }
      cluster.close();
    }
  }

  /** How many DCs have a nonzero entry in a status's stable vector. */
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
