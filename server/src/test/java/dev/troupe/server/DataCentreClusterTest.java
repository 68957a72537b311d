package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The harness itself: a write replicates through the proxies, a cut link stops it, a restarted DC
 * is reached again through the same proxies, and closing leaves no server process running.
 */
class DataCentreClusterTest {
  @TempDir Path data;

  @Test
  void replicatesThroughItsProxiesSurvivesARestartAndLeaksNoProcess() throws Exception {
    DataCentreCluster cluster = DataCentreCluster.builder(data).dataCentres("a", "b")
        .settings("troupe.replication.pull-interval-millis=50", "troupe.storage.partitions=1")
        .start();
    try {
      assertEquals(200, cluster.send("a", "PUT", "/v1/entities/Reg/r/keys/v", "1").status());
      awaitValue(cluster, "b", 1);

      // b → a cut: a's next write does not reach b until healed.
      cluster.proxy("b", "a").partition();
      assertEquals(200, cluster.send("a", "PUT", "/v1/entities/Reg/r/keys/v", "2").status());
      Thread.sleep(1_000);
      assertEquals(1, value(cluster, "b"));
      cluster.proxy("b", "a").heal();
      awaitValue(cluster, "b", 2);

      // a restarted on a new port: b pulls from it through the same proxy.
      cluster.kill("a");
      assertThrows(java.io.IOException.class, () -> cluster.send("a", "GET", "/v1/entities/Reg/r",
          null));
      cluster.restart("a");
      assertTrue(cluster.server("a").isAlive());
      assertEquals(200, cluster.send("a", "PUT", "/v1/entities/Reg/r/keys/v", "3").status());
      awaitValue(cluster, "b", 3);
    } catch (Throwable failure) {
      cluster.printLogs(4000);
      throw failure;
    } finally {
      cluster.close();
    }
    assertFalse(cluster.anyAlive(), "a server process outlived the cluster");
  }

  private static long value(DataCentreCluster cluster, String dataCentre) throws Exception {
    ServerProcess.Answer answer = cluster.send(dataCentre, "GET", "/v1/entities/Reg/r", null);
    return answer.status() == 404 ? 0 : answer.body().path("state").path("v").asLong();
  }

  private static void awaitValue(DataCentreCluster cluster, String dataCentre, long expected)
      throws Exception {
    long deadline = System.nanoTime() + 20_000_000_000L;
    long seen;
    do {
      seen = value(cluster, dataCentre);
      if (seen == expected) {
        return;
      }
      Thread.sleep(50);
    } while (System.nanoTime() < deadline);
    assertEquals(expected, seen, "not replicated to " + dataCentre + " within 20 s");
  }
}
