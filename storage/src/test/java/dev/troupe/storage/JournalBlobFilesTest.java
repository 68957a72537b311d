package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.TextNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Operation;
import dev.troupe.model.value.RegisterValue;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The journal's large records in blob files ({@code troupe.storage.rocksdb.journal-blob-min-bytes},
 * issue 20): on the real RocksDB, records at or above the threshold are written to blob files and
 * read back from them (by materialization, after a restart, at a past timestamp), records below it
 * stay in the table files, and once truncation removed every record of a blob file and compaction
 * dropped their keys, the file is gone. Either setting opens a store written under the other.
 */
class JournalBlobFilesTest {
  private static final int ENTITIES = 60;

  @TempDir Path directory;

  private final FakeClock clock = new FakeClock(Fixtures.START_MILLIS);

  private StorageSettings settings(long journalBlobMinBytes) {
    // No automatic round: the journal alone holds the states until the test checkpoints.
    return Fixtures.settings(directory)
        .withCheckpoints(1_000_000, 3_600_000, 1_000_000)
        .withHistoryRetentionMillis(0)
        .withRocksDisk(RocksDiskSettings.defaults().withJournalBlobMinBytes(journalBlobMinBytes));
  }

  private static EntityId entity(int i) {
    return new EntityId("Doc", "d" + i);
  }

  /** Entity {@code i}'s value after {@code generation}: about 1 KB, or a few bytes if small. */
  private static String value(int i, int generation, boolean large) {
    String head = "v" + generation + "-" + i + "-";
    return large ? head + "x".repeat(1000) : head;
  }

  /** Assigns every entity its value of {@code generation}; one record per entity. */
  private static void write(RocksStore store, int generation, boolean large) {
    List<CompletableFuture<Committed>> futures = new ArrayList<>();
    for (int i = 0; i < ENTITIES; i++) {
      futures.add(store.commit(store.newTransactionId(), List.of(Fixtures.write(entity(i),
          new Operation.Assign("text", TextNode.valueOf(value(i, generation, large)))))));
    }
    futures.forEach(CompletableFuture::join);
  }

  private static void assertValues(RocksStore store, int generation, boolean large) {
    for (int i = 0; i < ENTITIES; i++) {
      EntityState state = store.read(entity(i));
      assertEquals(value(i, generation, large), text(state), "entity " + i);
      assertEquals(value(i, generation, large),
          text(store.readAt(entity(i), store.currentTimestamp())), "entity " + i + " at now");
    }
  }

  private static String text(EntityState state) {
    return state.get("text") instanceof RegisterValue register ? register.value().asText() : null;
  }

  private static void flush(RocksStore store) throws DiskException {
    ((RocksDisk) store.disk).flushMemtables();
  }

  private List<Path> blobFiles() throws IOException {
    try (Stream<Path> files = Files.list(directory)) {
      return files.filter(path -> path.getFileName().toString().endsWith(".blob")).toList();
    }
  }

  private long blobBytes() throws IOException {
    long bytes = 0;
    for (Path file : blobFiles()) {
      bytes += Files.size(file);
    }
    return bytes;
  }

  @Test
  void largeRecordsAreWrittenToBlobFilesAndReadBackFromThem() throws Exception {
    StorageSettings settings = settings(RocksDiskSettings.DEFAULT_JOURNAL_BLOB_MIN_BYTES);
    try (RocksStore store = RocksStore.open(settings, clock)) {
      write(store, 1, true);
      flush(store);
      // Every record's value went to the blob files once: 60 records of about 1 KB.
      long bytes = blobBytes();
      assertTrue(bytes >= ENTITIES * 1000L, "blob files hold " + bytes + " bytes");
      // What /metrics shows: the live blob files are the ones on disk; the keys in table files.
      KeyValueDisk.DiskFiles files = store.statistics().files();
      assertEquals(bytes, files.blobFileBytes());
      assertTrue(files.tableFileBytes() > 0, files.toString());
      assertTrue(files.tableFileBytes() < bytes, "keys and references only: " + files);
      assertValues(store, 1, true);
    }
    // After a restart nothing is cached and no checkpoint exists: every read materializes from
    // the journal, that is from the blob files.
    try (RocksStore store = RocksStore.open(settings, clock)) {
      assertValues(store, 1, true);
      assertEquals(0, store.statistics().objectCheckpoints());
    }
  }

  @Test
  void smallRecordsStayInTheTableFiles() throws Exception {
    try (RocksStore store = RocksStore.open(
        settings(RocksDiskSettings.DEFAULT_JOURNAL_BLOB_MIN_BYTES), clock)) {
      write(store, 1, false);
      flush(store);
      assertEquals(List.of(), blobFiles(), "records far under 256 bytes");
      assertValues(store, 1, false);
    }
  }

  @Test
  void withoutBlobFilesEveryRecordStaysInTheTableFiles() throws Exception {
    try (RocksStore store = RocksStore.open(settings(0), clock)) {
      write(store, 1, true);
      flush(store);
      assertEquals(List.of(), blobFiles());
      assertValues(store, 1, true);
    }
  }

  @Test
  void truncationAndCompactionDeleteTheBlobFiles() throws Exception {
    StorageSettings settings = settings(RocksDiskSettings.DEFAULT_JOURNAL_BLOB_MIN_BYTES);
    try (RocksStore store = RocksStore.open(settings, clock)) {
      write(store, 1, true);
      flush(store);
      write(store, 2, true);
      flush(store);
      assertTrue(blobFiles().size() >= 2, "one blob file per flush at least: " + blobFiles());
      clock.advance(10);
      // A round checkpoints every entity, and truncation (no retention) deletes every record.
      store.checkpointNow();
      assertEquals(0, store.statistics().journalRecordsRetained());
      assertEquals(2L * ENTITIES, store.statistics().truncatedRecords());
      flush(store);
      RocksDisk disk = (RocksDisk) store.disk;
      disk.database().compactRange(disk.columnHandles().get(KeyValueDisk.Column.JOURNAL.ordinal()));
      assertEquals(List.of(), blobFiles(), "every record of them was truncated");
      assertEquals(0, store.statistics().files().blobFileBytes());
      assertValues(store, 2, true);
    }
    try (RocksStore store = RocksStore.open(settings, clock)) {
      assertValues(store, 2, true);
    }
  }

  @Test
  void eitherSettingOpensAStoreWrittenUnderTheOther() throws Exception {
    try (RocksStore store = RocksStore.open(settings(0), clock)) {
      write(store, 1, true);
      flush(store);
    }
    try (RocksStore store = RocksStore.open(
        settings(RocksDiskSettings.DEFAULT_JOURNAL_BLOB_MIN_BYTES), clock)) {
      assertValues(store, 1, true);
      write(store, 2, true);
      flush(store);
      assertTrue(blobBytes() >= ENTITIES * 1000L);
    }
    try (RocksStore store = RocksStore.open(settings(0), clock)) {
      assertValues(store, 2, true);
      // A record in the table files after one in a blob file, and the past read across them.
      long afterSecond = store.currentTimestamp();
      clock.advance(1);
      write(store, 3, true);
      flush(store);
      assertValues(store, 3, true);
      for (int i = 0; i < ENTITIES; i++) {
        assertEquals(value(i, 2, true), text(store.readAt(entity(i), afterSecond)));
      }
    }
  }
}
