package dev.troupe.model.time;

import java.util.function.LongSupplier;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Hybrid logical clock (Kulkarni et al.): a 64-bit timestamp whose high 48 bits are physical
 * milliseconds and low 16 bits a logical counter. Timestamps are strictly increasing per clock,
 * stay close to physical time, and never go backwards when the physical clock does (the logical part
 * absorbs it). Commit timestamps are HLC values, so they order causally related commits and can be
 * read as approximate wall-clock times.
 *
 * <p>The pure functions ({@link #next}, {@link #observe}) take the physical time as an argument; the
 * instance wraps them with an injected physical clock and is thread-safe (lock-free CAS).
 */
public final class HybridLogicalClock {
  public static final int LOGICAL_BITS = 16;

  private final LongSupplier physicalMillis;
  private final AtomicLong last = new AtomicLong();

  public HybridLogicalClock(LongSupplier physicalMillis) {
    this.physicalMillis = physicalMillis;
  }

  /** The first timestamp of a given physical millisecond. */
  public static long fromMillis(long millis) {
    return millis << LOGICAL_BITS;
  }

  public static long toMillis(long timestamp) {
    return timestamp >>> LOGICAL_BITS;
  }

  /** Pure: the next timestamp after {@code lastTimestamp} at physical time {@code nowMillis}. */
  public static long next(long lastTimestamp, long nowMillis) {
    return Math.max(lastTimestamp + 1, fromMillis(nowMillis));
  }

  /** Pure: the timestamp after receiving {@code remoteTimestamp}. */
  public static long observe(long lastTimestamp, long remoteTimestamp, long nowMillis) {
    return Math.max(next(lastTimestamp, nowMillis), remoteTimestamp + 1);
  }

  /** A fresh timestamp, greater than every timestamp this clock has returned or observed. */
  public long tick() {
    long now = physicalMillis.getAsLong();
    return last.updateAndGet(previous -> next(previous, now));
  }

  /** Makes every later tick greater than {@code timestamp} (used at recovery and on receipt). */
  public void advancePast(long timestamp) {
    last.accumulateAndGet(timestamp, Math::max);
  }

  /** The latest timestamp handed out or observed. */
  public long current() {
    return last.get();
  }
}
