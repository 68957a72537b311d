package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Store#versions}: an entity's versions from the index column, newest first, page by page
 * with a cursor, only its own (not a neighbour's whose id extends it), each one a read {@code at}
 * answers as that write left the entity; after truncation, only those still in the journal.
 */
class EntityVersionsTest {
  @TempDir Path directory;

  private final FakeClock clock = new FakeClock(Fixtures.START_MILLIS);

  private static long increment(Store store, EntityId entity, long by) {
    return store.commit(store.newTransactionId(),
        List.of(Fixtures.write(entity, new Operation.Increment("n", by)))).join()
        .commitTimestamp();
  }

  @Test
  void versionsAreNewestFirstPageByPageAndEachReadsItsWrite() {
    EntityId entity = new EntityId("Counter", "c");
    EntityId neighbour = new EntityId("Counter", "c2");
    try (RocksStore store = RocksStore.open(Fixtures.settings(directory), clock)) {
      List<Long> written = new ArrayList<>();
      for (int i = 1; i <= 7; i++) {
        written.add(0, increment(store, entity, i));
        increment(store, neighbour, 100);
        clock.advance(1);
      }
      assertEquals(written, store.versions(entity, null, 100));
      // Pages of 3 with the last version as the cursor: every version once, in order.
      List<Long> paged = new ArrayList<>();
      Long before = null;
      while (true) {
        List<Long> page = store.versions(entity, before, 3);
        paged.addAll(page);
        if (page.size() < 3) {
          break;
        }
        before = page.get(page.size() - 1);
      }
      assertEquals(written, paged);
      assertEquals(written.subList(2, 7), store.versions(entity, written.get(1), 100),
          "only versions below the cursor");
      assertEquals(List.of(), store.versions(entity, written.get(6), 10), "none below the first");
      assertEquals(List.of(), store.versions(new EntityId("Counter", "never"), null, 10));
      // Each is the state that write left: 1, 1+2, 1+2+3, ...
      for (int i = 0; i < 7; i++) {
        long sum = (long) (7 - i) * (8 - i) / 2;
        assertEquals(sum, Fixtures.counter(store.readAt(entity, written.get(i)), "n"));
      }
    }
  }

  @Test
  void afterTruncationOnlyTheVersionsStillInTheJournalAreListed() {
    EntityId entity = new EntityId("Counter", "t");
    StorageSettings settings = Fixtures.settings(directory).withCheckpoints(1, 1_000_000, 1)
        .withHistoryRetentionMillis(0);
    try (RocksStore store = RocksStore.open(settings, clock)) {
      List<Long> early = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        early.add(0, increment(store, entity, 1));
        clock.advance(1);
      }
      clock.advance(10);
      store.checkpointNow();
      assertTrue(store.statistics().truncatedRecords() > 0, "the test needs a truncation");
      long later = increment(store, entity, 1);
      List<Long> listed = store.versions(entity, null, 100);
      assertEquals(later, listed.get(0));
      for (long version : listed) {
        // Every version listed is still readable.
        store.readAt(entity, version);
      }
      assertTrue(listed.size() < early.size() + 1, "truncated versions are not listed: " + listed);
    }
  }
}
