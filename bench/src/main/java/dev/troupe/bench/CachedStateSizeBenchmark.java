package dev.troupe.bench;

import com.fasterxml.jackson.databind.node.TextNode;
import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Operation;
import dev.troupe.runtime.RuntimeSettings;
import dev.troupe.storage.CachedState;
import dev.troupe.storage.Codec;
import dev.troupe.storage.EntityWrite;
import dev.troupe.storage.RocksStore;
import dev.troupe.storage.StorageSettings;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import me.tongfei.progressbar.ProgressBar;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code troupe bench cached-size}: how many bytes of heap one cached state takes (issue 20,
 * item 4: "a cached 1 KB record takes 3.5 KB of memory"; goal at most 1.5 KB).
 *
 * <p>Setup: a {@link RocksStore} (async durability, an object cache large enough for every
 * record) receives {@code --records} YCSB-shaped records: {@code --fields} register keys {@code
 * field0 ...} of {@code --field-bytes} random letters each, one entity of type {@code usertable}
 * per record. Then the cache is emptied (its maximum weight set to 0 and back), the heap measured
 * after full collections, every record read once (each read materializes it from RocksDB into the
 * cache, the path a read of an uncached entity takes), and the heap measured again.
 *
 * <p>Measured: the heap the cache gained per record (the states in the form the cache holds them,
 * encoded ({@link CachedState}), the cache's own entries and keys: what a cached record costs the
 * node; then, the cache emptied again while its states are still held, how much of it is the
 * states alone), against two baselines of the same
 * record measured in the same run: its payload (the fields' bytes) and its encoded state (what
 * the store writes in a checkpoint, {@link Codec#encodeState}). Also the cache's own estimate of a
 * state's weight (what the memory budget counts), so a representation that shrinks the heap
 * without its estimate, or the reverse, shows; beside it the estimate of the state decoded (what
 * an active actor holding it is weighed at). The heap figure is the heap's pools as the last of
 * several {@code System.gc()} left them (the launcher's ParallelGC collects fully), so it is good
 * to a few percent at tens of thousands of records; run nothing else in this JVM.
 */
@Command(
    name = "cached-size",
    mixinStandardHelpOptions = true,
    description = "Heap bytes per cached record vs its payload and its encoded state. Goal:"
        + " at most 1.5 KB for a 1 KB record (10 fields of 100 bytes).")
final class CachedStateSizeBenchmark extends Benchmark {
  /** Issue 20's goal for a 1 KB record: at most 1.5 KB of heap. */
  static final double GOAL_BYTES_PER_PAYLOAD_KILOBYTE = 1536;
  private static final int COMMITS_IN_FLIGHT = 512;
  private static final int COLLECTIONS = 4;
  private static final long DAY_MILLIS = 86_400_000L;

  @Option(names = "--records", defaultValue = "50000",
      description = "Records written, then read into the cache (default: ${DEFAULT-VALUE}).")
  int records;

  @Option(names = "--fields", defaultValue = "10",
      description = "Register keys per record (default: ${DEFAULT-VALUE}).")
  int fields;

  @Option(names = "--field-bytes", defaultValue = "100",
      description = "Bytes (ASCII letters) per field (default: ${DEFAULT-VALUE}).")
  int fieldBytes;

  @Option(names = "--seed", defaultValue = "1",
      description = "Seed of the fields' random letters (default: ${DEFAULT-VALUE}).")
  long seed;

  @Override
  BenchReport run() throws Exception {
    if (records < 1 || fields < 1 || fieldBytes < 1) {
      throw new IllegalArgumentException("--records, --fields and --field-bytes must be positive");
    }
    BenchReport report = new BenchReport("cached-size",
        "heap bytes per cached record vs its payload and its encoded state");
    report.parameter("records", records).parameter("fields", fields)
        .parameter("field_bytes", fieldBytes).parameter("seed", seed)
        .parameter("heap_max_bytes", Runtime.getRuntime().maxMemory());
    long payloadBytes = (long) fields * fieldBytes;
    try (TemporaryDirectory work = TemporaryDirectory.create("cached-size");
        ProgressBar progress = ProgressBars.start("cached-size", 2L * records, "records", 1)) {
      RuntimeSettings defaults = RuntimeSettings.forDirectory(work.resolve("data"));
      long cacheBytes = Runtime.getRuntime().maxMemory() / 2;
      // No checkpoint rounds: one would materialize and hold states of its own while the heap is
      // measured. Each record is then materialized from its one journal record.
      StorageSettings settings = RuntimeSettings.fromConfig(ConfigFactory.parseMap(Map.of(
              "troupe.storage.durability", "async",
              "troupe.storage.cache-max-weight-bytes", cacheBytes,
              "troupe.storage.checkpoint-every-operations", Integer.MAX_VALUE,
              "troupe.storage.checkpoint-journal-records", Integer.MAX_VALUE,
              "troupe.storage.checkpoint-interval-millis", DAY_MILLIS))
          .withFallback(defaults.config())).storage();
      try (RocksStore store = RocksStore.open(settings, System::currentTimeMillis)) {
        progress.setExtraMessage("writing");
        write(store, progress);
        store.resizeCache(0);
        store.resizeCache(cacheBytes);
        long emptyBytes = heapAfterCollections();
        progress.setExtraMessage("reading into the cache");
        long estimatedBytes = 0;
        long decodedEstimatedBytes = 0;
        long encodedBytes = 0;
        // The cache's own entries (what it holds, in the form it holds them: encoded), held so
        // that none can be collected before the heap is measured, whatever the cache does; the
        // array's own 4-8 bytes per record are subtracted below. Each is decoded once to check
        // it, the decoded state dropped at once (it is not what the cache holds).
        CachedState[] held = new CachedState[records];
        for (int record = 0; record < records; record++) {
          CachedState cached = store.readCached(entity(record));
          EntityState state = cached.state();
          if (state.values().size() != fields) {
            report.failure("record " + record + " read back with " + state.values().size()
                + " keys, expected " + fields);
            return report;
          }
          held[record] = cached;
          estimatedBytes += store.cacheEntryWeightBytes(entity(record));
          decodedEstimatedBytes += store.cachedWeightBytes(entity(record));
          encodedBytes += Codec.encodeState(state).length;
          progress.step();
        }
        long cachedBytes = heapAfterCollections();
        long referenceBytes = (long) records * referenceBytes();
        double perRecord = (cachedBytes - emptyBytes - referenceBytes) / (double) records;
        // The states alone (still held here), without the cache's entries and keys.
        store.resizeCache(0);
        long heldBytes = heapAfterCollections();
        store.resizeCache(cacheBytes);
        double perState = (heldBytes - emptyBytes - referenceBytes) / (double) records;
        double perEncoded = encodedBytes / (double) records;
        double perEstimate = estimatedBytes / (double) records;
        double perDecodedEstimate = decodedEstimatedBytes / (double) records;
        report.result("cached_state", "heap_bytes_per_record", perRecord)
            .result("cached_state", "state_heap_bytes_per_record", perState)
            .result("cached_state", "cache_entry_heap_bytes_per_record", perRecord - perState)
            .result("cached_state", "estimated_bytes_per_record", perEstimate)
            .result("decoded_state", "estimated_bytes_per_record", perDecodedEstimate)
            .result("encoded_state", "bytes_per_record", perEncoded)
            .result("payload", "bytes_per_record", payloadBytes);
        report.ratio("heap / payload bytes per record", perRecord, payloadBytes, null);
        report.ratio("heap / encoded state bytes per record", perRecord, perEncoded, null);
        report.ratio("cache estimate / heap bytes per record", perEstimate, perRecord, null);
        // The goal is per 1 KB of payload: 1.5 KB of heap.
        report.ratio("heap bytes per record / goal (1.5 x payload)", perRecord,
            payloadBytes * GOAL_BYTES_PER_PAYLOAD_KILOBYTE / 1024, Goal.atMost(1.0, ""));
        // Kept reachable through both heap measurements (the JIT may otherwise drop it early).
        java.lang.ref.Reference.reachabilityFence(held);
      }
    }
    return report;
  }

  private void write(RocksStore store, ProgressBar progress) throws Exception {
    SplittableRandom random = new SplittableRandom(seed);
    List<CompletableFuture<?>> inFlight = new ArrayList<>();
    for (int record = 0; record < records; record++) {
      List<Operation> operations = new ArrayList<>(fields);
      for (int field = 0; field < fields; field++) {
        byte[] letters = new byte[fieldBytes];
        for (int index = 0; index < fieldBytes; index++) {
          letters[index] = (byte) ('a' + random.nextInt(26));
        }
        operations.add(new Operation.Assign("field" + field,
            TextNode.valueOf(new String(letters, StandardCharsets.US_ASCII))));
      }
      inFlight.add(store.commit(store.newTransactionId(),
          List.of(new EntityWrite(entity(record), operations))));
      if (inFlight.size() == COMMITS_IN_FLIGHT) {
        CompletableFuture.allOf(inFlight.toArray(CompletableFuture[]::new)).join();
        inFlight.clear();
      }
      progress.step();
    }
    CompletableFuture.allOf(inFlight.toArray(CompletableFuture[]::new)).join();
  }

  private static EntityId entity(int record) {
    return new EntityId("usertable", "user" + record);
  }

  /** One element of the array holding the states: compressed references or not. */
  private static int referenceBytes() {
    String compressed = ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
        .filter(argument -> argument.contains("UseCompressedOops")).findFirst().orElse("+");
    return compressed.contains("-UseCompressedOops") ? 8 : 4;
  }

  /**
   * The live heap after full collections: the sum, over the heap's pools, of what each held right
   * after the last collection ({@link MemoryPoolMXBean#getCollectionUsage}). Not the heap's
   * current use: between a collection and the reading other threads (the store's, the progress
   * bar's) take new allocation buffers in the young generation, megabytes that are no cached
   * state (about 130-400 bytes per record at 50,000 records, varying from run to run).
   */
  private static long heapAfterCollections() throws InterruptedException {
    for (int collection = 0; collection < COLLECTIONS; collection++) {
      System.gc();
      Thread.sleep(50);
    }
    long used = 0;
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      if (pool.getType() == MemoryType.HEAP) {
        MemoryUsage afterCollection = pool.getCollectionUsage();
        used += afterCollection != null ? afterCollection.getUsed() : pool.getUsage().getUsed();
      }
    }
    return used;
  }
}
