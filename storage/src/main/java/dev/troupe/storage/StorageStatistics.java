package dev.troupe.storage;

/**
 * A point-in-time reading of the storage engine's counters, for /metrics and benchmarks.
 *
 * @param commits transaction records committed since the store opened
 * @param groupCommits synced write batches since the store opened (commits / groupCommits is the
 *     average group size)
 * @param journalRecordsSinceCheckpoint records, over all partitions, not yet covered by a completed
 *     checkpoint round
 * @param journalRecordsRetained records currently in the journal (not yet truncated)
 * @param lastCheckpointMillis physical time of the last completed checkpoint round, 0 if none
 * @param checkpointRounds checkpoint rounds completed since the store opened
 * @param objectCheckpoints object checkpoints written since the store opened
 * @param truncatedRecords journal records deleted by truncation since the store opened
 * @param cacheHits object-cache hits
 * @param cacheMisses object-cache misses (each one a materialization)
 * @param cacheWeightBytes estimated bytes held by the object cache
 * @param recoveryMillis how long opening the store took, including recovery
 * @param files the embedded engine's files now, or null for a disk without files of its own
 */
public record StorageStatistics(
    long commits,
    long groupCommits,
    long journalRecordsSinceCheckpoint,
    long journalRecordsRetained,
    long lastCheckpointMillis,
    long checkpointRounds,
    long objectCheckpoints,
    long truncatedRecords,
    long cacheHits,
    long cacheMisses,
    long cacheWeightBytes,
    long recoveryMillis,
    KeyValueDisk.DiskFiles files) {}
