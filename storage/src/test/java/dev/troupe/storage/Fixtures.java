package dev.troupe.storage;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Operation;
import dev.troupe.model.value.CounterValue;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/** Shared helpers for storage tests. */
final class Fixtures {
  static final long START_MILLIS = 1_700_000_000_000L;

  private Fixtures() {}

  /** Small, test-friendly settings: 2 partitions, everything else from the defaults. */
  static StorageSettings settings(Path directory) {
    StorageSettings defaults = StorageSettings.defaults(directory);
    return new StorageSettings(
        directory,
        2,
        Durability.SYNC,
        defaults.groupCommitMaxRecords(),
        defaults.groupCommitQueueLimit(),
        defaults.asyncFlushIntervalMillis(),
        defaults.cacheMaxWeightBytes(),
        defaults.checkpointEveryOperations(),
        defaults.checkpointIntervalMillis(),
        defaults.checkpointJournalRecords(),
        defaults.historyRetentionMillis(),
        1);
  }

  static StorageSettings withQueue(StorageSettings s, int maxRecords, int queueLimit) {
    return new StorageSettings(
        s.directory(), s.partitions(), s.durability(), maxRecords, queueLimit,
        s.asyncFlushIntervalMillis(), s.cacheMaxWeightBytes(), s.checkpointEveryOperations(),
        s.checkpointIntervalMillis(), s.checkpointJournalRecords(), s.historyRetentionMillis(),
        s.dataCentreId());
  }

  static EntityWrite write(EntityId entity, Operation... operations) {
    return new EntityWrite(entity, List.of(operations));
  }

  /** How many checkpoints of {@code entity} the store's disk holds. */
  static int checkpointsOf(RocksStore store, EntityId entity) {
    byte[] prefix = Keys.entityPrefix(entity);
    int count = 0;
    try (KeyValueDisk.Cursor cursor = store.disk.cursor(KeyValueDisk.Column.CHECKPOINTS, null,
        prefix, Keys.entityUpperBound(prefix))) {
      for (cursor.seek(prefix); cursor.isValid(); cursor.next()) {
        count += Keys.hasPrefix(cursor.key(), prefix, 8) ? 1 : 0;
      }
    }
    return count;
  }

  static long counter(EntityState state, String key) {
    return state.get(key) instanceof CounterValue counter ? counter.total() : 0;
  }

  static Path createTempDirectory() {
    try {
      return Files.createTempDirectory("troupe-storage-test");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static void deleteRecursively(Path directory) {
    if (directory == null || !Files.exists(directory)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(directory)) {
      List<Path> all = new ArrayList<>(paths.sorted(Comparator.reverseOrder()).toList());
      for (Path path : all) {
        Files.deleteIfExists(path);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
