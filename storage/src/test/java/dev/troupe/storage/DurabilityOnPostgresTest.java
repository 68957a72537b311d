package dev.troupe.storage;

import dev.troupe.storage.postgres.PostgresDisk;
import dev.troupe.storage.postgres.PostgresDiskSettings;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link DurabilityTest} with the store on a real PostgreSQL ({@link PostgresDisk}; one server for the
 * class, a new database per test): acknowledged commits survive a reopen, timestamps keep increasing, the partition count is kept.
 */
class DurabilityOnPostgresTest extends DurabilityTest {
  @RegisterExtension static final TestPostgres postgres = new TestPostgres();
  private PostgresDiskSettings database;


  @BeforeEach
  void newDatabase() {
    database = postgres.newDatabase();
  }

  @Override
  RocksStore open(StorageSettings settings, LongSupplier clock) {
    return RocksStore.open(settings, clock, PostgresDisk.open(database), RocksStore.Execution.THREADS);
  }
}
