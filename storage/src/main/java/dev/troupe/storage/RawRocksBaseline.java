package dev.troupe.storage;

import java.nio.file.Files;
import java.nio.file.Path;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * Benchmark baseline for durable writes: plain RocksDB with its write-ahead log on and {@code
 * sync=true} on every write, nothing else. Each {@link #putSynced} is one single-put {@link
 * WriteBatch}, the same unit the journal writer submits, so when many threads call it at once
 * RocksDB's own write-group leader merges them into one log write and one fsync: the group commit
 * a durable store gets for free, and the ceiling the engine's group commit is measured against.
 *
 * <p>Database options are those {@link RocksDisk} opens the store's database with (write buffer,
 * total write-ahead-log bound, background jobs), so the two differ only by what the engine does,
 * not by how RocksDB is tuned.
 *
 * <p>It lives in this module because only {@code storage} may import RocksDB
 * (docs/ARCHITECTURE.md); the {@code bench} module drives it. Thread-safe.
 */
public final class RawRocksBaseline implements AutoCloseable {

  static {
    RocksDB.loadLibrary();
  }

  private final Options options;
  private final WriteOptions syncedWrite;
  private final RocksDB database;

  private RawRocksBaseline(Options options, WriteOptions syncedWrite, RocksDB database) {
    this.options = options;
    this.syncedWrite = syncedWrite;
    this.database = database;
  }

  /** Opens (creating if missing) a database in {@code directory}. */
  public static RawRocksBaseline open(Path directory) {
    Options options = new Options()
        .setCreateIfMissing(true)
        .setMaxTotalWalSize(RocksDisk.MAX_TOTAL_WAL_BYTES)
        .setMaxBackgroundJobs(RocksDisk.MAX_BACKGROUND_JOBS)
        .setWriteBufferSize(RocksDisk.WRITE_BUFFER_BYTES);
    WriteOptions syncedWrite = new WriteOptions().setSync(true).setDisableWAL(false);
    try {
      Files.createDirectories(directory);
      return new RawRocksBaseline(options, syncedWrite,
          RocksDB.open(options, directory.toString()));
    } catch (Exception e) {
      syncedWrite.close();
      options.close();
      throw new IllegalStateException(
          "cannot open RocksDB in " + directory + ": " + e.getMessage(), e);
    }
  }

  /** Writes one key durably: returns once the write-ahead log holding it is fsynced. */
  public void putSynced(byte[] key, byte[] value) {
    try (WriteBatch batch = new WriteBatch()) {
      batch.put(key, value);
      database.write(syncedWrite, batch);
    } catch (RocksDBException e) {
      throw new IllegalStateException("RocksDB write failed: " + e.getMessage(), e);
    }
  }

  @Override
  public void close() {
    database.close();
    syncedWrite.close();
    options.close();
  }
}
