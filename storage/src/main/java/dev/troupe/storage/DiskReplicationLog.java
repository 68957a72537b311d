package dev.troupe.storage;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.TroupeException;
import dev.troupe.model.causal.DataCentreIds;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicaApplication;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationCodec;
import dev.troupe.model.causal.ReplicationEntry;
import dev.troupe.model.causal.ReplicationLogTruncatedException;
import dev.troupe.model.codec.CorruptFrameException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.Supplier;

/**
 * {@link RocksStore}'s {@link ReplicationLog}: the {@code replication} column of its {@link
 * KeyValueDisk} (keys in {@link Keys#replication}, values {@code ReplicationCodec} entries), the
 * received and applied vectors in {@code meta} (one key per DC, {@link Keys#META_RECEIVED}, {@link
 * Keys#META_APPLIED}, each a {@link JournalPosition} (dc, timestamp) for its type id, version and
 * checksum).
 *
 * <p><b>Writing local entries.</b> The partition writers call {@link #putPart} and {@link
 * #putDecision} while they build a group commit's batch, so an entry is durable exactly when the
 * journal record (or the decision) it describes is: a crash keeps both or neither (RocksDB applies
 * a batch atomically). The applying vector is read once per batch, after the batch's transactions
 * ran, so every entry's dependencies cover what its transaction could have seen. Nothing of a
 * replica application is written: its operations start with the {@code $replicated:} marker, and
 * the coordinator flags its decision ({@link DecidedTransaction#replicaApplication}).
 *
 * <p><b>Local safe timestamp.</b> Every timestamp of a local entry is ticked by a partition writer
 * inside a group commit, after the writer published its visibility floor {@code F =
 * clock.current() + 1} (so every tick of the batch is at least F) and before it resets the floor to
 * "none" once the batch is written (synced under SYNC) or failed. {@link #localSafeTimestamp()}
 * ticks the clock first (C, so that an idle DC's safe timestamp follows physical time and its
 * heartbeats advance), then reads every partition's floor, and answers S = min(C,
 * min(floors) - 1). Claim: every local entry with timestamp T ≤ S is already in the disk, and
 * every later entry is above S. Proof: T ≤ S ≤ C, and every later tick exceeds C, so T was ticked
 * before C was read; its writer had set its floor F ≤ T before ticking T, hence before the reader
 * read C and then the floor (both volatile, so the reads see that write or a later one). If the
 * reader saw F, S ≤ F - 1 < T, a contradiction; if it saw "none" or another batch's floor, the
 * writer (one per partition, one batch at a time) had finished T's batch, so T is in the disk.
 * Entries written after the call are ticked after C was read: above C ≥ S. S never decreases
 * between calls: a floor seen by a later call was either set after the earlier call read C (so it
 * is above C) or already set when the earlier call read it (the earlier call read it after C).
 * Decisions are ticked inside the same group commits, so the same argument holds for them.
 *
 * <p>A failed store's last batch may or may not be durable, so reading the local origin then fails
 * with {@code unavailable} rather than ship past it. Under {@link Durability#ASYNC} a written batch
 * is not yet durable, and shipping it would let a power loss at the origin lose what other DCs
 * keep: there the safe timestamp is also at most the written safe timestamp taken before the last
 * completed sync of the write-ahead log ({@link RocksStore#flushWriteAheadLog}), so it lags by up
 * to {@code asyncFlushIntervalMillis}. Under {@link Durability#SYNC} a batch may still be written
 * without a sync (a commit decision whose participants' synced commits make it durable, issue 20):
 * when it holds local entries, its writer registers its visibility floor after the write and before
 * lifting the floor ({@link #writtenUnsynced}), and the safe timestamp stays below every registered
 * floor until a synced write that started after the registration completed ({@link
 * #syncedThrough}). A reader reads the registrations after the floors, so it sees a batch either
 * by its floor or by its registration, and the safe timestamp still never decreases.
 *
 * <p><b>Received entries</b> ({@link #appendReceived}) are written with the origin's received
 * entry in one synced batch, under {@link #receivedLock} so that received entries only rise; the
 * in-memory copy is raised after the write, so a reader that reads it and then the column sees
 * every entry at or below it.
 *
 * <p><b>Recovery</b> ({@link #recover}): the received and applied vectors and the entry count's
 * counters are read from meta; the log is not scanned (once only, for a log written before its
 * count was kept).
 *
 * <p><b>The entry count</b> ({@link #entryCount}, a metric) is kept exactly, without a scan: one
 * counter per partition for the local entries its group commits add, one for the entries receiving
 * stores and one for the entries truncations delete, each persisted in meta in the very write batch
 * that changes what it counts. A batch is atomic, and a crash loses only whole batches after the
 * last sync, so after any crash the counters and the entries agree. (Counting in memory would need
 * a scan at every open; RocksDB's {@code rocksdb.estimate-num-keys} ignores range deletions until
 * compaction, so it would not fall after a truncation.) Each counter has a single writer: a
 * partition's writer thread for its own, {@link #receivedLock} for the other two.
 */
final class DiskReplicationLog implements ReplicationLog {
  private final RocksStore store;
  private final int localDc;
  private final boolean writesLocal;
  private volatile Supplier<DependencyVector> applyingVectorSource = () -> DependencyVector.EMPTY;
  /** Serializes the writes of the received and applied vectors (each read-modify-write). */
  private final Object receivedLock = new Object();
  private final Object appliedLock = new Object();
  /** Remote origins' received entries, as durable. */
  private volatile DependencyVector received = DependencyVector.EMPTY;
  private volatile DependencyVector applied = DependencyVector.EMPTY;
  private volatile long deliveredWatermark;
  /** Remote origins' delivered watermarks, as durable. */
  private volatile DependencyVector deliveredRemote = DependencyVector.EMPTY;
  /** Per origin, the bound of the last truncation (not durable): received entries below it are
   * not stored again. */
  private volatile DependencyVector truncated = DependencyVector.EMPTY;
  /** Per origin, the highest timestamp of a truncated entry, as durable (meta 'T'). */
  private volatile DependencyVector truncatedThrough = DependencyVector.EMPTY;
  private volatile List<ReplicationPeer> peers = List.of();
  /** Per partition, the local entries its group commits added (each written by its writer). */
  private final AtomicLongArray loggedEntries;
  /** Entries receiving stored, and the base counted once (under {@link #receivedLock}). */
  private volatile long receivedEntries;
  /** Entries truncations deleted (under {@link #receivedLock}). */
  private volatile long truncatedEntries;
  /**
   * Under ASYNC durability, a written safe timestamp taken before a completed sync of the
   * write-ahead log (everything recovered at open counts as durable).
   */
  private volatile long syncedSafeTimestamp;
  private final Object syncLock = new Object();
  /**
   * Under SYNC durability, the batches with local entries written without a sync of their own (a
   * commit decision whose participants' synced commits make it durable, {@link
   * Partition.Commit#syncedByLaterWrite}) and not yet known durable: registration number → the
   * batch's visibility floor (at most every timestamp it ticked). Usually empty or a few.
   */
  private final ConcurrentSkipListMap<Long, Long> unsyncedFloors = new ConcurrentSkipListMap<>();
  private final AtomicLong unsyncedRegistrations = new AtomicLong();

  DiskReplicationLog(RocksStore store) {
    this.store = store;
    this.localDc = store.settings.dataCentreId();
    this.writesLocal = store.settings.writesReplicationLog();
    this.loggedEntries = new AtomicLongArray(store.settings.partitions());
  }

  /** Reads the vectors and the entry count's counters; at open, before the writers start. */
  void recover() throws DiskException {
    received = readVector(Keys.META_RECEIVED);
    applied = readVector(Keys.META_APPLIED);
    byte[] delivered = store.disk.get(KeyValueDisk.Column.META, Keys.META_DELIVERED);
    deliveredWatermark = delivered == null ? 0 : Codec.decodePosition(delivered).timestamp();
    truncatedThrough = readVector(Keys.META_TRUNCATED);
    // Received entries at or below what was truncated are not stored again (as before a restart).
    truncated = truncatedThrough;
    byte[] recordedPeers = store.disk.get(KeyValueDisk.Column.META, Keys.META_PEERS);
    peers = recordedPeers == null ? List.of() : Codec.decodePeers(recordedPeers);
    deliveredRemote = readVector(Keys.META_DELIVERED_REMOTE);
    byte[] receivedCount = store.disk.get(KeyValueDisk.Column.META, Keys.META_RECEIVED_ENTRIES);
    if (receivedCount == null) {
      // A new log, or one written before its count was kept (no counter of any kind exists):
      // counted once, the counters kept from now on.
      long count = 0;
      try (KeyValueDisk.Cursor cursor = store.disk.cursor(KeyValueDisk.Column.REPLICATION)) {
        for (cursor.seekToFirst(); cursor.isValid(); cursor.next()) {
          count++;
        }
      }
      try (KeyValueDisk.Batch batch = store.disk.newBatch()) {
        batch.put(KeyValueDisk.Column.META, Keys.META_RECEIVED_ENTRIES, count(count));
        store.disk.write(batch, true);
      }
      receivedEntries = count;
    } else {
      receivedEntries = counted(receivedCount);
      truncatedEntries = counted(
          store.disk.get(KeyValueDisk.Column.META, Keys.META_TRUNCATED_ENTRIES));
      for (int partition = 0; partition < loggedEntries.length(); partition++) {
        loggedEntries.set(partition, counted(
            store.disk.get(KeyValueDisk.Column.META, Keys.metaLoggedEntries(partition))));
      }
    }
    syncedSafeTimestamp = store.clock.current();
  }

  /**
   * Reads a partition's entry counter again as its new owner left it: under {@link
   * PartitionOwnership#ACQUIRED} another node may have raised it since this one read it; at its
   * acquisition, before its writer starts.
   */
  void recoverPartition(int partition) throws DiskException {
    loggedEntries.set(partition, counted(
        store.disk.get(KeyValueDisk.Column.META, Keys.metaLoggedEntries(partition))));
  }

  /**
   * Replication between data centres is not supported by a data centre of several nodes (issue
   * 18): the received and applied vectors and the local safe timestamp are kept per node here,
   * and no node sees every partition's in-flight commits. The local log (the causal messages' own
   * delivery) is written as usual, in the fenced batches of each partition.
   */
  private void refuseBetweenDataCentresOnSeveralNodes(String what) {
    if (store.settings.partitionOwnership() == PartitionOwnership.ACQUIRED) {
      throw new UnsupportedOperationException("cannot " + what + ": replication between data"
          + " centres is not supported by a data centre of several nodes (storage partition"
          + " ownership ACQUIRED); run such a data centre on one node");
    }
  }

  /** A counter of the entry count as stored in meta (a position whose sequence is it). */
  private static byte[] count(long value) {
    return Codec.encodePosition(new JournalPosition(value, 0));
  }

  private static long counted(byte[] stored) {
    return stored == null ? 0 : Codec.decodePosition(stored).sequence();
  }

  private DependencyVector readVector(byte tag) {
    TreeMap<Integer, Long> vector = new TreeMap<>();
    byte[] lower = {tag};
    byte[] upper = {(byte) (tag + 1)};
    try (KeyValueDisk.Cursor cursor =
        store.disk.cursor(KeyValueDisk.Column.META, null, lower, upper)) {
      for (cursor.seek(lower); cursor.isValid(); cursor.next()) {
        byte[] key = cursor.key();
        Invariants.check(key.length == 5, "meta key of tag %s with %d bytes", (char) tag,
            key.length);
        JournalPosition entry = Codec.decodePosition(cursor.value());
        Invariants.check(entry.sequence() == Keys.getInt(key, 1),
            "meta vector entry of dc %d holds dc %d", Keys.getInt(key, 1), entry.sequence());
        vector.put(Keys.getInt(key, 1), entry.timestamp());
      }
    }
    return new DependencyVector(vector);
  }

  // ------------------------------------------------------------------ writer side (partitions)

  /** Whether local commits write entries: a named DC with the log on. */
  boolean writesLocal() {
    return writesLocal;
  }

  /** The applying vector now (once per group commit). */
  DependencyVector applyingVector() {
    return Objects.requireNonNull(applyingVectorSource.get(), "applying vector");
  }

  /**
   * Adds a local part to a group commit's batch, unless it applies a remote transaction; how many
   * entries it added (0 or 1), for {@link #putLoggedCount}.
   */
  int putPart(KeyValueDisk.Batch batch, long timestamp, long transactionId, int index,
      Partition.EntityEffect effect, DependencyVector dependencies) throws DiskException {
    if (ReplicaApplication.isReplicaApplication(effect.operations())) {
      return 0;
    }
    ReplicationEntry.Part part = new ReplicationEntry.Part(localDc, timestamp, transactionId, index,
        effect.entity(), effect.operations(), dependencies);
    batch.put(KeyValueDisk.Column.REPLICATION,
        Keys.replication(localDc, timestamp, transactionId, index), ReplicationCodec.encodeEntry(part));
    return 1;
  }

  /**
   * Adds a local transaction's decision to a group commit's batch, naming the participants that
   * will commit a part (a receiver waits for a part of each): those with a prepared record here
   * that holds operations, or turns to redo. The coordinator's list also names participants that
   * only read (they prepare nothing) and parts whose amendments took every operation back (an empty
   * record, abandoned at the commit): they commit no part. Every participant's prepared record is
   * durable before its vote, so before the decision. No decision entry when none is left. A PSAC
   * part is named before its operations are known; if they come to nothing its prepared record is
   * abandoned instead of committed, and {@link #putAbandonedPart} logs an empty part for it: the
   * decision is marked in meta ({@link Keys#metaLoggedDecision}) for that, until truncation.
   * Returns how many entries it added (0 or 1), for {@link #putLoggedCount}.
   */
  int putDecision(KeyValueDisk.Batch batch, long timestamp, long transactionId,
      List<EntityId> coordinatorParticipants, DependencyVector dependencies)
      throws DiskException {
    List<EntityId> participants = new ArrayList<>();
    boolean awaitsRedo = false;
    for (EntityId participant : coordinatorParticipants) {
      byte[] prepared = store.disk.get(KeyValueDisk.Column.TRANSACTIONS,
          Keys.prepared(store.partitionOf(participant), transactionId,
              Keys.entityPrefix(participant)));
      if (prepared == null) {
        continue;
      }
      // Its outline only: whether it holds operations or turns, not what they are.
      Codec.PreparedOutline part = Codec.outlinePrepared(prepared);
      if (part.holdsOperations() || part.needsRedo()) {
        participants.add(participant);
      }
      awaitsRedo |= part.needsRedo();
    }
    if (participants.isEmpty()) {
      return 0;
    }
    if (awaitsRedo) {
      batch.put(KeyValueDisk.Column.META, Keys.metaLoggedDecision(transactionId),
          Codec.encodePosition(new JournalPosition(0, timestamp)));
    }
    ReplicationEntry.Decision decision = new ReplicationEntry.Decision(localDc, timestamp,
        transactionId, 0, participants, dependencies);
    batch.put(KeyValueDisk.Column.REPLICATION, Keys.replication(localDc, timestamp, transactionId, 0),
        ReplicationCodec.encodeEntry(decision));
    return 1;
  }

  /**
   * A prepared record about to be deleted without a commit (an abort, or a part that commits
   * nothing): if it is a PSAC part named by a logged decision, which exists only for a commit, adds
   * an empty part for it at a timestamp ticked now (above the decision), so that receivers waiting
   * for a part of every named participant get one. Returns whether it added one.
   */
  boolean putAbandonedPart(KeyValueDisk.Batch batch, byte[] preparedKey, long transactionId,
      DependencyVector dependencies) throws DiskException {
    if (preparedKey[0] != Keys.PREPARED_TAG) {
      return false;
    }
    byte[] value = store.disk.get(KeyValueDisk.Column.TRANSACTIONS, preparedKey);
    if (value == null) {
      return false;
    }
    // Decoded only when it is such a part (rare): most abandoned records hold operations.
    if (!Codec.outlinePrepared(value).needsRedo() || store.disk.get(KeyValueDisk.Column.META,
        Keys.metaLoggedDecision(transactionId)) == null) {
      return false;
    }
    PreparedTransaction part = Codec.decodePrepared(value);
    putPart(batch, store.tick(), transactionId, 0, new Partition.EntityEffect(part.entity(),
        Keys.entityPrefix(part.entity()), List.of()), dependencies);
    return true;
  }

  /**
   * Adds to a group commit's batch {@code partition}'s count of local entries raised by the {@code
   * added} entries the batch holds; once the batch is written, {@link #loggedCountWritten} makes it
   * the count. Only the partition's writer calls these two, so nothing raises the count between.
   */
  void putLoggedCount(KeyValueDisk.Batch batch, int partition, int added) throws DiskException {
    batch.put(KeyValueDisk.Column.META, Keys.metaLoggedEntries(partition),
        count(loggedEntries.get(partition) + added));
  }

  /** The batch given to {@link #putLoggedCount} with {@code added} entries was written. */
  void loggedCountWritten(int partition, int added) {
    loggedEntries.addAndGet(partition, added);
  }

  // ------------------------------------------------------------------------------------ the API

  @Override
  public void setApplyingVectorSource(Supplier<DependencyVector> source) {
    applyingVectorSource = Objects.requireNonNull(source, "source");
  }

  @Override
  public long localSafeTimestamp() {
    long written = writtenSafeTimestamp();
    if (!store.syncCommits) {
      return Math.min(written, syncedSafeTimestamp);
    }
    // Read after the floors (in writtenSafeTimestamp): a batch whose floor was already lifted
    // registered itself before, so it is seen here until a sync covers it.
    long safe = written;
    for (long floor : unsyncedFloors.values()) {
      safe = Math.min(safe, floor - 1);
    }
    return safe;
  }

  /**
   * Under SYNC: a partition writer wrote a batch with local entries and no sync ({@code floor} is
   * at most each of their timestamps); called after the write and before the writer lifts its
   * visibility floor, so that {@link #localSafeTimestamp} stays below those entries until a later
   * sync ({@link #syncedThrough}) made them durable. Why the safe timestamp still never decreases:
   * a call that saw the floor answered below it; a call that saw it lifted sees the registration.
   */
  void writtenUnsynced(long floor) {
    unsyncedFloors.put(unsyncedRegistrations.incrementAndGet(), floor);
  }

  /** How many unsynced batches were registered so far: read before a synced write. */
  long unsyncedRegistrations() {
    return unsyncedRegistrations.get();
  }

  /**
   * A synced write that started after {@code registrations} unsynced batches had been registered
   * (each written before its registration) completed: they are durable.
   */
  void syncedThrough(long registrations) {
    if (!unsyncedFloors.isEmpty()) {
      unsyncedFloors.headMap(registrations, true).clear();
    }
  }

  /** The highest {@link #writtenSafeTimestamp()} answered. */
  private final AtomicLong highestWrittenSafe = new AtomicLong();

  /** Every local entry at or below it is written (see the class comment), maybe not synced. */
  long writtenSafeTimestamp() {
    // The clock first, then the floors: see the class comment for why this order is safe. A
    // tick, not the current value: an idle DC's clock would otherwise stand still, and so would
    // its heartbeats (its peers' lag and stable vector age would grow while nothing is late).
    long safe = Math.min(store.clock.tick(), store.lowestVisibilityFloor() - 1);
    // Once answered, a safe timestamp stays true (no later entry falls at or below it), so the
    // answers never go back even when a writer that read the clock before this call's tick
    // publishes its floor after it (its entries come above this tick all the same).
    return highestWrittenSafe.accumulateAndGet(safe, Math::max);
  }

  /**
   * Under {@link Durability#ASYNC}: the write-ahead log was synced after {@link
   * #writtenSafeTimestamp()} answered {@code written}, so every local entry at or below it is
   * durable.
   */
  void synced(long written) {
    synchronized (syncLock) {
      syncedSafeTimestamp = Math.max(syncedSafeTimestamp, written);
    }
  }

  @Override
  public long localImageStart() {
    long safe = localSafeTimestamp();
    store.enterOpen();
    try (KeyValueDisk.Cursor cursor = store.disk.cursor(KeyValueDisk.Column.TRANSACTIONS, null,
        new byte[] {Keys.DECIDED_TAG}, new byte[] {(byte) (Keys.DECIDED_TAG + 1)})) {
      // Decision keys are ordered by transaction id: the first is the oldest.
      cursor.seek(new byte[] {Keys.DECIDED_TAG});
      if (!cursor.isValid()) {
        return safe;
      }
      return Math.min(safe, Keys.getLong(cursor.key(), 1) - 1);
    } finally {
      store.exitOpen();
    }
  }

  @Override
  public ReplicationBatch read(int originDc, long afterTimestamp, int maxEntries) {
    Invariants.check(maxEntries > 0, "a replication batch of at most %d entries", maxEntries);
    Invariants.check(afterTimestamp >= 0, "reading the replication log after %d", afterTimestamp);
    // An unnamed data centre reads its own log (its messages), never another's.
    Invariants.check(originDc != DataCentreIds.UNNAMED || localDc == DataCentreIds.UNNAMED,
        "reading the replication log of the unnamed data centre");
    store.enterOpen();
    try {
      long bound;
      if (originDc == localDc) {
        Invariants.check(writesLocal,
            "reading the local replication log of data centre %d, which does not write it",
            localDc);
        if (store.failure() != null) {
          throw RocksStore.unavailable(store.failure());
        }
        bound = localSafeTimestamp();
      } else {
        bound = received.get(originDc);
      }
      long gone = truncatedThrough.get(originDc);
      if (afterTimestamp < gone) {
        throw new ReplicationLogTruncatedException(originDc, afterTimestamp, gone);
      }
      if (bound <= afterTimestamp) {
        return new ReplicationBatch(originDc, List.of(), bound);
      }
      byte[] lower = Keys.replication(originDc, afterTimestamp + 1, 0, 0);
      byte[] upper = Keys.replication(originDc, bound + 1, 0, 0);
      List<ReplicationEntry> batch = new ArrayList<>();
      long lastTimestamp = -1;
      boolean cut = false;
      // The bound was read before the cursor opens: every entry at or below it is visible to it.
      try (KeyValueDisk.Cursor cursor =
          store.disk.cursor(KeyValueDisk.Column.REPLICATION, null, lower, upper)) {
        for (cursor.seek(lower); cursor.isValid(); cursor.next()) {
          long timestamp = Keys.replicationTimestamp(cursor.key());
          if (batch.size() >= maxEntries && timestamp != lastTimestamp) {
            cut = true;
            break;
          }
          ReplicationEntry entry = decode(cursor.value());
          Invariants.check(entry.originDc() == originDc && entry.timestamp() == timestamp,
              "replication log entry of %d at %d under the key of %d at %d", entry.originDc(),
              entry.timestamp(), originDc, timestamp);
          batch.add(entry);
          lastTimestamp = timestamp;
        }
      }
      if (batch.size() > maxEntries) {
        // The last timestamp ran past the limit: leave it whole to the next batch, unless it is
        // the batch's only timestamp (then it comes whole now, or no batch could ever hold it).
        int firstOfLast = batch.size();
        while (firstOfLast > 0 && batch.get(firstOfLast - 1).timestamp() == lastTimestamp) {
          firstOfLast--;
        }
        if (firstOfLast > 0) {
          batch.subList(firstOfLast, batch.size()).clear();
          lastTimestamp = batch.get(firstOfLast - 1).timestamp();
          cut = true;
        }
      }
      return new ReplicationBatch(originDc, List.copyOf(batch), cut ? lastTimestamp : bound);
    } finally {
      store.exitOpen();
    }
  }

  @Override
  public CompletableFuture<Void> appendReceived(int originDc, List<ReplicationEntry> received,
      long upToTimestamp) {
    refuseBetweenDataCentresOnSeveralNodes("append received replication entries");
    // A peer must never send this DC its own entries: they would shadow the local ones.
    Invariants.check(originDc != localDc && originDc != DataCentreIds.UNNAMED,
        "received replication entries of origin %d at data centre %d", originDc, localDc);
    for (ReplicationEntry entry : received) {
      Invariants.check(entry.originDc() == originDc,
          "a replication batch of origin %d holds an entry of %d", originDc, entry.originDc());
    }
    return written("append received replication entries", () -> {
      synchronized (receivedLock) {
        long truncatedUpTo = truncated.get(originDc);
        long raised = Math.max(this.received.get(originDc), upToTimestamp);
        long stored = 0;
        try (KeyValueDisk.Batch batch = store.disk.newBatch()) {
          for (ReplicationEntry entry : received) {
            if (entry.timestamp() <= truncatedUpTo) {
              continue; // applied everywhere and truncated: storing it again would only leak
            }
            byte[] key = Keys.replication(originDc, entry.timestamp(), entry.transactionId(),
                entry.index());
            // Stored again (the same entry from a forwarder, a batch sent twice): not counted
            // twice. The receiver core drops those before they come here, so this read mostly
            // finds nothing, in the memtable or a bloom filter.
            if (store.disk.get(KeyValueDisk.Column.REPLICATION, key) == null) {
              stored++;
            }
            batch.put(KeyValueDisk.Column.REPLICATION, key, ReplicationCodec.encodeEntry(entry));
          }
          batch.put(KeyValueDisk.Column.META, Keys.metaVectorEntry(Keys.META_RECEIVED, originDc),
              Codec.encodePosition(new JournalPosition(originDc, raised)));
          if (stored > 0) {
            batch.put(KeyValueDisk.Column.META, Keys.META_RECEIVED_ENTRIES,
                count(receivedEntries + stored));
          }
          store.disk.write(batch, true);
        }
        receivedEntries += stored;
        this.received = this.received.atLeast(originDc, raised);
      }
    });
  }

  @Override
  public DependencyVector receivedVector() {
    DependencyVector vector = received;
    return localDc == DataCentreIds.UNNAMED ? vector
        : vector.atLeast(localDc, localSafeTimestamp());
  }

  @Override
  public CompletableFuture<Void> recordApplied(DependencyVector vector) {
    Objects.requireNonNull(vector, "vector");
    refuseBetweenDataCentresOnSeveralNodes("record the applied vector");
    return written("record the applied vector", () -> {
      synchronized (appliedLock) {
        try (KeyValueDisk.Batch batch = store.disk.newBatch()) {
          // The whole vector replaces the last one: entries it no longer has go.
          batch.deleteRange(KeyValueDisk.Column.META, new byte[] {Keys.META_APPLIED},
              new byte[] {(byte) (Keys.META_APPLIED + 1)});
          for (Map.Entry<Integer, Long> entry : vector.entries().entrySet()) {
            batch.put(KeyValueDisk.Column.META,
                Keys.metaVectorEntry(Keys.META_APPLIED, entry.getKey()),
                Codec.encodePosition(new JournalPosition(entry.getKey(), entry.getValue())));
          }
          store.disk.write(batch, true);
        }
        applied = vector;
      }
    });
  }

  @Override
  public DependencyVector appliedVector() {
    return applied;
  }

  @Override
  public CompletableFuture<Void> recordDelivered(long watermark) {
    return written("record the delivered watermark", () -> {
      synchronized (appliedLock) {
        if (watermark <= deliveredWatermark) {
          return;
        }
        try (KeyValueDisk.Batch batch = store.disk.newBatch()) {
          batch.put(KeyValueDisk.Column.META, Keys.META_DELIVERED,
              Codec.encodePosition(new JournalPosition(0, watermark)));
          store.disk.write(batch, true);
        }
        deliveredWatermark = watermark;
      }
    });
  }

  @Override
  public long deliveredWatermark() {
    return deliveredWatermark;
  }

  @Override
  public CompletableFuture<Void> recordDelivered(int originDc, long watermark) {
    if (originDc == localDc) {
      return recordDelivered(watermark);
    }
    return written("record a delivered watermark", () -> {
      synchronized (appliedLock) {
        if (watermark <= deliveredRemote.get(originDc)) {
          return;
        }
        try (KeyValueDisk.Batch batch = store.disk.newBatch()) {
          batch.put(KeyValueDisk.Column.META,
              Keys.metaVectorEntry(Keys.META_DELIVERED_REMOTE, originDc),
              Codec.encodePosition(new JournalPosition(originDc, watermark)));
          store.disk.write(batch, true);
        }
        deliveredRemote = deliveredRemote.atLeast(originDc, watermark);
      }
    });
  }

  @Override
  public DependencyVector deliveredVector() {
    long own = deliveredWatermark;
    return own == 0 ? deliveredRemote : deliveredRemote.atLeast(localDc, own);
  }

  @Override
  public CompletableFuture<Void> truncate(DependencyVector below) {
    Objects.requireNonNull(below, "below");
    return written("truncate the replication log", () -> {
      // Truncating local entries above the safe timestamp would let later ones at or below the
      // bound survive, and drop entries no peer can have received.
      Invariants.check(below.get(localDc) <= localSafeTimestamp(),
          "truncating the local replication log up to %d, above its safe timestamp %d",
          below.get(localDc), localSafeTimestamp());
      // A pinned snapshot holds the local entries above it as it holds the journal (the
      // system-of-record exporter reads the decisions after its watermark): keep more than asked.
      DependencyVector held = below;
      long pinned = store.lowestPinnedSnapshot();
      if (below.get(localDc) > pinned) {
        java.util.TreeMap<Integer, Long> lowered = new java.util.TreeMap<>(below.entries());
        lowered.put(localDc, pinned);
        held = new DependencyVector(lowered);
      }
      // Under the lock of receiving: an entry received between the count of what the range
      // deletion removes and the deletion would be counted as stored and never as deleted.
      synchronized (receivedLock) {
        truncateCounted(held);
      }
    });
  }

  /** {@link #truncate}'s write, under {@link #receivedLock}. */
  private void truncateCounted(DependencyVector below) throws DiskException {
    long deleted = 0;
    DependencyVector through = truncatedThrough;
    try (KeyValueDisk.Batch batch = store.disk.newBatch()) {
      for (Map.Entry<Integer, Long> entry : below.entries().entrySet()) {
        int origin = entry.getKey();
        byte[] from = Keys.replication(origin, 0, 0, 0);
        byte[] to = Keys.replication(origin, entry.getValue() + 1, 0, 0);
        // Counted for the entry count, and the highest deleted timestamp kept for reads: the
        // range deletion does the work.
        long highest = through.get(origin);
        try (KeyValueDisk.Cursor cursor =
            store.disk.cursor(KeyValueDisk.Column.REPLICATION, null, from, to)) {
          for (cursor.seek(from); cursor.isValid(); cursor.next()) {
            deleted++;
            highest = Math.max(highest, Keys.replicationTimestamp(cursor.key()));
          }
        }
        batch.deleteRange(KeyValueDisk.Column.REPLICATION, from, to);
        if (highest > through.get(origin)) {
          // In the deletion's batch: a crash keeps both or neither.
          through = through.atLeast(origin, highest);
          batch.put(KeyValueDisk.Column.META,
              Keys.metaVectorEntry(Keys.META_TRUNCATED, origin),
              Codec.encodePosition(new JournalPosition(origin, highest)));
        }
      }
      // Marks of logged decisions with PSAC parts: every part of theirs is at or below the
      // bound once the decision is (receivers applied the transaction whole).
      byte[] lower = {Keys.META_LOGGED_DECISION};
      byte[] upper = {(byte) (Keys.META_LOGGED_DECISION + 1)};
      long localBound = below.get(localDc);
      try (KeyValueDisk.Cursor cursor =
          store.disk.cursor(KeyValueDisk.Column.META, null, lower, upper)) {
        for (cursor.seek(lower); localBound > 0 && cursor.isValid(); cursor.next()) {
          if (Codec.decodePosition(cursor.value()).timestamp() <= localBound) {
            batch.delete(KeyValueDisk.Column.META, cursor.key());
          }
        }
      }
      if (deleted > 0) {
        batch.put(KeyValueDisk.Column.META, Keys.META_TRUNCATED_ENTRIES,
            count(truncatedEntries + deleted));
      }
      // Not synced, as the journal's truncation: entries that come back after a crash are
      // deleted again by the next truncation (and their count comes back with them: one batch).
      store.disk.write(batch, false);
    }
    truncated = truncated.merge(below);
    truncatedThrough = through;
    truncatedEntries += deleted;
  }

  @Override
  public DependencyVector truncatedVector() {
    return truncatedThrough;
  }

  @Override
  public CompletableFuture<Void> recordPeers(List<ReplicationPeer> recorded) {
    refuseBetweenDataCentresOnSeveralNodes("record replication peers");
    List<ReplicationPeer> copy = List.copyOf(recorded);
    return written("record the replication peers", () -> {
      synchronized (appliedLock) {
        try (KeyValueDisk.Batch batch = store.disk.newBatch()) {
          batch.put(KeyValueDisk.Column.META, Keys.META_PEERS, Codec.encodePeers(copy));
          store.disk.write(batch, true);
        }
        peers = copy;
      }
    });
  }

  @Override
  public List<ReplicationPeer> peers() {
    return peers;
  }

  /** What a write of the log runs on the caller's thread; a disk failure is its only exit. */
  @FunctionalInterface
  private interface DiskWrite {
    void run() throws DiskException;
  }

  /**
   * Runs one of the log's writes on the caller's thread (they are synced or small, and their
   * callers run them off the engine's threads), inside the store's open guard: refused once the
   * store is closed or failed; a disk error is {@code unavailable}, naming {@code what} failed.
   */
  private CompletableFuture<Void> written(String what, DiskWrite write) {
    try {
      store.enterOpen();
    } catch (TroupeException closed) {
      return CompletableFuture.failedFuture(closed);
    }
    try {
      if (store.failure() != null) {
        return CompletableFuture.failedFuture(RocksStore.unavailable(store.failure()));
      }
      write.run();
      return CompletableFuture.completedFuture(null);
    } catch (DiskException e) {
      return CompletableFuture.failedFuture(new TroupeException(ErrorCode.UNAVAILABLE,
          "cannot " + what + ": " + e.getMessage()));
    } finally {
      store.exitOpen();
    }
  }

  /** A stored entry; damage is the store's {@link CorruptDataException}, as everywhere else. */
  private static ReplicationEntry decode(byte[] value) {
    try {
      return ReplicationCodec.decodeEntry(value);
    } catch (CorruptFrameException damage) {
      throw new CorruptDataException("replication log entry: " + damage.getMessage(), damage);
    }
  }

  @Override
  public long entryCount() {
    long logged = 0;
    for (int partition = 0; partition < loggedEntries.length(); partition++) {
      logged += loggedEntries.get(partition);
    }
    // Read unsynchronized, the counters may be from different moments: never below zero.
    return Math.max(0, logged + receivedEntries - truncatedEntries);
  }
}
