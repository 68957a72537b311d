package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.FlushOptions;
import org.rocksdb.LiveFileMetaData;

/**
 * Damage on the real RocksDB files is detected, never served: bytes flipped in the middle of the
 * write-ahead log refuse the open (RocksDB's default recovery mode would open an older database
 * without a word), and bytes flipped in an SST of any column family either refuse the open or make
 * exactly the damaged entities answer {@code corrupt_data}; no read ever answers an older state or
 * "absent" for an acknowledged write.
 */
class CorruptionTest {
  private static final int ENTITIES = 400;

  @TempDir Path directory;

  /** Every entity gets a counter of {@code i + 1} and a 200-byte register, acknowledged. */
  private static void fill(RocksStore store) {
    List<CompletableFuture<Committed>> futures = new ArrayList<>();
    for (int i = 0; i < ENTITIES; i++) {
      EntityId entity = entity(i);
      for (int n = 0; n <= i % 3; n++) {
        futures.add(store.commit(store.newTransactionId(), List.of(Fixtures.write(entity,
            new Operation.Increment("count", n == 0 ? i + 1 - (i % 3) : 1),
            new Operation.Assign("text",
                com.fasterxml.jackson.databind.node.TextNode.valueOf("x".repeat(200) + i))))));
      }
    }
    futures.forEach(CompletableFuture::join);
  }

  private static EntityId entity(int i) {
    return new EntityId("Account", "a" + i);
  }

  @Test
  void flippedBytesInTheMiddleOfTheWriteAheadLogRefuseTheOpen() throws IOException {
    StorageSettings settings = Fixtures.settings(directory);
    try (RocksStore store = RocksStore.open(settings, new FakeClock(Fixtures.START_MILLIS))) {
      fill(store);
    }
    Path log = largestFile(".log");
    long size = Files.size(log);
    assertTrue(size > 64 * 1024, "the acknowledged writes are still in the write-ahead log: " + size);
    flip(log, size / 2, 16);
    CorruptDataException refused = assertThrows(CorruptDataException.class,
        () -> RocksStore.open(settings, new FakeClock(Fixtures.START_MILLIS)));
    assertTrue(refused.getMessage().contains("troupe check"), refused.getMessage());
  }

  @Test
  void aTornTailOfTheWriteAheadLogIsStillAccepted() throws IOException {
    StorageSettings settings = Fixtures.settings(directory);
    try (RocksStore store = RocksStore.open(settings, new FakeClock(Fixtures.START_MILLIS))) {
      fill(store);
    }
    Path log = largestFile(".log");
    // An incomplete last record (a write torn by power loss): cut inside its last few bytes.
    try (RandomAccessFile file = new RandomAccessFile(log.toFile(), "rw")) {
      file.setLength(file.length() - 7);
    }
    try (RocksStore store = RocksStore.open(settings, new FakeClock(Fixtures.START_MILLIS))) {
      // Only the last batch (a group commit of many records) is gone: what remains is a prefix.
      int whole = 0;
      for (int i = 0; i < ENTITIES; i++) {
        long count = Fixtures.counter(store.read(entity(i)), "count");
        assertTrue(count <= i + 1, "entity " + i + " holds " + count);
        if (count == i + 1) {
          whole++;
        }
      }
      assertTrue(whole > 0 && whole < ENTITIES, "whole entities: " + whole);
      assertTrue(store.health().intact());
    }
  }

  @Test
  void flippedBytesInAnSstOfEachColumnFamilyAreNeverServed() throws Exception {
    for (String family : List.of("checkpoints", "index", "journal")) {
      Path data = directory.resolve(family);
      StorageSettings settings = Fixtures.settings(data);
      Path damaged;
      try (RocksStore store = RocksStore.open(settings, new FakeClock(Fixtures.START_MILLIS))) {
        fill(store);
        if (family.equals("checkpoints")) {
          store.checkpointNow();
        }
        // Otherwise reads materialize from the journal, which is then what the damage hits.
        damaged = flushAndFind(store, family);
      }
      flip(damaged, Files.size(damaged) / 3, 64);
      RocksStore store;
      try {
        store = RocksStore.open(settings, new FakeClock(Fixtures.START_MILLIS));
      } catch (CorruptDataException refusedAtStart) {
        continue; // refusing to start is a correct answer too
      }
      try (store) {
        int corrupt = 0;
        for (int i = 0; i < ENTITIES; i++) {
          try {
            EntityState state = store.read(entity(i));
            assertTrue(state.exists(), family + ": entity " + i + " read as absent");
            assertEquals(i + 1, Fixtures.counter(state, "count"),
                family + ": entity " + i + " read an older state");
          } catch (TroupeException e) {
            assertEquals(ErrorCode.CORRUPT_DATA, e.code(), e.getMessage());
            corrupt++;
            // A read of the past meets the same damage: never an older state either.
            int victim = i;
            TroupeException past = assertThrows(TroupeException.class,
                () -> store.readAt(entity(victim), store.currentTimestamp()));
            assertEquals(ErrorCode.CORRUPT_DATA, past.code(), past.getMessage());
            corrupt++;
          }
        }
        assertTrue(corrupt > 0, family + ": damage in the middle of an SST went unnoticed");
        StoreHealth health = store.health();
        assertEquals(corrupt, health.corruptionsDetected(), "every damaged read is counted");
        assertFalse(health.intact());
        assertTrue(health.lastCorruption().contains("Account/"), health.lastCorruption());
      }
    }
  }

  @Test
  void flippedBytesInAJournalBlobFileAreNeverServed() throws Exception {
    // fill's records (a 200-byte register and a counter) are above the blob threshold: their
    // bytes are in the journal's blob files, their keys in its table files (issue 20).
    StorageSettings settings = Fixtures.settings(directory);
    try (RocksStore store = RocksStore.open(settings, new FakeClock(Fixtures.START_MILLIS))) {
      fill(store);
      flushAndFind(store, "journal");
    }
    Path damaged = largestFile(".blob");
    flip(damaged, Files.size(damaged) / 2, 64);
    // troupe check reads every journal record: the damage is found, and not called repairable
    // (the journal is the data itself).
    StoreCheck.Report report = StoreCheck.check(directory);
    assertFalse(report.clean(), report.render());
    assertFalse(report.fullyRepairable(), report.render());
    assertTrue(report.findings().stream().anyMatch(finding -> finding.where().contains("journal")
        && !finding.repairable()), report.render());
    try (RocksStore store = RocksStore.open(settings, new FakeClock(Fixtures.START_MILLIS))) {
      int corrupt = 0;
      for (int i = 0; i < ENTITIES; i++) {
        try {
          EntityState state = store.read(entity(i));
          assertTrue(state.exists(), "entity " + i + " read as absent");
          assertEquals(i + 1, Fixtures.counter(state, "count"), "entity " + i + " older");
        } catch (TroupeException e) {
          assertEquals(ErrorCode.CORRUPT_DATA, e.code(), e.getMessage());
          corrupt++;
        }
      }
      assertTrue(corrupt > 0, "damage in the middle of a blob file went unnoticed");
      assertEquals(corrupt, store.health().corruptionsDetected());
    }
  }

  @Test
  void flippedBytesInTheTablesRecoveryReadsRefuseTheOpen() throws Exception {
    // meta (positions, clock ceiling) and transactions (prepared parts in doubt) are read whole by
    // recovery: damage there must refuse the open, never recover from a guess.
    for (String family : List.of("meta", "transactions")) {
      Path data = directory.resolve(family);
      StorageSettings settings = Fixtures.settings(data);
      Path damaged;
      try (RocksStore store = RocksStore.open(settings, new FakeClock(Fixtures.START_MILLIS))) {
        fill(store);
        store.checkpointNow(); // rounds and horizons in meta
        List<CompletableFuture<Void>> prepared = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
          prepared.add(store.prepare(new PreparedTransaction(store.newTransactionId(), entity(i),
              List.of(new Operation.Increment("count", 1)))));
        }
        prepared.forEach(CompletableFuture::join);
        damaged = flushAndFind(store, family);
      }
      flip(damaged, Files.size(damaged) / 3, 64);
      assertThrows(CorruptDataException.class,
          () -> RocksStore.open(settings, new FakeClock(Fixtures.START_MILLIS)).close(),
          family + ": damage in a table recovery reads must refuse the open");
    }
  }

  @Test
  void flippedBytesInAnSstOfTheReplicationLogAreNeverShippedAsAShorterLog() throws Exception {
    int dataCentre = 1001;
    StorageSettings settings = Fixtures.settings(directory).withDataCentreId(dataCentre)
        .withReplicationLog(true);
    Path damaged;
    int shipped = 0;
    try (RocksStore store = RocksStore.open(settings, new FakeClock(Fixtures.START_MILLIS))) {
      fill(store);
      shipped = readWholeLog(store, dataCentre);
      assertTrue(shipped >= ENTITIES, "every commit is in the local log: " + shipped);
      damaged = flushAndFind(store, "replication");
    }
    flip(damaged, Files.size(damaged) / 3, 64);
    RocksStore store;
    try {
      store = RocksStore.open(settings, new FakeClock(Fixtures.START_MILLIS));
    } catch (CorruptDataException refusedAtStart) {
      return; // refusing to start is a correct answer too
    }
    try (store) {
      // A peer reading the log past the damage must never get a batch that silently skips it.
      CorruptDataException refused = assertThrows(CorruptDataException.class,
          () -> readWholeLog(store, dataCentre),
          "damage in the replication log's table was shipped as a shorter log");
      assertTrue(refused.getMessage().contains("replication"), refused.getMessage());
    }
  }

  /** Reads the local origin's whole log the way a peer's pulls do; returns its entry count. */
  private static int readWholeLog(RocksStore store, int dataCentre) {
    int entries = 0;
    long after = 0;
    while (true) {
      var batch = store.replicationLog().read(dataCentre, after, 64);
      entries += batch.entries().size();
      if (batch.entries().isEmpty() || batch.upToTimestamp() <= after) {
        return entries;
      }
      after = batch.upToTimestamp();
    }
  }

  /** Flushes every column family to SST files and returns the largest live one of {@code family}. */
  private static Path flushAndFind(RocksStore store, String family) throws Exception {
    RocksDisk disk = (RocksDisk) store.disk;
    try (FlushOptions wait = new FlushOptions().setWaitForFlush(true)) {
      disk.database().flush(wait, disk.columnHandles());
    }
    LiveFileMetaData largest = null;
    for (LiveFileMetaData file : disk.database().getLiveFilesMetaData()) {
      if (new String(file.columnFamilyName()).equals(family)
          && (largest == null || file.size() > largest.size())) {
        largest = file;
      }
    }
    if (largest == null) {
      fail("no SST file of " + family);
    }
    return Path.of(largest.path(), largest.fileName());
  }

  private Path largestFile(String suffix) throws IOException {
    try (Stream<Path> files = Files.list(directory)) {
      return files.filter(path -> path.getFileName().toString().endsWith(suffix))
          .max((a, b) -> Long.compare(a.toFile().length(), b.toFile().length()))
          .orElseThrow(() -> new AssertionError("no " + suffix + " file in " + directory));
    }
  }

  /** Inverts {@code count} bytes from {@code offset}. */
  static void flip(Path file, long offset, int count) throws IOException {
    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
      byte[] bytes = new byte[count];
      raf.seek(offset);
      raf.readFully(bytes);
      for (int i = 0; i < count; i++) {
        bytes[i] = (byte) ~bytes[i];
      }
      raf.seek(offset);
      raf.write(bytes);
    }
  }
}
