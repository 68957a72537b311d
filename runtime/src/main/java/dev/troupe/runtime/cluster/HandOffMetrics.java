package dev.troupe.runtime.cluster;

import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * How this node's partitions came and went (for {@code /metrics}): how long acquiring a partition
 * took (the store's acquisition under a new owner epoch, the partition's recovery, and the
 * resolution of the parts in doubt its previous owner left) and how long releasing one took
 * (refusing new commits, draining its writes, stopping its writer), as HdrHistograms in
 * microseconds like the turn latency; and the counts of partitions acquired, released, lost to
 * another node (fenced) and whose acquisition failed.
 *
 * <p>Thread-safe; cheap to record (a hand-off is rare: each partition moves only when a member
 * joins, leaves or dies).
 */
public final class HandOffMetrics {
  private final Recorder acquireMicros = new Recorder(3);
  private final Recorder releaseMicros = new Recorder(3);
  private final Histogram cumulativeAcquireMicros = new Histogram(3);
  private final Histogram cumulativeReleaseMicros = new Histogram(3);
  private final LongAdder acquired = new LongAdder();
  private final LongAdder released = new LongAdder();
  private final LongAdder lost = new LongAdder();
  private final LongAdder acquireFailures = new LongAdder();

  void recordAcquired(long nanos) {
    acquireMicros.recordValue(Math.max(0, nanos / 1000));
    acquired.increment();
  }

  void recordAcquireFailed() {
    acquireFailures.increment();
  }

  void recordReleased(long nanos) {
    releaseMicros.recordValue(Math.max(0, nanos / 1000));
    released.increment();
  }

  void recordLost() {
    lost.increment();
  }

  /** Every acquisition's duration since start, in microseconds (a copy). */
  public synchronized Histogram acquireHistogramMicros() {
    cumulativeAcquireMicros.add(acquireMicros.getIntervalHistogram());
    return cumulativeAcquireMicros.copy();
  }

  /** Every release's duration since start, in microseconds (a copy). */
  public synchronized Histogram releaseHistogramMicros() {
    cumulativeReleaseMicros.add(releaseMicros.getIntervalHistogram());
    return cumulativeReleaseMicros.copy();
  }

  /** Partitions this node acquired since start (each acquisition counts, a reacquisition too). */
  public long acquired() {
    return acquired.sum();
  }

  /** Partitions this node released since start (handed off, or stopped after a loss). */
  public long released() {
    return released.sum();
  }

  /** Partitions this node lost since start: another node's newer owner epoch fenced its write. */
  public long lost() {
    return lost.sum();
  }

  /** Acquisitions that failed (the partition's next message starts its host again). */
  public long acquireFailures() {
    return acquireFailures.sum();
  }
}
