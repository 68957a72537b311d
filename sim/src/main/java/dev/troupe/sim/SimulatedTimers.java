package dev.troupe.sim;

import dev.troupe.txn.port.Timers;
import java.util.function.BooleanSupplier;
import java.util.function.IntSupplier;

/**
 * The {@link Timers} port over the seeded {@link Scheduler}, for one simulated node: a timer fires
 * at its simulated time, in the order the scheduler draws among events due together, and only if
 * the incarnation that set it is still the node's running one. A crash (or a failed start) begins
 * a new incarnation, so a crashed incarnation's timers never fire, as the contract says: whatever
 * a timer guards is re-armed by recovery.
 *
 * <p>Each timer draws one tie-break from the scheduler, exactly as the node's timers always did,
 * so a seed explores the same interleaving it did before the port existed.
 *
 * <p>Not thread-safe: the simulation is single-threaded.
 */
final class SimulatedTimers implements Timers {
  private final Scheduler scheduler;
  private final BooleanSupplier up;
  private final IntSupplier incarnation;

  /**
   * @param up whether the node is up now
   * @param incarnation the node's running (or last) incarnation
   */
  SimulatedTimers(Scheduler scheduler, BooleanSupplier up, IntSupplier incarnation) {
    this.scheduler = scheduler;
    this.up = up;
    this.incarnation = incarnation;
  }

  @Override
  public Scheduled schedule(long delayMillis, Runnable action) {
    return schedule(delayMillis, "timer", action);
  }

  /** As {@link #schedule(long, Runnable)}, with what the trace calls the step when it fires. */
  Scheduled schedule(long delayMillis, String what, Runnable action) {
    int setBy = incarnation.getAsInt();
    boolean[] cancelled = {false};
    scheduler.schedule(delayMillis, what, () -> {
      if (!cancelled[0] && up.getAsBoolean() && incarnation.getAsInt() == setBy) {
        action.run();
      }
    });
    return () -> cancelled[0] = true;
  }
}
