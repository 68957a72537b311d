package dev.troupe.server.contract;

import dev.troupe.server.ServerProcess;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

/** The entity REST contract against a real Troupe node. */
class TroupeEntityContractTest extends EntityContract {
  @TempDir static Path data;
  static ServerProcess server;

  @BeforeAll
  static void start() throws Exception {
    server = ServerProcess.start(data.resolve("node"));
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
  }

  @Override
  protected ServerProcess server() {
    return server;
  }
}
