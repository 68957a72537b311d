package dev.troupe.model.time;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Hybrid logical clock (Kulkarni et al.): a 64-bit timestamp whose high 48 bits are physical
 * milliseconds and low 16 bits a logical part. Timestamps are strictly increasing per clock, stay
 * close to physical time, and never go backwards when the physical clock does (the logical part
 * absorbs it). Commit timestamps are HLC values, so they order causally related commits and can be
 * read as approximate wall-clock times. The {@link Clock} port's production implementation.
 *
 * <p><b>Node id.</b> The low {@value TransactionIds#NODE_BITS} bits of the logical part are the
 * node's id ({@link TransactionIds}): the clock ticks in steps of {@value
 * TransactionIds#NODE_COUNT} and every timestamp it issues ends in its node id, so two nodes never issue the same timestamp.
 * That leaves {@value #TICKS_PER_MILLI} ticks per physical millisecond per node; a burst beyond
 * them carries into the millisecond bits (the clock runs ahead of physical time until physical time
 * catches up, as it does after observing a timestamp from a clock that runs ahead).
 *
 * <p>The pure functions ({@link #next}, {@link #observe}) take the physical time as an argument;
 * the instance wraps them with an injected physical clock and is thread-safe (lock-free CAS).
 */
public final class HybridLogicalClock implements Clock {
  public static final int LOGICAL_BITS = 16;

  /** Ticks a node can issue within one physical millisecond before running ahead of it. */
  public static final int TICKS_PER_MILLI = (1 << LOGICAL_BITS) / TransactionIds.NODE_COUNT;

  private final LongSupplier physicalMillis;
  private final int nodeId;
  private final AtomicLong last = new AtomicLong();

  /**
   * A clock for node 0.
   *
   * @param physicalMillis the physical clock it follows (tests and the simulator inject one)
   */
  public HybridLogicalClock(LongSupplier physicalMillis) {
    this(physicalMillis, 0);
  }

  /**
   * @param physicalMillis the physical clock it follows
   * @param nodeId the node id every timestamp carries, 0..{@value TransactionIds#MAX_NODE_ID}
   */
  public HybridLogicalClock(LongSupplier physicalMillis, int nodeId) {
    this.physicalMillis = java.util.Objects.requireNonNull(physicalMillis, "physicalMillis");
    this.nodeId = TransactionIds.requireValidNodeId(nodeId);
  }

  /** The first timestamp of a given physical millisecond. */
  public static long fromMillis(long millis) {
    return millis << LOGICAL_BITS;
  }

  public static long toMillis(long timestamp) {
    return timestamp >>> LOGICAL_BITS;
  }

  /**
   * Pure: the timestamp node {@code nodeId} issues after {@code lastTimestamp} at physical time
   * {@code nowMillis}: the smallest one ending in its node id that is above {@code lastTimestamp}
   * and not below the start of {@code nowMillis}. {@code lastTimestamp} may end in anything (an
   * observed timestamp, an id written before node ids existed): the result is still above it.
   */
  public static long next(long lastTimestamp, long nowMillis, int nodeId) {
    return TransactionIds.atOrAbove(
        Math.max(lastTimestamp + 1, fromMillis(nowMillis)), nodeId);
  }

  /** Pure: {@link #next} for node 0. */
  public static long next(long lastTimestamp, long nowMillis) {
    return next(lastTimestamp, nowMillis, 0);
  }

  /** Pure: the timestamp node {@code nodeId} issues after receiving {@code remoteTimestamp}. */
  public static long observe(long lastTimestamp, long remoteTimestamp, long nowMillis, int nodeId) {
    return next(Math.max(lastTimestamp, remoteTimestamp), nowMillis, nodeId);
  }

  /** Pure: {@link #observe} for node 0. */
  public static long observe(long lastTimestamp, long remoteTimestamp, long nowMillis) {
    return observe(lastTimestamp, remoteTimestamp, nowMillis, 0);
  }

  @Override
  public long tick() {
    long now = physicalMillis.getAsLong();
    return last.updateAndGet(previous -> next(previous, now, nodeId));
  }

  /** Makes every later tick greater than {@code timestamp} (used at recovery and on receipt). */
  @Override
  public void advancePast(long timestamp) {
    last.accumulateAndGet(timestamp, Math::max);
  }

  @Override
  public long current() {
    return last.get();
  }

  @Override
  public long physicalMillis() {
    return physicalMillis.getAsLong();
  }

  @Override
  public int nodeId() {
    return nodeId;
  }
}
