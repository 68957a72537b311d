package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.TextNode;
import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityLocator;
import dev.troupe.runtime.RuntimeSettings;
import dev.troupe.runtime.Troupe;
import dev.troupe.storage.postgres.PostgresInstance;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import me.tongfei.progressbar.ProgressBar;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code troupe bench spread} (issue 18): how evenly the members of a data centre hold its data in
 * memory after many records, the "entities and heap per node after loading 1 M records over
 * 3 nodes (goal max/min at most 1.2)".
 *
 * <p><b>How the records get there.</b> Through the cluster, one request per record, loading ran at
 * 127 records/s on this machine (a write that lands on another member takes a hop, and each
 * request waits for its durable commit): a million records would take two hours. The members share
 * one store, so the records are loaded straight into it first: one engine embedded in this JVM on
 * the same PostgreSQL database, the same partition count, writing every record with the same
 * {@code PATCH} turn the REST API runs ({@link Troupe#patch}), thousands in flight so that each
 * partition's group commit carries many (the store's format and partition hash are the members',
 * because it is the same code). It is closed, and only then do the members start on the database:
 * what they serve is what a cluster loaded through its own API would have stored. Then every
 * record is read once through the member that hosts it (the placement from {@code GET
 * /v1/cluster}, the partition from {@link EntityLocator#partitionOf(EntityId, int)}), many client
 * threads at once, so each member materializes its share from the store into its cache; every read
 * must answer 200 with the record, so the load is checked too.
 *
 * <p><b>What it reports</b> ({@link MemorySpread}): per member, the partitions it hosts, the
 * records stored in them (counted from the placement hash of every key), entity actors, the object
 * cache's weight and the cap the memory budget sets it, and the heap after a forced full
 * collection; max/min of each. The members' heaps and memory budget must leave the cache room for
 * every record, else the cache's cap, not the spread, sets its weight (the cap is reported).
 */
@Command(
    name = "spread",
    mixinStandardHelpOptions = true,
    description = "Memory spread of a data centre: load many records straight into the shared"
        + " PostgreSQL store, start the members, read every record through its owner, and report"
        + " per member partitions, records, actors, cache and heap after a full collection,"
        + " with max/min.")
final class MemorySpreadBenchmark extends Benchmark {
  private static final Duration START_TIMEOUT = Duration.ofSeconds(240);
  private static final String TABLE = "usertable";
  private static final long RETRY_AFTER_OVERLOADED_MILLIS = 100;
  private static final int MAX_ATTEMPTS = 100;

  @Option(names = "--records", defaultValue = "1000000",
      description = "Records loaded (default: ${DEFAULT-VALUE}).")
  int records;

  @Option(names = "--field-count", defaultValue = "10",
      description = "String fields per record (YCSB's default: ${DEFAULT-VALUE}).")
  int fieldCount;

  @Option(names = "--field-length", defaultValue = "100",
      description = "Characters per field (YCSB's default: ${DEFAULT-VALUE}).")
  int fieldLength;

  @Option(names = "--nodes", defaultValue = "3",
      description = "Members of the data centre (default: ${DEFAULT-VALUE}).")
  int nodes;

  @Option(names = "--partitions", defaultValue = "12",
      description = "Storage partitions; a multiple of --nodes spreads them evenly"
          + " (default: ${DEFAULT-VALUE}).")
  int partitions;

  @Option(names = "--heap", defaultValue = "3g",
      description = "Maximum heap of every member (default: ${DEFAULT-VALUE}).")
  String heap;

  @Option(names = "--memory-budget-heap-percent", defaultValue = "60",
      description = "troupe.memory.budget-heap-percent of every member, so that the cache has"
          + " room for its share of the records (default: ${DEFAULT-VALUE}).")
  int budgetHeapPercent;

  @Option(names = "--load-in-flight", defaultValue = "4096",
      description = "Writes in flight while loading (default: ${DEFAULT-VALUE}).")
  int loadInFlight;

  @Option(names = "--read-threads", defaultValue = "32",
      description = "Client threads reading every record through its owner"
          + " (default: ${DEFAULT-VALUE}).")
  int readThreads;

  @Option(names = "--postgres-shared-buffers-mb", defaultValue = "512",
      description = "PostgreSQL shared_buffers in MB (default: ${DEFAULT-VALUE}).")
  int sharedBuffersMegabytes;

  @Option(names = "--set", paramLabel = "PATH=VALUE",
      description = "A setting for every member (repeatable).")
  List<String> settings = new ArrayList<>();

  @Override
  BenchReport run() throws Exception {
    if (records < 1 || nodes < 2 || partitions < nodes || fieldCount < 1 || fieldLength < 1
        || loadInFlight < 1 || readThreads < 1) {
      throw new IllegalArgumentException("--records, --field-count, --field-length,"
          + " --load-in-flight and --read-threads must be positive, --nodes at least 2 and"
          + " --partitions at least --nodes");
    }
    BenchReport report = new BenchReport("spread", "Memory spread of a data centre of " + nodes
        + " nodes on one PostgreSQL after " + records + " records");
    report.parameter("records", records)
        .parameter("record_bytes", fieldCount * fieldLength)
        .parameter("nodes", nodes)
        .parameter("partitions", partitions)
        .parameter("heap", heap)
        .parameter("memory_budget_heap_percent", budgetHeapPercent)
        .parameter("load_in_flight", loadInFlight)
        .parameter("read_threads", readThreads)
        .parameter("settings", settings)
        .parameter("machine", Machine.describe())
        .parameter("load_average_at_start", ClusterBenchmark.loadAverage());
    long[] recordsPerPartition = new long[partitions];
    for (int i = 0; i < records; i++) {
      recordsPerPartition[EntityLocator.partitionOf(entity(i), partitions)]++;
    }
    try (TemporaryDirectory work = TemporaryDirectory.create("spread");
        PostgresInstance postgres = PostgresInstance.startForTroupe(sharedBuffersMegabytes)) {
      postgres.createDatabase("spread");
      String jdbcUrl = postgres.jdbcUrl("spread");
      load(report, work, jdbcUrl);

      List<String> memberSettings = new ArrayList<>(List.of(
          "troupe.storage.partitions=" + partitions,
          "troupe.storage.postgres.maximum-pool-size=" + (3 * partitions + 16),
          "troupe.memory.budget-heap-percent=" + budgetHeapPercent));
      memberSettings.addAll(settings);
      try (LocalCluster cluster = LocalCluster.start(nodes, work.resolve("cluster"), jdbcUrl,
          List.of("-Xmx" + heap), memberSettings)) {
        long startedAt = System.nanoTime();
        cluster.awaitHealthy(START_TIMEOUT);
        Map<Integer, Integer> placement = cluster.awaitPlacement(partitions, true, START_TIMEOUT);
        report.result("cluster", "seconds_to_placement", (System.nanoTime() - startedAt) / 1e9);
        Map<Integer, Long> recordsPerMember = new LinkedHashMap<>();
        placement.forEach((partition, node) ->
            recordsPerMember.merge(node, recordsPerPartition[partition], Long::sum));
        readThroughOwners(report, cluster, placement);
        List<TroupeProcess> members = new ArrayList<>();
        for (int i = 0; i < nodes; i++) {
          members.add(cluster.member(i));
        }
        MemorySpread.measure(report, members, recordsPerMember);
        report.parameter("placement", placement);
      }
    }
    report.parameter("load_average_at_end", ClusterBenchmark.loadAverage());
    return report;
  }

  /** Record {@code index}: an entity of the YCSB table. */
  private static EntityId entity(int index) {
    return new EntityId(TABLE, "user" + index);
  }

  /** Record {@code index}'s fields: deterministic strings, so every record weighs the same. */
  private Map<String, JsonNode> fields(int index) {
    Map<String, JsonNode> fields = new HashMap<>();
    String filler = Integer.toString(index);
    for (int field = 0; field < fieldCount; field++) {
      StringBuilder value = new StringBuilder(fieldLength);
      while (value.length() < fieldLength) {
        value.append(filler).append('-').append(field).append(' ');
      }
      value.setLength(fieldLength);
      fields.put("field" + field, TextNode.valueOf(value.toString()));
    }
    return fields;
  }

  /**
   * Writes every record through one engine embedded in this JVM on the members' database (see the
   * class comment), then closes it: every write acknowledged is durable in PostgreSQL.
   */
  private void load(BenchReport report, TemporaryDirectory work, String jdbcUrl)
      throws Exception {
    RuntimeSettings defaults = RuntimeSettings.forDirectory(work.resolve("loader"));
    RuntimeSettings loaderSettings = RuntimeSettings.fromConfig(ConfigFactory.parseMap(Map.of(
            "troupe.storage.backend", "postgres",
            "troupe.storage.postgres.jdbc-url", jdbcUrl,
            "troupe.storage.postgres.maximum-pool-size", 3 * partitions + 16,
            "troupe.storage.partitions", partitions))
        .withFallback(defaults.config()));
    long start = System.nanoTime();
    try (Troupe loader = Troupe.open(loaderSettings);
        ProgressBar progress = ProgressBars.start("load", records, "records", 1)) {
      BoundedSubmission.run(records, loadInFlight, progress,
          index -> loader.patch(entity(index), fields(index)));
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    report.result("load", "seconds", seconds);
    report.result("load", "records_per_second", records / seconds);
  }

  /**
   * Reads every record once through the member hosting its partition, {@link #readThreads} client
   * threads each with a connection to every member; each answer must be 200 with the record's
   * first field.
   */
  private void readThroughOwners(BenchReport report, LocalCluster cluster,
      Map<Integer, Integer> placement) throws Exception {
    AtomicLong next = new AtomicLong();
    AtomicLong failures = new AtomicLong();
    AtomicLong refused = new AtomicLong();
    AtomicReference<String> firstFailure = new AtomicReference<>();
    AtomicLongArray readsPerMember = new AtomicLongArray(nodes);
    long start = System.nanoTime();
    try (ProgressBar progress = ProgressBars.start("read through owners", records, "records",
        1)) {
      List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < readThreads; t++) {
        threads.add(Thread.ofPlatform().start(() -> {
          HttpConnection[] connections = new HttpConnection[nodes];
          for (int i = 0; i < nodes; i++) {
            connections[i] = cluster.member(i).connect();
          }
          try {
            for (long index = next.getAndIncrement(); index < records;
                index = next.getAndIncrement()) {
              EntityId entity = entity((int) index);
              int member = placement.get(EntityLocator.partitionOf(entity, partitions)) - 1;
              String expected = fields((int) index).get("field0").asText();
              try {
                HttpConnection.Response answer = connections[member].get(
                    "/v1/entities/" + TABLE + "/" + entity.id());
                // A member's admission refuses reads past what it serves without queueing:
                // the client waits and asks again, as a well-behaved one does.
                for (int attempt = 1; answer.status() == 429 && attempt < MAX_ATTEMPTS;
                    attempt++) {
                  refused.incrementAndGet();
                  Thread.sleep(RETRY_AFTER_OVERLOADED_MILLIS);
                  answer = connections[member].get("/v1/entities/" + TABLE + "/" + entity.id());
                }
                String text = new String(answer.body(), StandardCharsets.UTF_8);
                if (answer.status() != 200 || !text.contains(expected)) {
                  failures.incrementAndGet();
                  firstFailure.compareAndSet(null, entity + ": " + answer.status() + " " + text);
                }
              } catch (java.io.IOException | InterruptedException failed) {
                failures.incrementAndGet();
                firstFailure.compareAndSet(null, entity + ": " + failed);
              }
              readsPerMember.incrementAndGet(member);
              progress.step();
            }
          } finally {
            for (HttpConnection connection : connections) {
              connection.close();
            }
          }
        }));
      }
      for (Thread thread : threads) {
        thread.join();
      }
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    report.result("read", "seconds", seconds);
    report.result("read", "records_per_second", records / seconds);
    report.result("read", "failed", failures.get());
    report.result("read", "refused_overloaded_and_retried", refused.get());
    for (int i = 0; i < nodes; i++) {
      report.result("read/member-" + (i + 1), "reads", readsPerMember.get(i));
    }
    if (failures.get() > 0) {
      report.failure(failures.get() + " of " + records + " reads through the owners failed;"
          + " first: " + firstFailure.get() + cluster.logTails());
    }
  }
}
