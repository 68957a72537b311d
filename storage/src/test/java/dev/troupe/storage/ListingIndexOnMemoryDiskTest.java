package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * {@link ListingIndexTest} on {@link MemoryDisk}, and power loss: whatever prefix of the unsynced
 * batches survives, the listing names exactly the entities the store holds records of (the keys
 * are in the commits' own batches), and every acknowledged one.
 */
class ListingIndexOnMemoryDiskTest extends ListingIndexTest {
  private MemoryDisk disk = new MemoryDisk();

  @Override
  RocksStore open(StorageSettings settings, FakeClock clock) {
    disk = disk.restart();
    return RocksStore.open(settings, clock, disk, RocksStore.Execution.THREADS);
  }

  @Override
  KeyValueDisk openDisk() {
    disk = disk.restart();
    return disk;
  }

  @Test
  void afterPowerLossTheListingAgreesWithTheEntitiesAndKeepsEveryAcknowledgedOne() {
    Random random = new Random(19);
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    StorageSettings asynchronous = settings().withDurability(Durability.ASYNC);
    Set<EntityId> acknowledged = new HashSet<>();
    for (int round = 0; round < 30; round++) {
      // Stepped, as SteppedStoreTest: the store is abandoned at the power loss, work queued.
      RocksStore store = RocksStore.open(asynchronous, clock, disk, RocksStore.Execution.STEPPED);
      List<CompletableFuture<Committed>> synced = new java.util.ArrayList<>();
      for (int i = 0; i < 10; i++) {
        EntityId entity = new EntityId(i % 3 == 0 ? "Other" : "Item", "r" + round + "-" + i);
        synced.add(store.commit(store.newTransactionId(), List.of(Fixtures.write(entity,
            new Operation.Increment("n", 1)))));
      }
      store.runPendingWork();
      store.flushWriteAheadLog();
      for (int i = 0; i < synced.size(); i++) {
        synced.get(i).join();
        acknowledged.add(new EntityId(i % 3 == 0 ? "Other" : "Item", "r" + round + "-" + i));
      }
      // More, in several unsynced batches: a prefix of them may survive.
      for (int i = 0; i < 20; i++) {
        store.commit(store.newTransactionId(), List.of(Fixtures.write(
            new EntityId(i % 2 == 0 ? "Other" : "Item", "late" + round + "-" + i),
            new Operation.Increment("n", 1))));
        if (i % 5 == 4) {
          store.runPendingWork();
        }
      }
      disk = disk.crash(random, 0.5);
      RocksStore reopened = RocksStore.open(asynchronous, clock, disk,
          RocksStore.Execution.STEPPED);
      Set<EntityId> stored = new HashSet<>();
      EntityId after = null;
      while (true) {
        List<EntityId> page = reopened.entities(after, 100);
        stored.addAll(page);
        if (page.size() < 100) {
          break;
        }
        after = page.get(page.size() - 1);
      }
      Set<EntityId> listed = new HashSet<>();
      for (String type : List.of("Item", "Other")) {
        listed.addAll(allPages(reopened, type, 7));
      }
      assertEquals(stored, listed, "round " + round);
      assertTrue(listed.containsAll(acknowledged), "round " + round);
      disk = disk.crash(random, 0); // nothing unsynced: abandons the reopened store
    }
  }
}
