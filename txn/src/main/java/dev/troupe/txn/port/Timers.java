package dev.troupe.txn.port;

/**
 * The port through which a shell runs a core's timer effects (a coordinator's prepare timeout and
 * decision resends, a participant's in-doubt question, an interactive transaction's idle check):
 * the core asks for "tell me in N milliseconds", the shell feeds the matching input when the timer
 * fires. Cores never read a clock to wait.
 *
 * <p><b>Contract.</b> {@code action} runs once, no earlier than {@code delayMillis} after the call
 * by this node's clock, on the shell that owns the core (never concurrently with the core's other
 * inputs), unless {@link Scheduled#cancel} ran first. A timer does not survive a crash of its node:
 * whatever a timer guards must be re-armed by recovery. Implemented by Pekko's scheduler (runtime)
 * and by the simulator's seeded {@code Scheduler}, where a crashed incarnation's timers never fire.
 */
public interface Timers {
  /** Runs {@code action} after {@code delayMillis}. */
  Scheduled schedule(long delayMillis, Runnable action);

  /** A timer that has not fired yet may be cancelled; cancelling a fired one does nothing. */
  interface Scheduled {
    void cancel();
  }
}
