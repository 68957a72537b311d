package dev.troupe.server.contract;

import dev.troupe.server.ServerProcess;
import dev.troupe.storage.postgres.PostgresInstance;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The entity REST contract against the PostgreSQL baseline ({@code troupe serve-postgres}) over a
 * real, throwaway PostgreSQL server started and stopped here.
 */
class PostgresEntityContractTest extends EntityContract {
  static PostgresInstance postgres;
  static ServerProcess server;

  @BeforeAll
  static void start() throws Exception {
    postgres = PostgresInstance.start(64);
    server = ServerProcess.launch(List.of("serve-postgres", "--jdbc-url", postgres.jdbcUrl(),
        "--port", "0", "--set", "troupe.baseline.postgres.pool-size=4"));
  }

  @AfterAll
  static void stop() throws Exception {
    if (server != null) {
      server.close();
    }
    if (postgres != null) {
      postgres.close();
    }
  }

  @Override
  protected ServerProcess server() {
    return server;
  }
}
