package dev.troupe.storage;

import dev.troupe.storage.postgres.PostgresDisk;
import dev.troupe.storage.postgres.PostgresDiskSettings;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link TruncationTest} with the store on a real PostgreSQL ({@link PostgresDisk}; one server for the
 * class, a new database per test): checkpoint rounds bound the journal, truncation keeps the retained history readable.
 */
class TruncationOnPostgresTest extends TruncationTest {
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
