package dev.troupe.storage;

import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * Where a commit's time goes on its partition's writer, for {@code /metrics} (issue 20). A commit
 * here is any write the writer groups ({@link Partition.Commit}: a transaction's record, or a
 * change of a transaction's state): from its submission to the start of the group it joined (its
 * wait: the groups and maintenance slices ahead of it), and to that group's end (written, synced
 * as its durability requires, applied to the object cache); each group's journal write with its
 * sync; each maintenance slice by kind.
 * A slice holds every commit that arrives meanwhile, so these tell a slow device from slow
 * maintenance (at 200,000 YCSB records, truncation slices of 87-167 ms at the median held the
 * update p99 above 100 ms until slices were bounded in time).
 *
 * <p>Durations in microseconds, from {@link System#nanoTime} on the writer: they are measurements
 * only and change nothing the store does, so the stepped store stays deterministic. Thread-safe:
 * writers record through HdrHistogram recorders; {@link #snapshot} folds them into cumulative
 * histograms under this object's lock.
 */
public final class WriterTimings {
  /** The kinds of maintenance slice a writer runs between commit groups. */
  public enum Slice {
    /** A checkpoint round's slice. */
    ROUND,
    /** A truncation's slice. */
    TRUNCATION,
    /** A slice of the scan that rebuilds the dirty set after recovery. */
    RECOVERY_SCAN;

    /** The slice's name in metrics. */
    public String wireName() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /**
   * Cumulative histograms of microseconds since the store opened (copies).
   *
   * @param commitWait per commit: from its submission to the start of its group
   * @param commit per commit: from its submission to the end of its group
   * @param journalWrite per group: its write batch's write, with its sync when it has one
   * @param slices per maintenance slice, by kind
   */
  public record Snapshot(
      Histogram commitWait,
      Histogram commit,
      Histogram journalWrite,
      Map<Slice, Histogram> slices) {}

  private final Times commitWait = new Times();
  private final Times commit = new Times();
  private final Times journalWrite = new Times();
  private final Map<Slice, Times> slices = new EnumMap<>(Slice.class);

  WriterTimings() {
    for (Slice kind : Slice.values()) {
      slices.put(kind, new Times());
    }
  }

  /** One commit of a group that ran from {@code groupStartNanos} to {@code groupEndNanos}. */
  void recordCommit(long submittedNanos, long groupStartNanos, long groupEndNanos) {
    commitWait.record(groupStartNanos - submittedNanos);
    commit.record(groupEndNanos - submittedNanos);
  }

  void recordJournalWrite(long nanos) {
    journalWrite.record(nanos);
  }

  void recordSlice(Slice kind, long nanos) {
    slices.get(kind).record(nanos);
  }

  /** Everything recorded since the store opened. */
  public synchronized Snapshot snapshot() {
    Map<Slice, Histogram> sliceCopies = new EnumMap<>(Slice.class);
    slices.forEach((kind, times) -> sliceCopies.put(kind, times.cumulative()));
    return new Snapshot(commitWait.cumulative(), commit.cumulative(), journalWrite.cumulative(),
        Collections.unmodifiableMap(sliceCopies));
  }

  /**
   * One kind of duration: recorded by writers without a lock, folded into a cumulative histogram
   * of microseconds when read (under the enclosing {@link #snapshot}'s lock).
   */
  private static final class Times {
    private final Recorder interval = new Recorder(3);
    private final Histogram cumulative = new Histogram(3);

    void record(long nanos) {
      interval.recordValue(Math.max(0, nanos / 1_000));
    }

    Histogram cumulative() {
      cumulative.add(interval.getIntervalHistogram());
      return cumulative.copy();
    }
  }
}
