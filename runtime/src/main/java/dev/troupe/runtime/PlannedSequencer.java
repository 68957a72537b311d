package dev.troupe.runtime;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongConsumer;

/**
 * The sequencer of planned transactions: gives each one a position in a single global order and
 * starts it (sends its prepares) in that order, so that every entity receives the planned
 * transactions' requests in position order. Their ages are their positions, below every dynamic
 * transaction's age (a hybrid-logical-clock value), so a planned request never dies and only waits
 * for earlier planned ones or for dynamic holders (see {@code LockTable}).
 *
 * <p><b>Batching.</b> Submissions are queued; whichever thread gets the lock drains the queue,
 * assigning consecutive positions and starting each transaction in order, like a group commit:
 * under load, one thread orders a whole batch while the others return at once. Starting only
 * sends messages (non-blocking), so the lock is held briefly.
 *
 * <p>Positions restart at 1 when the node starts: no planned transaction survives a restart
 * undecided (recovery resolves every prepared part first).
 */
final class PlannedSequencer {
  private final ConcurrentLinkedQueue<LongConsumer> queue = new ConcurrentLinkedQueue<>();
  private final ReentrantLock ordering = new ReentrantLock();
  private long nextPosition = 1;

  /** Queues a planned transaction; {@code start} receives its position, in position order. */
  void submit(LongConsumer start) {
    queue.add(start);
    // Re-check after unlocking: a submission queued while another thread held the lock, after it
    // last looked at the queue, is drained here rather than stranded.
    while (!queue.isEmpty() && ordering.tryLock()) {
      try {
        LongConsumer next;
        while ((next = queue.poll()) != null) {
          next.accept(nextPosition++);
        }
      } finally {
        ordering.unlock();
      }
    }
  }
}
