package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Deletes converge across two real data centres (docs/ARCHITECTURE.md, "Deletes across data
 * centres"): while a and b are partitioned, b writes a register and then a deletes it (a later
 * stamp: the deletion wins), a writes a register of an entity and then b deletes the entity, b
 * increments a counter that a deletes without having seen the increment (it survives: add wins).
 * Once the partition heals, both data centres answer the same for every entity and key. Before
 * tombstones, a showed b's older write after its own deletion and b nothing.
 */
class ConvergentDeletesDataCentresTest {
  @TempDir Path data;

  private static final List<String> READS = List.of("/v1/entities/Reg/r", "/v1/entities/Reg/e",
      "/v1/entities/Ctr/c", "/v1/entities/Ctr/c/keys/n");

  @Test
  void aDeletionConcurrentWithAWriteLeavesBothDataCentresIdentical() throws Exception {
    DataCentreCluster cluster = DataCentreCluster.builder(data).dataCentres("a", "b")
        .settings("troupe.replication.pull-interval-millis=50", "troupe.storage.partitions=1")
        .requestTimeout(Duration.ofSeconds(20)).start();
    try {
      for (String dc : List.of("a", "b")) {
        assertEquals(200, cluster.send(dc, "PUT", "/v1/types/Ctr",
            "{\"keys\": {\"n\": {\"kind\": \"counter\"}}}").status());
      }
      ok(cluster.send("a", "PUT", "/v1/entities/Reg/r/keys/v", "1"));
      ok(cluster.send("a", "PUT", "/v1/entities/Reg/e/keys/w", "1"));
      ok(cluster.send("a", "POST", "/v1/entities/Ctr/c/keys/n/increment", "{\"by\": 3}"));
      awaitIdentical(cluster);

      cluster.proxy("a", "b").partition();
      cluster.proxy("b", "a").partition();
      // Each pair in this order, so the deletion's stamp is the later (one host, one clock).
      ok(cluster.send("b", "PUT", "/v1/entities/Reg/r/keys/v", "2"));
      ok(cluster.send("a", "PUT", "/v1/entities/Reg/e/keys/x", "5"));
      ok(cluster.send("b", "POST", "/v1/entities/Ctr/c/keys/n/increment", "{\"by\": 4}"));
      Thread.sleep(50);
      ok(cluster.send("a", "DELETE", "/v1/entities/Reg/r/keys/v", null));
      ok(cluster.send("b", "DELETE", "/v1/entities/Reg/e", null));
      ok(cluster.send("a", "DELETE", "/v1/entities/Ctr/c/keys/n", null));
      Thread.sleep(500);
      cluster.proxy("a", "b").heal();
      cluster.proxy("b", "a").heal();

      List<String> converged = awaitIdentical(cluster);
      // r's key lost to the later deletion; b's concurrent increment survived a's deletion.
      assertEquals(404, cluster.send("a", "GET", "/v1/entities/Reg/r/keys/v", null).status(),
          converged.toString());
      assertEquals(4, cluster.send("b", "GET", "/v1/entities/Ctr/c/keys/n", null).body()
          .path("value").asLong(), converged.toString());
    } catch (Throwable failure) {
      cluster.printLogs(4000);
      throw failure;
    } finally {
      cluster.close();
    }
  }

  private static void ok(ServerProcess.Answer answer) {
    assertEquals(200, answer.status(), answer.text());
  }

  /** What a client sees of every entity in one DC: status and state (versions differ). */
  private static List<String> view(DataCentreCluster cluster, String dc) throws Exception {
    List<String> view = new ArrayList<>();
    for (String path : READS) {
      ServerProcess.Answer answer = cluster.send(dc, "GET", path, null);
      view.add(path + " " + answer.status() + " " + (answer.status() == 200
          ? (path.contains("/keys/") ? answer.body().path("value") : answer.body().path("state"))
          : answer.errorCode()));
    }
    return view;
  }

  private static List<String> awaitIdentical(DataCentreCluster cluster) throws Exception {
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (true) {
      List<String> a = view(cluster, "a");
      List<String> b = view(cluster, "b");
      if (a.equals(b) || System.nanoTime() > deadline) {
        assertEquals(a, b, "a and b after replication went quiet");
        return a;
      }
      Thread.sleep(100);
    }
  }
}
