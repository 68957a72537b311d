package dev.troupe.storage;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import dev.troupe.storage.postgres.PostgresDisk;
import dev.troupe.storage.postgres.PostgresDiskSettings;
import dev.troupe.storage.postgres.PostgresInstance;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A real PostgreSQL for a test class and a fresh database per test ({@link #newDatabase}): a JUnit
 * extension, registered as {@code @RegisterExtension static final TestPostgres postgres = new
 * TestPostgres();}, that starts a server as Troupe runs on it (page checksums on) before the
 * class's tests and stops and deletes it after them.
 */
final class TestPostgres implements BeforeAllCallback, AfterAllCallback {
  private static final AtomicInteger DATABASES = new AtomicInteger();

  private PostgresInstance server;

  @Override
  public void beforeAll(ExtensionContext context) {
    server = PostgresInstance.startForTroupe(32);
  }

  @Override
  public void afterAll(ExtensionContext context) {
    if (server != null) {
      server.close();
      server = null;
    }
  }

  PostgresInstance server() {
    return server;
  }

  /** The settings of a new, empty database on the server; small pool, small cursor pages. */
  PostgresDiskSettings newDatabase() {
    String name = "troupe_test_" + DATABASES.incrementAndGet();
    server.createDatabase(name);
    return PostgresDiskSettings.defaults(server.jdbcUrl(name))
        .withMaximumPoolSize(16)
        .withCursorPageRows(64);
  }

  PostgresDisk open(PostgresDiskSettings settings) {
    return PostgresDisk.open(settings);
  }
}
