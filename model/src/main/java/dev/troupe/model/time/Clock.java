package dev.troupe.model.time;

/**
 * The node's clock, as the cores and the store see it: the port through which every timestamp is
 * issued (transaction ids, commit timestamps, planned transaction positions) and every received
 * timestamp is observed. Implemented by {@link HybridLogicalClock} in production and in the
 * simulator (there over a simulated, skewed physical clock).
 *
 * <p><b>Contract.</b>
 *
 * <ul>
 *   <li>{@link #tick} returns a timestamp strictly greater than every timestamp this clock
 *       returned from {@code tick} or was told about through {@link #advancePast}: per clock,
 *       timestamps strictly increase, even when the physical clock steps backwards.
 *   <li>Every timestamp {@code tick} returns ends in this clock's {@link #nodeId} ({@link
 *       TransactionIds#nodeOf}), so clocks with different node ids never return the same
 *       timestamp.
 *   <li>Timestamps stay close to physical time: {@code HybridLogicalClock.toMillis(tick())} is at
 *       least {@link #physicalMillis} at the call and exceeds the largest physical time seen
 *       only by what observed timestamps and bursts (more than {@link
 *       HybridLogicalClock#TICKS_PER_MILLI} ticks in a millisecond) pushed it.
 *   <li>Nothing here is durable: a new clock starts from its physical time. Never issuing a
 *       timestamp twice across a restart is the owner's job (the store's durable clock ceiling:
 *       recovery calls {@link #advancePast} with it before the first tick).
 *   <li>Thread-safe: any thread may call any method.
 * </ul>
 */
public interface Clock {
  /** A fresh timestamp, greater than every timestamp this clock has returned or observed. */
  long tick();

  /**
   * Observes a timestamp issued elsewhere (a received message, a record found at recovery): every
   * later {@link #tick} is greater than {@code timestamp}.
   */
  void advancePast(long timestamp);

  /** The latest timestamp handed out or observed. */
  long current();

  /**
   * The physical time this clock follows, in milliseconds: for intervals, deadlines and retention
   * only, never for ordering (it may step backwards).
   */
  long physicalMillis();

  /** The node whose id every timestamp from {@link #tick} carries, 0..63. */
  int nodeId();
}
