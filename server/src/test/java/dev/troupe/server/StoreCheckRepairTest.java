package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.server.ServerProcess.Answer;
import dev.troupe.server.ServerProcess.Finished;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code troupe check} reports the damage a stopped store holds, and {@code troupe repair}
 * rebuilds what the journal still holds (index, checkpoints of an untruncated journal), says what
 * it cannot, and gives up a damaged write-ahead log only when told to.
 */
class StoreCheckRepairTest {
  /** A checkpoint with every write, no rounds, hence no truncation: the journal stays whole. */
  private static final String[] SETTINGS = {
    "troupe.storage.partitions=1", "troupe.storage.checkpoint-interval-millis=3600000",
    "troupe.storage.checkpoint-every-operations=1"
  };

  @TempDir Path data;

  private static Finished troupe(String... arguments) throws Exception {
    return ServerProcess.run(List.of(arguments));
  }

  /** After a repair every entity reads back exactly what was acknowledged. */
  private static void assertWhole(Path directory) throws Exception {
    try (ServerProcess server = ServerProcess.start(directory, SETTINGS)) {
      for (int i = 0; i < Damage.ENTITIES; i++) {
        Answer read = server.get("/v1/entities/Acct/a" + i + "/keys/v");
        assertEquals(200, read.status(), "entity " + i + ": " + read.text());
        assertEquals(i, read.body().get("value").get("n").asInt());
      }
      assertEquals(200, server.get("/v1/health/ready").status());
    }
  }

  @Test
  void anIntactStoreChecksClean() throws Exception {
    Path directory = data.resolve("node");
    try (ServerProcess server = ServerProcess.start(directory, SETTINGS)) {
      Damage.fill(server);
    }
    Finished check = troupe("check", "--data", directory.toString());
    assertEquals(0, check.exitStatus(), check.output());
    assertTrue(check.output().contains("the store is intact"), check.output());
  }

  @Test
  void aDamagedCheckpointFileIsReportedAndRebuiltFromTheJournal() throws Exception {
    Path directory = data.resolve("node");
    try (ServerProcess server = ServerProcess.start(directory, SETTINGS)) {
      Damage.fill(server);
    }
    Damage.tableFile(directory, "checkpoints");
    Finished check = troupe("check", "--data", directory.toString());
    assertEquals(1, check.exitStatus(), check.output());
    assertTrue(check.output().contains("[repairable] checkpoints table file"), check.output());
    Finished repair = troupe("repair", "--data", directory.toString());
    assertEquals(0, repair.exitStatus(), repair.output());
    assertTrue(repair.output().contains("checkpoints: damaged table file dropped"),
        repair.output());
    assertEquals(0, troupe("check", "--data", directory.toString()).exitStatus());
    assertWhole(directory);
  }

  @Test
  void aDamagedIndexIsRebuiltFromTheJournal() throws Exception {
    Path directory = data.resolve("node");
    try (ServerProcess server = ServerProcess.start(directory, SETTINGS)) {
      Damage.fill(server);
    }
    Damage.tableFile(directory, "index");
    Finished check = troupe("check", "--data", directory.toString());
    assertEquals(1, check.exitStatus(), check.output());
    assertTrue(check.output().contains("index table file"), check.output());
    Finished repair = troupe("repair", "--data", directory.toString());
    assertEquals(0, repair.exitStatus(), repair.output());
    assertTrue(repair.output().contains("index: rebuilt from the journal"), repair.output());
    assertWhole(directory);
  }

  @Test
  void aDamagedJournalIsReportedAsNotRepairable() throws Exception {
    Path directory = data.resolve("node");
    // Without journal blob files, the records live in the journal's table files.
    try (ServerProcess server = ServerProcess.start(directory,
        "troupe.storage.partitions=1", "troupe.storage.checkpoint-interval-millis=3600000",
        "troupe.storage.rocksdb.journal-blob-min-bytes=0")) {
      Damage.fill(server);
    }
    Damage.tableFile(directory, "journal");
    Finished check = troupe("check", "--data", directory.toString());
    assertEquals(1, check.exitStatus(), check.output());
    assertTrue(check.output().contains("[NOT repairable] journal table file"), check.output());
    assertTrue(check.output().contains("restore those from a backup"), check.output());
  }

  @Test
  void aDamagedWriteAheadLogIsGivenUpOnlyWhenTold() throws Exception {
    Path directory = data.resolve("node");
    ServerProcess server = ServerProcess.start(directory, SETTINGS);
    try {
      Damage.fill(server);
    } finally {
      server.kill();
    }
    Damage.writeAheadLog(directory);
    Finished check = troupe("check", "--data", directory.toString());
    assertEquals(1, check.exitStatus(), check.output());
    assertTrue(check.output().contains("[NOT repairable] write-ahead log"), check.output());
    Finished refused = troupe("repair", "--data", directory.toString());
    assertEquals(1, refused.exitStatus(), refused.output());
    assertTrue(refused.output().contains("nothing changed"), refused.output());

    Finished repair = troupe("repair", "--data", directory.toString(),
        "--accept-write-ahead-log-loss");
    assertTrue(repair.output().contains("every write after it is lost"), repair.output());
    try (ServerProcess restarted = ServerProcess.start(directory, SETTINGS)) {
      // What survives is a prefix of the acknowledged writes: never a changed value.
      int present = 0;
      for (int i = 0; i < Damage.ENTITIES; i++) {
        Answer read = restarted.get("/v1/entities/Acct/a" + i + "/keys/v");
        if (read.status() == 200) {
          assertEquals(i, read.body().get("value").get("n").asInt());
          present++;
        } else {
          assertEquals(404, read.status(), read.text());
        }
      }
      assertTrue(present < Damage.ENTITIES, "the log's damage cost nothing? " + present);
      assertEquals(200, restarted.send("PUT", "/v1/entities/Acct/new/keys/v", "1").status());
    }
  }
}
