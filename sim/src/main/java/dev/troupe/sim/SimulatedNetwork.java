package dev.troupe.sim;

import java.util.HashSet;
import java.util.Set;
import java.util.function.Consumer;

/**
 * Messages between simulated processes (nodes, clients), with the faults a real network has:
 * delay, loss, duplication, reordering (independent delays reorder messages) and transient
 * partitions. Every fault is drawn from the scheduler's seeded generator, so a seed fixes them.
 *
 * <p><b>Invariants.</b> A message is delivered at most once per copy, never before it was sent,
 * and only if, at delivery time, no partition separates its sender and its receiver. Unless
 * {@link Faults#reorder}, copies arrive in the order sent: per connection (sender and receiver:
 * TCP between processes) or, with {@link Ordering#PER_RECEIVER}, per receiver whoever sent them
 * (local mailboxes: Pekko enqueues a message when it is sent, so a message sent after another,
 * by anyone, is received after it). With {@link Faults#NONE}, every message is delivered exactly
 * once, in order.
 *
 * <p>Ordered delivery keeps each message's drawn delay but not its identity: the event due at a
 * time delivers the oldest message waiting on its connection (or receiver), so no message
 * overtakes an earlier one and none arrives before it was sent.
 *
 * <p>Not thread-safe: the simulation is single-threaded.
 */
public final class SimulatedNetwork {
  /**
   * What goes wrong with messages.
   *
   * @param maxDelayMillis each copy is delivered after a uniform delay in [minDelayMillis, this]
   * @param minDelayMillis the shortest delay
   * @param dropProbability chance a message is lost
   * @param duplicateProbability chance a message is delivered twice (each copy delayed on its own)
   * @param reorder whether messages between two processes may overtake each other (each copy's
   *     delay is independent); otherwise a copy never arrives before an earlier one
   */
  public record Faults(long minDelayMillis, long maxDelayMillis, double dropProbability,
      double duplicateProbability, boolean reorder) {
    /** In order, once, after 1 ms. */
    public static final Faults NONE = new Faults(1, 1, 0, 0, false);

    public Faults {
      if (minDelayMillis < 0 || maxDelayMillis < minDelayMillis) {
        throw new IllegalArgumentException("delays need 0 <= min <= max");
      }
      if (!(dropProbability >= 0 && dropProbability <= 1)
          || !(duplicateProbability >= 0 && duplicateProbability <= 1)) {
        throw new IllegalArgumentException("probabilities are in [0, 1]");
      }
    }
  }

  /** Which messages keep their sending order when {@link Faults#reorder} is off. */
  public enum Ordering {
    /** Messages from one sender to one receiver (a connection). */
    PER_CONNECTION,
    /** All messages to one receiver, whoever sent them (local mailboxes). */
    PER_RECEIVER
  }

  private final Scheduler scheduler;
  private final Ordering ordering;
  private Faults faults;
  /** Processes cut off from every process outside the set, while a partition lasts. */
  private Set<String> partitioned = Set.of();
  private long partitionEndsMillis;
  private long delivered;
  private long dropped;
  private long duplicated;
  /** Ordered delivery: per connection or receiver, the copies sent and not yet delivered. */
  private final java.util.Map<String, java.util.ArrayDeque<Copy>> waiting =
      new java.util.HashMap<>();

  /** A copy waiting for ordered delivery: what the trace calls it, and its delivery. */
  private record Copy(String description, Runnable arrival) {}

  public SimulatedNetwork(Scheduler scheduler, Faults faults) {
    this(scheduler, faults, Ordering.PER_CONNECTION);
  }

  public SimulatedNetwork(Scheduler scheduler, Faults faults, Ordering ordering) {
    this.scheduler = scheduler;
    this.faults = faults;
    this.ordering = ordering;
  }

  /** Changes the faults from now on (e.g. none for the final, fault-free stretch of a run). */
  public void setFaults(Faults faults) {
    this.faults = faults;
  }

  /**
   * Sends {@code message} from {@code from} to {@code to}; {@code deliver} receives each copy that
   * arrives.
   */
  public <M> void send(String from, String to, M message, Consumer<M> deliver) {
    send(from, to, message, true, deliver);
  }

  /**
   * As {@link #send(String, String, Object, Consumer)}; unless {@code duplicable}, the message is
   * never duplicated (a transport whose sessions drop duplicates), and no chance is drawn for it.
   */
  public <M> void send(String from, String to, M message, boolean duplicable,
      Consumer<M> deliver) {
    var random = scheduler.random();
    if (faults.dropProbability() > 0 && random.nextDouble() < faults.dropProbability()) {
      dropped++;
      scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
          "drop " + from + " -> " + to + " " + message);
      return;
    }
    int copies = duplicable && faults.duplicateProbability() > 0
        && random.nextDouble() < faults.duplicateProbability() ? 2 : 1;
    if (copies == 2) {
      duplicated++;
    }
    for (int copy = 0; copy < copies; copy++) {
      long delay = faults.minDelayMillis()
          + (faults.maxDelayMillis() == faults.minDelayMillis() ? 0
              : random.nextLong(faults.maxDelayMillis() - faults.minDelayMillis() + 1));
      Runnable arrival = () -> {
        if (separated(from, to)) {
          dropped++;
          scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
              "partitioned: lost " + from + " -> " + to + " " + message);
          return;
        }
        delivered++;
        deliver.accept(message);
      };
      if (faults.reorder()) {
        scheduler.schedule(delay, "deliver " + from + " -> " + to + " " + message, arrival);
        continue;
      }
      String key = ordering == Ordering.PER_RECEIVER ? to : from + "\u0000" + to;
      java.util.ArrayDeque<Copy> queue =
          waiting.computeIfAbsent(key, ignored -> new java.util.ArrayDeque<>());
      queue.addLast(new Copy("deliver " + from + " -> " + to + " " + message, arrival));
      // Each send adds one copy and one event, so the queue is never empty when an event fires;
      // the event delivers (and the trace names) the oldest copy, not necessarily this one.
      scheduler.schedule(delay, () -> queue.peekFirst().description(), () -> {
        Copy oldest = queue.pollFirst();
        if (queue.isEmpty()) {
          waiting.remove(key);
        }
        oldest.arrival().run();
      });
    }
  }

  /**
   * Sends {@code message} so that it is neither lost nor duplicated: no chance is drawn for either,
   * and a copy that arrives while a partition separates the two ends waits until it heals (a
   * session that retransmits). Delayed like any other message; not ordered with the others.
   */
  public <M> void sendReliably(String from, String to, M message, Consumer<M> deliver) {
    long delay = faults.minDelayMillis()
        + (faults.maxDelayMillis() == faults.minDelayMillis() ? 0
            : scheduler.random().nextLong(faults.maxDelayMillis() - faults.minDelayMillis() + 1));
    scheduler.schedule(delay, "deliver " + from + " -> " + to + " " + message,
        () -> arriveReliably(from, to, message, deliver));
  }

  private <M> void arriveReliably(String from, String to, M message, Consumer<M> deliver) {
    if (separated(from, to)) {
      scheduler.schedule(partitionEndsMillis - scheduler.nowMillis(),
          "retransmit " + from + " -> " + to + " " + message,
          () -> arriveReliably(from, to, message, deliver));
      return;
    }
    delivered++;
    deliver.accept(message);
  }

  /**
   * Cuts {@code side} off from every other process for {@code durationMillis}: messages between
   * the two sides that arrive meanwhile are lost.
   */
  public void partition(Set<String> side, long durationMillis) {
    partitioned = Set.copyOf(new HashSet<>(side));
    partitionEndsMillis = scheduler.nowMillis() + durationMillis;
  }

  /** Whether a partition separates the two processes now. */
  public boolean separated(String from, String to) {
    if (partitioned.isEmpty() || scheduler.nowMillis() >= partitionEndsMillis) {
      return false;
    }
    return partitioned.contains(from) != partitioned.contains(to);
  }

  public long delivered() {
    return delivered;
  }

  public long dropped() {
    return dropped;
  }

  public long duplicated() {
    return duplicated;
  }
}
