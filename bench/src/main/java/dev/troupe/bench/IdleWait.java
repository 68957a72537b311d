package dev.troupe.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * Waits, between two rounds of an alternating comparison, until the machine is idle: so that what
 * one contender left running in the background (RocksDB compaction, checkpoints, PostgreSQL's
 * writer and vacuum, garbage collection) does not fall into the next contender's round (issue 20,
 * "Fair measurement first").
 *
 * <p>Idle is measured, not assumed: the share of CPU time all cores spent idle (Linux's
 * {@code /proc/stat} {@code idle + iowait} over every field) during a window of {@link
 * Settings#window}; the wait ends as soon as one window is at least {@link Settings#idlePercent}
 * idle, or after {@link Settings#maxWait} (the machine may be shared with work of others that never
 * stops, so the wait is bounded), and says how long it waited and the idle share it saw last.
 *
 * <p>Not thread-safe; one comparison's thread uses it. The CPU samples, pause and clock are
 * injected so that tests run it without waiting.
 */
final class IdleWait {
  /**
   * @param idlePercent the share of CPU time idle over one window that counts as idle, 0..100
   * @param window how long each measurement of the idle share lasts
   * @param maxWait the longest wait; zero measures one window and goes on whatever it saw
   */
  record Settings(double idlePercent, Duration window, Duration maxWait) {
    Settings {
      if (!(idlePercent >= 0 && idlePercent <= 100) || window.isNegative() || window.isZero()
          || maxWait.isNegative()) {
        throw new IllegalArgumentException("the idle share must be 0..100 percent, the idle"
            + " window positive and the longest idle wait not negative");
      }
    }

    /** Waits for nothing: what comparisons that do not ask for idle waits get. */
    static final Settings NONE = new Settings(0, Duration.ofMillis(1), Duration.ZERO);

    boolean disabled() {
      return idlePercent == 0;
    }

    void describe(BenchReport report) {
      report.parameter("idle_percent_between_rounds", idlePercent)
          .parameter("idle_window_milliseconds", window.toMillis())
          .parameter("idle_max_wait_seconds", maxWait.toMillis() / 1000.0);
    }
  }

  /** Cumulative CPU time of all cores, in the kernel's ticks. */
  record Sample(long idleTicks, long totalTicks) {}

  /** Reads the cumulative CPU time of the machine. */
  interface CpuSamples {
    Sample read() throws IOException;
  }

  /** Lets {@code duration} pass. */
  interface Pause {
    void pause(Duration duration) throws InterruptedException;
  }

  /**
   * What one wait found.
   *
   * @param waitedSeconds how long the wait took, its measurement windows included
   * @param idlePercent the idle share of the last window (NaN when it could not be measured)
   * @param idle whether that share reached the threshold (false when the wait gave up)
   */
  record Outcome(double waitedSeconds, double idlePercent, boolean idle) {
    static final Outcome SKIPPED = new Outcome(0, Double.NaN, false);
  }

  private static final Path PROC_STAT = Path.of("/proc/stat");

  private final Settings settings;
  private final CpuSamples samples;
  private final Pause pause;
  private final LongSupplier nanoClock;

  IdleWait(Settings settings, CpuSamples samples, Pause pause, LongSupplier nanoClock) {
    this.settings = settings;
    this.samples = samples;
    this.pause = pause;
    this.nanoClock = nanoClock;
  }

  /** A wait on this machine's {@code /proc/stat}, pausing with {@link Thread#sleep}. */
  static IdleWait onThisMachine(Settings settings) {
    return new IdleWait(settings, IdleWait::readProcStat,
        duration -> Thread.sleep(duration.toMillis()), System::nanoTime);
  }

  Settings settings() {
    return settings;
  }

  /** Waits until one window is idle enough or the longest wait has passed. */
  Outcome await() throws InterruptedException {
    if (settings.disabled()) {
      return Outcome.SKIPPED;
    }
    long start = nanoClock.getAsLong();
    try {
      while (true) {
        Sample before = samples.read();
        pause.pause(settings.window());
        Sample after = samples.read();
        double idle = idlePercent(before, after);
        double waited = (nanoClock.getAsLong() - start) / 1e9;
        if (idle >= settings.idlePercent()) {
          return new Outcome(waited, idle, true);
        }
        if (waited >= settings.maxWait().toNanos() / 1e9) {
          return new Outcome(waited, idle, false);
        }
      }
    } catch (IOException unreadable) {
      // Not Linux, or /proc is not mounted: nothing to measure, so no wait.
      return Outcome.SKIPPED;
    }
  }

  /** The idle share between two samples, in percent; 100 when no tick passed. */
  static double idlePercent(Sample before, Sample after) {
    long total = after.totalTicks() - before.totalTicks();
    if (total <= 0) {
      return 100;
    }
    return 100.0 * (after.idleTicks() - before.idleTicks()) / total;
  }

  /**
   * Parses the first line of {@code /proc/stat}: {@code cpu user nice system idle iowait irq
   * softirq steal [guest guest_nice]}. Idle is {@code idle + iowait} (a core waiting for the disk
   * runs nothing); the total is the first eight fields (guest time is already counted in user).
   */
  static Sample parseProcStat(String firstLine) {
    String[] fields = firstLine.strip().split(" +");
    if (fields.length < 5 || !fields[0].equals("cpu")) {
      throw new IllegalArgumentException("not the cpu line of /proc/stat: " + firstLine);
    }
    long total = 0;
    for (int field = 1; field < Math.min(fields.length, 9); field++) {
      total += Long.parseLong(fields[field]);
    }
    long idle = Long.parseLong(fields[4]) + (fields.length > 5 ? Long.parseLong(fields[5]) : 0);
    return new Sample(idle, total);
  }

  private static Sample readProcStat() throws IOException {
    try (var lines = Files.lines(PROC_STAT)) {
      String first = lines.findFirst().orElseThrow(() -> new IOException("/proc/stat is empty"));
      try {
        return parseProcStat(first);
      } catch (IllegalArgumentException e) {
        throw new IOException(e.getMessage(), e);
      }
    }
  }
}
