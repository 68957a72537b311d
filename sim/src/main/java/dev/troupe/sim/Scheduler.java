package dev.troupe.sim;

import java.util.PriorityQueue;
import java.util.SplittableRandom;

/**
 * The simulator's only source of time, order and chance: a single-threaded queue of events in
 * simulated milliseconds, and one random generator seeded by the run's seed.
 *
 * <p><b>Determinism.</b> Everything a run does is a function of its seed: events run in order of
 * their time, and events due at the same time in an order drawn from the seeded generator when
 * they were scheduled (so a seed explores one interleaving of simultaneous events, and another
 * seed another); every fault and delay is drawn from {@link #random()}. Nothing reads the wall
 * clock or starts a thread. Running the same seed twice gives the same {@link Trace}.
 *
 * <p><b>Invariants.</b> Simulated time never goes backwards; an event is never run twice; an event
 * scheduled in the past runs at the current time.
 *
 * <p>Not thread-safe, by design.
 */
public final class Scheduler {
  private record Event(long atMillis, long tieBreak, long sequence,
      java.util.function.Supplier<String> description, Runnable action) implements Comparable<Event> {
    @Override
    public int compareTo(Event other) {
      int byTime = Long.compare(atMillis, other.atMillis);
      if (byTime != 0) {
        return byTime;
      }
      int byTie = Long.compare(tieBreak, other.tieBreak);
      return byTie != 0 ? byTie : Long.compare(sequence, other.sequence);
    }
  }

  private final SplittableRandom random;
  private final PriorityQueue<Event> events = new PriorityQueue<>();
  private final Trace trace;
  private long nowMillis;
  private long scheduled;
  private long steps;

  /**
   * @param seed the run's seed
   * @param traceCapacity how many of the last steps the trace keeps
   */
  public Scheduler(long seed, int traceCapacity) {
    this.random = new SplittableRandom(seed);
    this.trace = new Trace(traceCapacity);
  }

  /** The current simulated time in milliseconds (starts at 0). */
  public long nowMillis() {
    return nowMillis;
  }

  /** The run's random generator: every chance decision of the simulation draws from it. */
  public SplittableRandom random() {
    return random;
  }

  public Trace trace() {
    return trace;
  }

  /** Steps run so far. */
  public long steps() {
    return steps;
  }

  /** Events waiting to run. */
  public int pending() {
    return events.size();
  }

  /**
   * Runs {@code action} {@code delayMillis} from now (0 or less: now, after the events already
   * due now that won the draw). {@code description} is what the trace shows for the step.
   */
  public void schedule(long delayMillis, String description, Runnable action) {
    schedule(delayMillis, () -> description, action);
  }

  /**
   * As {@link #schedule(long, String, Runnable)}, with a description worked out when the step
   * runs (an ordered mailbox knows only then which message the step delivers).
   */
  public void schedule(long delayMillis, java.util.function.Supplier<String> description,
      Runnable action) {
    events.add(new Event(nowMillis + Math.max(0, delayMillis), random.nextLong(), scheduled++,
        description, action));
  }

  /** Runs the next event; false if none is waiting. */
  public boolean step() {
    Event next = events.poll();
    if (next == null) {
      return false;
    }
    nowMillis = next.atMillis();
    steps++;
    trace.record(nowMillis, steps, next.description().get());
    next.action().run();
    return true;
  }

  /** Runs events until none waits or {@code maxSteps} ran; returns how many ran. */
  public long run(long maxSteps) {
    long ran = 0;
    while (ran < maxSteps && step()) {
      ran++;
    }
    return ran;
  }

  /** Runs every event due at or before {@code untilMillis}, then sets the time to it. */
  public void runUntil(long untilMillis) {
    while (!events.isEmpty() && events.peek().atMillis() <= untilMillis) {
      step();
    }
    nowMillis = Math.max(nowMillis, untilMillis);
  }
}
