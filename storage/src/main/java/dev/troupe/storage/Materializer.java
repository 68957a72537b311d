package dev.troupe.storage;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Invariants;
import dev.troupe.model.Operation;
import java.util.ArrayList;
import java.util.List;

/**
 * Builds an entity's state at a timestamp from the database: the newest checkpoint of the entity at
 * or before the timestamp, then the entity's own journal records after the checkpoint, found through
 * the index and applied in commit order with {@link EntityState#apply} (antidote-cache.txt §2.2–2.3,
 * §3: "get_version" / "build"). Never scans other entities' records.
 *
 * <p>Exactness relies on the caller: every record of the entity with a commit timestamp in
 * (checkpoint, timestamp] must still be in the journal (guaranteed above the history horizon, see
 * {@link RocksStore}), and the read should be at a {@link KeyValueDisk.Snapshot} when writes or
 * truncation may run concurrently, so the checkpoint, index and journal are read at one consistent
 * point.
 *
 * <p>For the object cache, {@link #latest} answers the newest checkpoint's bytes undecoded when no
 * record of the entity follows it (the cache takes them as they are, {@link
 * CachedState#ofCheckpoint}, after verifying their checksum); the reads are the same.
 *
 * <p>Thread-safe (stateless over the thread-safe disk).
 */
final class Materializer {
  private static final int MULTI_GET_CHUNK = 256;

  private final KeyValueDisk disk;

  Materializer(KeyValueDisk disk) {
    this.disk = disk;
  }

  /**
   * The state of {@code entity} with every record up to {@code timestamp} (inclusive) applied, read
   * at {@code snapshot} (null: the latest state).
   */
  EntityState materialize(EntityId entity, long timestamp, KeyValueDisk.Snapshot snapshot)
      throws DiskException {
    return read(entity, timestamp, snapshot, false).state();
  }

  /**
   * The latest state of {@code entity} read at {@code snapshot}, in the form the object cache
   * takes it: the newest checkpoint's bytes as they are when no record of the entity follows the
   * checkpoint, else the state materialized (decoded and applied) as {@link #materialize} gives
   * it. Why: a cache miss on an entity checkpointed since its last write decoded the checkpoint
   * only for the cache to encode the state again into the very same bytes and walk it to weigh
   * it, about a quarter of the server's CPU under YCSB C over a cache smaller than the data
   * (docs/BENCHMARKS.md, "Issue 20: a cache miss served from its checkpoint's bytes (fifth
   * session)"). The bytes are unverified here: {@link Latest#toCachedState} verifies them.
   */
  Latest latest(EntityId entity, KeyValueDisk.Snapshot snapshot) throws DiskException {
    return read(entity, Long.MAX_VALUE, snapshot, true);
  }

  /**
   * An entity's latest state as read from the database: either its newest checkpoint's bytes
   * ({@code checkpoint}, with the checkpoint's timestamp; {@code state} null) when no record
   * follows it, or the state materialized ({@code checkpoint} null).
   */
  record Latest(byte[] checkpoint, long checkpointTimestamp, EntityState state) {
    /**
     * The object cache's entry for this state: made from the checkpoint's bytes ({@link
     * CachedState#ofCheckpoint}, which verifies their checksum and throws {@link
     * CorruptDataException} on damage, before anything is cached) or from the state.
     */
    CachedState toCachedState(EntityId entity) {
      if (checkpoint == null) {
        return CachedState.of(entity, state);
      }
      CachedState cached = CachedState.ofCheckpoint(entity, checkpoint);
      Invariants.check(
          cached.version() <= checkpointTimestamp,
          "checkpoint of %s at %d holds version %d",
          entity,
          checkpointTimestamp,
          cached.version());
      return cached;
    }
  }

  /**
   * The state at {@code timestamp}; when {@code checkpointAsIs} and no record follows the newest
   * checkpoint, that checkpoint's bytes undecoded instead.
   */
  private Latest read(EntityId entity, long timestamp, KeyValueDisk.Snapshot snapshot,
      boolean checkpointAsIs) throws DiskException {
    byte[] prefix = Keys.entityPrefix(entity);
    byte[] upperBound = Keys.entityUpperBound(prefix);
    EntityState state = EntityState.ABSENT;
    long base = 0;
    // Both iterators are bounded to the entity's own keys. Without bounds, a seek that finds no
    // live key of this entity goes on skipping the deletion tombstones that truncation left in the
    // following entities' ranges, which after a large truncation costs seconds per read until
    // compaction drops them.
    // The newest checkpoint at or before the timestamp, found by a forward seek over the entity's
    // few checkpoints (truncation deletes the superseded ones): unlike a backward seek, a forward
    // one lets the checkpoints' prefix filter skip every table file without the entity's
    // (RocksDisk), which is every file for an entity never checkpointed.
    byte[] checkpointValue = null;
    try (KeyValueDisk.Cursor iterator =
        disk.cursor(KeyValueDisk.Column.CHECKPOINTS, snapshot, prefix, upperBound)) {
      for (iterator.seek(Keys.checkpoint(prefix, 0)); iterator.isValid(); iterator.next()) {
        byte[] key = iterator.key();
        // Unsigned, as the keys are ordered (and as the backward seek this replaces compared).
        if (!Keys.hasPrefix(key, prefix, 8)
            || Long.compareUnsigned(Keys.checkpointTimestamp(key), timestamp) > 0) {
          break;
        }
        base = Keys.checkpointTimestamp(key);
        checkpointValue = iterator.value();
      }
    }
    List<byte[]> journalKeys = new ArrayList<>();
    List<Long> timestamps = new ArrayList<>();
    try (KeyValueDisk.Cursor iterator =
        disk.cursor(KeyValueDisk.Column.INDEX, snapshot, prefix, upperBound)) {
      // Seeking past the checkpoint also skips the tombstones of the entity's truncated entries.
      for (iterator.seek(Keys.index(prefix, base + 1, 0, 0));
          iterator.isValid();
          iterator.next()) {
        byte[] key = iterator.key();
        if (!Keys.hasPrefix(key, prefix, 18)) {
          break;
        }
        long commitTimestamp = Keys.indexTimestamp(key, prefix.length);
        if (commitTimestamp > timestamp) {
          break;
        }
        journalKeys.add(Keys.indexJournalKey(key, prefix.length));
        timestamps.add(commitTimestamp);
      }
    }
    if (checkpointValue != null && checkpointAsIs && journalKeys.isEmpty()) {
      return new Latest(checkpointValue, base, null);
    }
    if (checkpointValue != null) {
      state = Codec.decodeState(checkpointValue);
      Invariants.check(
          state.version() <= base,
          "checkpoint of %s at %d holds version %d",
          entity,
          base,
          state.version());
    }
    for (int start = 0; start < journalKeys.size(); start += MULTI_GET_CHUNK) {
      List<byte[]> chunk =
          journalKeys.subList(start, Math.min(journalKeys.size(), start + MULTI_GET_CHUNK));
      List<byte[]> values = disk.multiGet(KeyValueDisk.Column.JOURNAL, chunk, snapshot);
      for (int i = 0; i < chunk.size(); i++) {
        byte[] value = values.get(i);
        long expected = timestamps.get(start + i);
        Invariants.check(
            value != null,
            "index entry of %s at %d points to a missing journal record",
            entity,
            expected);
        TransactionRecord record = Codec.decodeRecord(value);
        Invariants.check(
            record.commitTimestamp() == expected,
            "index entry of %s at %d points to a record committed at %d",
            entity,
            expected,
            record.commitTimestamp());
        List<Operation> operations = operationsOf(record, entity);
        Invariants.check(
            operations != null, "record at %d is indexed for %s but has no write to it", expected,
            entity);
        state = state.apply(operations, record.commitTimestamp(), record.originDc());
      }
    }
    return new Latest(null, 0, state);
  }

  /**
   * The operations a record applies to one entity, in order (several writes to one entity in one
   * record are concatenated); null if the record does not write the entity.
   */
  static List<Operation> operationsOf(TransactionRecord record, EntityId entity) {
    List<Operation> operations = null;
    for (EntityWrite write : record.writes()) {
      if (write.entity().equals(entity)) {
        if (operations == null) {
          operations = new ArrayList<>(write.operations());
        } else {
          operations.addAll(write.operations());
        }
      }
    }
    return operations;
  }

  /**
   * The commit timestamps of {@code entity}'s index entries below {@code before} (null: all),
   * newest first, at most {@code limit} ({@link Store#versions}). The cursor only moves forward, so
   * each version is found by a seek for the last key below the previous one; several entries at
   * one timestamp (one per journal record) give it once.
   */
  static List<Long> versions(KeyValueDisk disk, KeyValueDisk.Snapshot snapshot,
      dev.troupe.model.EntityId entity, Long before, int limit) {
    byte[] prefix = Keys.entityPrefix(entity);
    List<Long> versions = new ArrayList<>(Math.min(limit, 64));
    long below = before == null ? Long.MAX_VALUE : before;
    try (KeyValueDisk.Cursor iterator = disk.cursor(KeyValueDisk.Column.INDEX, snapshot, prefix,
        Keys.entityUpperBound(prefix))) {
      while (versions.size() < limit && below > 0) {
        // The greatest key below every entry at `below`: timestamp below-1, the largest rest.
        iterator.seekForPrev(Keys.index(prefix, below - 1, 0xFFFF, -1L));
        if (!iterator.isValid() || !Keys.hasPrefix(iterator.key(), prefix, 18)) {
          break;
        }
        long version = Keys.indexTimestamp(iterator.key(), prefix.length);
        Invariants.check(version < below, "index of %s: %d found seeking below %d", entity,
            version, below);
        versions.add(version);
        below = version;
      }
    }
    return versions;
  }
}
