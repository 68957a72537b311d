package dev.troupe.storage;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import dev.troupe.model.causal.ReplicaApplication;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * One journal partition and its single writer: group commit, object checkpoints, checkpoint rounds
 * and truncation (antidote-cache.txt §2.5, §2.7; one "vnode" of §2.6.2).
 *
 * <p>Concurrency: every mutation of this partition's journal, index entries and checkpoints happens
 * on the writer, so the writer never races with itself; maintenance (rounds, truncation) runs
 * between group commits in bounded slices so commits keep flowing, and truncation's and the
 * post-recovery scan's slices yield to cold reads waiting for storage ({@link
 * MaintenancePacing}). Other threads only enqueue tasks and read the {@code volatile} fields
 * below. The writer is one pass of the loop ({@link #runOnce}), run either by the partition's own
 * thread ({@link RocksStore.Execution#THREADS}) or, one pass at a time, by whoever drives a {@link
 * RocksStore.Execution#STEPPED} store ({@link #step}); either way one thread at a time, so "the
 * writer" below means whichever runs the pass.
 *
 * <p>Invariants (writer thread):
 *
 * <ul>
 *   <li>Sequences are dense: the journal holds exactly {@code [firstRetainedSequence,
 *       nextSequence)}.
 *   <li>Commit timestamps come from the node-wide hybrid logical clock, so they strictly increase
 *       with the sequence: sequence order is timestamp order within a partition.
 *   <li>A commit is acknowledged only after its write batch succeeded and its effects reached the
 *       object cache; after a failed write nothing more is acknowledged by any partition, except
 *       after a fenced one (nothing of it written), which stops this partition only.
 *   <li>Under SYNC a batch is synced unless every task in it needs no sync of its own ({@link
 *       #needsNoSyncOfItsOwn}: replica applications, and commit decisions whose participants'
 *       synced commits follow them); such a batch with replication log entries is registered
 *       with the log before the visibility floor is lifted, and released by the next synced
 *       batch of any partition.
 *   <li>Round r (start sequence S_r, frontier F_r = timestamp of record S_r - 1) checkpoints, at
 *       their state as of F_r, every entity with a record in [S_(r-1), S_r). By induction, once
 *       round r completed, every entity with a record below S_r has, as its newest checkpoint at or
 *       before F_r, its exact state at F_r. That is what makes truncation below S_r safe for reads
 *       at or after F_r (see {@link RocksStore}).
 *   <li>Checkpoints are keyed by the version of the state they hold (a commit timestamp of the
 *       entity), so the newest checkpoint at or before T holds the entity's state at T whenever no
 *       record of the entity lies between them.
 * </ul>
 *
 * <p>Recovery reads only the partition's last record and round positions (constant time). The dirty
 * set (entities written since the last completed round) is rebuilt afterwards by the writer, in
 * slices between commit batches, by scanning the journal from that round's start sequence, once the
 * next round is due (not while the node is starting); no round starts before the scan completes. So the time to serve after a crash does not grow with the
 * journal, and the scan is bounded by the round triggers.
 *
 * <p><b>Ownership</b> ({@link PartitionOwnership#ACQUIRED}, docs/ARCHITECTURE.md "Partition
 * ownership and fencing"). One instance is one acquisition: it is recovered after its owner epoch
 * was taken, started, and, once stopped, replaced by a fresh one (a thread does not restart). Every
 * batch its writer writes (group commits, rounds, horizons, truncation, recovery's cleanup) is
 * fenced with {@link #epoch} ({@link #newBatch}), so once another node acquired the partition none
 * of them is applied. The first refused batch turns the partition {@linkplain #fenced fenced}: its
 * commits are refused with {@code not_owner} (nothing of them was written), every later one too,
 * maintenance stops, and the store is told ({@link RocksStore#partitionLost}); the writer keeps
 * draining its queue, refusing, until the release stops it, so no admitted task is left waiting.
 * Under {@link PartitionOwnership#ALL} the epoch is 0 and no batch carries a fence.
 */
final class Partition {
  private static final int ROUND_SLICE_ENTITIES = 256;
  /** Journal records one slice of the post-recovery scan reads (about 1 ms of work per 1,000). */
  private static final int RECOVERY_SCAN_SLICE_RECORDS = 2048;
  private static final int TRUNCATION_SLICE_RECORDS = 1024;
  /**
   * Most entities a truncation remembers as pruned ({@link Truncation#pruned}): a few megabytes
   * per partition at most (an estimate: an entity id, its prefix and a map entry each).
   */
  private static final int PRUNED_ENTITIES_REMEMBERED = 16_384;
  private static final int OPERATION_COUNTS_LIMIT = 65_536;

  /** Work for the writer thread. */
  sealed interface Task permits Commit, CheckpointRequest, Stop {}

  /** One entity's effects in one record, with its key prefix computed off the writer thread. */
  record EntityEffect(EntityId entity, byte[] prefix, List<Operation> operations) {}

  /**
   * A commit waiting for the writer; the record is pre-encoded with commit timestamp 0. {@code
   * encodedRecord} is null for a write of two-phase-commit state alone (a prepared record or a
   * decision), which gets no timestamp and no journal position; {@code stateChange} is that state
   * (or, with a record, the prepared record the commit resolves), or null. {@code idempotency}, or
   * null, is written in the same batch (with the record's commit timestamp when there is a record):
   * an idempotent write and its key become durable together. {@code loggedDecision}, or null, are
   * the participants of a commit decision of a local transaction: with the replication log on, the
   * batch also writes its {@code Decision} entry, at a timestamp ticked there ({@link
   * DiskReplicationLog}). {@code syncedByLaterWrite}: the write needs no sync of its own (a commit
   * decision whose every participant commits on this store, {@link
   * RocksStore#persistDecisionBeforeLocalCommits}, or a prepared record of a transaction this
   * single node coordinates, {@link RocksStore#prepare}): its future completes once written, and a
   * later synced write makes it durable (the write-ahead log is one sequence).
   */
  record Commit(
      long transactionId,
      byte[] encodedRecord,
      List<EntityEffect> effects,
      TransactionStateChange stateChange,
      IdempotencyRecord idempotency,
      List<EntityId> loggedDecision,
      boolean syncedByLaterWrite,
      CompletableFuture<Committed> future,
      long submittedNanos)
      implements Task {
    /** Submitted now ({@link System#nanoTime}, for {@link WriterTimings} only). */
    Commit(long transactionId, byte[] encodedRecord, List<EntityEffect> effects,
        TransactionStateChange stateChange, IdempotencyRecord idempotency,
        List<EntityId> loggedDecision, boolean syncedByLaterWrite,
        CompletableFuture<Committed> future) {
      this(transactionId, encodedRecord, effects, stateChange, idempotency, loggedDecision,
          syncedByLaterWrite, future, System.nanoTime());
    }
  }

  /** A put ({@code value != null}) or delete in the transactions column family. */
  record TransactionStateChange(byte[] key, byte[] value) {}

  record CheckpointRequest(CompletableFuture<Void> done) implements Task {}

  enum Stop implements Task {
    INSTANCE
  }

  /** A checkpoint round in progress: checkpoint {@code entities} at {@code frontier}. */
  private static final class Round {
    final long startSequence;
    final long frontier;
    final List<EntityId> entities;
    int position;

    Round(long startSequence, long frontier, List<EntityId> entities) {
      this.startSequence = startSequence;
      this.frontier = frontier;
      this.entities = entities;
    }
  }

  /**
   * A truncation in progress: delete records {@code [firstRetainedSequence, endSequence)}. Records
   * below {@code cursor} had their index entries and their entities' superseded checkpoints
   * deleted already; they leave the journal in ranges of at least {@link
   * #TRUNCATION_SLICE_RECORDS} (and the last one), so that slices cut short by time do not leave
   * a range tombstone each.
   */
  private static final class Truncation {
    final long endSequence;
    final long frontier;
    long cursor;
    /**
     * Entities whose checkpoints superseded at the frontier this truncation deleted already, with
     * their key prefixes: once per entity suffices, as no checkpoint at or before the frontier is
     * written any more (a round's are at a later frontier, object checkpoints at their entity's
     * latest version). Forgotten when it reaches {@link #PRUNED_ENTITIES_REMEMBERED}, which costs
     * only seeks.
     */
    final Map<EntityId, byte[]> pruned = new HashMap<>();

    Truncation(long endSequence, long frontier, long cursor) {
      this.endSequence = endSequence;
      this.frontier = frontier;
      this.cursor = cursor;
    }

    void prune(EntityId entity, byte[] prefix) {
      if (pruned.size() >= PRUNED_ENTITIES_REMEMBERED) {
        pruned.clear();
      }
      pruned.put(entity, prefix);
    }
  }

  final int number;
  /** The owner epoch every batch is fenced with; 0 under {@link PartitionOwnership#ALL}. */
  final long epoch;
  /**
   * Whether commits, reads and prepares of the partition's entities are admitted: always under
   * {@link PartitionOwnership#ALL}; under ACQUIRED from the end of the acquisition until the
   * release (set false under {@link #admission}, so no admission races with it) or the fence (set
   * false by the writer, which keeps draining its queue, so a task admitted meanwhile is refused,
   * not forgotten).
   */
  volatile boolean accepting;
  /**
   * Held (read side) by whoever checks {@link #accepting} and then reads or queues (ACQUIRED only),
   * and (write side) by a release while it clears it: so a release waits for every admitted read
   * and queued task, and none is admitted after its Stop.
   */
  final ReentrantReadWriteLock admission = new ReentrantReadWriteLock();
  /** The disk refused a batch of this acquisition: another node owns the partition now. */
  volatile boolean fenced;
  /** Whether the writer was started (ACQUIRED: an unacquired partition's never is). */
  private volatile boolean started;
  final LinkedBlockingQueue<Task> queue = new LinkedBlockingQueue<>();
  /** Commits admitted and not yet taken by the writer (the bound of groupCommitQueueLimit). */
  final AtomicInteger queuedCommits = new AtomicInteger();

  private final RocksStore store;
  /** The writer thread under {@link RocksStore.Execution#THREADS}; null when stepped. */
  private final Thread thread;
  /** The thread running a {@link #step} right now (stepped execution only), or null. */
  private volatile Thread steppingThread;

  // Published by the writer, read by any thread.
  /**
   * While the writer has assigned commit timestamps that are not yet written and applied to the
   * cache, a lower bound of them; otherwise {@code Long.MAX_VALUE}. A read at T waits while T is at
   * or above it, so it never misses a record with a timestamp at or below T.
   */
  volatile long visibilityFloor = Long.MAX_VALUE;
  /** The history horizon: reads below it fail with history_truncated. */
  volatile long historyHorizon;
  volatile long firstRetainedSequence;
  volatile long publishedNextSequence;
  volatile long completedRoundSequence;

  // Writer thread only (and the opening thread before the writer starts).
  private long nextSequence;
  private long lastTimestamp;
  private long roundStartSequence;
  private long lastRoundStartMillis;
  private Set<EntityId> dirty = new HashSet<>();
  /** Next journal sequence the post-recovery scan reads, or -1 when the dirty set is complete. */
  private long recoveryScanSequence = -1;
  /** The sequence the post-recovery scan stops at: the first one appended after this start. */
  private long recoveryScanEnd;
  private long recoveryScanPreviousTimestamp;
  /** Completed rounds above the horizon: start sequence → frontier. */
  private final TreeMap<Long, Long> completedRounds = new TreeMap<>();
  /** Operations applied per entity since its last object checkpoint (bounded, best effort). */
  private final LinkedHashMap<EntityId, Integer> operationsSinceCheckpoint =
      new LinkedHashMap<>(1024, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<EntityId, Integer> eldest) {
          return size() > OPERATION_COUNTS_LIMIT;
        }
      };
  private Round round;
  private Truncation truncation;
  /**
   * How long the writer waits for work before its next maintenance attempt: 0 normally, the time
   * until the next paced slice when its last one yielded to waiting reads ({@link
   * MaintenancePacing}).
   */
  private long yieldedMillis;
  /** Set once the writer took {@link Stop}: no pass runs after it. */
  private boolean stopped;
  // One pass's tasks, reused by every pass.
  private final List<Task> drained = new ArrayList<>();
  private final List<Commit> commits = new ArrayList<>();
  private final List<Task> controls = new ArrayList<>();

  /**
   * @param ownThread whether the partition runs its own writer thread (else it is stepped)
   * @param epoch the owner epoch to fence every batch with, or 0 for none (a single node's)
   */
  Partition(RocksStore store, int number, boolean ownThread, long epoch) {
    this.store = store;
    this.number = number;
    this.epoch = epoch;
    this.accepting = store.settings.partitionOwnership() == PartitionOwnership.ALL;
    if (ownThread) {
      this.thread = new Thread(this::runOnOwnThread, "troupe-storage-writer-" + number);
      thread.setDaemon(true);
    } else {
      this.thread = null;
    }
  }

  void start() {
    started = true;
    if (thread != null) {
      thread.start();
    }
  }

  /** Whether the writer was started: it then runs, or ran, until it takes {@link Stop}. */
  boolean isStarted() {
    return started;
  }

  void join() throws InterruptedException {
    if (thread != null) {
      thread.join();
    }
  }

  /** A new batch, fenced with this acquisition's owner epoch when there is one. */
  private KeyValueDisk.Batch newBatch() {
    KeyValueDisk.Batch batch = store.disk.newBatch();
    if (epoch > 0) {
      batch.fence(number, epoch);
    }
    return batch;
  }

  /**
   * Whether another node acquired the partition since this acquisition (ACQUIRED), asked of the
   * disk after the writer met an error: a stale owner reads what the new owner wrote (states above
   * its own timestamps, a journal already truncated) and its checks fail on it before any fenced
   * write could tell it. Such an error is the fence, not a failure of the store. Null under ALL,
   * while this acquisition is current, or if the disk cannot say (the error then fails the store).
   */
  private FencedException supersession() {
    if (epoch == 0) {
      return null;
    }
    try {
      KeyValueDisk.PartitionOwner owner = store.disk.ownerOf(number);
      long current = owner == null ? 0 : owner.epoch();
      return current != epoch ? new FencedException(number, epoch, current) : null;
    } catch (DiskException | RuntimeException e) {
      return null;
    }
  }

  /**
   * The disk refused a batch because another node acquired the partition: from now on this
   * acquisition writes nothing and refuses every commit (writer thread).
   */
  private void lost(FencedException cause) {
    if (!fenced) {
      fenced = true;
      accepting = false;
      round = null;
      truncation = null;
      store.partitionLost(this, cause);
    }
  }

  /** Whether the calling thread is this partition's writer (its thread, or running a step). */
  boolean isWriterThread() {
    Thread current = Thread.currentThread();
    return current == thread || current == steppingThread;
  }

  /** Whether the writer took {@link Stop}; read by the thread that steps the partition. */
  boolean isStopped() {
    return stopped;
  }

  // ------------------------------------------------------------------------------------ recovery

  /** Restores the partition's positions from the database; runs before the writer starts. */
  void recover() throws DiskException {
    JournalPosition lastRound = store.readPosition(Keys.metaLastRound(number));
    JournalPosition horizon = store.readPosition(Keys.metaHorizon(number));
    byte[] roundListPrefix = Keys.metaRoundListPrefix(number);
    List<byte[]> stale = new ArrayList<>();
    try (KeyValueDisk.Cursor iterator = store.disk.cursor(KeyValueDisk.Column.META)) {
      for (iterator.seek(roundListPrefix); iterator.isValid(); iterator.next()) {
        byte[] key = iterator.key();
        if (key.length != 11 || !Keys.hasPrefix(key, roundListPrefix, 8)) {
          break;
        }
        JournalPosition position = Codec.decodePosition(iterator.value());
        if (position.sequence() > horizon.sequence()) {
          completedRounds.put(position.sequence(), position.timestamp());
        } else {
          stale.add(key);
        }
      }
    }
    if (!stale.isEmpty()) {
      // Left by a truncation interrupted before its last slice: the horizon supersedes them.
      try (KeyValueDisk.Batch batch = newBatch()) {
        for (byte[] key : stale) {
          batch.delete(KeyValueDisk.Column.META, key);
        }
        store.disk.write(batch, false);
      }
    }
    long lastSequence = -1;
    long lastJournalTimestamp = 0;
    long firstSequence = -1;
    try (KeyValueDisk.Cursor iterator = store.disk.cursor(KeyValueDisk.Column.JOURNAL)) {
      iterator.seekForPrev(Keys.journal(number, Long.MAX_VALUE));
      if (iterator.isValid() && Keys.journalPartition(iterator.key()) == number) {
        lastSequence = Keys.journalSequence(iterator.key());
        lastJournalTimestamp = Codec.outlineRecord(iterator.value()).commitTimestamp();
      }
      iterator.seek(Keys.journal(number, 0));
      if (iterator.isValid() && Keys.journalPartition(iterator.key()) == number) {
        firstSequence = Keys.journalSequence(iterator.key());
      }
    }
    nextSequence = Math.max(lastSequence + 1, Math.max(lastRound.sequence(), horizon.sequence()));
    lastTimestamp =
        Math.max(lastJournalTimestamp, Math.max(lastRound.timestamp(), horizon.timestamp()));
    long firstRetained = firstSequence < 0 ? nextSequence : firstSequence;
    Invariants.check(
        lastRound.sequence() >= horizon.sequence(),
        "partition %d: last round at %d below the horizon at %d",
        number,
        lastRound.sequence(),
        horizon.sequence());
    historyHorizon = horizon.timestamp();
    firstRetainedSequence = firstRetained;
    completedRoundSequence = lastRound.sequence();
    roundStartSequence = lastRound.sequence();
    publishedNextSequence = nextSequence;
    if (firstRetained < horizon.sequence()) {
      // A truncation was interrupted: finish it before anything else.
      truncation = new Truncation(horizon.sequence(), horizon.timestamp(), firstRetained);
    }
    // Entities written since the last completed round must be checkpointed by the next round. They
    // are found by scanning the journal from that round's start, which is bounded by the round
    // triggers but can still be hundreds of megabytes: the writer does it in slices after start,
    // so serving does not wait for it (rounds do).
    long firstUnchecked = Math.max(lastRound.sequence(), firstRetained);
    recoveryScanSequence = firstUnchecked < nextSequence ? firstUnchecked : -1;
    recoveryScanEnd = nextSequence;
    store.clock.advancePast(lastTimestamp);
    lastRoundStartMillis = store.nowMillis();
  }

  /**
   * Scans up to {@link #RECOVERY_SCAN_SLICE_RECORDS} journal records written before the last start
   * and after the last completed round, adding their entities to the dirty set.
   */
  private void recoveryScanSlice() {
    long startNanos = System.nanoTime();
    long end = Math.min(recoveryScanEnd, recoveryScanSequence + RECOVERY_SCAN_SLICE_RECORDS);
    long expected = recoveryScanSequence;
    try (KeyValueDisk.Cursor iterator = store.disk.cursor(KeyValueDisk.Column.JOURNAL)) {
      for (iterator.seek(Keys.journal(number, expected));
          expected < end
              && iterator.isValid()
              && Keys.journalPartition(iterator.key()) == number;
          iterator.next()) {
        long sequence = Keys.journalSequence(iterator.key());
        Invariants.check(
            sequence == expected, "partition %d: journal gap at %d", number, expected);
        Codec.RecordOutline record = Codec.outlineRecord(iterator.value());
        Invariants.check(
            record.commitTimestamp() > recoveryScanPreviousTimestamp,
            "partition %d: timestamps not increasing at %d",
            number,
            sequence);
        recoveryScanPreviousTimestamp = record.commitTimestamp();
        dirty.addAll(record.entities());
        expected++;
      }
    }
    Invariants.check(
        expected == end, "partition %d: journal ends at %d, before %d", number, expected, end);
    recoveryScanSequence = end == recoveryScanEnd ? -1 : end;
    store.writerTimings.recordSlice(
        WriterTimings.Slice.RECOVERY_SCAN, System.nanoTime() - startNanos);
  }

  // ---------------------------------------------------------------------------------- writer loop

  /** The writer thread's loop: passes until Stop, waiting for work while there is none. */
  private void runOnOwnThread() {
    long idleWaitMillis = Math.max(5, Math.min(100, store.settings.checkpointIntervalMillis()));
    while (!stopped) {
      Task first;
      try {
        boolean busy = round != null || truncation != null
            || (recoveryScanSequence >= 0 && roundDue());
        // A slice that yielded to reads waits for its turn, but a commit arriving meanwhile is
        // taken at once.
        first = queue.poll(busy ? yieldedMillis : idleWaitMillis, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        // Nobody interrupts the writer; if someone does, keep serving until told to stop.
        continue;
      }
      runOnce(first);
    }
  }

  /**
   * One pass of the writer loop on the calling thread, without waiting for work (stepped
   * execution); returns whether it did anything. Does nothing once the partition stopped.
   */
  boolean step() {
    if (stopped || !started) {
      return false;
    }
    steppingThread = Thread.currentThread();
    try {
      return runOnce(queue.poll());
    } finally {
      steppingThread = null;
    }
  }

  /**
   * One pass of the writer loop: {@code first} (null if there was no task) and up to {@code
   * groupCommitMaxRecords - 1} more queued tasks; their commits as one group, then the control
   * tasks, then (unless stopped) one maintenance slice. Returns whether it did anything.
   */
  private boolean runOnce(Task first) {
    drained.clear();
    commits.clear();
    controls.clear();
    if (first != null) {
      drained.add(first);
      queue.drainTo(drained, store.settings.groupCommitMaxRecords() - 1);
    }
    for (Task task : drained) {
      if (task instanceof Commit commit) {
        commits.add(commit);
      } else {
        controls.add(task);
      }
    }
    if (!commits.isEmpty()) {
      queuedCommits.addAndGet(-commits.size());
      long groupStartNanos = System.nanoTime();
      commitGroup(commits);
      long groupEndNanos = System.nanoTime();
      for (Commit commit : commits) {
        store.writerTimings.recordCommit(commit.submittedNanos(), groupStartNanos, groupEndNanos);
      }
    }
    for (Task control : controls) {
      switch (control) {
        case CheckpointRequest request -> runForcedCheckpoint(request.done());
        case Stop ignored -> stopped = true;
        case Commit ignored -> throw new IllegalStateException("commits are handled above");
      }
    }
    boolean maintained = !stopped && maintenance();
    return first != null || maintained;
  }

  // -------------------------------------------------------------------------------- group commit

  private void commitGroup(List<Commit> commits) {
    Throwable failure = store.failure();
    if (failure != null) {
      for (Commit commit : commits) {
        commit.future().completeExceptionally(RocksStore.unavailable(failure));
      }
      return;
    }
    if (fenced) {
      refuseAsNotOwner(commits);
      return;
    }
    int count = commits.size();
    long[] timestamps = new long[count];
    int originDc = store.settings.dataCentreId();
    boolean written = false;
    // Set before any timestamp is assigned: the ticks below are all greater than this. It is also
    // what bounds the replication log's local safe timestamp (DiskReplicationLog).
    visibilityFloor = store.clock.current() + 1;
    DiskReplicationLog log = store.replicationLog;
    boolean logging = log.writesLocal();
    try (KeyValueDisk.Batch batch = newBatch()) {
      // Read once per batch, after the batch's transactions ran: at least the vector any of them
      // could have seen (the shell raises it before a remote transaction becomes visible). Inside
      // the try: a source that throws fails the batch like any bug, and the floor is restored.
      dev.troupe.model.causal.DependencyVector dependencies =
          logging ? log.applyingVector() : null;
      long previous = lastTimestamp;
      List<EntityId> due = new ArrayList<>();
      int records = 0;
      // Replication log entries this batch adds: their count goes into the same batch.
      int logged = 0;
      for (int i = 0; i < count; i++) {
        Commit commit = commits.get(i);
        TransactionStateChange change = commit.stateChange();
        if (logging && change != null && change.value() == null && commit.encodedRecord() == null) {
          // Before the deletion below: it reads the prepared record.
          if (log.putAbandonedPart(batch, change.key(), commit.transactionId(), dependencies)) {
            logged++;
          }
        }
        if (change != null && change.value() != null) {
          batch.put(KeyValueDisk.Column.TRANSACTIONS, change.key(), change.value());
        } else if (change != null) {
          batch.delete(KeyValueDisk.Column.TRANSACTIONS, change.key());
        }
        if (commit.encodedRecord() == null) {
          if (logging && commit.loggedDecision() != null) {
            // Ticked here, before the decision is durable and so before any participant commits
            // its part: below every part's commit timestamp.
            logged += log.putDecision(batch, store.tick(), commit.transactionId(),
                commit.loggedDecision(), dependencies);
          }
          if (commit.idempotency() != null) {
            IdempotencyRecord decided = commit.idempotency().decidedAs(commit.transactionId());
            batch.put(KeyValueDisk.Column.TRANSACTIONS, Keys.idempotency(decided.qualifiedKey()),
                Codec.encodeIdempotency(decided));
          }
          continue;
        }
        long timestamp = store.tick();
        Invariants.check(
            timestamp > previous,
            "partition %d: commit timestamp %d after %d",
            number,
            timestamp,
            previous);
        previous = timestamp;
        timestamps[i] = timestamp;
        long sequence = nextSequence + records++;
        batch.put(
            KeyValueDisk.Column.JOURNAL,
            Keys.journal(number, sequence),
            Codec.withCommitTimestamp(commit.encodedRecord(), timestamp));
        if (commit.idempotency() != null) {
          IdempotencyRecord committed = commit.idempotency()
              .committedAt(commit.effects().get(0).entity(), timestamp);
          batch.put(KeyValueDisk.Column.TRANSACTIONS, Keys.idempotency(committed.qualifiedKey()),
              Codec.encodeIdempotency(committed));
        }
        List<EntityEffect> recordEffects = commit.effects();
        for (int place = 0; place < recordEffects.size(); place++) {
          EntityEffect effect = recordEffects.get(place);
          if (logging) {
            logged += log.putPart(batch, timestamp, commit.transactionId(), place, effect,
                dependencies);
          }
          batch.put(KeyValueDisk.Column.INDEX,
              Keys.index(effect.prefix(), timestamp, number, sequence), Keys.EMPTY);
          // In the commit's own batch: a crash keeps the entity's listing key with its record.
          ListingIndex.put(batch, effect.entity());
          int operations =
              operationsSinceCheckpoint.merge(
                  effect.entity(), Math.max(1, effect.operations().size()), Integer::sum);
          // A large object (a follower of thousands of dependencies) waits for more operations:
          // a checkpoint rewrites it whole (troupe.storage.checkpoint-bytes-per-operation).
          if (operations >= store.settings.checkpointEveryOperations()
              && operations >= store.cachedWeightQuietly(effect.entity())
                  / store.settings.checkpointBytesPerOperation()
              && !due.contains(effect.entity())) {
            due.add(effect.entity());
          }
        }
      }
      for (EntityId entity : due) {
        EntityState state = currentState(entity);
        byte[] prefix = null;
        for (int i = 0; i < count; i++) {
          for (EntityEffect effect : commits.get(i).effects()) {
            if (effect.entity().equals(entity)) {
              state = state.apply(effect.operations(), timestamps[i], originDc);
              prefix = effect.prefix();
            }
          }
        }
        batch.put(KeyValueDisk.Column.CHECKPOINTS, Keys.checkpoint(prefix, state.version()),
            Codec.encodeState(state));
        operationsSinceCheckpoint.remove(entity);
        store.objectCheckpoints.increment();
      }
      if (logged > 0) {
        log.putLoggedCount(batch, number, logged);
      }
      boolean sync = store.syncCommits && !needsNoSyncOfItsOwn(commits, count);
      // Taken before a synced write: the unsynced batches registered so far are then durable.
      long unsyncedRegistered = sync ? log.unsyncedRegistrations() : 0;
      try {
        long writeStartNanos = System.nanoTime();
        store.disk.write(batch, sync);
        store.writerTimings.recordJournalWrite(System.nanoTime() - writeStartNanos);
      } catch (FencedException e) {
        // Nothing of the batch was applied: the commits certainly did not happen. Only this
        // partition is lost; the store and its other partitions go on.
        lost(e);
        refuseAsNotOwner(commits);
        return;
      } catch (DiskException e) {
        store.fail(e);
        for (Commit commit : commits) {
          commit
              .future()
              .completeExceptionally(
                  new OutcomeUnknownException(
                      "journal write failed; the commit may or may not be durable", e));
        }
        return;
      }
      written = true;
      if (sync) {
        log.syncedThrough(unsyncedRegistered);
      } else if (logged > 0 && store.syncCommits) {
        // Under SYNC, local entries written without a sync (a decision's): not shipped until a
        // later sync makes them durable. Registered before the floor is lifted (finally below).
        log.writtenUnsynced(visibilityFloor);
      }
      if (logged > 0) {
        log.loggedCountWritten(number, logged);
      }
      nextSequence += records;
      lastTimestamp = previous;
      publishedNextSequence = nextSequence;
      for (int i = 0; i < count; i++) {
        for (EntityEffect effect : commits.get(i).effects()) {
          dirty.add(effect.entity());
          store.applyToCache(effect.entity(), effect.operations(), timestamps[i], originDc);
        }
      }
      store.commits.add(records);
      store.groupCommits.increment();
    } catch (Throwable t) {
      FencedException superseded = written ? null : supersession();
      if (superseded != null) {
        // A stale owner met what the new owner wrote (a state above its own timestamps): nothing
        // of its batch was written, and none would have been.
        lost(superseded);
        refuseAsNotOwner(commits);
        return;
      }
      // A bug or a corrupt read while preparing the batch, or a failure applying to the cache.
      store.fail(t);
      for (Commit commit : commits) {
        commit
            .future()
            .completeExceptionally(
                written
                    ? new OutcomeUnknownException("commit written but not applied", t)
                    : RocksStore.unavailable(t));
      }
      return;
    } finally {
      // Before completing futures: a continuation may read at its own commit timestamp.
      visibilityFloor = Long.MAX_VALUE;
    }
    for (int i = 0; i < count; i++) {
      Commit commit = commits.get(i);
      commit.future().complete(new Committed(commit.transactionId(), timestamps[i]));
    }
  }

  private void refuseAsNotOwner(List<Commit> commits) {
    for (Commit commit : commits) {
      commit.future().completeExceptionally(RocksStore.notOwner(number));
    }
  }

  /** The latest committed state (all written batches), from the cache or the database. */
  private EntityState currentState(EntityId entity) throws DiskException {
    // A cached entry is complete for every written batch: the writer applies each batch to it, and
    // a concurrent load finishes before the writer's compute on the same key (see RocksStore).
    CachedState cached = store.cachedQuietly(entity);
    if (cached != null) {
      return cached.state();
    }
    return store.materializer.materialize(entity, Long.MAX_VALUE, null);
  }

  // --------------------------------------------------------------------------------- maintenance

  /**
   * One bounded step of checkpoint or truncation work; never throws. Returns whether there was
   * work to do (a slice ran, a truncation started, or the attempt failed the store); false when a
   * truncation or scan slice yielded to waiting reads ({@link #pacedSlice}).
   */
  private boolean maintenance() {
    yieldedMillis = 0;
    if (store.failure() != null || fenced) {
      round = null;
      truncation = null;
      return false;
    }
    try {
      if (round != null) {
        roundSlice(true);
      } else if (truncation != null) {
        return pacedSlice(this::truncationSlice);
      } else if (roundDue()) {
        // The post-recovery scan only matters to the next round: deferred until one is due, it
        // stays out of the way of a node that is starting up.
        if (recoveryScanSequence >= 0) {
          return pacedSlice(timeBounded -> recoveryScanSlice());
        } else {
          startRound();
          roundSlice(true);
        }
      } else {
        startTruncationIfAllowed();
        return truncation != null;
      }
      return true;
    } catch (FencedException e) {
      lost(e);
      return true;
    } catch (Throwable t) {
      FencedException superseded = supersession();
      if (superseded != null) {
        lost(superseded); // e.g. a journal the new owner already truncated
        return true;
      }
      store.fail(t);
      round = null;
      truncation = null;
      return true;
    }
  }

  /** A slice of deferrable maintenance (truncation, the post-recovery scan). */
  private interface DeferrableSlice {
    /** @param timeBounded whether the slice ends at {@link #sliceDeadline} too */
    void run(boolean timeBounded) throws DiskException;
  }

  /**
   * Runs {@code slice} unless it yields to reads waiting for storage ({@link MaintenancePacing}:
   * one paced slice at a time across the partitions, a pause after each); returns whether it ran.
   * What the slice does is the same either way: only when it runs changes. A paced slice is
   * bounded by its count only: paced slices are few (one per pause across the partitions), and
   * cut short by time as well they would fall behind the journal's growth.
   */
  private boolean pacedSlice(DeferrableSlice slice) throws DiskException {
    MaintenancePacing pacing = store.maintenancePacing;
    long now = store.nowMillis();
    if (!pacing.readsWaiting(now)) {
      slice.run(true);
      return true;
    }
    if (!pacing.takeSlot(now)) {
      yieldedMillis = pacing.millisUntilNextSlice(now);
      return false;
    }
    try {
      slice.run(false);
    } finally {
      pacing.releaseSlot(store.nowMillis());
    }
    return true;
  }

  private void runForcedCheckpoint(CompletableFuture<Void> done) {
    Throwable failure = store.failure();
    if (failure != null) {
      done.completeExceptionally(RocksStore.unavailable(failure));
      return;
    }
    if (fenced) {
      done.completeExceptionally(RocksStore.notOwner(number));
      return;
    }
    try {
      while (recoveryScanSequence >= 0) {
        recoveryScanSlice();
      }
      while (round != null) {
        roundSlice(false);
      }
      while (truncation != null) {
        truncationSlice(false);
      }
      if (nextSequence > roundStartSequence) {
        startRound();
        while (round != null) {
          roundSlice(false);
        }
      }
      startTruncationIfAllowed();
      while (truncation != null) {
        truncationSlice(false);
      }
      done.complete(null);
    } catch (FencedException e) {
      lost(e);
      done.completeExceptionally(RocksStore.notOwner(number));
    } catch (Throwable t) {
      FencedException superseded = supersession();
      if (superseded != null) {
        lost(superseded);
        done.completeExceptionally(RocksStore.notOwner(number));
        return;
      }
      store.fail(t);
      round = null;
      truncation = null;
      done.completeExceptionally(t);
    }
  }

  private boolean roundDue() {
    long records = nextSequence - roundStartSequence;
    if (records <= 0) {
      return false;
    }
    return records >= store.settings.checkpointJournalRecords()
        || store.nowMillis() - lastRoundStartMillis >= store.settings.checkpointIntervalMillis();
  }

  private void startRound() {
    round = new Round(nextSequence, lastTimestamp, new ArrayList<>(dirty));
    dirty = new HashSet<>();
    roundStartSequence = nextSequence;
    lastRoundStartMillis = store.nowMillis();
  }

  /**
   * Checkpoints the round's next entities, up to {@link #ROUND_SLICE_ENTITIES} and, when {@code
   * timeBounded}, until {@link #sliceDeadline} passed (at least one entity per slice).
   */
  private void roundSlice(boolean timeBounded) throws DiskException {
    long startNanos = System.nanoTime();
    Round current = round;
    int limit = Math.min(current.entities.size(), current.position + ROUND_SLICE_ENTITIES);
    long deadline = timeBounded ? sliceDeadline() : Long.MAX_VALUE;
    int end = current.position;
    try (KeyValueDisk.Batch batch = newBatch()) {
      while (end < limit) {
        checkpointInRound(current.entities.get(end), current.frontier, batch);
        end++;
        if (store.nowMillis() >= deadline) {
          break;
        }
      }
      boolean complete = end == current.entities.size();
      JournalPosition position = new JournalPosition(current.startSequence, current.frontier);
      if (complete) {
        byte[] encoded = Codec.encodePosition(position);
        batch.put(KeyValueDisk.Column.META, Keys.metaLastRound(number), encoded);
        batch.put(KeyValueDisk.Column.META, Keys.metaRound(number, current.startSequence), encoded);
      }
      // Not synced: checkpoints can be rebuilt from the journal, and RocksDB recovers a prefix of
      // the write-ahead log, so "round completed" is never durable without its checkpoints.
      store.disk.write(batch, false);
      store.objectCheckpoints.add(end - current.position);
      current.position = end;
      if (complete) {
        completedRounds.put(current.startSequence, current.frontier);
        completedRoundSequence = current.startSequence;
        store.checkpointRounds.increment();
        store.lastCheckpointMillis = store.nowMillis();
        round = null;
      }
    }
    store.writerTimings.recordSlice(WriterTimings.Slice.ROUND, System.nanoTime() - startNanos);
  }

  /** Adds {@code entity}'s checkpoint at the round's {@code frontier} to {@code batch}. */
  private void checkpointInRound(EntityId entity, long frontier, KeyValueDisk.Batch batch)
      throws DiskException {
    CachedState cached = store.cachedQuietly(entity);
    if (cached != null && cached.version() <= frontier) {
      // Complete up to the last written batch and unchanged since its version, so also at the
      // frontier. Held encoded: its bytes are the checkpoint's. Held decoded (written since the
      // last round): encoded here, and the cache takes the encoding, compact again.
      byte[] encoding = cached.isEncoded() ? cached.encoded() : Codec.encodeState(cached.state());
      batch.put(
          KeyValueDisk.Column.CHECKPOINTS,
          Keys.checkpoint(Keys.entityPrefix(entity), cached.version()),
          encoding);
      if (!cached.isEncoded()) {
        store.encodeCached(entity, cached.version(), encoding);
      }
      return;
    }
    EntityState state = store.materializer.materialize(entity, frontier, null);
    batch.put(
        KeyValueDisk.Column.CHECKPOINTS,
        Keys.checkpoint(Keys.entityPrefix(entity), state.version()),
        Codec.encodeState(state));
  }

  /**
   * When a time-bounded maintenance slice starting now ends: {@code maintenanceSliceMaxMillis}
   * from now by the store's physical clock ({@link Long#MAX_VALUE} when that is 0). Checked after
   * each entity or record, so a slice runs at most that long plus one entity's or record's work:
   * every commit arriving meanwhile waits for it (issue 20).
   */
  private long sliceDeadline() {
    long maxMillis = store.settings.maintenanceSliceMaxMillis();
    return maxMillis == 0 ? Long.MAX_VALUE : store.nowMillis() + maxMillis;
  }

  /**
   * Picks the newest completed round whose frontier is at or below the retention horizon, publishes
   * it as the history horizon and starts deleting below it.
   */
  private void startTruncationIfAllowed() throws DiskException {
    if (completedRounds.isEmpty()) {
      return;
    }
    JournalPosition target = store.claimHorizon(this, completedRounds);
    if (target == null) {
      return;
    }
    // Durable before any deletion (write-ahead log prefix order), so recovery knows the horizon.
    try (KeyValueDisk.Batch batch = newBatch()) {
      batch.put(KeyValueDisk.Column.META, Keys.metaHorizon(number), Codec.encodePosition(target));
      store.disk.write(batch, false);
    }
    truncation = new Truncation(target.sequence(), target.timestamp(), firstRetainedSequence);
  }

  /**
   * Deletes the index entries of the truncation's next records (up to {@link
   * #TRUNCATION_SLICE_RECORDS} and, when {@code timeBounded}, until {@link #sliceDeadline} passed:
   * at least one record per slice) and their entities' superseded checkpoints; then the records
   * themselves once {@link #TRUNCATION_SLICE_RECORDS} of them wait, or the truncation is done.
   */
  private void truncationSlice(boolean timeBounded) throws DiskException {
    long startNanos = System.nanoTime();
    Truncation current = truncation;
    long limit = Math.min(current.endSequence, current.cursor + TRUNCATION_SLICE_RECORDS);
    long deadline = timeBounded ? sliceDeadline() : Long.MAX_VALUE;
    try (KeyValueDisk.Batch batch = newBatch();
        KeyValueDisk.Cursor iterator = store.disk.cursor(KeyValueDisk.Column.JOURNAL)) {
      long expected = current.cursor;
      boolean outOfTime = false;
      for (iterator.seek(Keys.journal(number, current.cursor));
          expected < limit
              && iterator.isValid()
              && Keys.journalPartition(iterator.key()) == number;
          iterator.next()) {
        long sequence = Keys.journalSequence(iterator.key());
        Invariants.check(
            sequence == expected, "partition %d: journal gap at %d", number, expected);
        Codec.RecordOutline record = Codec.outlineRecord(iterator.value());
        Invariants.check(
            record.commitTimestamp() <= current.frontier,
            "partition %d: truncating record %d committed at %d above the frontier %d",
            number,
            sequence,
            record.commitTimestamp(),
            current.frontier);
        Set<EntityId> inRecord = new HashSet<>();
        for (EntityId entity : record.entities()) {
          if (inRecord.add(entity)) {
            byte[] prefix = current.pruned.get(entity);
            if (prefix == null) {
              prefix = Keys.entityPrefix(entity);
              deleteSupersededCheckpoints(entity, prefix, current.frontier, batch);
              current.prune(entity, prefix);
            }
            batch.delete(KeyValueDisk.Column.INDEX,
                Keys.index(prefix, record.commitTimestamp(), number, sequence));
          }
        }
        expected++;
        if (store.nowMillis() >= deadline) {
          outOfTime = true;
          break;
        }
      }
      Invariants.check(
          outOfTime || expected == limit, "partition %d: journal ends at %d, truncating to %d",
          number, expected, limit);
      long end = expected;
      boolean complete = end == current.endSequence;
      long journalStart = firstRetainedSequence;
      boolean deleteRecords = complete || end - journalStart >= TRUNCATION_SLICE_RECORDS;
      if (deleteRecords) {
        batch.deleteRange(KeyValueDisk.Column.JOURNAL,
            Keys.journal(number, journalStart), Keys.journal(number, end));
      }
      if (complete) {
        for (Long sequence : completedRounds.headMap(current.endSequence, true).keySet()) {
          batch.delete(KeyValueDisk.Column.META, Keys.metaRound(number, sequence));
        }
      }
      store.disk.write(batch, false);
      current.cursor = end;
      if (deleteRecords) {
        store.truncatedRecords.add(end - journalStart);
        firstRetainedSequence = end;
      }
      if (complete) {
        completedRounds.headMap(current.endSequence, true).clear();
        truncation = null;
      }
    }
    store.writerTimings.recordSlice(
        WriterTimings.Slice.TRUNCATION, System.nanoTime() - startNanos);
  }

  /**
   * Deletes the checkpoints of an entity older than its newest checkpoint at or before the frontier:
   * reads at or above the horizon (= frontier) never start from them.
   *
   * <p>One forward seek over the entity's own checkpoints (a cursor bounded to its key range, as
   * {@link Materializer}'s): each one at or before the frontier supersedes the one before it. The
   * same deletions as a backward seek to the newest one followed by a forward scan to it, at half
   * the seeks, none of them backward, and with the checkpoints' prefix filter applicable (issue
   * 20: right after a restart, truncation's seeks took as much CPU as the cold reads beside them).
   */
  private void deleteSupersededCheckpoints(
      EntityId entity, byte[] prefix, long frontier, KeyValueDisk.Batch batch)
      throws DiskException {
    byte[] newest = null;
    try (KeyValueDisk.Cursor iterator = store.disk.cursor(KeyValueDisk.Column.CHECKPOINTS, null,
        prefix, Keys.entityUpperBound(prefix))) {
      for (iterator.seek(Keys.checkpoint(prefix, 0)); iterator.isValid(); iterator.next()) {
        byte[] key = iterator.key();
        // Unsigned, as the keys are ordered.
        if (!Keys.hasPrefix(key, prefix, 8)
            || Long.compareUnsigned(Keys.checkpointTimestamp(key), frontier) > 0) {
          break;
        }
        if (newest != null) {
          batch.delete(KeyValueDisk.Column.CHECKPOINTS, newest);
        }
        newest = key;
      }
    }
    Invariants.check(
        newest != null,
        "truncating records of %s up to %d, but it has no checkpoint at or before that",
        entity,
        frontier);
  }

  static TroupeException overloaded(int partition, int limit) {
    return new TroupeException(
        ErrorCode.OVERLOADED,
        "partition " + partition + " has " + limit + " commits waiting; retry later");
  }

  /**
   * Whether every one of the first {@code count} commits needs no sync of its own, because a later
   * synced write makes it durable (RocksDB's write-ahead log is one sequence: a crash keeps a
   * prefix of the written batches that includes every synced one, the {@link KeyValueDisk}
   * contract). Three kinds:
   *
   * <ul>
   *   <li>A commit decision whose every participant commits on this store ({@link
   *       Commit#syncedByLaterWrite}, issue 20): each participant's commit of its part is a synced
   *       write submitted only after the decision was written, so no part is durable before the
   *       decision is; a crash before any of them loses the decision and its transaction, which
   *       nobody was told had committed (the client is answered once the parts are durable).
   *   <li>A prepared record of a transaction this single node coordinates ({@link
   *       Commit#syncedByLaterWrite}, issue 20): its vote goes to that coordinator only, which
   *       writes the decision to this store after every vote, synced or made durable by the
   *       participants' synced commits written after it; a crash that loses the prepared record
   *       loses the decision too, and recovery aborts what is left prepared (presumed abort).
   *   <li>Single-turn applications of other data centres' transactions (every effect's operations
   *       open with a {@code $replicated:} marker): such a transaction is durable in this DC's
   *       replication log before it is applied, a crash that loses its application re-applies it
   *       from there (the recorded applied vector stays below it), and whatever write is synced
   *       after it (a local commit that saw it, the applied vector's record that covers it) makes
   *       it durable too.
   * </ul>
   *
   * A commit that changes a transaction record otherwise (a 2PC participant's), records an
   * idempotency key or logs a decision of another kind is synced as always: a lost participant
   * commit could meet a forgotten decision. So is everything on a disk that can crash alone ({@link
   * KeyValueDisk#crashesOnlyWithThisProcess}: a PostgreSQL server), which could lose such a write
   * while this node goes on acting on it (and later syncs past the gap).
   */
  private boolean needsNoSyncOfItsOwn(List<Commit> commits, int count) {
    if (!store.disk.crashesOnlyWithThisProcess()) {
      // A database server can lose an unsynced write and come back while this node runs on.
      return false;
    }
    for (int i = 0; i < count; i++) {
      Commit commit = commits.get(i);
      if (commit.syncedByLaterWrite()) {
        continue;
      }
      if (commit.encodedRecord() == null || commit.stateChange() != null
          || commit.idempotency() != null || commit.loggedDecision() != null
          || commit.effects().isEmpty()) {
        return false;
      }
      for (EntityEffect effect : commit.effects()) {
        if (!ReplicaApplication.isReplicaApplication(effect.operations())) {
          return false;
        }
      }
    }
    return count > 0;
  }
}
