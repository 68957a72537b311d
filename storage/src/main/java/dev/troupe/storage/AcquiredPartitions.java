package dev.troupe.storage;

import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * {@link RocksStore}'s partition ownership under {@link PartitionOwnership#ACQUIRED}: acquiring a
 * partition, releasing it, and the writes that belong to no partition (docs/ARCHITECTURE.md,
 * "Partition ownership and fencing").
 *
 * <p><b>Acquisition</b> (per partition, serialized by its own lock; acquisitions of different
 * partitions run in parallel): if an earlier acquisition was fenced and not yet released, it is
 * released first. Then, under the store's close lock (read side, so the store cannot close the
 * disk under it; it delays only a close, not other partitions' releases or reads): the disk makes this node the owner under a new epoch ({@link KeyValueDisk#acquirePartition}:
 * once it returns, every batch of the previous owner was either applied or will be refused); a fresh
 * {@link Partition} with that epoch recovers from the disk as it is now, so it sees every batch the
 * previous owner had applied, and advances the node's clock past the partition's greatest commit
 * timestamp; the partition's prepared parts and their decisions are read (the clock advanced past
 * their transaction ids); every cached state of its entities is dropped; the fresh partition
 * replaces the old one in the store's slot, its writer starts, and only then does it admit
 * commits and reads ({@link Partition#accepting}).
 *
 * <p><b>Release</b> (per partition lock): under the write side of the partition's admission lock,
 * which waits for every admission and read of it in progress (both hold the read side while they
 * check {@link Partition#accepting} and queue or read), the partition stops admitting and {@link
 * Partition.Stop} is queued behind everything admitted; the writer drains its queue (writing, or refusing when
 * fenced) and stops; the cached states of the partition's entities are dropped (no reader of them
 * is in flight: the write side waited for them, and later ones are refused) and an unowned
 * placeholder takes the slot. A fenced partition releases the same way.
 *
 * <p><b>Writes of no partition</b>: a decision record (two-phase commit) is keyed by its
 * transaction id and written by the coordinator's node, which may own none of its participants'
 * partitions; an expired idempotency record is a shared row. Both are written outside every
 * partition's writer, in order, by one thread of their own ({@link RocksStore.Execution#THREADS}) or on the caller's thread
 * ({@link RocksStore.Execution#STEPPED}). A decision is fenced by this node's coordinator
 * partition ({@link CoordinatorPartitions}), acquired at open; an idempotency record's deletion
 * is not fenced.
 */
final class AcquiredPartitions {
  /** A batch's contents. */
  @FunctionalInterface
  interface Contents {
    void fill(KeyValueDisk.Batch batch) throws DiskException;
  }

  private final RocksStore store;
  private final boolean threads;
  private final Object[] partitionLocks;
  /** Writes of no partition, in submission order; null when stepped. */
  private final ExecutorService unfencedWriter;
  /**
   * The owner epoch of this node's coordinator partition ({@link CoordinatorPartitions}), acquired
   * when the store opened ({@link #acquireCoordinatorPartition}); every decision record is fenced
   * with it. 0 until then.
   */
  private volatile long coordinatorEpoch;

  AcquiredPartitions(RocksStore store, boolean threads, int partitions) {
    this.store = store;
    this.threads = threads;
    this.partitionLocks = new Object[partitions];
    for (int i = 0; i < partitions; i++) {
      partitionLocks[i] = new Object();
    }
    this.unfencedWriter = threads ? Executors.newSingleThreadExecutor(runnable -> {
      Thread thread = new Thread(runnable, "troupe-storage-unfenced-writer");
      thread.setDaemon(true);
      return thread;
    }) : null;
  }

  AcquiredPartition acquire(int number) {
    synchronized (partitionLocks[number]) {
      Partition current = store.partitionSlot(number);
      if (current.isStarted() && !(current.accepting && stillOwner(current))) {
        // Fenced, noticed or not (another node acquired it since and this one has not written):
        // this acquisition ends before the next begins, its cached states with it.
        stop(current);
      }
      store.enterOpen();
      try {
        Throwable failed = store.failure();
        if (failed != null) {
          throw RocksStore.unavailable(failed);
        }
        current = store.partitionSlot(number);
        if (current.accepting) {
          return recoverTransactionState(number, current.epoch);
        }
        long epoch = store.disk.acquirePartition(number, store.settings.nodeId());
        Partition fresh = store.newPartition(number, epoch);
        fresh.recover();
        store.replicationLog.recoverPartition(number);
        AcquiredPartition acquired = recoverTransactionState(number, epoch);
        store.dropCachedStates(number);
        store.replacePartition(fresh);
        fresh.start();
        fresh.accepting = true;
        return acquired;
      } catch (FencedException e) {
        // Another node acquired the partition while this one recovered it: it is not ours.
        throw new TroupeException(ErrorCode.NOT_OWNER, "cannot acquire partition " + number
            + ": another node acquired it meanwhile (" + e.getMessage() + ")");
      } catch (DiskException e) {
        throw new TroupeException(ErrorCode.UNAVAILABLE,
            "cannot acquire partition " + number + ": " + e.getMessage());
      } finally {
        store.exitOpen();
      }
    }
  }

  /** Whether the disk still names this node and the acquisition's epoch as the owner. */
  private boolean stillOwner(Partition partition) {
    try {
      KeyValueDisk.PartitionOwner owner = store.disk.ownerOf(partition.number);
      return owner != null && owner.nodeId() == store.settings.nodeId()
          && owner.epoch() == partition.epoch;
    } catch (DiskException e) {
      throw new TroupeException(ErrorCode.UNAVAILABLE,
          "cannot read the owner of partition " + partition.number + ": " + e.getMessage());
    }
  }

  void release(int number) {
    synchronized (partitionLocks[number]) {
      Partition current = store.partitionSlot(number);
      if (current.isStarted()) {
        stop(current);
      }
    }
  }

  /** Stops an acquisition's writer after what it admitted and frees its slot (partition lock). */
  private void stop(Partition partition) {
    store.stopAdmitting(partition);
    if (threads) {
      boolean interrupted = false;
      while (true) {
        try {
          partition.join();
          break;
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    } else {
      // Bounded: every pass takes tasks off the queue, Stop is among them.
      while (!partition.isStopped()) {
        partition.step();
      }
    }
    store.dropCachedStates(partition.number);
    store.replacePartition(store.newPartition(partition.number, 0));
  }

  boolean owns(int number) {
    return store.partitionSlot(number).accepting;
  }

  List<Integer> owned(int partitions) {
    List<Integer> owned = new ArrayList<>();
    for (int number = 0; number < partitions; number++) {
      if (owns(number)) {
        owned.add(number);
      }
    }
    return owned;
  }

  /**
   * The prepared parts of {@code partition} and the decisions of their transactions, the clock
   * advanced past their transaction ids (acquisition).
   */
  private AcquiredPartition recoverTransactionState(int partition, long epoch) {
    List<PreparedTransaction> prepared = new ArrayList<>();
    // Prepared keys: tag, partition (two bytes), transaction id, entity.
    byte[] prefix = Arrays.copyOf(Keys.prepared(partition, 0, Keys.EMPTY), 3);
    try (KeyValueDisk.Cursor cursor = store.disk.cursor(KeyValueDisk.Column.TRANSACTIONS)) {
      for (cursor.seek(prefix); cursor.isValid(); cursor.next()) {
        byte[] key = cursor.key();
        if (key.length < prefix.length || !Arrays.equals(key, 0, prefix.length, prefix, 0,
            prefix.length)) {
          break;
        }
        prepared.add(Codec.decodePrepared(cursor.value()));
      }
    }
    List<DecidedTransaction> decided = new ArrayList<>();
    Set<Long> seen = new HashSet<>();
    try {
      for (PreparedTransaction part : prepared) {
        store.clock.advancePast(part.transactionId());
        if (seen.add(part.transactionId())) {
          byte[] value = store.disk.get(KeyValueDisk.Column.TRANSACTIONS,
              Keys.decided(part.transactionId()));
          if (value != null) {
            DecidedTransaction decision = Codec.decodeDecided(value);
            store.clock.advancePast(decision.transactionId());
            decided.add(decision);
          }
        }
      }
    } catch (DiskException e) {
      throw new TroupeException(ErrorCode.UNAVAILABLE,
          "cannot read the two-phase-commit state of partition " + partition + ": "
              + e.getMessage());
    }
    return new AcquiredPartition(partition, epoch, prepared, decided);
  }

  /**
   * A decision on one node of several: keyed by its transaction id and written by the
   * coordinator's node whichever partitions it owns, so fenced by no storage partition but by
   * this node's coordinator partition; synced (under SYNC), with its idempotency record in the
   * same batch. Refused ({@code unavailable}, nothing written, the store not failed) once another
   * node ended this node's coordinators. The replication log is not written (a data centre of
   * several nodes does not replicate to others, and the local log's messages need no decision).
   */
  CompletableFuture<Void> persistDecision(DecidedTransaction decision) {
    byte[] value = Codec.encodeDecided(decision);
    IdempotencyRecord idempotency = decision.idempotency() == null ? null
        : decision.idempotency().decidedAs(decision.transactionId());
    int coordinatorPartition = CoordinatorPartitions.of(store.settings.nodeId());
    long epoch = coordinatorEpoch;
    return writeUnfenced("record a decision", batch -> {
      // Fenced by this node's coordinator partition: once another node ended this node's
      // coordinators (Store#endCoordinator), the decision is refused, nothing written, and the
      // transaction is aborted (what that node answers in-doubt participants).
      batch.fence(coordinatorPartition, epoch);
      batch.put(KeyValueDisk.Column.TRANSACTIONS, Keys.decided(decision.transactionId()), value);
      if (idempotency != null) {
        batch.put(KeyValueDisk.Column.TRANSACTIONS, Keys.idempotency(idempotency.qualifiedKey()),
            Codec.encodeIdempotency(idempotency));
      }
    }, store.syncCommits, true);
  }

  /** Removes a decision every participant applied; unfenced, unsynced. */
  void forgetDecision(DecidedTransaction decision) {
    writeUnfenced("forget a decision", batch -> batch.delete(
        KeyValueDisk.Column.TRANSACTIONS, Keys.decided(decision.transactionId())), false);
  }

  /** Deletes an expired idempotency record, a shared row of no partition; unfenced, unsynced. */
  CompletableFuture<Void> forgetIdempotencyRecord(byte[] key) {
    return writeUnfenced("forget an idempotency record",
        batch -> batch.delete(KeyValueDisk.Column.TRANSACTIONS, key), false);
  }

  /**
   * Writes {@code contents} (a decision fences itself inside, {@code fenced}), after every earlier
   * such write; the future completes once written (and synced with {@code sync}). A failed write
   * fails the store, as a writer's does.
   *
   * <p><b>Group commit.</b> Every decision record the node's coordinators write goes through here,
   * so one synced database transaction per decision, one after the other, made this thread the
   * node's ceiling on transactions across nodes (on PostgreSQL a synced transaction costs a
   * round trip and a WAL flush; under load decisions queued behind each other for hundreds of
   * milliseconds). So the writer takes every write queued when it gets to run (at most {@code
   * group-commit-max-records}) into ONE batch, in submission order, synced if any of them asks:
   * one round trip and one flush for them all, as a partition's writer does for commits. Their
   * fences are all this node's coordinator partition at the one epoch of this incarnation, so a
   * fence refuses all of them or none; when it refuses, the writes without a fence (forgetting a
   * decision, deleting an idempotency record) are written again on their own.
   */
  CompletableFuture<Void> writeUnfenced(String what, Contents contents, boolean sync) {
    return writeUnfenced(what, contents, sync, false);
  }

  private CompletableFuture<Void> writeUnfenced(String what, Contents contents, boolean sync,
      boolean fenced) {
    UnfencedWrite write = new UnfencedWrite(what, contents, sync, fenced,
        new CompletableFuture<>());
    if (unfencedWriter == null) {
      writeTogether(List.of(write));
      return write.done();
    }
    unfencedQueue.add(write);
    try {
      unfencedWriter.execute(this::drainUnfenced);
    } catch (RejectedExecutionException e) {
      unfencedQueue.remove(write);
      write.done().completeExceptionally(
          new TroupeException(ErrorCode.UNAVAILABLE, "the store is closed"));
    }
    return write.done();
  }

  /** One write of no partition, waiting for the unfenced writer. */
  private record UnfencedWrite(String what, Contents contents, boolean sync, boolean fenced,
      CompletableFuture<Void> done) {}

  /** Writes of no partition submitted and not yet taken by the writer (thread-safe). */
  private final java.util.concurrent.ConcurrentLinkedQueue<UnfencedWrite> unfencedQueue =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  /** On the unfenced writer: writes what is queued, a group at a time (none left: returns). */
  private void drainUnfenced() {
    int most = Math.max(1, store.settings.groupCommitMaxRecords());
    while (!unfencedQueue.isEmpty()) {
      List<UnfencedWrite> group = new ArrayList<>();
      UnfencedWrite next;
      while (group.size() < most && (next = unfencedQueue.poll()) != null) {
        group.add(next);
      }
      if (!group.isEmpty()) {
        writeTogether(group);
      }
    }
  }

  /** Writes {@code group} as one batch, in order, and completes each write's future. */
  private void writeTogether(List<UnfencedWrite> group) {
    try {
      store.enterOpen();
    } catch (TroupeException closed) {
      group.forEach(write -> write.done().completeExceptionally(closed));
      return;
    }
    try {
      Throwable failed = store.failure();
      if (failed != null) {
        group.forEach(write -> write.done().completeExceptionally(RocksStore.unavailable(failed)));
        return;
      }
      boolean sync = false;
      try (KeyValueDisk.Batch batch = store.disk.newBatch()) {
        for (UnfencedWrite write : group) {
          write.contents().fill(batch);
          sync |= write.sync();
        }
        store.disk.write(batch, sync);
      }
      group.forEach(write -> write.done().complete(null));
    } catch (FencedException e) {
      // Only a decision is fenced: another node ended this node's coordinators. Nothing was
      // written, so no decision of the group is committed (a refusal, not an unknown outcome);
      // the store itself stays healthy (its partitions have fences of their own).
      List<UnfencedWrite> unfenced = new ArrayList<>();
      for (UnfencedWrite write : group) {
        if (write.fenced()) {
          write.done().completeExceptionally(new TroupeException(ErrorCode.UNAVAILABLE, "cannot "
              + write.what() + ": another node ended this node's coordinators ("
              + e.getMessage() + ")"));
        } else {
          unfenced.add(write);
        }
      }
      if (!unfenced.isEmpty() && unfenced.size() < group.size()) {
        writeTogether(unfenced); // the close lock's read side is reentrant
      } else {
        unfenced.forEach(write -> write.done().completeExceptionally(new TroupeException(
            ErrorCode.UNAVAILABLE, "cannot " + write.what() + ": " + e.getMessage())));
      }
    } catch (DiskException | RuntimeException e) {
      store.fail(e);
      group.forEach(write -> write.done().completeExceptionally(new OutcomeUnknownException(
          "cannot " + write.what() + "; it may or may not be durable", e)));
    } finally {
      store.exitOpen();
    }
  }

  /**
   * Makes this node the owner of its coordinator partition under a new epoch, which fences every
   * decision an earlier incarnation of this node could still write (at open, before any decision).
   */
  void acquireCoordinatorPartition() throws DiskException {
    coordinatorEpoch = store.disk.acquirePartition(
        CoordinatorPartitions.of(store.settings.nodeId()), store.settings.nodeId());
  }

  long coordinatorEpoch() {
    return coordinatorEpoch;
  }

  /** See {@link Store#endCoordinator}. */
  long endCoordinator(int nodeId, long epoch) {
    if (nodeId == store.settings.nodeId()) {
      throw new IllegalArgumentException("a node does not end its own coordinators");
    }
    store.enterOpen();
    try {
      return store.disk.acquirePartitionIfEpoch(CoordinatorPartitions.of(nodeId),
          store.settings.nodeId(), epoch);
    } catch (DiskException e) {
      throw new TroupeException(ErrorCode.UNAVAILABLE,
          "cannot end the coordinators of node " + nodeId + ": " + e.getMessage());
    } finally {
      store.exitOpen();
    }
  }

  /** See {@link Store#coordinatorEnded}. */
  boolean coordinatorEnded(int nodeId) {
    store.enterOpen();
    try {
      KeyValueDisk.PartitionOwner owner = store.disk.ownerOf(CoordinatorPartitions.of(nodeId));
      return owner != null && owner.nodeId() != nodeId;
    } catch (DiskException e) {
      throw new TroupeException(ErrorCode.UNAVAILABLE,
          "cannot read the coordinator partition of node " + nodeId + ": " + e.getMessage());
    } finally {
      store.exitOpen();
    }
  }

  /** After the store closed (its close lock refuses every later write): lets queued writes end. */
  void close() {
    if (unfencedWriter != null) {
      unfencedWriter.shutdown();
      try {
        unfencedWriter.awaitTermination(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
