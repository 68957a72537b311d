package dev.troupe.storage;

import org.junit.jupiter.api.Test;

/** {@link CoordinatorFenceScenario} on one {@link MemoryDisk}, each node through its own view. */
class CoordinatorFenceTest {
  @Test
  void anEndedCoordinatorsDecisionsAreRefusedAndARestartedNodeCoordinatesAgain() {
    MemoryDisk disk = new MemoryDisk();
    try {
      CoordinatorFenceScenario.run(view -> SharedDiskView.of(disk));
    } finally {
      disk.close();
    }
  }
}
