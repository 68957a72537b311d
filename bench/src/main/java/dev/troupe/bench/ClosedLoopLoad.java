package dev.troupe.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import me.tongfei.progressbar.ProgressBar;
import org.HdrHistogram.Histogram;

/**
 * A closed-loop load: a fixed number of workers, each issuing one operation, waiting for its
 * answer, and issuing the next at once. Concurrency is therefore exactly the worker count, which is
 * what "T concurrent writers each waiting for its acknowledgement" means, and the same for every
 * system driven through it.
 *
 * <p>Workers are platform threads, not virtual threads: a virtual thread blocked in a native call
 * (a RocksDB write) pins its carrier, which on a 2-core machine would cap the raw baseline at two
 * concurrent writes and make the comparison meaningless.
 *
 * <p>Only operations that start after the warm-up and end before the measurement window closes are
 * counted, so neither start-up nor the drain at the end inflates or deflates the figures.
 */
final class ClosedLoopLoad {
  private static final long PROGRESS_TICK_MILLIS = 200;

  private ClosedLoopLoad() {}

  /** One operation of one worker; throws when it failed, which stops the whole load. */
  @FunctionalInterface
  interface Operation {
    void perform(int worker, long sequence) throws Exception;

    /**
     * The operation {@code worker} has just performed lies in the measurement window (its latency
     * was recorded): count whatever else the operation tracks, so that every figure describes the
     * same operations as the throughput.
     */
    default void counted(int worker) {}
  }

  /**
   * What one measurement window saw.
   *
   * @param operations operations completed inside the window
   * @param seconds the window's length
   * @param latencyNanoseconds latency of every counted operation
   * @param cpuSeconds CPU time the measured side used during the window (NaN: not measured)
   */
  record Window(long operations, double seconds, Histogram latencyNanoseconds,
      double cpuSeconds) {
    double throughputPerSecond() {
      return operations / seconds;
    }
  }

  /**
   * Runs {@code workers} workers for {@code warmup} plus {@code measurement}, advancing {@code
   * progress} by elapsed milliseconds, and returns the measurement window.
   *
   * @throws BenchmarkException if an operation failed or nothing completed in the window
   */
  static Window run(String name, int workers, Duration warmup, Duration measurement,
      Operation operation, ProgressBar progress) throws InterruptedException {
    return run(name, workers, warmup, measurement, operation, progress, CpuMeter.NONE);
  }

  /**
   * As {@link #run(String, int, Duration, Duration, Operation, ProgressBar)}, reading {@code cpu}
   * when the measurement window opens and when it closes.
   */
  static Window run(String name, int workers, Duration warmup, Duration measurement,
      Operation operation, ProgressBar progress, CpuMeter cpu) throws InterruptedException {
    long start = System.nanoTime();
    long windowStart = start + warmup.toNanos();
    long windowEnd = windowStart + measurement.toNanos();
    AtomicBoolean stopped = new AtomicBoolean();
    AtomicReference<Exception> firstFailure = new AtomicReference<>();
    List<Histogram> latencies = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    for (int worker = 0; worker < workers; worker++) {
      Histogram latency = new Histogram(3);
      latencies.add(latency);
      int workerIndex = worker;
      threads.add(Thread.ofPlatform().name(name + "-worker-" + worker).start(() -> {
        long sequence = 0;
        while (!stopped.get()) {
          long operationStart = System.nanoTime();
          if (operationStart >= windowEnd) {
            return;
          }
          try {
            operation.perform(workerIndex, sequence++);
          } catch (Exception e) {
            firstFailure.compareAndSet(null, e);
            stopped.set(true);
            return;
          }
          long operationEnd = System.nanoTime();
          if (operationStart >= windowStart && operationEnd <= windowEnd) {
            latency.recordValue(operationEnd - operationStart);
            operation.counted(workerIndex);
          }
        }
      }));
    }
    long reportedMillis = 0;
    double cpuAtStart = Double.NaN;
    double cpuAtEnd = Double.NaN;
    boolean startRead = false;
    boolean endRead = false;
    for (Thread thread : threads) {
      while (thread.isAlive()) {
        long now = System.nanoTime();
        if (!startRead && now >= windowStart) {
          cpuAtStart = readCpu(cpu);
          startRead = true;
        }
        if (!endRead && now >= windowEnd) {
          cpuAtEnd = readCpu(cpu);
          endRead = true;
        }
        // Wake at the window's edges, so the CPU readings frame the window closely.
        long next = !startRead ? windowStart : !endRead ? windowEnd : Long.MAX_VALUE;
        long pauseMillis = next == Long.MAX_VALUE ? PROGRESS_TICK_MILLIS
            : Math.max(1, Math.min(PROGRESS_TICK_MILLIS, (next - now) / 1_000_000));
        thread.join(pauseMillis);
        long elapsedMillis = Math.min((System.nanoTime() - start) / 1_000_000,
            (windowEnd - start) / 1_000_000);
        progress.stepBy(elapsedMillis - reportedMillis);
        reportedMillis = elapsedMillis;
      }
    }
    if (!startRead) {
      cpuAtStart = readCpu(cpu);
    }
    if (!endRead) {
      cpuAtEnd = readCpu(cpu);
    }
    progress.stepBy((windowEnd - start) / 1_000_000 - reportedMillis);
    if (firstFailure.get() != null) {
      Exception failure = firstFailure.get();
      throw new BenchmarkException(
          name + ": an operation failed: " + failure.getMessage(), failure);
    }
    Histogram total = new Histogram(3);
    latencies.forEach(total::add);
    if (total.getTotalCount() == 0) {
      throw new BenchmarkException(name + ": no operation completed within the "
          + measurement.toMillis() + " ms window; measure for longer");
    }
    return new Window(total.getTotalCount(), measurement.toNanos() / 1e9, total,
        cpuAtEnd - cpuAtStart);
  }

  private static double readCpu(CpuMeter cpu) {
    try {
      return cpu.seconds();
    } catch (java.io.IOException unreadable) {
      return Double.NaN;
    }
  }
}
