package dev.troupe.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.TroupeException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * The ring of recent transaction outcomes: newest first, bounded, paged without repeats, each
 * outcome's fields bounded too.
 */
class RecentTransactionsTest {
  private static final List<EntityId> TWO = List.of(new EntityId("A", "1"), new EntityId("A", "2"));
  private static final int MAX_ENTITIES = 16;
  private static final int MAX_MESSAGE_CHARS = 300;

  private static RecentTransactions ring(int capacity) {
    return new RecentTransactions(new RecentTransactions.Settings(capacity, 2, capacity,
        MAX_ENTITIES, MAX_MESSAGE_CHARS));
  }

  private static List<Long> transactionIds(RecentTransactions.Page page) {
    return page.outcomes().stream().map(RecentTransactions.Outcome::transactionId).toList();
  }

  @Test
  void keepsTheNewestOutcomesNewestFirst() {
    RecentTransactions recent = ring(4);
    assertEquals(List.of(), recent.page(null, 10).outcomes());
    assertNull(recent.page(null, 10).next());
    for (long id = 1; id <= 6; id++) {
      recent.committed(id, RecentTransactions.Kind.DYNAMIC, TWO, id * 10, 1000 + id, 5);
    }
    RecentTransactions.Page all = recent.page(null, 10);
    assertEquals(List.of(6L, 5L, 4L, 3L), transactionIds(all), "the capacity's newest");
    assertNull(all.next(), "nothing older is kept");
    assertEquals(60, all.outcomes().get(0).version());
    assertTrue(all.outcomes().get(0).committed());
  }

  @Test
  void pagesFollowTheCursorWithoutRepeatsEvenWhileRecording() {
    RecentTransactions recent = ring(100);
    for (long id = 1; id <= 10; id++) {
      recent.committed(id, RecentTransactions.Kind.PLANNED, TWO, id, 0, 0);
    }
    RecentTransactions.Page first = recent.page(null, 4);
    assertEquals(List.of(10L, 9L, 8L, 7L), transactionIds(first));
    // Newer outcomes meanwhile do not shift the next page.
    recent.committed(11, RecentTransactions.Kind.PLANNED, TWO, 11, 0, 0);
    RecentTransactions.Page second = recent.page(first.next(), 4);
    assertEquals(List.of(6L, 5L, 4L, 3L), transactionIds(second));
    RecentTransactions.Page last = recent.page(second.next(), 4);
    assertEquals(List.of(2L, 1L), transactionIds(last));
    assertNull(last.next());
    // Overwritten below the cursor: skipped, never shown in another's place.
    RecentTransactions small = ring(3);
    for (long id = 1; id <= 3; id++) {
      small.committed(id, RecentTransactions.Kind.DYNAMIC, TWO, id, 0, 0);
    }
    RecentTransactions.Page page = small.page(null, 1);
    for (long id = 4; id <= 5; id++) {
      small.committed(id, RecentTransactions.Kind.DYNAMIC, TWO, id, 0, 0);
    }
    assertEquals(List.of(), small.page(page.next(), 5).outcomes(), "2 and 1 were overwritten");
  }

  @Test
  void failuresKeepCodeReasonAndABoundedMessageAndEntities() {
    RecentTransactions recent = ring(10);
    List<EntityId> many = IntStream.range(0, 40).mapToObj(i -> new EntityId("A", "e" + i))
        .toList();
    recent.failed(7, RecentTransactions.Kind.INTERACTIVE, new TroupeException(ErrorCode.ABORTED,
        TransactionAbort.LOCK_CONFLICT, "x".repeat(5000)), many, 123, 456);
    recent.failed(8, RecentTransactions.Kind.DYNAMIC,
        new TroupeException(ErrorCode.OUTCOME_UNKNOWN, "no outcome in time"), TWO, 124, 457);
    RecentTransactions.Outcome unknown = recent.page(null, 10).outcomes().get(0);
    assertEquals("outcome_unknown", unknown.code());
    assertNull(unknown.reason(), "a reason only for aborted");
    RecentTransactions.Outcome aborted = recent.page(null, 10).outcomes().get(1);
    assertFalse(aborted.committed());
    assertEquals("aborted", aborted.code());
    assertEquals("lock_conflict", aborted.reason());
    assertEquals(MAX_MESSAGE_CHARS + 3, aborted.message().length());
    assertEquals(MAX_ENTITIES, aborted.entities().size());
    assertEquals(40, aborted.entityCount());
    assertEquals(0, aborted.version());
  }

  @Test
  void concurrentRecordsEachGetOneSequenceAndReadersSeeNoDuplicates() throws Exception {
    RecentTransactions recent = ring(64);
    int threads = 4;
    int each = 5000;
    List<Thread> writers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      long base = t * 1_000_000L;
      writers.add(Thread.ofPlatform().start(() -> {
        for (int i = 0; i < each; i++) {
          recent.committed(base + i, RecentTransactions.Kind.DYNAMIC, TWO, 1, 0, 0);
        }
      }));
    }
    while (writers.stream().anyMatch(Thread::isAlive)) {
      RecentTransactions.Page page = recent.page(null, 64);
      Set<Long> sequences = new HashSet<>();
      long previous = Long.MAX_VALUE;
      for (RecentTransactions.Outcome outcome : page.outcomes()) {
        assertTrue(sequences.add(outcome.sequence()));
        assertTrue(outcome.sequence() < previous, "newest first");
        previous = outcome.sequence();
      }
    }
    for (Thread writer : writers) {
      writer.join();
    }
    RecentTransactions.Page page = recent.page(null, 64);
    assertEquals(64, page.outcomes().size());
    assertEquals((long) threads * each, page.outcomes().get(0).sequence());
  }

  @Test
  void settingsAreChecked() {
    assertThrows(IllegalArgumentException.class, 
        () -> new RecentTransactions.Settings(0, 1, 1, 1, 1));
    assertThrows(IllegalArgumentException.class, 
        () -> new RecentTransactions.Settings(5, 0, 1, 1, 1));
    assertThrows(IllegalArgumentException.class, 
        () -> new RecentTransactions.Settings(5, 3, 2, 1, 1));
    assertThrows(IllegalArgumentException.class,
        () -> new RecentTransactions.Settings(5, 1, 2, 0, 1));
    assertThrows(IllegalArgumentException.class,
        () -> new RecentTransactions.Settings(5, 1, 2, 1, 0));
    RecentTransactions.Settings defaults = RecentTransactions.Settings.fromConfig(
        com.typesafe.config.ConfigFactory.load());
    assertEquals(new RecentTransactions.Settings(1000, 100, 1000, 16, 300), defaults);
  }
}
