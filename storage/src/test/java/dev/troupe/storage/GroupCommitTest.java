package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Group commit batches concurrent commits; a full queue fails fast without losing acknowledgements. */
class GroupCommitTest {
  @TempDir Path directory;

  @Test
  void concurrentCommitsShareSyncedWrites() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    int count = 2_000;
    try (RocksStore store = RocksStore.open(Fixtures.settings(directory), clock)) {
      List<CompletableFuture<Committed>> futures = new ArrayList<>();
      for (int i = 0; i < count; i++) {
        EntityId entity = new EntityId("Item", "i" + (i % 50));
        futures.add(
            store.commit(
                store.newTransactionId(),
                List.of(Fixtures.write(entity, new Operation.Increment("n", 1)))));
      }
      Set<Long> timestamps = new HashSet<>();
      for (CompletableFuture<Committed> future : futures) {
        assertTrue(timestamps.add(future.join().commitTimestamp()), "unique commit timestamps");
      }
      StorageStatistics statistics = store.statistics();
      assertEquals(count, statistics.commits());
      assertTrue(
          statistics.groupCommits() * 4 < statistics.commits(),
          "groups: " + statistics.groupCommits() + " for " + statistics.commits() + " commits");
    }
  }

  @Test
  void aFullQueueFailsFastAndLosesNoAcknowledgedCommit() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    StorageSettings settings = Fixtures.withQueue(Fixtures.settings(directory), 2, 4);
    EntityId entity = new EntityId("Item", "hot");
    int acknowledged = 0;
    int overloaded = 0;
    try (RocksStore store = RocksStore.open(settings, clock)) {
      List<CompletableFuture<Committed>> futures = new ArrayList<>();
      for (int i = 0; i < 2_000; i++) {
        futures.add(
            store.commit(
                store.newTransactionId(),
                List.of(Fixtures.write(entity, new Operation.Increment("n", 1)))));
      }
      for (CompletableFuture<Committed> future : futures) {
        try {
          future.join();
          acknowledged++;
        } catch (CompletionException e) {
          assertEquals(ErrorCode.OVERLOADED, ((TroupeException) e.getCause()).code());
          overloaded++;
        }
      }
      assertTrue(overloaded > 0, "some commits must be refused");
      assertTrue(acknowledged > 0, "some commits must pass");
      assertEquals(acknowledged, Fixtures.counter(store.read(entity), "n"));
      assertEquals(acknowledged, store.statistics().commits());
    }
    try (RocksStore store = RocksStore.open(settings, clock)) {
      assertEquals(acknowledged, Fixtures.counter(store.read(entity), "n"));
    }
  }
}
