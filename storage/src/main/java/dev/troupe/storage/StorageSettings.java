package dev.troupe.storage;

import java.nio.file.Path;

/**
 * Every limit and tunable of the storage engine, parsed once from {@code troupe.storage} in
 * reference.conf (see there for the meaning and units of each).
 *
 * @param directory where the RocksDB database lives
 * @param partitions number of journal partitions; entities are hashed to partitions, each with its
 *     own group-commit writer
 * @param durability when commits are acknowledged
 * @param groupCommitMaxRecords most records one group commit (one synced write batch) may carry
 * @param groupCommitQueueLimit most commits waiting for a partition's writer; past it commits fail
 *     fast with {@code overloaded}
 * @param asyncFlushIntervalMillis how often the write-ahead log is synced under ASYNC durability
 * @param cacheMaxWeightBytes bound on the object cache, by estimated encoded size of states
 * @param checkpointEveryOperations an object is checkpointed once this many operations were applied
 *     to it since its last checkpoint
 * @param checkpointIntervalMillis a checkpoint round runs at least this often while there are
 *     unchecked records
 * @param checkpointJournalRecords a checkpoint round runs once a partition has this many records
 *     since its last round
 * @param historyRetentionMillis how long old versions stay readable with {@code readAt} even when no
 *     snapshot pins them
 * @param dataCentreId id of this data centre, recorded as origin of every local commit
 * @param clockCeilingMillis how far ahead of the clock the durable clock ceiling is set: every
 *     timestamp the store issues (commit timestamps, transaction ids) stays below the ceiling, and
 *     reaching it costs one synced write that raises it; after a restart the clock starts at the
 *     ceiling, so it runs at most this far ahead of physical time
 * @param checkpointBytesPerOperation a large object waits for more operations between its own
 *     checkpoints: at least its estimated size divided by this many bytes, so rewriting it stays
 *     amortized over the operations its checkpoint saves
 * @param nodeId this node's id, 0..63 ({@code troupe.node.id}): the default clock ({@link
 *     RocksStore#open(StorageSettings, java.util.function.LongSupplier)}) puts it in the low bits of
 *     every timestamp it issues, so transaction ids are unique across nodes ({@link
 *     dev.troupe.model.time.TransactionIds})
 * @param replicationLog whether local commits also write the replication log ({@link
 *     ReplicationLog}): one entry per entity written, in the commit's own write batch, under origin
 *     {@code dataCentreId} (0 for an unnamed DC, whose messages are delivered from it); off by
 *     default (the runtime turns it on always: causal messages are delivered from it)
 * @param partitionOwnership {@link PartitionOwnership#ALL} for the single node of a data centre
 *     (the default); {@link PartitionOwnership#ACQUIRED} for one node of several sharing one disk,
 *     which writes only the partitions it acquired, each batch fenced with its owner epoch
 * @param rocksDisk how the RocksDB disk reads data larger than the object cache: its block cache
 *     and Bloom filters ({@code troupe.storage.rocksdb}; unused on another disk)
 * @param maintenanceYieldMillis while cold reads wait for storage, truncation and the
 *     post-recovery scan yield to them: one such slice at a time across the partitions, the next
 *     at least this long after the previous one ended ({@link MaintenancePacing}); 0: no yield
 * @param maintenanceSliceMaxMillis the longest a maintenance slice (a checkpoint round's or a
 *     truncation's) runs on a partition's writer before the writer takes its queued commits again,
 *     by the store's physical clock; 0: slices are bounded by their entity and record counts only
 */
public record StorageSettings(
    Path directory,
    int partitions,
    Durability durability,
    int groupCommitMaxRecords,
    int groupCommitQueueLimit,
    long asyncFlushIntervalMillis,
    long cacheMaxWeightBytes,
    int checkpointEveryOperations,
    long checkpointIntervalMillis,
    long checkpointJournalRecords,
    long historyRetentionMillis,
    int dataCentreId,
    long clockCeilingMillis,
    int checkpointBytesPerOperation,
    int nodeId,
    boolean replicationLog,
    PartitionOwnership partitionOwnership,
    RocksDiskSettings rocksDisk,
    long maintenanceYieldMillis,
    long maintenanceSliceMaxMillis) {
  /** The default clock ceiling distance, as in reference.conf. */
  public static final long DEFAULT_CLOCK_CEILING_MILLIS = 1_000;

  /** The default bytes of object per operation between checkpoints, as in reference.conf. */
  public static final int DEFAULT_CHECKPOINT_BYTES_PER_OPERATION = 256;

  /** The most {@code maintenanceYieldMillis} may be, as reference.conf says. */
  public static final long MAX_MAINTENANCE_YIELD_MILLIS = 1_000;

  /** The default {@code maintenanceSliceMaxMillis}, as in reference.conf. */
  public static final long DEFAULT_MAINTENANCE_SLICE_MAX_MILLIS = 5;

  /** The most {@code maintenanceSliceMaxMillis} may be, as reference.conf says. */
  public static final long MAX_MAINTENANCE_SLICE_MAX_MILLIS = 1_000;

  public StorageSettings {
    if (maintenanceYieldMillis < 0 || maintenanceYieldMillis > MAX_MAINTENANCE_YIELD_MILLIS) {
      throw new IllegalArgumentException("troupe.storage.maintenance-yield-millis must be 0.."
          + MAX_MAINTENANCE_YIELD_MILLIS + ", was " + maintenanceYieldMillis);
    }
    if (maintenanceSliceMaxMillis < 0
        || maintenanceSliceMaxMillis > MAX_MAINTENANCE_SLICE_MAX_MILLIS) {
      throw new IllegalArgumentException("troupe.storage.maintenance-slice-max-millis must be 0.."
          + MAX_MAINTENANCE_SLICE_MAX_MILLIS + ", was " + maintenanceSliceMaxMillis);
    }
  }

  /**
   * All but the maintenance yield, which is 0 (truncation never yields to reads), and the
   * maintenance slices' time bound, which takes its default.
   */
  public StorageSettings(Path directory, int partitions, Durability durability,
      int groupCommitMaxRecords, int groupCommitQueueLimit, long asyncFlushIntervalMillis,
      long cacheMaxWeightBytes, int checkpointEveryOperations, long checkpointIntervalMillis,
      long checkpointJournalRecords, long historyRetentionMillis, int dataCentreId,
      long clockCeilingMillis, int checkpointBytesPerOperation, int nodeId,
      boolean replicationLog, PartitionOwnership partitionOwnership, RocksDiskSettings rocksDisk) {
    this(directory, partitions, durability, groupCommitMaxRecords, groupCommitQueueLimit,
        asyncFlushIntervalMillis, cacheMaxWeightBytes, checkpointEveryOperations,
        checkpointIntervalMillis, checkpointJournalRecords, historyRetentionMillis, dataCentreId,
        clockCeilingMillis, checkpointBytesPerOperation, nodeId, replicationLog,
        partitionOwnership, rocksDisk, 0, DEFAULT_MAINTENANCE_SLICE_MAX_MILLIS);
  }

  /** All but RocksDB's read tuning, which takes its defaults ({@link RocksDiskSettings#defaults}). */
  public StorageSettings(Path directory, int partitions, Durability durability,
      int groupCommitMaxRecords, int groupCommitQueueLimit, long asyncFlushIntervalMillis,
      long cacheMaxWeightBytes, int checkpointEveryOperations, long checkpointIntervalMillis,
      long checkpointJournalRecords, long historyRetentionMillis, int dataCentreId,
      long clockCeilingMillis, int checkpointBytesPerOperation, int nodeId,
      boolean replicationLog, PartitionOwnership partitionOwnership) {
    this(directory, partitions, durability, groupCommitMaxRecords, groupCommitQueueLimit,
        asyncFlushIntervalMillis, cacheMaxWeightBytes, checkpointEveryOperations,
        checkpointIntervalMillis, checkpointJournalRecords, historyRetentionMillis, dataCentreId,
        clockCeilingMillis, checkpointBytesPerOperation, nodeId, replicationLog,
        partitionOwnership, RocksDiskSettings.defaults());
  }

  /** All but the partition ownership, which is {@link PartitionOwnership#ALL} (a single node). */
  public StorageSettings(Path directory, int partitions, Durability durability,
      int groupCommitMaxRecords, int groupCommitQueueLimit, long asyncFlushIntervalMillis,
      long cacheMaxWeightBytes, int checkpointEveryOperations, long checkpointIntervalMillis,
      long checkpointJournalRecords, long historyRetentionMillis, int dataCentreId,
      long clockCeilingMillis, int checkpointBytesPerOperation, int nodeId,
      boolean replicationLog) {
    this(directory, partitions, durability, groupCommitMaxRecords, groupCommitQueueLimit,
        asyncFlushIntervalMillis, cacheMaxWeightBytes, checkpointEveryOperations,
        checkpointIntervalMillis, checkpointJournalRecords, historyRetentionMillis, dataCentreId,
        clockCeilingMillis, checkpointBytesPerOperation, nodeId, replicationLog,
        PartitionOwnership.ALL);
  }

  /** All but the replication log, which is off. */
  public StorageSettings(Path directory, int partitions, Durability durability,
      int groupCommitMaxRecords, int groupCommitQueueLimit, long asyncFlushIntervalMillis,
      long cacheMaxWeightBytes, int checkpointEveryOperations, long checkpointIntervalMillis,
      long checkpointJournalRecords, long historyRetentionMillis, int dataCentreId,
      long clockCeilingMillis, int checkpointBytesPerOperation, int nodeId) {
    this(directory, partitions, durability, groupCommitMaxRecords, groupCommitQueueLimit,
        asyncFlushIntervalMillis, cacheMaxWeightBytes, checkpointEveryOperations,
        checkpointIntervalMillis, checkpointJournalRecords, historyRetentionMillis, dataCentreId,
        clockCeilingMillis, checkpointBytesPerOperation, nodeId, false);
  }

  /** All but the node id, which is 0 (a single node), and the replication log, which is off. */
  public StorageSettings(Path directory, int partitions, Durability durability,
      int groupCommitMaxRecords, int groupCommitQueueLimit, long asyncFlushIntervalMillis,
      long cacheMaxWeightBytes, int checkpointEveryOperations, long checkpointIntervalMillis,
      long checkpointJournalRecords, long historyRetentionMillis, int dataCentreId,
      long clockCeilingMillis, int checkpointBytesPerOperation) {
    this(directory, partitions, durability, groupCommitMaxRecords, groupCommitQueueLimit,
        asyncFlushIntervalMillis, cacheMaxWeightBytes, checkpointEveryOperations,
        checkpointIntervalMillis, checkpointJournalRecords, historyRetentionMillis, dataCentreId,
        clockCeilingMillis, checkpointBytesPerOperation, 0);
  }

  /** All but the checkpoint bytes per operation, which take their default. */
  public StorageSettings(Path directory, int partitions, Durability durability,
      int groupCommitMaxRecords, int groupCommitQueueLimit, long asyncFlushIntervalMillis,
      long cacheMaxWeightBytes, int checkpointEveryOperations, long checkpointIntervalMillis,
      long checkpointJournalRecords, long historyRetentionMillis, int dataCentreId,
      long clockCeilingMillis) {
    this(directory, partitions, durability, groupCommitMaxRecords, groupCommitQueueLimit,
        asyncFlushIntervalMillis, cacheMaxWeightBytes, checkpointEveryOperations,
        checkpointIntervalMillis, checkpointJournalRecords, historyRetentionMillis, dataCentreId,
        clockCeilingMillis, DEFAULT_CHECKPOINT_BYTES_PER_OPERATION);
  }

  /** All but the clock ceiling, which takes its default. */
  public StorageSettings(Path directory, int partitions, Durability durability,
      int groupCommitMaxRecords, int groupCommitQueueLimit, long asyncFlushIntervalMillis,
      long cacheMaxWeightBytes, int checkpointEveryOperations, long checkpointIntervalMillis,
      long checkpointJournalRecords, long historyRetentionMillis, int dataCentreId) {
    this(directory, partitions, durability, groupCommitMaxRecords, groupCommitQueueLimit,
        asyncFlushIntervalMillis, cacheMaxWeightBytes, checkpointEveryOperations,
        checkpointIntervalMillis, checkpointJournalRecords, historyRetentionMillis, dataCentreId,
        DEFAULT_CLOCK_CEILING_MILLIS);
  }

  /** Defaults as in reference.conf; tests and benchmarks adjust with the withers. */
  public static StorageSettings defaults(Path directory) {
    return new StorageSettings(
        directory, 4, Durability.SYNC, 1024, 100_000, 50, 256L << 20, 1000, 10_000, 100_000, 60_000,
        1);
  }

  public StorageSettings withDurability(Durability value) {
    return new StorageSettings(directory, partitions, value, groupCommitMaxRecords,
        groupCommitQueueLimit, asyncFlushIntervalMillis, cacheMaxWeightBytes,
        checkpointEveryOperations, checkpointIntervalMillis, checkpointJournalRecords,
        historyRetentionMillis, dataCentreId, clockCeilingMillis, checkpointBytesPerOperation,
        nodeId, replicationLog, partitionOwnership, rocksDisk,
        maintenanceYieldMillis, maintenanceSliceMaxMillis);
  }

  public StorageSettings withCheckpoints(int everyOperations, long intervalMillis, long journalRecords) {
    return new StorageSettings(directory, partitions, durability, groupCommitMaxRecords,
        groupCommitQueueLimit, asyncFlushIntervalMillis, cacheMaxWeightBytes, everyOperations,
        intervalMillis, journalRecords, historyRetentionMillis, dataCentreId, clockCeilingMillis,
        checkpointBytesPerOperation, nodeId, replicationLog, partitionOwnership, rocksDisk,
        maintenanceYieldMillis, maintenanceSliceMaxMillis);
  }

  public StorageSettings withHistoryRetentionMillis(long value) {
    return new StorageSettings(directory, partitions, durability, groupCommitMaxRecords,
        groupCommitQueueLimit, asyncFlushIntervalMillis, cacheMaxWeightBytes,
        checkpointEveryOperations, checkpointIntervalMillis, checkpointJournalRecords, value,
        dataCentreId, clockCeilingMillis, checkpointBytesPerOperation, nodeId, replicationLog,
        partitionOwnership, rocksDisk, maintenanceYieldMillis, maintenanceSliceMaxMillis);
  }

  public StorageSettings withCacheMaxWeightBytes(long value) {
    return new StorageSettings(directory, partitions, durability, groupCommitMaxRecords,
        groupCommitQueueLimit, asyncFlushIntervalMillis, value, checkpointEveryOperations,
        checkpointIntervalMillis, checkpointJournalRecords, historyRetentionMillis, dataCentreId,
        clockCeilingMillis, checkpointBytesPerOperation, nodeId, replicationLog, partitionOwnership,
        rocksDisk, maintenanceYieldMillis, maintenanceSliceMaxMillis);
  }

  public StorageSettings withNodeId(int value) {
    return new StorageSettings(directory, partitions, durability, groupCommitMaxRecords,
        groupCommitQueueLimit, asyncFlushIntervalMillis, cacheMaxWeightBytes,
        checkpointEveryOperations, checkpointIntervalMillis, checkpointJournalRecords,
        historyRetentionMillis, dataCentreId, clockCeilingMillis, checkpointBytesPerOperation,
        value, replicationLog, partitionOwnership, rocksDisk,
        maintenanceYieldMillis, maintenanceSliceMaxMillis);
  }

  /** With the replication log on or off (it writes only with a data centre id other than 0). */
  public StorageSettings withReplicationLog(boolean value) {
    return new StorageSettings(directory, partitions, durability, groupCommitMaxRecords,
        groupCommitQueueLimit, asyncFlushIntervalMillis, cacheMaxWeightBytes,
        checkpointEveryOperations, checkpointIntervalMillis, checkpointJournalRecords,
        historyRetentionMillis, dataCentreId, clockCeilingMillis, checkpointBytesPerOperation,
        nodeId, value, partitionOwnership, rocksDisk,
        maintenanceYieldMillis, maintenanceSliceMaxMillis);
  }

  /** With another data centre id (0: unnamed, nothing is written to the replication log). */
  public StorageSettings withDataCentreId(int value) {
    return new StorageSettings(directory, partitions, durability, groupCommitMaxRecords,
        groupCommitQueueLimit, asyncFlushIntervalMillis, cacheMaxWeightBytes,
        checkpointEveryOperations, checkpointIntervalMillis, checkpointJournalRecords,
        historyRetentionMillis, value, clockCeilingMillis, checkpointBytesPerOperation,
        nodeId, replicationLog, partitionOwnership, rocksDisk,
        maintenanceYieldMillis, maintenanceSliceMaxMillis);
  }

  /** With another partition ownership (see {@link PartitionOwnership}). */
  public StorageSettings withPartitionOwnership(PartitionOwnership value) {
    return new StorageSettings(directory, partitions, durability, groupCommitMaxRecords,
        groupCommitQueueLimit, asyncFlushIntervalMillis, cacheMaxWeightBytes,
        checkpointEveryOperations, checkpointIntervalMillis, checkpointJournalRecords,
        historyRetentionMillis, dataCentreId, clockCeilingMillis, checkpointBytesPerOperation,
        nodeId, replicationLog, value, rocksDisk,
        maintenanceYieldMillis, maintenanceSliceMaxMillis);
  }

  /** With other RocksDB read tuning (see {@link RocksDiskSettings}). */
  public StorageSettings withRocksDisk(RocksDiskSettings value) {
    return new StorageSettings(directory, partitions, durability, groupCommitMaxRecords,
        groupCommitQueueLimit, asyncFlushIntervalMillis, cacheMaxWeightBytes,
        checkpointEveryOperations, checkpointIntervalMillis, checkpointJournalRecords,
        historyRetentionMillis, dataCentreId, clockCeilingMillis, checkpointBytesPerOperation,
        nodeId, replicationLog, partitionOwnership, value,
        maintenanceYieldMillis, maintenanceSliceMaxMillis);
  }

  /** With another partition count. */
  public StorageSettings withPartitions(int value) {
    return new StorageSettings(directory, value, durability, groupCommitMaxRecords,
        groupCommitQueueLimit, asyncFlushIntervalMillis, cacheMaxWeightBytes,
        checkpointEveryOperations, checkpointIntervalMillis, checkpointJournalRecords,
        historyRetentionMillis, dataCentreId, clockCeilingMillis, checkpointBytesPerOperation,
        nodeId, replicationLog, partitionOwnership, rocksDisk,
        maintenanceYieldMillis, maintenanceSliceMaxMillis);
  }

  /** With another maintenance yield (see {@code maintenanceYieldMillis}; 0: no yield). */
  public StorageSettings withMaintenanceYieldMillis(long value) {
    return new StorageSettings(directory, partitions, durability, groupCommitMaxRecords,
        groupCommitQueueLimit, asyncFlushIntervalMillis, cacheMaxWeightBytes,
        checkpointEveryOperations, checkpointIntervalMillis, checkpointJournalRecords,
        historyRetentionMillis, dataCentreId, clockCeilingMillis, checkpointBytesPerOperation,
        nodeId, replicationLog, partitionOwnership, rocksDisk, value, maintenanceSliceMaxMillis);
  }

  /** With another time bound on maintenance slices (see {@code maintenanceSliceMaxMillis}). */
  public StorageSettings withMaintenanceSliceMaxMillis(long value) {
    return new StorageSettings(directory, partitions, durability, groupCommitMaxRecords,
        groupCommitQueueLimit, asyncFlushIntervalMillis, cacheMaxWeightBytes,
        checkpointEveryOperations, checkpointIntervalMillis, checkpointJournalRecords,
        historyRetentionMillis, dataCentreId, clockCeilingMillis, checkpointBytesPerOperation,
        nodeId, replicationLog, partitionOwnership, rocksDisk, maintenanceYieldMillis, value);
  }

  /**
   * Whether local commits write the replication log: on. An unnamed data centre (id 0) writes
   * it too, under origin 0: its causal messages are delivered from it (nobody replicates it).
   */
  public boolean writesReplicationLog() {
    return replicationLog;
  }
}
