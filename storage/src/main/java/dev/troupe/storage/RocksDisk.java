package dev.troupe.storage;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;
import org.rocksdb.LRUCache;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Slice;
import org.rocksdb.Status;
import org.rocksdb.WALRecoveryMode;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * The production {@link KeyValueDisk}: one RocksDB database with a column family per {@link
 * Column} (plus RocksDB's mandatory, unused default one), tuned for the journal's workload.
 *
 * <p>Invariants: every native object this class creates (options, handles, the database) is closed
 * exactly once, by {@link #close}, in dependency order. Write and read options are built once and
 * shared by every operation, so the hot path allocates only what RocksDB's own API does (a snapshot
 * read or a bounded cursor needs its own read options, as before this class existed).
 *
 * <p>Concurrency: thread-safe (RocksDB is); {@link #close} must not race with other calls (the store
 * closes its disk after its writers stopped and under its close lock).
 *
 * <p>Recovery is RocksDB's: opening replays the write-ahead log, whose records are checksummed per
 * batch, so a crash leaves a prefix of the written batches, each whole. The replay is bounded by
 * {@link #MAX_TOTAL_WAL_BYTES}. The log is replayed in {@code kTolerateCorruptedTailRecords} mode:
 * an incomplete record at the very end (a write torn by power loss, which was never synced and so
 * never acknowledged) is dropped, but a record that fails its checksum anywhere before the end
 * refuses the open with {@link CorruptDataException}. RocksDB's default, point-in-time recovery,
 * would instead stop replaying at the damage and open an older database without a word, losing
 * every acknowledged write after it.
 *
 * <p>Reads of data larger than the object cache ({@link RocksDiskSettings}, issue 20): one LRU
 * block cache shared by every column family; a whole-key Bloom filter on the journal (point
 * lookups); prefix Bloom filters on the index and checkpoints, built on each key's first {@link
 * RocksDiskSettings#bloomPrefixBytes} bytes (RocksDB's capped prefix extractor), which a
 * materialization's entity-bounded cursor uses to skip the table files that hold nothing of the
 * entity. Every cursor reads in RocksDB's {@code auto_prefix_mode}: the filter is consulted only
 * where it cannot change the answer (a forward seek whose key and upper bound share the prefix,
 * i.e. within one entity whose key prefix is at least that long), every other seek (unbounded,
 * backward, shorter entity) is a total-order seek as without a prefix extractor. A table file
 * written without the filter, or with another prefix length, is read without it (RocksDB checks
 * the extractor recorded in each file), so the settings may change between restarts.
 *
 * <p>The journal's large records live in blob files ({@link
 * RocksDiskSettings#journalBlobMinBytes}, issue 20): a flush writes a record's bytes once to a
 * blob file and only its key, with a reference, to the table file, so compaction copies keys, not
 * records. With the records in the table files, a load of 200,000 1 KB records wrote 2.9 GB to
 * the device, 0.8 GB of it compaction rewriting journal records that truncation was about to
 * delete: the journal's level-0 files span every partition, so each compaction rewrote its whole
 * last level. With blob files the load wrote 28-30 % less. Journal records are truncated in the
 * order they were written (a range deletion per partition), so once compaction has dropped the
 * keys of every record of a blob file, RocksDB deletes the file. Reads are unchanged but for the
 * extra read of the blob file; the blob's own checksum is verified like a block's.
 *
 * <p>Integrity on reads: every read verifies block checksums ({@code verify_checksums}, set
 * explicitly), and a read or a cursor that meets a RocksDB {@code Corruption} status throws {@link
 * CorruptDataException} rather than answering "absent" or "end of data", so damage is never served
 * as an older state or as not-found. Other read errors are {@link DiskException}s (point reads) or
 * {@link java.io.UncheckedIOException}s (cursors).
 */
public final class RocksDisk implements KeyValueDisk {
  // Package-private: RawRocksBaseline tunes its database exactly the same way.
  static final long WRITE_BUFFER_BYTES = 16L << 20;
  // Bounds what a restart replays (about 0.4 s per 32 MB here) at the cost of earlier flushes.
  static final long MAX_TOTAL_WAL_BYTES = 32L << 20;
  static final int MAX_BACKGROUND_JOBS = 2;
  /** The journal's whole-key filter: about 1% false positives per table file without the key. */
  static final int JOURNAL_BLOOM_BITS_PER_KEY = 10;

  private final RocksDB database;
  /** Indexed by {@link Column#ordinal()}. */
  private final ColumnFamilyHandle[] columns;
  private final List<ColumnFamilyHandle> handles;
  private final List<AutoCloseable> resources;
  /** Indexed like {@link #handles}: what {@link #recreateColumn} creates a column family from. */
  private final List<ColumnFamilyDescriptor> descriptors;
  /** Always true but in {@code bench cache}'s baseline, which measures what verification costs. */
  private final boolean verifyChecksums;
  /** Owner epochs, in process (only this process opens the database); guards fenced writes. */
  private final PartitionEpochs epochs = new PartitionEpochs();
  /** The block cache every column family shares; closed with the disk. */
  private final LRUCache blockCache;
  private final WriteOptions syncedWriteOptions;
  private final WriteOptions unsyncedWriteOptions;
  private final ReadOptions latestReadOptions;
  private boolean closed;

  private RocksDisk(RocksDB database, List<ColumnFamilyHandle> handles,
      List<AutoCloseable> resources, List<ColumnFamilyDescriptor> descriptors,
      boolean verifyChecksums, LRUCache blockCache) {
    this.database = database;
    this.blockCache = blockCache;
    this.verifyChecksums = verifyChecksums;
    this.descriptors = descriptors;
    this.handles = handles;
    this.resources = resources;
    this.columns = new ColumnFamilyHandle[Column.values().length];
    for (Column column : Column.values()) {
      // Handle 0 is the default column family, which the engine does not use. Matched by name: a
      // read-only open of a database created before a column family existed lacks it (null).
      byte[] name = columnFamilyName(column).getBytes(StandardCharsets.UTF_8);
      for (int i = 1; i < descriptors.size(); i++) {
        if (java.util.Arrays.equals(descriptors.get(i).getName(), name)) {
          columns[column.ordinal()] = handles.get(i);
        }
      }
    }
    this.syncedWriteOptions = new WriteOptions().setSync(true);
    this.unsyncedWriteOptions = new WriteOptions().setSync(false);
    this.latestReadOptions = cursorReadOptions(new ReadOptions(), verifyChecksums);
    resources.add(syncedWriteOptions);
    resources.add(unsyncedWriteOptions);
    resources.add(latestReadOptions);
  }

  /** How a database is opened: serving, or by the check and repair tools. */
  public enum OpenMode {
    /** Read-write; refuses to open on damage before the write-ahead log's tail. */
    SERVE,
    /** Read-only, changes nothing on disk; refuses on damage like {@link #SERVE}. */
    INSPECT,
    /**
     * Read-only, replaying the write-ahead log only up to its first damage (RocksDB's
     * point-in-time recovery): what the database holds if the rest of the log is given up.
     */
    INSPECT_UP_TO_DAMAGE,
    /**
     * Read-write, giving up every batch of the write-ahead log from its first damage on: the
     * explicit, reported choice of {@code troupe repair --accept-write-ahead-log-loss}.
     */
    RECOVER_UP_TO_DAMAGE
  }

  /** Opens (creating if needed) the database in {@code directory}, replaying its write-ahead log. */
  public static RocksDisk open(Path directory) {
    return open(directory, OpenMode.SERVE);
  }

  /** As {@link #open(Path)}, tuned by {@code settings} (a serving store's own settings). */
  public static RocksDisk open(Path directory, RocksDiskSettings settings) {
    return open(directory, OpenMode.SERVE, true, settings);
  }

  /** Opens the database in {@code directory} as {@code mode} says (see {@link OpenMode}). */
  public static RocksDisk open(Path directory, OpenMode mode) {
    return open(directory, mode, true);
  }

  /** As {@link #open(Path, OpenMode, boolean, RocksDiskSettings)} with the default settings. */
  public static RocksDisk open(Path directory, OpenMode mode, boolean verifyChecksums) {
    return open(directory, mode, verifyChecksums, RocksDiskSettings.defaults());
  }

  /**
   * Like {@link #open(Path, OpenMode)}, choosing whether reads verify block checksums. Only {@code
   * troupe bench cache} passes false, as the baseline that measures what verification costs: a
   * serving store always verifies (a damaged block read unverified could be served as data).
   */
  public static RocksDisk open(Path directory, OpenMode mode, boolean verifyChecksums,
      RocksDiskSettings settings) {
    RocksDB.loadLibrary();
    boolean readOnly = mode == OpenMode.INSPECT || mode == OpenMode.INSPECT_UP_TO_DAMAGE;
    boolean upToDamage =
        mode == OpenMode.INSPECT_UP_TO_DAMAGE || mode == OpenMode.RECOVER_UP_TO_DAMAGE;
    List<AutoCloseable> resources = new ArrayList<>();
    List<ColumnFamilyHandle> handles = new ArrayList<>();
    try {
      if (readOnly && !Files.isDirectory(directory)) {
        throw new IOException("no store in " + directory);
      }
      if (!readOnly) {
        Files.createDirectories(directory);
      }
      DBOptions databaseOptions =
          new DBOptions()
              .setCreateIfMissing(!readOnly)
              .setCreateMissingColumnFamilies(!readOnly)
              .setMaxTotalWalSize(MAX_TOTAL_WAL_BYTES)
              // Replayed log stays in memtables instead of being flushed inside open: faster restart.
              .setAvoidFlushDuringRecovery(true)
              // Refuse to open on damage before the log's tail (see the class comment).
              .setWalRecoveryMode(upToDamage
                  ? WALRecoveryMode.PointInTimeRecovery
                  : WALRecoveryMode.TolerateCorruptedTailRecords)
              .setParanoidChecks(true)
              .setMaxBackgroundJobs(MAX_BACKGROUND_JOBS);
      resources.add(databaseOptions);
      // One cache for every column family's blocks; a tenth of it is kept for index and filter
      // blocks when they are charged to it (high priority: evicted after data blocks).
      LRUCache blockCache = new LRUCache(settings.blockCacheBytes(), -1, false,
          settings.cacheIndexAndFilterBlocks() ? 0.1 : 0.0);
      resources.add(blockCache);
      ColumnFamilyOptions plainOptions = new ColumnFamilyOptions()
          .setWriteBufferSize(WRITE_BUFFER_BYTES)
          .setTableFormatConfig(tableConfig(settings, blockCache, null));
      resources.add(plainOptions);
      // Bloom filter on the journal: materialization reads it by point lookups (multiGet).
      BloomFilter journalFilter = new BloomFilter(JOURNAL_BLOOM_BITS_PER_KEY);
      resources.add(journalFilter);
      ColumnFamilyOptions journalOptions =
          new ColumnFamilyOptions()
              .setWriteBufferSize(WRITE_BUFFER_BYTES)
              .setTableFormatConfig(tableConfig(settings, blockCache, journalFilter));
      if (settings.journalBlobFiles()) {
        // Key-value separation (see the class comment). No blob garbage collection: records are
        // truncated in the order they were written, so a blob file's records all die within one
        // retention window and the file goes whole; collecting it earlier would copy the records
        // still live, the very rewriting this avoids.
        journalOptions.setEnableBlobFiles(true)
            .setMinBlobSize(settings.journalBlobMinBytes())
            .setEnableBlobGarbageCollection(false);
      }
      resources.add(journalOptions);
      // Prefix filters on the index and checkpoints: materialization seeks them by entity.
      ColumnFamilyOptions entityKeyedOptions = plainOptions;
      if (settings.prefixFilters()) {
        BloomFilter prefixFilter = new BloomFilter(settings.bloomBitsPerKey());
        resources.add(prefixFilter);
        entityKeyedOptions = new ColumnFamilyOptions()
            .setWriteBufferSize(WRITE_BUFFER_BYTES)
            .useCappedPrefixExtractor(settings.bloomPrefixBytes())
            .setTableFormatConfig(tableConfig(settings, blockCache, prefixFilter)
                // Only prefixes in the filter: these families are read by entity-bounded cursors
                // (the rare point read, troupe check's, is filtered by its key's prefix).
                .setWholeKeyFiltering(false));
        resources.add(entityKeyedOptions);
      }
      List<ColumnFamilyDescriptor> descriptors = new ArrayList<>();
      descriptors.add(new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, plainOptions));
      for (Column column : Column.values()) {
        descriptors.add(new ColumnFamilyDescriptor(
            columnFamilyName(column).getBytes(StandardCharsets.UTF_8),
            switch (column) {
              case JOURNAL -> journalOptions;
              case INDEX, CHECKPOINTS -> entityKeyedOptions;
              default -> plainOptions;
            }));
      }
      if (readOnly) {
        // Opening read-only cannot create a column family that a database written by an older
        // version lacks (the replication log's): inspect it without, as empty.
        try (org.rocksdb.Options listOptions = new org.rocksdb.Options()) {
          List<byte[]> existing = RocksDB.listColumnFamilies(listOptions, directory.toString());
          descriptors.removeIf(descriptor -> existing.stream()
              .noneMatch(name -> java.util.Arrays.equals(name, descriptor.getName())));
        }
      }
      RocksDB database = readOnly
          ? RocksDB.openReadOnly(databaseOptions, directory.toString(), descriptors, handles)
          : RocksDB.open(databaseOptions, directory.toString(), descriptors, handles);
      return new RocksDisk(database, handles, resources, descriptors, verifyChecksums,
          blockCache);
    } catch (RocksDBException e) {
      closeAll(handles, null, resources);
      if (isCorruption(e)) {
        throw new CorruptDataException("the store in " + directory + " is damaged and was not"
            + " opened (" + e.getMessage() + "); nothing was changed. Run `troupe check --data "
            + directory + "` to see the damage and docs/OPERATIONS.md (\"Corruption\") for what"
            + " to do", e);
      }
      throw new UncheckedIOException(
          new IOException("cannot open the store in " + directory + ": " + e.getMessage(), e));
    } catch (IOException e) {
      closeAll(handles, null, resources);
      throw new UncheckedIOException(
          new IOException("cannot open the store in " + directory + ": " + e.getMessage(), e));
    }
  }

  /** The table format of one column family: the shared block cache, the filter (may be null). */
  private static BlockBasedTableConfig tableConfig(
      RocksDiskSettings settings, LRUCache blockCache, BloomFilter filter) {
    BlockBasedTableConfig table = new BlockBasedTableConfig().setBlockCache(blockCache);
    if (filter != null) {
      table.setFilterPolicy(filter);
    }
    if (settings.cacheIndexAndFilterBlocks()) {
      table.setCacheIndexAndFilterBlocks(true)
          .setCacheIndexAndFilterBlocksWithHighPriority(true)
          .setPinL0FilterAndIndexBlocksInCache(true);
    }
    return table;
  }

  /**
   * Read options as every read of this disk uses them: checksums verified (see the class comment),
   * and {@code auto_prefix_mode}, under which a column family's prefix filter is used only where
   * it gives the same answer as a total-order seek.
   */
  private static ReadOptions cursorReadOptions(ReadOptions options, boolean verifyChecksums) {
    return options.setVerifyChecksums(verifyChecksums).setAutoPrefixMode(true);
  }

  /** Synchronized with {@link #close}: /metrics may ask while the server shuts down. */
  @Override
  public synchronized DiskFiles files() {
    if (closed) {
      return null;
    }
    try {
      return new DiskFiles(
          database.getAggregatedLongProperty("rocksdb.live-sst-files-size"),
          database.getAggregatedLongProperty("rocksdb.live-blob-file-size"),
          database.getAggregatedLongProperty("rocksdb.estimate-pending-compaction-bytes"));
    } catch (RocksDBException e) {
      return null; // the metrics leave the gauges out
    }
  }

  /** The bytes of blocks in the block cache now. */
  public long blockCacheUsageBytes() {
    return blockCache.getUsage();
  }

  /** The column family's name on disk; fixed forever (existing databases are opened by it). */
  public static String columnFamilyName(Column column) {
    return switch (column) {
      case JOURNAL -> "journal";
      case INDEX -> "index";
      case CHECKPOINTS -> "checkpoints";
      case META -> "meta";
      case TRANSACTIONS -> "transactions";
      case REPLICATION -> "replication";
      case LISTING -> "listing";
    };
  }

  /**
   * Writes every column family's memtable out to SST files and waits: for tools that must leave
   * the data in table files (a repair that should not depend on the write-ahead log, tests that
   * damage a table file).
   */
  public void flushMemtables() throws DiskException {
    try (org.rocksdb.FlushOptions wait = new org.rocksdb.FlushOptions().setWaitForFlush(true)) {
      database.flush(wait, columnHandles());
    } catch (RocksDBException e) {
      throw new DiskException("flush failed: " + e.getMessage(), e);
    }
  }

  /** One live SST file of the database. */
  public record TableFile(String columnFamily, Path path, long sizeBytes) {}

  /** The live SST files, with the column family each belongs to (what {@code troupe check} names). */
  public List<TableFile> tableFiles() {
    List<TableFile> files = new ArrayList<>();
    for (org.rocksdb.LiveFileMetaData file : database.getLiveFilesMetaData()) {
      files.add(new TableFile(new String(file.columnFamilyName(), StandardCharsets.UTF_8),
          Path.of(file.path(), file.fileName()), file.size()));
    }
    return files;
  }

  /**
   * Verifies every block checksum of one table file, reading it whole; returns null if it is
   * intact, else what RocksDB said. For {@code troupe check}: RocksDB's own whole-database check
   * stops at the first damaged file, this names each one.
   */
  public String verifyTableFile(Path file) {
    try (org.rocksdb.Options options = new org.rocksdb.Options();
        org.rocksdb.SstFileReader reader = new org.rocksdb.SstFileReader(options)) {
      reader.open(file.toString());
      reader.verifyChecksum();
      return null;
    } catch (RocksDBException e) {
      return e.getMessage();
    }
  }

  /**
   * The key range of a live table file, {@code [smallest, largest]}, or null if it is not live.
   */
  public byte[][] tableFileRange(Path file) {
    for (org.rocksdb.LiveFileMetaData live : database.getLiveFilesMetaData()) {
      if (Path.of(live.path(), live.fileName()).equals(file)) {
        return new byte[][] {live.smallestKey(), live.largestKey()};
      }
    }
    return null;
  }

  /**
   * Drops {@code column}'s column family with all its files, unread, and creates it again empty:
   * the one way to get rid of a damaged table file that no read or compaction can get through
   * (RocksDB's file-range deletion leaves level-0 files alone). Only the repair tool calls it, on
   * a stopped store, for derived data it then rebuilds.
   */
  public void recreateColumn(Column column) throws DiskException {
    int position = column.ordinal() + 1;
    ColumnFamilyHandle old = columns[column.ordinal()];
    try {
      database.dropColumnFamily(old);
      ColumnFamilyHandle created = database.createColumnFamily(descriptors.get(position));
      handles.set(position, created);
      columns[column.ordinal()] = created;
      old.close();
    } catch (RocksDBException e) {
      throw new DiskException("recreating the " + columnFamilyName(column)
          + " column family failed: " + e.getMessage(), e);
    }
  }

  /** The handles of the engine's column families, for tests and tools that flush or verify. */
  List<ColumnFamilyHandle> columnHandles() {
    return java.util.Arrays.stream(columns).filter(java.util.Objects::nonNull).toList();
  }

  /** The database itself, for tests that read RocksDB's own counters. */
  RocksDB database() {
    return database;
  }

  /**
   * In this process: an unsynced write is lost only with a power loss or a crash of the machine,
   * which stops this process too (the write-ahead log is not flushed by hand here, so RocksDB
   * writes each batch's log record to the operating system as it commits it).
   */
  @Override
  public boolean crashesOnlyWithThisProcess() {
    return true;
  }

  @Override
  public Batch newBatch() {
    return new RocksBatch();
  }

  @Override
  public void write(Batch batch, boolean sync) throws DiskException {
    RocksBatch rocksBatch = (RocksBatch) batch;
    if (rocksBatch.fences.isEmpty()) {
      writeUnfenced(rocksBatch, sync);
      return;
    }
    // Fenced batches are rare on RocksDB (one process owns the database): one at a time, so the
    // check and the write are atomic with respect to acquirePartition.
    synchronized (epochs) {
      epochs.check(rocksBatch.fences);
      writeUnfenced(rocksBatch, sync);
    }
  }

  private void writeUnfenced(RocksBatch batch, boolean sync) throws DiskException {
    try {
      database.write(sync ? syncedWriteOptions : unsyncedWriteOptions, batch.batch);
    } catch (RocksDBException e) {
      throw new DiskException("write failed: " + e.getMessage(), e);
    }
  }

  @Override
  public long acquirePartition(int partition, int nodeId) {
    synchronized (epochs) {
      return epochs.acquire(partition, nodeId);
    }
  }

  @Override
  public long acquirePartitionIfEpoch(int partition, int nodeId, long expectedEpoch) {
    synchronized (epochs) {
      return epochs.acquireIfEpoch(partition, nodeId, expectedEpoch);
    }
  }

  @Override
  public PartitionOwner ownerOf(int partition) {
    synchronized (epochs) {
      return epochs.ownerOf(partition);
    }
  }

  @Override
  public byte[] get(Column column, byte[] key) throws DiskException {
    if (columns[column.ordinal()] == null) {
      return null; // absent from a database inspected read-only (see the constructor)
    }
    try {
      return database.get(columns[column.ordinal()], latestReadOptions, key);
    } catch (RocksDBException e) {
      throw readFailure(column, e);
    }
  }

  @Override
  public List<byte[]> multiGet(Column column, List<byte[]> keys, Snapshot snapshot)
      throws DiskException {
    if (columns[column.ordinal()] == null) {
      return new ArrayList<>(Collections.nCopies(keys.size(), (byte[]) null));
    }
    ReadOptions options = snapshot == null ? latestReadOptions : ((RocksSnapshot) snapshot).options;
    try {
      List<byte[]> values = database.multiGetAsList(
          options, Collections.nCopies(keys.size(), columns[column.ordinal()]), keys);
      for (int i = 0; i < values.size(); i++) {
        if (values.get(i) == null) {
          // RocksJava's multiGetAsList (9.10) answers null for a key whose read failed, as for an
          // absent one; a point read tells the two apart (it throws on a failed checksum). The
          // engine multi-gets only keys it expects to exist, so this costs nothing normally.
          values.set(i, database.get(columns[column.ordinal()], options, keys.get(i)));
        }
      }
      return values;
    } catch (RocksDBException e) {
      throw readFailure(column, e);
    }
  }

  /** Corruption is thrown (unchecked, never retried); any other read error is a DiskException. */
  private static DiskException readFailure(Column column, RocksDBException e) {
    if (isCorruption(e)) {
      throw new CorruptDataException(
          "the " + columnFamilyName(column) + " column family failed its checksum: " + e.getMessage(),
          e);
    }
    return new DiskException("read failed: " + e.getMessage(), e);
  }

  static boolean isCorruption(RocksDBException e) {
    Status status = e.getStatus();
    return status != null && status.getCode() == Status.Code.Corruption;
  }

  @Override
  public Snapshot snapshot() {
    return new RocksSnapshot(database.getSnapshot());
  }

  @Override
  public Cursor cursor(Column column, Snapshot snapshot, byte[] lowerBound, byte[] upperBound) {
    ColumnFamilyHandle handle = columns[column.ordinal()];
    if (handle == null) {
      return new EmptyCursor(); // absent from a database inspected read-only
    }
    if (lowerBound == null && upperBound == null) {
      RocksIterator iterator = snapshot == null
          ? database.newIterator(handle, latestReadOptions)
          : database.newIterator(handle, ((RocksSnapshot) snapshot).options);
      return new RocksCursor(column, iterator, null, null, null);
    }
    // Bounds live in read options of their own, which must outlive the iterator.
    ReadOptions options = snapshot == null
        ? cursorReadOptions(new ReadOptions(), verifyChecksums)
        : new ReadOptions(((RocksSnapshot) snapshot).options);
    Slice lower = lowerBound == null ? null : new Slice(lowerBound);
    Slice upper = upperBound == null ? null : new Slice(upperBound);
    if (lower != null) {
      options.setIterateLowerBound(lower);
    }
    if (upper != null) {
      options.setIterateUpperBound(upper);
    }
    return new RocksCursor(column, database.newIterator(handle, options), options, lower, upper);
  }

  @Override
  public void flushWriteAheadLog(boolean sync) throws DiskException {
    try {
      database.flushWal(sync);
    } catch (RocksDBException e) {
      throw new DiskException("write-ahead-log flush failed: " + e.getMessage(), e);
    }
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    closeAll(handles, database, resources);
  }

  /** Column family handles, then the database, then the options they were built with. */
  private static void closeAll(
      List<ColumnFamilyHandle> handles, RocksDB database, List<AutoCloseable> resources) {
    for (ColumnFamilyHandle handle : handles) {
      handle.close();
    }
    if (database != null) {
      database.close();
    }
    for (int i = resources.size() - 1; i >= 0; i--) {
      try {
        resources.get(i).close();
      } catch (Exception ignored) {
        // Native options hold no state worth reporting at shutdown.
      }
    }
  }

  private final class RocksBatch implements Batch {
    final WriteBatch batch = new WriteBatch();
    final List<PartitionEpochs.Fence> fences = new ArrayList<>(0);

    @Override
    public void fence(int partition, long epoch) {
      fences.add(new PartitionEpochs.Fence(partition, epoch));
    }

    @Override
    public void put(Column column, byte[] key, byte[] value) throws DiskException {
      try {
        batch.put(columns[column.ordinal()], key, value);
      } catch (RocksDBException e) {
        throw new DiskException("batch put failed: " + e.getMessage(), e);
      }
    }

    @Override
    public void delete(Column column, byte[] key) throws DiskException {
      try {
        batch.delete(columns[column.ordinal()], key);
      } catch (RocksDBException e) {
        throw new DiskException("batch delete failed: " + e.getMessage(), e);
      }
    }

    @Override
    public void deleteRange(Column column, byte[] fromInclusive, byte[] toExclusive)
        throws DiskException {
      try {
        batch.deleteRange(columns[column.ordinal()], fromInclusive, toExclusive);
      } catch (RocksDBException e) {
        throw new DiskException("batch range deletion failed: " + e.getMessage(), e);
      }
    }

    @Override
    public void close() {
      batch.close();
    }
  }

  private final class RocksSnapshot implements Snapshot {
    final org.rocksdb.Snapshot snapshot;
    final ReadOptions options;

    RocksSnapshot(org.rocksdb.Snapshot snapshot) {
      this.snapshot = snapshot;
      this.options = cursorReadOptions(new ReadOptions().setSnapshot(snapshot), verifyChecksums);
    }

    @Override
    public void close() {
      options.close();
      database.releaseSnapshot(snapshot);
    }
  }

  /** The cursor of a column family a read-only database lacks: always at the end. */
  private static final class EmptyCursor implements Cursor {
    @Override
    public void seekToFirst() {}

    @Override
    public void seek(byte[] target) {}

    @Override
    public void seekForPrev(byte[] target) {}

    @Override
    public void next() {}

    @Override
    public boolean isValid() {
      return false;
    }

    @Override
    public byte[] key() {
      throw new IllegalStateException("an empty cursor has no key");
    }

    @Override
    public byte[] value() {
      throw new IllegalStateException("an empty cursor has no value");
    }

    @Override
    public void close() {}
  }

  /**
   * An iterator with the read options and bound slices it was created with, if its own. An iterator
   * that stops being valid has either reached the end of its range or met an error; {@link
   * #isValid} tells the two apart by RocksDB's status, so a checksum failure is never mistaken for
   * the end of the data (which would answer "absent" for a damaged entity).
   */
  private static final class RocksCursor implements Cursor {
    private final Column column;
    private final RocksIterator iterator;
    private final ReadOptions options;
    private final Slice lower;
    private final Slice upper;

    RocksCursor(
        Column column, RocksIterator iterator, ReadOptions options, Slice lower, Slice upper) {
      this.column = column;
      this.iterator = iterator;
      this.options = options;
      this.lower = lower;
      this.upper = upper;
    }

    @Override
    public void seekToFirst() {
      iterator.seekToFirst();
    }

    @Override
    public void seek(byte[] target) {
      iterator.seek(target);
    }

    @Override
    public void seekForPrev(byte[] target) {
      iterator.seekForPrev(target);
    }

    @Override
    public void next() {
      iterator.next();
    }

    @Override
    public boolean isValid() {
      if (iterator.isValid()) {
        return true;
      }
      try {
        iterator.status();
      } catch (RocksDBException e) {
        if (isCorruption(e)) {
          throw new CorruptDataException("the " + columnFamilyName(column)
              + " column family failed its checksum while being read: " + e.getMessage(), e);
        }
        throw new UncheckedIOException(new IOException(
            "reading the " + columnFamilyName(column) + " column family failed: " + e.getMessage(),
            e));
      }
      return false;
    }

    @Override
    public byte[] key() {
      return iterator.key();
    }

    @Override
    public byte[] value() {
      return iterator.value();
    }

    @Override
    public void close() {
      iterator.close();
      if (options != null) {
        options.close();
      }
      if (upper != null) {
        upper.close();
      }
      if (lower != null) {
        lower.close();
      }
    }
  }
}
