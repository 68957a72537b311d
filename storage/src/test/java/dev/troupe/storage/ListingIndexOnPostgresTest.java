package dev.troupe.storage;

import dev.troupe.storage.postgres.PostgresDisk;
import dev.troupe.storage.postgres.PostgresDiskSettings;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link ListingIndexTest} with the store on a real PostgreSQL (a new database per test). */
class ListingIndexOnPostgresTest extends ListingIndexTest {
  @RegisterExtension static final TestPostgres postgres = new TestPostgres();
  private PostgresDiskSettings database;

  @BeforeEach
  void newDatabase() {
    database = postgres.newDatabase();
  }

  @Override
  RocksStore open(StorageSettings settings, FakeClock clock) {
    return RocksStore.open(settings, clock, PostgresDisk.open(database),
        RocksStore.Execution.THREADS);
  }

  @Override
  KeyValueDisk openDisk() {
    return PostgresDisk.open(database);
  }
}
