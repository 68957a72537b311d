package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.server.ServerProcess.Answer;
import dev.troupe.server.ServerProcess.Finished;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real server over real RocksDB files that are damaged or cannot be written: it never serves
 * damage as truth, never writes on top of it, and says so loudly (JSON errors, readiness with the
 * reason, an ERROR log line, /metrics); what it acknowledged survives.
 */
class StorageFaultTest {
  /** No checkpoint rounds: latest reads then materialize from the journal the test damages. */
  private static final String[] NO_ROUNDS = {
    "troupe.storage.partitions=1", "troupe.storage.checkpoint-interval-millis=3600000"
  };

  @TempDir Path data;

  @Test
  void aDamagedTableFileAnswersCorruptDataAndIsNeverWrittenOver() throws Exception {
    Path directory = data.resolve("node");
    // Without journal blob files: the records live in the journal's table files.
    String[] settings = {NO_ROUNDS[0], NO_ROUNDS[1],
        "troupe.storage.rocksdb.journal-blob-min-bytes=0"};
    try (ServerProcess server = ServerProcess.start(directory, settings)) {
      Damage.fill(server);
    }
    // Leave the data in table files (not only in the write-ahead log), then damage the journal's.
    Damage.tableFile(directory, "journal");
    assertDamageAnsweredAndNeverWrittenOver(directory, settings);
  }

  /** The same damage where the journal's records live by default: a blob file (issue 20). */
  @Test
  void aDamagedJournalBlobFileAnswersCorruptDataAndIsNeverWrittenOver() throws Exception {
    Path directory = data.resolve("node");
    try (ServerProcess server = ServerProcess.start(directory, NO_ROUNDS)) {
      Damage.fill(server);
    }
    Damage.journalBlobFile(directory);
    assertDamageAnsweredAndNeverWrittenOver(directory, NO_ROUNDS);
  }

  /**
   * Reads of the damaged entities answer corrupt_data, the others their value; a write never
   * re-creates a damaged entity; readiness, /metrics and the log say so.
   */
  private static void assertDamageAnsweredAndNeverWrittenOver(Path directory, String[] settings)
      throws Exception {
    try (ServerProcess server = ServerProcess.start(directory, settings)) {
      assertEquals(200, server.get("/v1/health/ready").status(), "nothing read yet");
      List<Integer> damaged = new ArrayList<>();
      for (int i = 0; i < Damage.ENTITIES; i++) {
        Answer read = server.get("/v1/entities/Acct/a" + i + "/keys/v");
        if (read.status() == 200) {
          assertEquals(i, read.body().get("value").get("n").asInt(), "entity " + i);
        } else {
          assertEquals(500, read.status(), read.text());
          assertEquals("corrupt_data", read.errorCode(), read.text());
          damaged.add(i);
        }
      }
      assertTrue(!damaged.isEmpty(), "damage in the middle of the journal went unnoticed");
      int victim = damaged.get(0);
      // A write must not re-create the entity over its acknowledged key.
      Answer write = server.send("PUT", "/v1/entities/Acct/a" + victim + "/keys/other", "1");
      assertEquals("corrupt_data", write.errorCode(), write.text());
      Answer whole = server.get("/v1/entities/Acct/a" + victim);
      assertEquals("corrupt_data", whole.errorCode(), whole.text());

      Answer ready = server.get("/v1/health/ready");
      assertEquals(503, ready.status(), ready.text());
      assertEquals("not_ready", ready.body().get("status").asText());
      assertEquals("corrupt_data", ready.body().get("problems").get(0).get("code").asText());
      assertEquals(503, server.get("/v1/health").status(), "/v1/health is readiness");
      assertEquals(200, server.get("/v1/health/live").status(), "restarting cures nothing");
      String metrics = server.get("/metrics").text();
      assertTrue(metrics.contains("troupe_ready 0"), metrics);
      assertTrue(metricValue(metrics, "troupe_storage_corruptions_detected_total")
          >= damaged.size(), metrics);
      awaitLog(server, "corrupt data in entity Acct/a");
    }
  }

  @Test
  void aDamagedWriteAheadLogRefusesToStart() throws Exception {
    Path directory = data.resolve("node");
    ServerProcess server = ServerProcess.start(directory, NO_ROUNDS);
    try {
      Damage.fill(server);
    } finally {
      server.kill(); // the acknowledged writes now live in the write-ahead log only
    }
    Damage.writeAheadLog(directory);
    Finished start = ServerProcess.run(List.of("serve", "--data", directory.toString(),
        "--port", "0"));
    assertEquals(65, start.exitStatus(), start.output());
    assertTrue(start.output().contains("refusing to start") && start.output().contains("troupe check"),
        start.output());
  }

  @Test
  void aFullDiskRefusesWritesSaysWhyAndLosesNothingAcknowledged() throws Exception {
    Path directory = data.resolve("node");
    List<Integer> acknowledged = new ArrayList<>();
    try (ServerProcess server = ServerProcess.startWithFileSizeLimit(directory, 2048, NO_ROUNDS)) {
      String big = "\"" + "y".repeat(30_000) + "\"";
      Answer refused = null;
      for (int i = 0; i < 1000 && refused == null; i++) {
        Answer put = server.send("PUT", "/v1/entities/Big/b" + i + "/keys/v", big);
        if (put.status() == 200) {
          acknowledged.add(i);
        } else {
          refused = put;
        }
      }
      assertTrue(refused != null, "2 MB per file must run out");
      assertTrue(refused.status() >= 500 && refused.errorCode() != null, refused.text());
      Answer next = server.send("PUT", "/v1/entities/Big/after/keys/v", "1");
      assertEquals(503, next.status(), next.text());
      assertEquals("unavailable", next.errorCode(), next.text());
      Answer ready = server.get("/v1/health/ready");
      assertEquals(503, ready.status(), ready.text());
      assertEquals("storage_failed", ready.body().get("problems").get(0).get("code").asText(),
          ready.text());
      assertEquals(200, server.get("/v1/health/live").status());
      assertTrue(server.get("/metrics").text().contains("troupe_storage_failed 1"));
      awaitLog(server, "storage failed");
    }
    assertTrue(acknowledged.size() > 10, "acknowledged before the disk filled: " + acknowledged);
    try (ServerProcess server = ServerProcess.start(directory, NO_ROUNDS)) {
      for (int i : acknowledged) {
        Answer read = server.get("/v1/entities/Big/b" + i + "/keys/v");
        assertEquals(200, read.status(), "acknowledged write " + i + " lost: " + read.text());
      }
      assertEquals(200, server.send("PUT", "/v1/entities/Big/after/keys/v", "1").status());
      assertEquals(200, server.get("/v1/health/ready").status());
    }
  }

  @Test
  void underExitOnStorageFailureAFullDiskStopsTheProcessForItsSupervisor() throws Exception {
    Path directory = data.resolve("node");
    String[] settings = {"troupe.storage.partitions=1",
        "troupe.server.on-storage-failure=exit"};
    try (ServerProcess server = ServerProcess.startWithFileSizeLimit(directory, 1024, settings)) {
      String big = "\"" + "z".repeat(30_000) + "\"";
      for (int i = 0; i < 1000; i++) {
        Answer put;
        try {
          put = server.send("PUT", "/v1/entities/Big/b" + i + "/keys/v", big);
        } catch (IOException connectionClosed) {
          break; // the process is exiting
        }
        if (put.status() != 200) {
          break;
        }
      }
      assertEquals(74, server.awaitExit(30), server.log());
    }
  }

  /** Waits up to 10 s for an ERROR line containing {@code text} in the server's output. */
  private static void awaitLog(ServerProcess server, String text) throws Exception {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (true) {
      String log = server.log();
      if (log.lines().anyMatch(line -> line.contains("ERROR") && line.contains(text))) {
        return;
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("no ERROR line with '" + text + "' in:\n" + log);
      }
      Thread.sleep(50);
    }
  }

  private static long metricValue(String metrics, String name) {
    for (String line : metrics.split("\n")) {
      if (line.startsWith(name + " ")) {
        return (long) Double.parseDouble(line.substring(name.length() + 1).trim());
      }
    }
    throw new AssertionError(name + " not in /metrics");
  }
}
