package dev.troupe.server.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.server.DevToolsBrowser;
import dev.troupe.server.ServerProcess;
import dev.troupe.server.ThreeNodeCluster;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The entity REST contract against a data centre of three members on one PostgreSQL (issue 18):
 * every request goes to the next member round-robin, so a write, the read of it and the next write
 * of the same entity arrive at different members, and most reach an entity whose partition another
 * member hosts (the routed path). The same answers as from one node are expected. Also the web
 * console's cluster page on this cluster, in headless chromium (the console's own test runs one
 * node, where that page is hidden).
 */
class ClusterEntityContractTest extends EntityContract {
  @TempDir static Path directory;
  static ThreeNodeCluster cluster;
  private static final AtomicInteger NEXT = new AtomicInteger();

  @BeforeAll
  static void start() throws Exception {
    cluster = ThreeNodeCluster.start(directory, ThreeNodeCluster.Options.defaults());
  }

  @AfterAll
  static void stop() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Override
  protected ServerProcess server() {
    return cluster.node(Math.floorMod(NEXT.getAndIncrement(), 3));
  }

  @Test
  void theConsoleShowsEveryMemberOfTheCluster() throws Exception {
    try (DevToolsBrowser browser =
        DevToolsBrowser.start(DevToolsBrowser.installedChromium(), 1280, 600)) {
      browser.navigate(cluster.node(1).baseUrl() + "/console#/cluster");
      Duration timeout = Duration.ofSeconds(15);
      browser.await("document.getElementById('page').dataset.ready === 'cluster'", timeout,
          "the cluster page");
      // The panel is offered because the node's /metrics has cluster metrics.
      browser.await("!document.querySelector('#nav a[data-page=cluster]').hidden", timeout,
          "the cluster entry in the navigation");
      JsonNode rows = browser.evaluate("[...document.querySelectorAll('#page tbody tr')]"
          + ".map(row => [...row.cells].map(cell => cell.textContent))");
      assertEquals(3, rows.size(), rows.toString());
      for (JsonNode row : rows) {
        assertEquals("up", row.get(1).asText(), row.toString());
        assertEquals("yes", row.get(2).asText(), row.toString());
      }
      int partitions = 0;
      for (JsonNode row : rows) {
        partitions += Integer.parseInt(row.get(4).asText());
      }
      String page = browser.evaluate("document.getElementById('page').innerText").asText();
      assertTrue(page.contains("partitions."), page);
      assertTrue(partitions > 0, "no member hosts a partition: " + rows);
      browser.screenshot(Path.of("target/console/cluster.png"));
      assertEquals(List.of(), browser.problems(), "problems in the cluster page");
    }
  }
}
