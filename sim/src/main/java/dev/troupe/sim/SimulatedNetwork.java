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
 * {@link Faults#reorder}, the copies that arrive between two processes arrive in the order sent
 * (a connection's order). With {@link Faults#NONE}, every message is delivered exactly once, in
 * order.
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

  private final Scheduler scheduler;
  private Faults faults;
  /** Processes cut off from every process outside the set, while a partition lasts. */
  private Set<String> partitioned = Set.of();
  private long partitionEndsMillis;
  private long delivered;
  private long dropped;
  private long duplicated;
  /** Per (sender, receiver), when the last message was scheduled to arrive: FIFO without faults. */
  private final java.util.Map<String, Long> lastArrival = new java.util.HashMap<>();

  public SimulatedNetwork(Scheduler scheduler, Faults faults) {
    this.scheduler = scheduler;
    this.faults = faults;
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
    var random = scheduler.random();
    if (faults.dropProbability() > 0 && random.nextDouble() < faults.dropProbability()) {
      dropped++;
      scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
          "drop " + from + " -> " + to + " " + message);
      return;
    }
    int copies = faults.duplicateProbability() > 0
        && random.nextDouble() < faults.duplicateProbability() ? 2 : 1;
    if (copies == 2) {
      duplicated++;
    }
    for (int copy = 0; copy < copies; copy++) {
      long delay = faults.minDelayMillis()
          + (faults.maxDelayMillis() == faults.minDelayMillis() ? 0
              : random.nextLong(faults.maxDelayMillis() - faults.minDelayMillis() + 1));
      if (!faults.reorder()) {
        // Strictly after the previous copy on this connection: equal times would be ordered by
        // the scheduler's draw, which could reorder them.
        String pair = from + "\u0000" + to;
        long arrival = Math.max(scheduler.nowMillis() + delay,
            lastArrival.getOrDefault(pair, Long.MIN_VALUE / 2) + 1);
        lastArrival.put(pair, arrival);
        delay = arrival - scheduler.nowMillis();
      }
      scheduler.schedule(delay, "deliver " + from + " -> " + to + " " + message, () -> {
        if (separated(from, to)) {
          dropped++;
          scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
              "partitioned: lost " + from + " -> " + to + " " + message);
          return;
        }
        delivered++;
        deliver.accept(message);
      });
    }
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
