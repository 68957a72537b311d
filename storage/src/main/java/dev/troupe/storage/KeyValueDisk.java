package dev.troupe.storage;

import java.util.List;

/**
 * The ordered, durable key-value disk under {@link RocksStore}: exactly what the engine uses of
 * RocksDB, so that production runs on RocksDB ({@link RocksDisk}) or on a PostgreSQL database the
 * nodes of a data centre share ({@link dev.troupe.storage.postgres.PostgresDisk}), and the
 * deterministic simulator and tests on an in-memory disk with simulated power loss ({@link
 * MemoryDisk}). {@code KeyValueDiskContract} (tests) checks every one against this contract.
 *
 * <p><b>Contract</b> (RocksDB's, which the engine's recovery argument relies on):
 *
 * <ul>
 *   <li>Keys are ordered by unsigned lexicographic byte order (RocksDB's default comparator), per
 *       {@link Column}.
 *   <li>A {@link Batch} is applied atomically: after a crash it is either wholly present or wholly
 *       absent, never half applied.
 *   <li>Batches survive a crash as a prefix of the order they were written in: {@code write(batch,
 *       true)} or {@code flushWriteAheadLog(true)} makes that batch and every earlier one durable;
 *       an unsynced batch survives a power loss only if every batch before it does.
 *   <li>A {@link Snapshot} and a {@link Cursor} read one consistent point: a cursor opened without
 *       a snapshot reads the state as of its creation, unaffected by later writes.
 * </ul>
 *
 * <p><b>Integrity.</b> Every read verifies what it reads. Data that fails its checksum throws {@link
 * CorruptDataException} (unchecked: damage is not an environmental condition to retry) from a point
 * read, from opening the disk, or from {@link Cursor#isValid} when a cursor stopped at damage rather
 * than at the end of its range. A read never answers "absent" or "end of data" for damaged data:
 * that would serve an older state, or not-found, as the truth.
 *
 * <p>Environmental failures of writes and point reads are {@link DiskException}s; cursor movements
 * do not throw (as RocksDB's iterators), and a cursor that stopped on an I/O error throws {@link
 * java.io.UncheckedIOException} from {@link Cursor#isValid}. Implementations are thread-safe; a
 * batch, a snapshot and a cursor belong to one thread at a time.
 */
public interface KeyValueDisk extends AutoCloseable {

  /**
   * Whether unsynced batches can be lost only together with this process: a power loss or a crash
   * of the machine or the process, after which the node recovers from what survived. True for an
   * engine in this process ({@link RocksDisk}; {@link MemoryDisk}, whose power loss the tests
   * simulate as the node's). False for a database server ({@link
   * dev.troupe.storage.postgres.PostgresDisk}) or a disk other nodes share ({@link SharedDiskView}):
   * it can crash and come back alone while this process runs on and acts on writes it lost. The
   * store lets a write's durability ride a later synced write (issue 20: prepared records and
   * decisions of local transactions; replica applications) only on a disk for which this is
   * true.
   */
  boolean crashesOnlyWithThisProcess();

  /** The column families of the store (see {@link Keys} for their key layouts). */
  enum Column {
    /** (partition, sequence) → {@link TransactionRecord}. */
    JOURNAL,
    /** (entity, commit timestamp, partition, sequence) → empty. */
    INDEX,
    /** (entity, version) → {@link dev.troupe.model.EntityState}. */
    CHECKPOINTS,
    /** Per partition: completed rounds, history horizon; the partition count; the clock ceiling. */
    META,
    /** Two-phase commit state: prepared parts and commit decisions. */
    TRANSACTIONS,
    /**
     * The replication log: (origin DC, timestamp, transaction id, index) → {@link
     * dev.troupe.model.causal.ReplicationEntry} ({@link ReplicationLog}). Added with issue 17: a
     * database created before it gets it, empty, when opened for serving.
     */
    REPLICATION,
    /**
     * The listing index: (type, id) → empty, one key per entity ever written ({@link
     * ListingIndex}). Added with issue 19: a database created before it gets it, built from the
     * entities it holds, when opened for serving.
     */
    LISTING
  }

  /** A new, empty write batch; close it once written or abandoned. */
  Batch newBatch();

  /**
   * Applies {@code batch} atomically. With {@code sync}, returns only once it and every batch
   * written before it are durable (an fsync of the write-ahead log).
   */
  void write(Batch batch, boolean sync) throws DiskException;

  /** The latest value of {@code key}, or null. */
  byte[] get(Column column, byte[] key) throws DiskException;

  /**
   * The values of {@code keys} in their order (null where absent), as of {@code snapshot}, or the
   * latest values when it is null.
   */
  List<byte[]> multiGet(Column column, List<byte[]> keys, Snapshot snapshot) throws DiskException;

  /** Pins the current state for reads until the snapshot is closed. */
  Snapshot snapshot();

  /**
   * A cursor over the keys of {@code column} in {@code [lowerBound, upperBound)} (a null bound is
   * unbounded), as of {@code snapshot} or, when it is null, as of now. Bounds are not only a filter:
   * a bounded cursor never visits, not even to skip them, keys or deletions outside its range, which
   * is what keeps one entity's materialization independent of its neighbours' tombstones. The cursor
   * is not positioned until one of its seeks.
   */
  Cursor cursor(Column column, Snapshot snapshot, byte[] lowerBound, byte[] upperBound);

  /** An unbounded cursor over the latest state of {@code column}. */
  default Cursor cursor(Column column) {
    return cursor(column, null, null, null);
  }

  /**
   * Writes buffered write-ahead-log records out; with {@code sync}, makes every batch written so far
   * durable.
   */
  void flushWriteAheadLog(boolean sync) throws DiskException;

  // ------------------------------------------------------------ partition ownership (several nodes)

  /**
   * Makes {@code nodeId} the owner of {@code partition} under a new <b>owner epoch</b>, greater than
   * every epoch the partition had before, durably, and returns it. This is the fence that keeps two
   * nodes of one data centre from writing one partition (issue 18): once it returns, no batch
   * {@linkplain Batch#fence fenced} with an earlier epoch of the partition is applied any more; one
   * being applied concurrently either finished before this returned (and the caller's later reads
   * see it) or fails with {@link FencedException}. Waits for such a batch rather than failing.
   *
   * <p>A disk shared by several nodes (PostgreSQL) keeps the epochs in the database, in the same
   * transactions as the fenced writes. A disk only one process can open (RocksDB, {@link
   * MemoryDisk}) keeps them beside its data with the same contract; there the fence only guards
   * one process's own hand-offs.
   */
  long acquirePartition(int partition, int nodeId) throws DiskException;

  /**
   * As {@link #acquirePartition}, but only if the partition's owner epoch is {@code expectedEpoch}
   * now (checked atomically with the acquisition): returns the new epoch, or 0 if the epoch was
   * another one (nothing changed then). Ends one known ownership and no later one, e.g. a removed
   * member's coordinator partition ({@link CoordinatorPartitions}) but not its restarted
   * incarnation's.
   */
  long acquirePartitionIfEpoch(int partition, int nodeId, long expectedEpoch) throws DiskException;

  /** The partition's current owner and owner epoch, or null if no node ever acquired it. */
  PartitionOwner ownerOf(int partition) throws DiskException;

  /** Who owns a partition, under which owner epoch (see {@link #acquirePartition}). */
  record PartitionOwner(int nodeId, long epoch) {}

  /**
   * The bytes of the engine's own files now, for /metrics: null for a disk without files of its
   * own ({@link MemoryDisk}, a PostgreSQL database, which reports its size itself).
   */
  default DiskFiles files() {
    return null;
  }

  /**
   * What an embedded engine's files hold.
   *
   * @param tableFileBytes the live table files (RocksDB's SST files), every column family
   * @param blobFileBytes the live blob files (the journal's large records, {@link
   *     RocksDiskSettings#journalBlobMinBytes})
   * @param pendingCompactionBytes the engine's estimate of what compaction still has to rewrite
   */
  record DiskFiles(long tableFileBytes, long blobFileBytes, long pendingCompactionBytes) {}

  /** Releases the disk; nothing may be called on it (or its batches, snapshots, cursors) after. */
  @Override
  void close();

  /** Puts and deletions applied together by {@link #write}. Owned by one thread. */
  interface Batch extends AutoCloseable {
    void put(Column column, byte[] key, byte[] value) throws DiskException;

    void delete(Column column, byte[] key) throws DiskException;

    /** Deletes every key in {@code [fromInclusive, toExclusive)}. */
    void deleteRange(Column column, byte[] fromInclusive, byte[] toExclusive) throws DiskException;

    /**
     * Makes the batch conditional: {@link #write} applies it only if {@code partition}'s owner
     * epoch is {@code epoch} when it is applied, checked atomically with applying it, and otherwise
     * applies nothing and throws {@link FencedException}. Several fences must all hold. A batch
     * without a fence is applied unconditionally (a single node's writes).
     */
    void fence(int partition, long epoch);

    @Override
    void close();
  }

  /** A consistent point to read at; close it to release what it pins. */
  interface Snapshot extends AutoCloseable {
    @Override
    void close();
  }

  /**
   * A position over one column's keys in order (RocksDB's iterator). {@link #key} and {@link
   * #value} return fresh arrays and may be called only while {@link #isValid}.
   */
  interface Cursor extends AutoCloseable {
    void seekToFirst();

    /** Positions at the first key at or after {@code target}. */
    void seek(byte[] target);

    /** Positions at the last key at or before {@code target}. */
    void seekForPrev(byte[] target);

    void next();

    /**
     * Whether the cursor is at a key. False at the end of its range; throws {@link
     * CorruptDataException} if it stopped at damaged data instead, and {@link
     * java.io.UncheckedIOException} if it stopped on an I/O error.
     */
    boolean isValid();

    byte[] key();

    byte[] value();

    @Override
    void close();
  }
}
