package dev.troupe.storage;

import dev.troupe.model.Invariants;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * How the store's deferrable maintenance (truncation and the post-recovery scan) yields to reads
 * waiting for storage (issue 20, cold reads right after a restart). While a cold read is
 * materializing, or one ended less than {@code yieldMillis} ago, the partitions' writers run at
 * most one such slice at a time, and the next starts at least {@code yieldMillis} after the
 * previous one ended; otherwise every writer runs its slices back to back, as before.
 *
 * <p>Why: right after a restart a store written by a fast loader still owes most of its
 * truncation, and the partitions' writers ran it without a pause beside the first cold reads: on
 * the 2-core benchmark machine they took more CPU than the reads' own storage work and HTTP
 * together (docs/BENCHMARKS.md, "Issue 20: cold reads, second step"). Truncation has no deadline
 * of its own; a read has a client waiting. Checkpoint rounds are not paced: they bound the journal
 * suffix a cold read applies and the dirty set's memory, and pacing them under a write load with
 * cold reads beside it could let the journal outgrow them.
 *
 * <p>Invariants: only when a slice starts changes; what a slice does, and when truncation is safe
 * (the history horizon is published before any deletion), do not. Paced maintenance never stops:
 * one slice per slice time plus {@code yieldMillis} runs whatever the reads (about 1,024 journal
 * records per 20 ms plus a slice's own time here), so truncation and the scan always complete.
 * Commits never wait for it (a writer whose slice waits still takes every queued commit at once).
 * {@code yieldMillis} 0 turns pacing off.
 *
 * <p>Concurrency: thread-safe; reads on any thread mark their start and end, writers take and
 * release the one slot. Time is the store's injected clock, passed in: no wall clock here, so a
 * stepped store paces deterministically.
 */
final class MaintenancePacing {
  private final long yieldMillis;
  /** Cold reads materializing now. */
  private final AtomicInteger readsInProgress = new AtomicInteger();
  /** When the last cold read ended (the store's clock, milliseconds); far past before any. */
  private volatile long lastReadEndedMillis = Long.MIN_VALUE / 2;
  /** Whether a writer holds the slot: runs a paced slice now. */
  private final AtomicBoolean slotTaken = new AtomicBoolean();
  /** The earliest time the next paced slice may start: the last one's end plus the pause. */
  private volatile long nextSliceMillis = Long.MIN_VALUE / 2;

  /** @param yieldMillis least time between two paced slices while reads wait; 0: no pacing */
  MaintenancePacing(long yieldMillis) {
    Invariants.check(yieldMillis >= 0, "a maintenance yield is not negative, was %d", yieldMillis);
    this.yieldMillis = yieldMillis;
  }

  /** A cold read starts materializing (pair with {@link #readEnded}). */
  void readStarted() {
    if (yieldMillis > 0) {
      readsInProgress.incrementAndGet();
    }
  }

  /** A cold read {@link #readStarted} before ended (returned or failed) at {@code nowMillis}. */
  void readEnded(long nowMillis) {
    if (yieldMillis > 0) {
      lastReadEndedMillis = nowMillis;
      readsInProgress.decrementAndGet();
    }
  }

  /** Whether reads wait for storage now: one is materializing or ended within the yield. */
  boolean readsWaiting(long nowMillis) {
    return yieldMillis > 0
        && (readsInProgress.get() > 0 || nowMillis - lastReadEndedMillis < yieldMillis);
  }

  /**
   * Asked by a writer about to run a paced slice while {@link #readsWaiting}: whether it took the
   * slot (then it runs the slice and calls {@link #releaseSlot} after it, also when it fails).
   */
  boolean takeSlot(long nowMillis) {
    return nowMillis >= nextSliceMillis && slotTaken.compareAndSet(false, true);
  }

  /** The slot's holder ended its slice at {@code nowMillis}: the next starts a pause later. */
  void releaseSlot(long nowMillis) {
    Invariants.check(slotTaken.get(), "releasing the maintenance slot nobody holds");
    nextSliceMillis = nowMillis + yieldMillis;
    slotTaken.set(false);
  }

  /**
   * How long a writer refused the slot waits before asking again, in milliseconds (at least 1): a
   * whole yield while another writer runs its slice (a pause follows it anyway), else until the
   * pause after the last slice ends.
   */
  long millisUntilNextSlice(long nowMillis) {
    if (slotTaken.get()) {
      return yieldMillis;
    }
    return Math.max(1, Math.min(yieldMillis, nextSliceMillis - nowMillis));
  }
}
