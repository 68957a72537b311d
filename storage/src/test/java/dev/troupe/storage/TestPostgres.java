package dev.troupe.storage;

import dev.troupe.storage.postgres.PostgresDisk;
import dev.troupe.storage.postgres.PostgresDiskSettings;
import dev.troupe.storage.postgres.PostgresInstance;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A real PostgreSQL for a test class ({@link #start} in {@code @BeforeAll}, {@link #close} in
 * {@code @AfterAll}) and a fresh database per test ({@link #newDatabase}).
 */
final class TestPostgres implements AutoCloseable {
  private static final AtomicInteger DATABASES = new AtomicInteger();

  private final PostgresInstance server;

  private TestPostgres(PostgresInstance server) {
    this.server = server;
  }

  /** Starts a server as Troupe runs on it (page checksums on). */
  static TestPostgres start() {
    return new TestPostgres(PostgresInstance.startForTroupe(32));
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

  @Override
  public void close() {
    server.close();
  }
}
