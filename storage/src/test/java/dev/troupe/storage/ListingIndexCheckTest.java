package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code troupe check} finds an entity missing from the listing index, and {@code troupe repair}
 * drops the index so that the next open builds it again from the index and checkpoints.
 */
class ListingIndexCheckTest {
  @TempDir Path directory;

  @Test
  void checkFindsAMissingListingKeyAndRepairHasItRebuilt() throws Exception {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    StorageSettings settings = Fixtures.settings(directory);
    EntityId lost = new EntityId("Item", "b");
    try (RocksStore store = RocksStore.open(settings, clock)) {
      for (String id : List.of("a", "b", "c")) {
        ListingIndexTest.write(store, new EntityId("Item", id));
      }
    }
    assertTrue(StoreCheck.check(directory).clean(), StoreCheck.check(directory).toString());
    try (RocksDisk disk = RocksDisk.open(directory, RocksDisk.OpenMode.SERVE);
        KeyValueDisk.Batch batch = disk.newBatch()) {
      batch.delete(KeyValueDisk.Column.LISTING, ListingIndex.key(lost));
      disk.write(batch, true);
    }
    StoreCheck.Report found = StoreCheck.check(directory);
    assertEquals(1, found.findings().size(), found.toString());
    StoreCheck.Finding finding = found.findings().get(0);
    assertEquals("listing index of Item/b", finding.where());
    assertTrue(finding.repairable());

    StoreCheck.Report repaired = StoreCheck.repair(directory, false);
    // The index is dropped and its marker deleted: nothing is left to disagree until the next open.
    assertTrue(repaired.clean(), repaired.toString());
    assertTrue(repaired.actions().stream().anyMatch(action -> action.startsWith("listing index")));
    try (RocksStore store = RocksStore.open(settings, clock)) {
      assertEquals(3, store.listingEntitiesBuiltAtOpen());
      assertEquals(List.of(new EntityId("Item", "a"), lost, new EntityId("Item", "c")),
          store.listing("Item", null, false, 10));
    }
    assertTrue(StoreCheck.check(directory).clean());
  }
}
