package dev.troupe.storage;

import dev.troupe.storage.postgres.PostgresDisk;
import dev.troupe.storage.postgres.PostgresDiskSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link CoordinatorFenceScenario} on a real PostgreSQL, each node through a {@link PostgresDisk}
 * of its own (its own connections, as processes would): the coordinator partitions' owner rows
 * live in the owner table beside the storage partitions'.
 */
class CoordinatorFenceOnPostgresTest {
  @RegisterExtension static final TestPostgres postgres = new TestPostgres();

  @Test
  void anEndedCoordinatorsDecisionsAreRefusedAndARestartedNodeCoordinatesAgain() {
    PostgresDiskSettings database = postgres.newDatabase();
    CoordinatorFenceScenario.run(view -> PostgresDisk.open(database));
  }
}
