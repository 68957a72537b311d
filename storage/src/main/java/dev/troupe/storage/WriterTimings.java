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
 * maintenance (at 200,000 YCSB records, truncation slices of 87-167 ms held the update p99 near
 * 100 ms until slices were bounded in time).
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

  private static final int SIGNIFICANT_DIGITS = 3;

  private final Recorder commitWait = new Recorder(SIGNIFICANT_DIGITS);
  private final Recorder commit = new Recorder(SIGNIFICANT_DIGITS);
  private final Recorder journalWrite = new Recorder(SIGNIFICANT_DIGITS);
  private final Map<Slice, Recorder> slices = new EnumMap<>(Slice.class);
  private final Histogram cumulativeCommitWait = new Histogram(SIGNIFICANT_DIGITS);
  private final Histogram cumulativeCommit = new Histogram(SIGNIFICANT_DIGITS);
  private final Histogram cumulativeJournalWrite = new Histogram(SIGNIFICANT_DIGITS);
  private final Map<Slice, Histogram> cumulativeSlices = new EnumMap<>(Slice.class);

  WriterTimings() {
    for (Slice kind : Slice.values()) {
      slices.put(kind, new Recorder(SIGNIFICANT_DIGITS));
      cumulativeSlices.put(kind, new Histogram(SIGNIFICANT_DIGITS));
    }
  }

  /** One commit of a group that ran from {@code groupStartNanos} to {@code groupEndNanos}. */
  void recordCommit(long submittedNanos, long groupStartNanos, long groupEndNanos) {
    commitWait.recordValue(micros(groupStartNanos - submittedNanos));
    commit.recordValue(micros(groupEndNanos - submittedNanos));
  }

  void recordJournalWrite(long nanos) {
    journalWrite.recordValue(micros(nanos));
  }

  void recordSlice(Slice kind, long nanos) {
    slices.get(kind).recordValue(micros(nanos));
  }

  private static long micros(long nanos) {
    return Math.max(0, nanos / 1_000);
  }

  /** Everything recorded since the store opened. */
  public synchronized Snapshot snapshot() {
    cumulativeCommitWait.add(commitWait.getIntervalHistogram());
    cumulativeCommit.add(commit.getIntervalHistogram());
    cumulativeJournalWrite.add(journalWrite.getIntervalHistogram());
    Map<Slice, Histogram> sliceCopies = new EnumMap<>(Slice.class);
    for (Slice kind : Slice.values()) {
      Histogram cumulative = cumulativeSlices.get(kind);
      cumulative.add(slices.get(kind).getIntervalHistogram());
      sliceCopies.put(kind, cumulative.copy());
    }
    return new Snapshot(cumulativeCommitWait.copy(), cumulativeCommit.copy(),
        cumulativeJournalWrite.copy(), Collections.unmodifiableMap(sliceCopies));
  }
}
