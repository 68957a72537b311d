package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.Invariants.InvariantViolation;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** When truncation yields to cold reads ({@link MaintenancePacing}): the decision alone. */
class MaintenancePacingTest {
  private static final long NOW = 1_000_000;

  @Test
  void withoutWaitingReadsNothingIsPaced() {
    MaintenancePacing pacing = new MaintenancePacing(20);
    assertFalse(pacing.readsWaiting(NOW));
    pacing.readStarted();
    pacing.readEnded(NOW);
    assertTrue(pacing.readsWaiting(NOW + 19), "a read ended less than the yield ago");
    assertFalse(pacing.readsWaiting(NOW + 20));
  }

  @Test
  void whileReadsWaitOneSliceRunsAtATimeWithAPauseAfterIt() {
    MaintenancePacing pacing = new MaintenancePacing(20);
    pacing.readStarted();
    assertTrue(pacing.readsWaiting(NOW + 1_000), "a read in progress waits however long it takes");
    assertTrue(pacing.takeSlot(NOW));
    assertFalse(pacing.takeSlot(NOW), "another writer waits while one runs a slice");
    assertEquals(20, pacing.millisUntilNextSlice(NOW), "a running slice: ask again a pause later");
    pacing.releaseSlot(NOW + 30);
    assertFalse(pacing.takeSlot(NOW + 49));
    assertEquals(1, pacing.millisUntilNextSlice(NOW + 49));
    assertTrue(pacing.takeSlot(NOW + 50), "the pause after the slice's end has passed");
    pacing.releaseSlot(NOW + 50);
    assertThrows(InvariantViolation.class, () -> pacing.releaseSlot(NOW + 50));
  }

  @Test
  void aZeroYieldNeverPaces() {
    MaintenancePacing pacing = new MaintenancePacing(0);
    pacing.readStarted();
    assertFalse(pacing.readsWaiting(NOW));
    assertThrows(InvariantViolation.class, () -> new MaintenancePacing(-1));
  }

  @Test
  void theSettingIsBounded() {
    StorageSettings settings = Fixtures.settings(Path.of("unused"));
    assertEquals(0, settings.maintenanceYieldMillis(), "off unless configured");
    assertEquals(1_000, settings.withMaintenanceYieldMillis(1_000).maintenanceYieldMillis());
    assertThrows(IllegalArgumentException.class,
        () -> settings.withMaintenanceYieldMillis(1_001));
    assertThrows(IllegalArgumentException.class, () -> settings.withMaintenanceYieldMillis(-1));
  }
}
