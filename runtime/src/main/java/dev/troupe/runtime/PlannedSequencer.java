package dev.troupe.runtime;

import dev.troupe.txn.planned.SequencerCore;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongConsumer;
import java.util.function.LongSupplier;

/**
 * The shell of {@link SequencerCore}: lets any thread submit a planned transaction and starts
 * each one (sends its prepares) with its position, in position order.
 *
 * <p><b>Positions</b> come from the node's clock through {@code timestamps} (the store's
 * ceiling-guarded {@code newTransactionId}), so they are unique across nodes and restarts
 * ({@link SequencerCore}).
 *
 * <p><b>Concurrency.</b> Submissions are queued without a lock; whichever thread gets the lock
 * moves them into the core, drains a batch and starts it, in order, while the others return at
 * once. Starting only sends messages (non-blocking), so the lock is held briefly. Because batches
 * are drained and started under the one lock, every start of one batch happens before any start
 * of the next: starts happen in position order.
 */
final class PlannedSequencer {
  private final ConcurrentLinkedQueue<LongConsumer> submitted = new ConcurrentLinkedQueue<>();
  private final ReentrantLock ordering = new ReentrantLock();
  /** Guarded by {@link #ordering}. */
  private final SequencerCore<LongConsumer> core = new SequencerCore<>();
  /** Called under {@link #ordering} only. */
  private final LongSupplier timestamps;

  /**
   * @param timestamps the node's clock, ceiling-guarded ({@code store::newTransactionId}): every
   *     value greater than the last, and above everything an earlier incarnation issued
   */
  PlannedSequencer(LongSupplier timestamps) {
    this.timestamps = timestamps;
  }

  /** Queues a planned transaction; {@code start} receives its position, in position order. */
  void submit(LongConsumer start) {
    submitted.add(start);
    // Re-check after unlocking: a submission queued while another thread held the lock, after it
    // last looked at the queue, is drained here rather than stranded.
    while (!submitted.isEmpty() && ordering.tryLock()) {
      try {
        LongConsumer next;
        while ((next = submitted.poll()) != null) {
          core.submit(next);
        }
        for (SequencerCore.Positioned<LongConsumer> positioned : core.drain(timestamps)) {
          positioned.transaction().accept(positioned.position());
        }
      } finally {
        ordering.unlock();
      }
    }
  }
}
