package dev.troupe.server.contract;

import dev.troupe.server.ServerProcess;
import dev.troupe.server.ThreeNodeCluster;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

/**
 * The entity REST contract against a data centre of three members on one PostgreSQL (issue 18):
 * every request goes to the next member round-robin, so a write, the read of it and the next write
 * of the same entity arrive at different members, and most reach an entity whose partition another
 * member hosts (the routed path). The same answers as from one node are expected.
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
}
