package dev.troupe.runtime;

import dev.troupe.model.ErrorCode;
import dev.troupe.txn.TurnResult;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * Engine-side counters: turns by outcome, the turn latency histogram (HdrHistogram, measured from
 * the caller's request to its answer), active entity actors with their estimated bytes, and how
 * many actors were started and stopped.
 * Thread-safe; cheap to record.
 */
public final class TurnMetrics {
  private final LongAdder committedTurns = new LongAdder();
  private final LongAdder unchangedTurns = new LongAdder();
  private final Map<ErrorCode, LongAdder> failedTurns = new EnumMap<>(ErrorCode.class);
  private final Recorder latencyMicros = new Recorder(3);
  private final Histogram cumulativeLatencyMicros = new Histogram(3);
  private final Map<String, Integer> activeEntitiesByRegistry = new ConcurrentHashMap<>();
  private final LongAdder actorBytes = new LongAdder();
  private final LongAdder activations = new LongAdder();
  private final LongAdder passivations = new LongAdder();

  public TurnMetrics() {
    for (ErrorCode code : ErrorCode.values()) {
      failedTurns.put(code, new LongAdder());
    }
  }

  void recordTurn(TurnResult result) {
    switch (result) {
      case TurnResult.Done done when done.wrote() -> committedTurns.increment();
      case TurnResult.Done ignored -> unchangedTurns.increment();
      case TurnResult.Failed failed -> failedTurns.get(failed.error().code()).increment();
    }
  }

  /** Records the latency of one turn as its caller saw it. */
  public void recordLatencyNanos(long nanos) {
    latencyMicros.recordValue(Math.max(0, nanos / 1000));
  }

  void setActiveEntities(String registry, int count) {
    activeEntitiesByRegistry.put(registry, count);
  }

  /** A registry stopped (its partition moved to another node): its entities no longer count. */
  void removeActiveEntities(String registry) {
    activeEntitiesByRegistry.remove(registry);
  }

  /** An actor started (positive), was re-weighed, or stopped (negative): its estimated bytes. */
  void addActorBytes(long delta) {
    actorBytes.add(delta);
  }

  /** An entity actor was started (its entity activated). */
  void recordActivation() {
    activations.increment();
  }

  /** An entity actor stopped (its entity passivated, or its actor ended otherwise). */
  void recordPassivation() {
    passivations.increment();
  }

  /** Entity actors started since the node started: how often entities were activated. */
  public long activations() {
    return activations.sum();
  }

  /** Entity actors stopped since the node started. */
  public long passivations() {
    return passivations.sum();
  }

  /** The estimated bytes of the active actors: their states plus a fixed overhead each. */
  public long actorBytes() {
    return actorBytes.sum();
  }

  public long committedTurns() {
    return committedTurns.sum();
  }

  public long unchangedTurns() {
    return unchangedTurns.sum();
  }

  public Map<ErrorCode, Long> failedTurns() {
    Map<ErrorCode, Long> result = new EnumMap<>(ErrorCode.class);
    failedTurns.forEach((code, adder) -> result.put(code, adder.sum()));
    return result;
  }

  public int activeEntities() {
    return activeEntitiesByRegistry.values().stream().mapToInt(Integer::intValue).sum();
  }

  /** All turn latencies recorded since start, in microseconds (a copy). */
  public synchronized Histogram latencyHistogramMicros() {
    cumulativeLatencyMicros.add(latencyMicros.getIntervalHistogram());
    return cumulativeLatencyMicros.copy();
  }
}
