package dev.troupe.sim;

import java.util.ArrayDeque;
import java.util.List;

/**
 * The last steps of a simulation, one line each ({@code t=12ms #340 deliver Prepare(tx 7) ->
 * Account/a3}), kept in a bounded ring so that a failure can print the steps that led to it
 * without the run holding every step in memory.
 *
 * <p>Not thread-safe: the simulation is single-threaded.
 */
public final class Trace {
  private final int capacity;
  private final ArrayDeque<String> lines;
  private long recorded;
  /** A running hash of every line recorded, kept or dropped: two runs that agree on it ran alike. */
  private long fingerprint = 1;

  /** @param capacity the most lines kept (the oldest are dropped first); at least 1 */
  public Trace(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("a trace keeps at least one line");
    }
    this.capacity = capacity;
    this.lines = new ArrayDeque<>(Math.min(capacity, 1024));
  }

  /** Records one step. */
  public void record(long nowMillis, long step, String description) {
    if (lines.size() == capacity) {
      lines.removeFirst();
    }
    String line = "t=" + nowMillis + "ms #" + step + " " + description;
    lines.addLast(line);
    fingerprint = 31 * fingerprint + line.hashCode();
    recorded++;
  }

  /** A hash of every line recorded, in order (replays compare it: see {@code Simulation}). */
  public long fingerprint() {
    return fingerprint;
  }

  /** The kept lines, oldest first. */
  public List<String> lines() {
    return List.copyOf(lines);
  }

  /** The kept lines as text, with a note of how many earlier ones were dropped. */
  @Override
  public String toString() {
    StringBuilder text = new StringBuilder();
    long dropped = recorded - lines.size();
    if (dropped > 0) {
      text.append("... ").append(dropped).append(" earlier steps\n");
    }
    lines.forEach(line -> text.append(line).append('\n'));
    return text.toString();
  }
}
