package dev.troupe.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.HashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import me.tongfei.progressbar.ProgressBar;
import org.HdrHistogram.Histogram;
import site.ycsb.ByteIterator;
import site.ycsb.ClientThread;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.WorkloadException;
import site.ycsb.measurements.Measurements;
import site.ycsb.workloads.CoreWorkload;

/**
 * Runs YCSB in this JVM: the real {@link CoreWorkload} (key choice, operation mix, values) and
 * {@link ClientThread}s, one {@link DB} per thread, exactly as YCSB's client does, but without its
 * command-line entry point (which calls {@code System.exit}) and with our own measurement:
 *
 * <ul>
 *   <li>throughput counts YCSB <i>transactions</i> (a read-modify-write is one), completed while the
 *       measurement window is open, as YCSB reports operations per second;
 *   <li>latency is an HdrHistogram per database operation (read, update, insert, delete, scan),
 *       recorded per thread and merged afterwards, so measuring adds no contention;
 *   <li>every non-OK status is counted per operation and status, warm-up included.
 * </ul>
 */
final class YcsbRunner {
  private YcsbRunner() {}

  /** Database operations in report order. */
  static final List<String> OPERATIONS = List.of("read", "update", "insert", "delete", "scan");

  private static final long PROGRESS_TICK_MILLIS = 200;
  private static final long STOP_TIMEOUT_SECONDS = 120;

  /**
   * What one phase measured.
   *
   * @param transactions YCSB transactions (or inserts, when loading) completed in the window
   * @param seconds the window's length
   * @param latencyNanoseconds per operation that occurred, its latencies in the window
   * @param failures per "operation status" (e.g. "update SERVICE_UNAVAILABLE"), how many
   * @param cpuSeconds CPU time of the measured server in the window (NaN: not measured)
   * @param disk bytes the machine's storage devices read and wrote in the window (NaN: not
   *     measured)
   */
  record PhaseResult(long transactions, double seconds, Map<String, Histogram> latencyNanoseconds,
      Map<String, Long> failures, double cpuSeconds, DiskMeter.DiskBytes disk) {
    double throughputPerSecond() {
      return transactions / seconds;
    }

    long failureCount() {
      return failures.values().stream().mapToLong(Long::longValue).sum();
    }
  }

  /** As {@link #load(Properties, int, Supplier, ProgressBar, DiskMeter)}, the disk unmeasured. */
  static PhaseResult load(Properties properties, int threads, Supplier<DB> databases,
      ProgressBar progress) throws Exception {
    return load(properties, threads, databases, progress, DiskMeter.NONE);
  }

  /**
   * Loads records {@code 0 .. recordcount-1} with {@code threads} threads; the whole load is
   * measured, {@code disk} read before the first insert and after the last.
   */
  static PhaseResult load(Properties properties, int threads, Supplier<DB> databases,
      ProgressBar progress, DiskMeter disk) throws Exception {
    long records = Long.parseLong(properties.getProperty("recordcount"));
    Window window = new Window();
    window.open = true;
    DiskMeter.DiskBytes diskAtStart = DiskMeter.readQuietly(disk);
    long start = System.nanoTime();
    Phase phase = startPhase(properties, false, threads, records, databases, window);
    long reported = 0;
    while (!phase.done.await(PROGRESS_TICK_MILLIS, TimeUnit.MILLISECONDS)) {
      long inserted = phase.transactions.sum();
      progress.stepBy(inserted - reported);
      reported = inserted;
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    progress.stepBy(phase.transactions.sum() - reported);
    return phase.result(seconds, Double.NaN,
        DiskMeter.readQuietly(disk).minus(diskAtStart));
  }

  /**
   * Runs the workload's transactions for {@code warmup} (unmeasured) then {@code measurement},
   * then stops the threads; {@code progress} advances by elapsed milliseconds.
   */
  static PhaseResult transactions(Properties properties, int threads, Supplier<DB> databases,
      Duration warmup, Duration measurement, ProgressBar progress) throws Exception {
    return transactions(properties, threads, databases, warmup, measurement, progress,
        CpuMeter.NONE, DiskMeter.NONE);
  }

  /** As the next one, the disk unmeasured. */
  static PhaseResult transactions(Properties properties, int threads, Supplier<DB> databases,
      Duration warmup, Duration measurement, ProgressBar progress, CpuMeter cpu)
      throws Exception {
    return transactions(properties, threads, databases, warmup, measurement, progress, cpu,
        DiskMeter.NONE);
  }

  /**
   * As {@link #transactions(Properties, int, Supplier, Duration, Duration, ProgressBar)}, reading
   * {@code cpu} and {@code disk} when the measurement window opens and when it closes.
   */
  static PhaseResult transactions(Properties properties, int threads, Supplier<DB> databases,
      Duration warmup, Duration measurement, ProgressBar progress, CpuMeter cpu, DiskMeter disk)
      throws Exception {
    Window window = new Window();
    long start = System.nanoTime();
    long windowStart = start + warmup.toNanos();
    long windowEnd = windowStart + measurement.toNanos();
    Phase phase = startPhase(properties, true, threads, 0, databases, window);
    long reportedMillis = 0;
    long openedAt = 0;
    long closedAt = 0;
    double cpuAtOpen = Double.NaN;
    double cpuAtClose;
    DiskMeter.DiskBytes diskAtOpen = DiskMeter.DiskBytes.UNMEASURED;
    DiskMeter.DiskBytes diskAtClose;
    while (true) {
      long now = System.nanoTime();
      if (!window.open && openedAt == 0 && now >= windowStart) {
        cpuAtOpen = cpu.seconds();
        diskAtOpen = DiskMeter.readQuietly(disk);
        window.open = true;
        openedAt = now;
      }
      if (openedAt != 0 && now >= windowEnd) {
        window.open = false;
        closedAt = now;
        cpuAtClose = cpu.seconds();
        diskAtClose = DiskMeter.readQuietly(disk);
        phase.workload.requestStop();
        break;
      }
      if (phase.done.getCount() == 0) {
        throw new BenchmarkException("the YCSB client threads stopped before the end of the"
            + " run; see the output above");
      }
      long elapsedMillis = (now - start) / 1_000_000;
      progress.stepBy(elapsedMillis - reportedMillis);
      reportedMillis = elapsedMillis;
      Thread.sleep(Math.min(PROGRESS_TICK_MILLIS,
          Math.max(1, ((openedAt == 0 ? windowStart : windowEnd) - now) / 1_000_000)));
    }
    progress.stepBy((windowEnd - start) / 1_000_000 - reportedMillis);
    if (!phase.done.await(STOP_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
      throw new BenchmarkException("YCSB client threads did not stop within "
          + STOP_TIMEOUT_SECONDS + " s");
    }
    return phase.result((closedAt - openedAt) / 1e9, cpuAtClose - cpuAtOpen,
        diskAtClose.minus(diskAtOpen));
  }

  private static Phase startPhase(Properties properties, boolean transactions, int threads,
      long operations, Supplier<DB> databases, Window window) throws WorkloadException {
    Measurements.setProperties(properties);
    Phase phase = new Phase(window, threads);
    phase.workload.init(properties);
    for (int thread = 0; thread < threads; thread++) {
      DB database = databases.get();
      database.setProperties(properties);
      MeasuredDb measured = new MeasuredDb(database, window);
      measured.setProperties(properties);
      phase.databases.add(measured);
      long threadOperations = operations / threads + (thread < operations % threads ? 1 : 0);
      ClientThread client = new ClientThread(measured, transactions, phase.workload, properties,
          Math.toIntExact(threadOperations), 0, phase.done);
      client.setThreadId(thread);
      client.setThreadCount(threads);
      Thread.ofPlatform().name("ycsb-client-" + thread).daemon().start(client);
    }
    return phase;
  }

  /** Whether operations completing now are measured. */
  private static final class Window {
    volatile boolean open;
  }

  /** One phase's threads, workload and per-thread measurements. */
  private static final class Phase {
    final Window window;
    final CountDownLatch done;
    final LongAdder transactions = new LongAdder();
    final CountingWorkload workload;
    final List<MeasuredDb> databases = new ArrayList<>();

    Phase(Window window, int threads) {
      this.window = window;
      this.done = new CountDownLatch(threads);
      this.workload = new CountingWorkload(window, transactions);
    }

    PhaseResult result(double seconds, double cpuSeconds, DiskMeter.DiskBytes disk) {
      Map<String, Histogram> latencies = new LinkedHashMap<>();
      Map<String, Long> failures = new LinkedHashMap<>();
      for (String operation : OPERATIONS) {
        for (MeasuredDb database : databases) {
          Histogram histogram = database.latencies.get(operation);
          if (histogram != null) {
            latencies.computeIfAbsent(operation, ignored -> new Histogram(3)).add(histogram);
          }
        }
      }
      for (MeasuredDb database : databases) {
        database.failures.forEach((what, count) -> failures.merge(what, count, Long::sum));
      }
      return new PhaseResult(transactions.sum(), seconds, latencies, failures, cpuSeconds, disk);
    }
  }

  /** YCSB's core workload, counting the transactions and inserts that complete in the window. */
  private static final class CountingWorkload extends CoreWorkload {
    private final Window window;
    private final LongAdder completed;

    CountingWorkload(Window window, LongAdder completed) {
      this.window = window;
      this.completed = completed;
    }

    @Override
    public boolean doTransaction(DB db, Object threadState) {
      boolean result = super.doTransaction(db, threadState);
      if (window.open) {
        completed.increment();
      }
      return result;
    }

    @Override
    public boolean doInsert(DB db, Object threadState) {
      boolean result = super.doInsert(db, threadState);
      if (window.open) {
        completed.increment();
      }
      return result;
    }
  }

  /**
   * Wraps one thread's DB: times every call into per-operation histograms while the window is
   * open and counts non-OK statuses. Never throws: YCSB's client thread exits the JVM on an
   * exception, so a failure becomes Status.ERROR.
   */
  private static final class MeasuredDb extends DB {
    private final DB database;
    private final Window window;
    final Map<String, Histogram> latencies = new HashMap<>();
    final Map<String, Long> failures = new HashMap<>();

    MeasuredDb(DB database, Window window) {
      this.database = database;
      this.window = window;
    }

    @Override
    public void init() throws DBException {
      database.init();
    }

    @Override
    public void cleanup() throws DBException {
      database.cleanup();
    }

    private interface Call {
      Status run();
    }

    private Status measure(String operation, Call call) {
      long start = System.nanoTime();
      Status status;
      try {
        status = call.run();
      } catch (RuntimeException e) {
        status = Status.ERROR;
      }
      long end = System.nanoTime();
      if (window.open) {
        latencies.computeIfAbsent(operation, ignored -> new Histogram(3))
            .recordValue(end - start);
      }
      if (status == null || !status.isOk()) {
        failures.merge(operation + " " + (status == null ? "null" : status.getName()), 1L,
            Long::sum);
      }
      return status;
    }

    @Override
    public Status read(String table, String key, Set<String> fields,
        Map<String, ByteIterator> result) {
      return measure("read", () -> database.read(table, key, fields, result));
    }

    @Override
    public Status scan(String table, String startKey, int recordCount, Set<String> fields,
        Vector<HashMap<String, ByteIterator>> result) {
      return measure("scan", () -> database.scan(table, startKey, recordCount, fields, result));
    }

    @Override
    public Status update(String table, String key, Map<String, ByteIterator> values) {
      return measure("update", () -> database.update(table, key, values));
    }

    @Override
    public Status insert(String table, String key, Map<String, ByteIterator> values) {
      return measure("insert", () -> database.insert(table, key, values));
    }

    @Override
    public Status delete(String table, String key) {
      return measure("delete", () -> database.delete(table, key));
    }
  }
}
