package dev.troupe.bench;

import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.value.CounterValue;
import dev.troupe.runtime.RuntimeSettings;
import dev.troupe.runtime.Troupe;
import dev.troupe.storage.RocksDisk;
import dev.troupe.storage.RocksStore;
import dev.troupe.storage.StorageSettings;
import dev.troupe.storage.Store;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.function.LongSupplier;
import me.tongfei.progressbar.ProgressBar;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code troupe bench cache}: how much the object cache and checkpoints save when reading one
 * object with a long journal (antidote-cache.txt's materializer).
 *
 * <p>Setup: one counter (a type declaring one counter key) receives {@code --operations}
 * increments through the engine (each one journal record), with checkpointing disabled by settings
 * (an object checkpoint every 2^31-1 operations, rounds every 2^31-1 records or once a day), so the
 * only way to rebuild the object is to replay all of its records.
 *
 * <p>Measured, all with the same call, {@code Store.read} of that object:
 *
 * <ul>
 *   <li><b>warm</b>: the object is in the engine's cache (also reported: {@code Troupe.get}, which
 *       adds rendering).
 *   <li><b>cold</b>: the {@code Store} API has no eviction call, so each sample opens a fresh
 *       {@link RocksStore} on the same directory (checkpoints still disabled) and times its first
 *       read of the object, which must materialize from the journal. Opening is not timed. The
 *       operating system's page cache stays warm, so this is the cost of materialization, not of
 *       disk seeks.
 *   <li><b>checkpoint-assisted</b>: after one {@code checkpointNow()} (by a store with default
 *       checkpoint settings), the same fresh-store first read, which now starts from the
 *       checkpoint.
 * </ul>
 *
 * <p>Every read is checked to return exactly the state the engine acknowledged. Goal: cold / warm
 * median latency at least 100.
 */
@Command(
    name = "cache",
    mixinStandardHelpOptions = true,
    description = "Read latency of one object with many journal operations: warm cache vs cold "
        + "materialization vs checkpoint-assisted. Goal: cold / warm >= 100.")
final class CacheBenchmark extends Benchmark {
  static final Goal GOAL = Goal.atLeast(100);
  /** Verifying block checksums on reads (issue 14) may cost at most 5 % of a cold read. */
  static final Goal CHECKSUM_COST_GOAL = Goal.atMost(1.05, "");
  private static final EntityId ENTITY = new EntityId("BenchCounter", "hot");
  private static final String KEY = "count";
  private static final byte[] COUNTER_TYPE_SPEC =
      ("{\"keys\": {\"" + KEY + "\": {\"kind\": \"counter\"}}}").getBytes(StandardCharsets.UTF_8);
  private static final int MAX_OPERATIONS_IN_FLIGHT = 256;
  private static final long DAY_MILLIS = 86_400_000L;

  @Option(names = "--operations", defaultValue = "10000",
      description = "Journal operations (counter increments) on the object"
          + " (default: ${DEFAULT-VALUE}).")
  int operations;

  @Option(names = "--warm-reads", defaultValue = "100000",
      description = "Measured warm reads, after as many again unmeasured"
          + " (default: ${DEFAULT-VALUE}).")
  int warmReads;

  @Option(names = "--repetitions", defaultValue = "21",
      description = "Fresh-store first reads measured for cold and for checkpoint-assisted reads,"
          + " after one unmeasured (default: ${DEFAULT-VALUE}).")
  int repetitions;

  @Override
  BenchReport run() throws Exception {
    if (operations < 1 || warmReads < 1 || repetitions < 1) {
      throw new IllegalArgumentException(
          "--operations, --warm-reads and --repetitions must be positive");
    }
    BenchReport report = new BenchReport("cache",
        "read latency of one object with a long journal: warm cache, cold materialization,"
            + " checkpoint-assisted");
    report.parameter("operations", operations)
        .parameter("warm_reads", warmReads)
        .parameter("repetitions", repetitions);
    long steps = operations + 2L * warmReads * 2 + 3L * (repetitions + 1) + 1;
    try (TemporaryDirectory work = TemporaryDirectory.create("cache");
        ProgressBar progress = ProgressBars.start("cache", steps, "", 1)) {
      Path data = work.resolve("data");
      RuntimeSettings defaults = RuntimeSettings.forDirectory(data);
      RuntimeSettings withoutCheckpoints = RuntimeSettings.fromConfig(ConfigFactory.parseMap(Map.of(
              "troupe.storage.checkpoint-every-operations", Integer.MAX_VALUE,
              "troupe.storage.checkpoint-journal-records", Integer.MAX_VALUE,
              "troupe.storage.checkpoint-interval-millis", DAY_MILLIS))
          .withFallback(defaults.config()));

      EntityState acknowledged = writeAndReadWarm(withoutCheckpoints, report, progress);

      // Out of the write-ahead log into table files: a fresh store would otherwise replay the
      // records into its memtable and no read would meet a block checksum.
      try (RocksDisk disk = RocksDisk.open(withoutCheckpoints.storage().directory())) {
        disk.flushMemtables();
      }
      progress.setExtraMessage("cold reads, verified and unverified");
      Histogram[] cold = measureColdPairs(withoutCheckpoints.storage(), acknowledged, progress);
      record(report, "cold_materialization", cold[0]);
      record(report, "cold_materialization_unverified", cold[1]);

      progress.setExtraMessage("checkpoint");
      checkpoint(defaults.storage());
      progress.step();
      progress.setExtraMessage("checkpoint-assisted reads");
      Histogram checkpointed =
          measureFreshStores(withoutCheckpoints.storage(), acknowledged, progress);
      record(report, "checkpoint_assisted", checkpointed);
    }
    double coldMicroseconds = report.result("cold_materialization", "p50_microseconds");
    report.ratio("cold / warm read latency (p50)", coldMicroseconds,
        report.result("warm_store_read", "p50_microseconds"), GOAL);
    report.ratio("cold / checkpoint-assisted read latency (p50)", coldMicroseconds,
        report.result("checkpoint_assisted", "p50_microseconds"), null);
    report.ratio("cold read with checksums verified / unverified (p50)", coldMicroseconds,
        report.result("cold_materialization_unverified", "p50_microseconds"),
        CHECKSUM_COST_GOAL);
    return report;
  }

  /**
   * Declares the counter type, writes the increments through an engine with checkpoints disabled,
   * measures warm reads, and returns the state the engine acknowledged.
   */
  private EntityState writeAndReadWarm(RuntimeSettings withoutCheckpoints, BenchReport report,
      ProgressBar progress) throws InterruptedException {
    try (Troupe troupe = Troupe.open(withoutCheckpoints)) {
      progress.setExtraMessage("writing");
      troupe.defineType(SpecParser.parse(ENTITY.type(), COUNTER_TYPE_SPEC, false)).join();
      writeIncrements(troupe, progress);
      EntityState acknowledged = troupe.store().read(ENTITY);
      checkHoldsEveryIncrement(acknowledged);
      long checkpoints = troupe.storageStatistics().objectCheckpoints();
      if (checkpoints != 0) {
        throw new BenchmarkException("checkpointing was not disabled: " + checkpoints
            + " object checkpoints written");
      }
      progress.setExtraMessage("warm reads");
      Store store = troupe.store();
      long version = acknowledged.version();
      record(report, "warm_store_read",
          measureRepeatedly(() -> store.read(ENTITY).version(), version, progress));
      record(report, "warm_troupe_get",
          measureRepeatedly(() -> troupe.get(ENTITY).join().version(), version, progress));
      return acknowledged;
    }
  }

  /** Runs one checkpoint round on a store with default checkpoint settings. */
  private static void checkpoint(StorageSettings settings) {
    try (Store store = RocksStore.open(settings, System::currentTimeMillis)) {
      store.checkpointNow();
      if (store.statistics().objectCheckpoints() == 0) {
        throw new BenchmarkException("checkpointNow() wrote no object checkpoint for " + ENTITY);
      }
    }
  }

  /** Increments the counter {@code operations} times, at most 256 turns in flight. */
  private void writeIncrements(Troupe troupe, ProgressBar progress) throws InterruptedException {
    BoundedSubmission.run(operations, MAX_OPERATIONS_IN_FLIGHT, progress,
        operation -> troupe.increment(ENTITY, KEY, 1));
  }

  private void checkHoldsEveryIncrement(EntityState state) {
    long total = state.get(KEY) instanceof CounterValue counter ? counter.total() : 0;
    if (total != operations) {
      throw new BenchmarkException("the counter holds " + total + " after " + operations
          + " acknowledged increments");
    }
  }

  /**
   * Reads {@code warmReads} times unmeasured, then {@code warmReads} times measured; every read
   * must return {@code expectedVersion}.
   */
  private Histogram measureRepeatedly(LongSupplier readVersion, long expectedVersion,
      ProgressBar progress) {
    Histogram latency = new Histogram(3);
    for (int pass = 0; pass < 2; pass++) {
      for (int sample = 0; sample < warmReads; sample++) {
        long start = System.nanoTime();
        long version = readVersion.getAsLong();
        long end = System.nanoTime();
        if (version != expectedVersion) {
          throw new BenchmarkException("read version " + version + " of " + ENTITY
              + " but the engine acknowledged version " + expectedVersion);
        }
        if (pass == 1) {
          latency.recordValue(end - start);
        }
      }
      progress.stepBy(warmReads);
    }
    return latency;
  }

  /**
   * Opens a fresh store {@code repetitions + 1} times and times its first read of the object; the
   * first sample is not recorded (class loading, JIT).
   */
  private Histogram measureFreshStores(StorageSettings settings, EntityState acknowledged,
      ProgressBar progress) {
    Histogram latency = new Histogram(3);
    for (int sample = 0; sample <= repetitions; sample++) {
      try (Store store = RocksStore.open(settings, System::currentTimeMillis)) {
        long missesBefore = store.statistics().cacheMisses();
        long start = System.nanoTime();
        EntityState state = store.read(ENTITY);
        long end = System.nanoTime();
        check(state, acknowledged);
        if (store.statistics().cacheMisses() == missesBefore) {
          throw new BenchmarkException("a fresh store served " + ENTITY + " from its cache: the"
              + " read did not materialize");
        }
        if (sample > 0) {
          latency.recordValue(end - start);
        }
      }
      progress.step();
    }
    return latency;
  }

  /**
   * Cold reads as {@link #measureFreshStores}, alternating a store that verifies block checksums
   * (as Troupe always does) with one that does not (the baseline), and which of the two goes
   * first, so both meet the same machine state; returns {verified, unverified}.
   */
  private Histogram[] measureColdPairs(StorageSettings settings, EntityState acknowledged,
      ProgressBar progress) {
    Histogram[] latency = {new Histogram(3), new Histogram(3)};
    for (int sample = 0; sample <= repetitions; sample++) {
      for (int turn = 0; turn < 2; turn++) {
        // Which goes first alternates too, so neither always meets the other's warm-up.
        int variant = (sample + turn) % 2;
        RocksDisk disk = RocksDisk.open(settings.directory(), RocksDisk.OpenMode.SERVE,
            variant == 0);
        try (Store store = RocksStore.open(settings, System::currentTimeMillis, disk,
            RocksStore.Execution.THREADS)) {
          long start = System.nanoTime();
          EntityState state = store.read(ENTITY);
          long end = System.nanoTime();
          check(state, acknowledged);
          if (sample > 0) {
            latency[variant].recordValue(end - start);
          }
        }
      }
      progress.stepBy(2);
    }
    return latency;
  }

  private static void check(EntityState state, EntityState acknowledged) {
    if (!acknowledged.equals(state)) {
      throw new BenchmarkException(
          "read " + state + " but the engine acknowledged " + acknowledged);
    }
  }

  private static void record(BenchReport report, String system, Histogram latency) {
    report.result(system, "p50_microseconds", latency.getValueAtPercentile(50) / 1e3)
        .result(system, "p99_microseconds", latency.getValueAtPercentile(99) / 1e3)
        .result(system, "max_microseconds", latency.getMaxValue() / 1e3)
        .result(system, "samples", latency.getTotalCount());
  }
}
