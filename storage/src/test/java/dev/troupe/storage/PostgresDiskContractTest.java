package dev.troupe.storage;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * {@link dev.troupe.storage.postgres.PostgresDisk} keeps the {@link KeyValueDiskContract}, on a
 * real PostgreSQL (one server for the class, a new database per test).
 */
class PostgresDiskContractTest extends KeyValueDiskContract {
  static TestPostgres postgres;

  @BeforeAll
  static void startPostgres() {
    postgres = TestPostgres.start();
  }

  @AfterAll
  static void stopPostgres() {
    if (postgres != null) {
      postgres.close();
    }
  }

  @Override
  protected KeyValueDisk openDisk() {
    return postgres.open(postgres.newDatabase());
  }
}
