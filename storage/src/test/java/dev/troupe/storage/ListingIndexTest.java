package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.LongNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The listing index ({@link ListingIndex}) on RocksDB: a type's entities in id order, page by page,
 * none of another type's; kept in the commits' batches across reopens; built once at open for a
 * store written before it. {@code ListingIndexOnPostgresTest} and {@code
 * ListingIndexOnMemoryDiskTest} run the same tests on the other disks (the latter adds power loss).
 */
class ListingIndexTest {
  @TempDir Path directory;

  /** Opens the store under test on the backend's data (the same data every time). */
  RocksStore open(StorageSettings settings, FakeClock clock) {
    return RocksStore.open(settings, clock);
  }

  /** The backend's disk itself, the store closed: to make it look like an older store's. */
  KeyValueDisk openDisk() {
    return RocksDisk.open(directory, RocksDisk.OpenMode.SERVE);
  }

  StorageSettings settings() {
    return Fixtures.settings(directory);
  }

  // Type names that are prefixes of each other and ids whose order differs between UTF-16 and
  // UTF-8 (a character above U+FFFF sorts after U+FF5E in code points, before it in UTF-16).
  static final List<String> TYPES = List.of("A", "AB", "Ab", "A b", "Z");
  static final List<String> IDS = List.of("1", "10", "2", "x", "\uFF5E", "\uD83D\uDE00", "é",
      "a-longer-id-0001");

  @Test
  void pagesListATypeInIdOrderAndNothingOfAnotherType() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    try (RocksStore store = open(settings(), clock)) {
      for (String type : TYPES) {
        for (String id : IDS) {
          write(store, new EntityId(type, id));
        }
      }
      // A deleted entity keeps its key: the listing is a superset the readers filter.
      store.commit(store.newTransactionId(), List.of(Fixtures.write(new EntityId("A", "2"),
          new Operation.DeleteEntity()))).join();
      for (String type : TYPES) {
        assertEquals(expected(type), allPages(store, type, 1000), type);
        assertEquals(expected(type), allPages(store, type, 3), type + " in pages of 3");
        assertEquals(expected(type), allPages(store, type, 1), type + " in pages of 1");
      }
      assertEquals(List.of(), store.listing("C", null, false, 10));
      assertEquals(List.of(), store.listing("A", "\uD83D\uDE01", false, 10), "after the last id");
      // A cursor need not be a listed id: the page starts at the next id after it.
      assertEquals(List.of(new EntityId("A", "2"), new EntityId("A", "a-longer-id-0001")),
          store.listing("A", "10a", false, 2));
      // A range from an id: included when listed, the next one when not.
      assertEquals(List.of(new EntityId("A", "10"), new EntityId("A", "2")),
          store.listing("A", "10", true, 2));
      assertEquals(List.of(new EntityId("A", "2")), store.listing("A", "10a", true, 1));
    }
    try (RocksStore store = open(settings(), clock)) {
      for (String type : TYPES) {
        assertEquals(expected(type), allPages(store, type, 4), type + " after a reopen");
      }
    }
  }

  @Test
  void aStoreWrittenBeforeTheListingIndexGetsItBuiltOnceAtOpen() throws Exception {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    int count = settings().groupCommitMaxRecords() + 7; // more than one batch of the build
    try (RocksStore store = open(settings(), clock)) {
      for (int i = 0; i < count; i++) {
        write(store, new EntityId("Item", "item-" + i));
      }
      write(store, new EntityId("Other", "o"));
      // Some of them only in checkpoints too: the build reads both columns.
      store.checkpointNow();
    }
    // What a store written before the listing index looks like: no listing keys, no marker.
    try (KeyValueDisk disk = openDisk(); KeyValueDisk.Batch batch = disk.newBatch()) {
      batch.deleteRange(KeyValueDisk.Column.LISTING, new byte[] {0},
          new byte[] {(byte) 0xFF, (byte) 0xFF});
      batch.delete(KeyValueDisk.Column.META, ListingIndex.META_BUILT);
      disk.write(batch, true);
      assertFalse(ListingIndex.built(disk));
    }
    try (RocksStore store = open(settings(), clock)) {
      assertEquals(count + 1, store.listingEntitiesBuiltAtOpen());
      List<EntityId> items = allPages(store, "Item", 100);
      assertEquals(count, items.size());
      assertEquals(List.of(new EntityId("Other", "o")), store.listing("Other", null, false, 10));
      // Kept by the commits from here on.
      write(store, new EntityId("Item", "new"));
      assertTrue(store.listing("Item", "item-999", false, 10).contains(new EntityId("Item", "new")));
    }
    try (RocksStore store = open(settings(), clock)) {
      assertEquals(0, store.listingEntitiesBuiltAtOpen(), "built once, not at every open");
      assertEquals(count + 1, allPages(store, "Item", 500).size());
    }
  }

  @Test
  void aNewStoreIsMarkedBuiltWithItsFirstBatch() throws Exception {
    try (RocksStore store = open(settings(), new FakeClock(Fixtures.START_MILLIS))) {
      assertEquals(0, store.listingEntitiesBuiltAtOpen());
    }
    try (KeyValueDisk disk = openDisk()) {
      assertTrue(ListingIndex.built(disk));
    }
  }

  @Test
  void aStoreWithABootstrapInProgressAndTheListingMarkerOpensAndReadsBoth() throws Exception {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    try (RocksStore store = open(settings(), clock)) {
      store.bootstrapInstallation().begin(7); // meta B, beside the listing index's marker
    }
    try (RocksStore store = open(settings(), clock)) {
      assertEquals(BootstrapInstallation.Phase.STARTED,
          store.bootstrapInstallation().progress().phase());
      assertEquals(7, store.bootstrapInstallation().progress().sourceDc());
      assertEquals(0, store.listingEntitiesBuiltAtOpen());
    }
    try (KeyValueDisk disk = openDisk()) {
      assertTrue(ListingIndex.built(disk));
    }
  }

  static void write(RocksStore store, EntityId entity) {
    store.commit(store.newTransactionId(), List.of(Fixtures.write(entity,
        new Operation.Assign("n", LongNode.valueOf(1))))).join();
  }

  /** The type's entities of {@link #IDS}, in UTF-8 byte order. */
  static List<EntityId> expected(String type) {
    List<String> ids = new ArrayList<>(IDS);
    ids.sort((left, right) -> Arrays.compareUnsigned(left.getBytes(StandardCharsets.UTF_8),
        right.getBytes(StandardCharsets.UTF_8)));
    return ids.stream().map(id -> new EntityId(type, id)).toList();
  }

  /** Every page of the type, each continuing after the previous page's last id. */
  static List<EntityId> allPages(RocksStore store, String type, int pageSize) {
    List<EntityId> all = new ArrayList<>();
    String after = null;
    while (true) {
      List<EntityId> page = store.listing(type, after, false, pageSize);
      assertTrue(page.size() <= pageSize);
      all.addAll(page);
      if (page.size() < pageSize) {
        return all;
      }
      after = page.get(page.size() - 1).id();
    }
  }
}
