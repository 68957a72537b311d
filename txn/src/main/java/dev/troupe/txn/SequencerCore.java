package dev.troupe.txn;

import dev.troupe.model.Invariants;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The ordering of planned transactions (smsa.txt §3: Snapper's PACTs are ordered before they run):
 * each submitted transaction gets a position in one global order, and transactions are started
 * in exactly that order, a batch at a time.
 *
 * <p><b>Invariants.</b> Positions start at {@code 1} and are consecutive: the n-th transaction ever
 * drained gets position n. {@link #drain} hands out every queued transaction, in submission
 * order, with increasing positions; so if the caller starts what one drain returns, in order,
 * before the next drain, every entity receives the planned transactions' requests in position
 * order. Their ages are their positions, below every dynamic transaction's age, so a planned
 * request never dies in a lock table or PSAC gate and only waits for earlier planned ones or for
 * dynamic holders.
 *
 * <p><b>Batches.</b> Submissions queue up while a batch is being started; the next drain takes all
 * of them, like a group commit: under load, one caller orders a whole batch.
 *
 * <p><b>Recovery.</b> Positions restart at 1 when a node starts: no planned transaction survives a
 * restart undecided (recovery resolves every prepared part first), so no old position is live.
 *
 * <p>Pure and single-threaded: no clock, no threads; the runtime's {@code PlannedSequencer} calls
 * it under a lock.
 *
 * @param <T> a submitted transaction (what the shell needs to start it)
 */
public final class SequencerCore<T> {
  /** A transaction with its position, to be started in this order. */
  public record Positioned<T>(T transaction, long position) {}

  private final ArrayDeque<T> queued = new ArrayDeque<>();
  private long nextPosition = 1;

  /** Queues a transaction for the next batch. */
  public void submit(T transaction) {
    queued.add(transaction);
  }

  /** Whether a transaction waits for a position. */
  public boolean hasQueued() {
    return !queued.isEmpty();
  }

  /**
   * The next batch: every queued transaction in submission order, with consecutive positions;
   * empty if nothing is queued.
   */
  public List<Positioned<T>> drain() {
    List<Positioned<T>> batch = new ArrayList<>(queued.size());
    T next;
    while ((next = queued.poll()) != null) {
      Invariants.check(nextPosition < Long.MAX_VALUE, "planned transaction positions overflow");
      batch.add(new Positioned<>(next, nextPosition++));
    }
    return batch;
  }

  /** The position the next drained transaction gets. */
  public long nextPosition() {
    return nextPosition;
  }
}
