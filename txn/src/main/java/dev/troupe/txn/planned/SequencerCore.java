package dev.troupe.txn.planned;

import dev.troupe.model.Invariants;
import dev.troupe.model.time.TransactionIds;
import dev.troupe.txn.entity.LockTable;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * The ordering of planned transactions (smsa.txt §3: Snapper's PACTs are ordered before they run):
 * each submitted transaction gets a position in one global order, and transactions are started
 * in exactly that order, a batch at a time. Each node runs one, for the planned transactions it
 * coordinates (docs/design/multi-entity-transactions.md, "Ordering planned transactions across
 * nodes").
 *
 * <p><b>Positions.</b> A position is a timestamp of the node's clock (the {@code Clock} port,
 * through the store's ceiling-guarded tick), moved below zero: {@code position = Long.MIN_VALUE +
 * timestamp} ({@link #positionOf}). So, with no durable counter and no coordination:
 *
 * <ul>
 *   <li>positions are unique across nodes: the timestamp's low bits are the node's id ({@link
 *       TransactionIds#nodeOf} works on a position too);
 *   <li>a restarted node never hands out a position at or below one it handed out before: its
 *       clock restarts above its durable clock ceiling, above every timestamp it issued;
 *   <li>every node and participant agrees on the order (it is the order of the values, not of
 *       arrival), and positions of different nodes interleave by time;
 *   <li>a planned transaction's age is its position, below every dynamic transaction's age (a
 *       non-negative timestamp), as on one node: a dynamic request that conflicts with a planned
 *       one is the younger and dies.
 * </ul>
 *
 * <p><b>Invariants.</b> {@link #drain} hands out every queued transaction, in submission order,
 * with strictly increasing positions (checked: the timestamps it is given must increase); so if the
 * caller starts what one drain returns, in order, before the next drain, every entity receives
 * this node's planned requests in position order. Their ages are their positions, so a planned
 * request never dies in a lock table or PSAC gate for a dynamic one and only waits for earlier
 * planned ones or for dynamic holders. Requests of another node's sequencer may arrive out of
 * position order; the lock table makes the later-arriving earlier one die rather than wait ({@link
 * LockTable}), so waits stay acyclic across sequencers too.
 *
 * <p><b>Batches.</b> Submissions queue up while a batch is being started; the next drain takes all
 * of them, like a group commit: under load, one caller orders a whole batch.
 *
 * <p><b>Recovery.</b> Nothing is durable here: the clock is. A new core after a restart starts from
 * whatever the clock gives, which is above everything the last incarnation handed out.
 *
 * <p>Pure and single-threaded: no clock of its own, no threads (the timestamps are an input); the
 * runtime's {@code PlannedSequencer} calls it under a lock.
 *
 * @param <T> a submitted transaction (what the shell needs to start it)
 */
public final class SequencerCore<T> {
  /** A transaction with its position, to be started in this order. */
  public record Positioned<T>(T transaction, long position) {}

  private final ArrayDeque<T> queued = new ArrayDeque<>();
  /** The timestamp behind the last position handed out; -1 before the first. */
  private long lastTimestamp = -1;

  /** The position of the planned transaction ordered at clock timestamp {@code timestamp}. */
  public static long positionOf(long timestamp) {
    Invariants.check(timestamp >= 0, "a clock timestamp is not negative: %d", timestamp);
    return Long.MIN_VALUE + timestamp;
  }

  /** The clock timestamp a position was made from (its node: {@link TransactionIds#nodeOf}). */
  public static long timestampOf(long position) {
    return position - Long.MIN_VALUE;
  }

  /** Whether an age is a planned transaction's position (dynamic ages are not negative). */
  static boolean isPlannedAge(long age) {
    return age < 0;
  }

  /** Queues a transaction for the next batch. */
  public void submit(T transaction) {
    queued.add(transaction);
  }

  /** Whether a transaction waits for a position. */
  boolean hasQueued() {
    return !queued.isEmpty();
  }

  /**
   * The next batch: every queued transaction in submission order, each positioned at a fresh
   * timestamp from {@code timestamps} (asked once per transaction, in order); empty if nothing is
   * queued.
   *
   * @param timestamps the node's clock: each value greater than every one it gave before
   */
  public List<Positioned<T>> drain(LongSupplier timestamps) {
    List<Positioned<T>> batch = new ArrayList<>(queued.size());
    T next;
    while ((next = queued.poll()) != null) {
      long timestamp = timestamps.getAsLong();
      Invariants.check(timestamp > lastTimestamp,
          "planned transaction positions go back: timestamp %d after %d", timestamp, lastTimestamp);
      lastTimestamp = timestamp;
      batch.add(new Positioned<>(next, positionOf(timestamp)));
    }
    return batch;
  }

  /** The last position handed out, or {@link Long#MIN_VALUE} before the first. */
  long lastPosition() {
    return lastTimestamp < 0 ? Long.MIN_VALUE : positionOf(lastTimestamp);
  }
}
