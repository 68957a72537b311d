package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * When an object is checkpointed on its own: after {@code checkpoint-every-operations}, and a
 * large one only after at least its size divided by {@code checkpoint-bytes-per-operation}
 * operations, so a checkpoint, which rewrites it whole, stays amortized.
 */
class ObjectCheckpointTest {
  @TempDir Path directory;

  /** Object checkpoints after a 100 KB object took 50 one-key writes, checkpointing every 10. */
  private long checkpointsOfALargeObject(int bytesPerOperation) {
    StorageSettings base = Fixtures.settings(directory.resolve("b" + bytesPerOperation))
        .withCheckpoints(10, 1_000_000_000, 1_000_000_000);
    StorageSettings settings = new StorageSettings(base.directory(), base.partitions(),
        base.durability(), base.groupCommitMaxRecords(), base.groupCommitQueueLimit(),
        base.asyncFlushIntervalMillis(), base.cacheMaxWeightBytes(),
        base.checkpointEveryOperations(), base.checkpointIntervalMillis(),
        base.checkpointJournalRecords(), base.historyRetentionMillis(), base.dataCentreId(),
        base.clockCeilingMillis(), bytesPerOperation);
    EntityId large = new EntityId("Seller", "s1");
    try (RocksStore store = RocksStore.open(settings, new FakeClock(Fixtures.START_MILLIS))) {
      store.commit(store.newTransactionId(), List.of(Fixtures.write(large,
          new Operation.Assign("blob", TextNode.valueOf("x".repeat(100_000)))))).join();
      store.read(large); // cached, so its size is known
      long before = store.statistics().objectCheckpoints();
      for (int i = 0; i < 50; i++) {
        store.commit(store.newTransactionId(), List.of(Fixtures.write(large,
            new Operation.Assign("n", LongNode.valueOf(i))))).join();
      }
      return store.statistics().objectCheckpoints() - before;
    }
  }

  @Test
  void aLargeObjectWaitsForOperationsInProportionToItsSize() {
    // About 100 KB in memory (100,000 Latin-1 letters, one byte each in a compact string): at
    // 1 KB per operation it waits about 100 operations, so none of
    // the 50 writes checkpoints it; at a byte budget far above its size, every 10th does.
    assertEquals(0, checkpointsOfALargeObject(1_000));
    assertEquals(5, checkpointsOfALargeObject(100_000_000));
  }
}
