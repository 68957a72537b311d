package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.runtime.RuntimeSettings;
import dev.troupe.runtime.Troupe;
import dev.troupe.runtime.TurnOutcome;
import dev.troupe.storage.RawRocksBaseline;
import dev.troupe.storage.postgres.PostgresInstance;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code troupe bench storage}: durable single-key writes through the whole engine against raw
 * RocksDB group commit.
 *
 * <p><b>Engine</b>: {@code Troupe.assign} of one register key, default settings (sync durability,
 * 4 partitions), each worker writing its own entity, so no two writers contend for an entity and
 * every write is a full turn: actor hop, evaluation, journal and index records in a synced {@code
 * WriteBatch}, cache update, reply. Every write is checked to have committed.
 *
 * <p><b>Baseline</b>: {@link RawRocksBaseline}: the same RocksDB library, write-ahead log on,
 * {@code sync=true}, each worker writing one key per synced single-put batch. RocksDB merges
 * concurrent synced writes into one log write and one fsync, so this is the best group commit the
 * disk allows at that concurrency with no engine at all around it.
 *
 * <p>Fair because both run the same closed loop (same workers, each waiting for durability before
 * its next write), the same value size, on the same disk, one at a time, alternating A B A B on
 * fresh directories. Goal: engine throughput at least 0.7 of the baseline's.
 */
@Command(
    name = "storage",
    mixinStandardHelpOptions = true,
    description = "Durable single-key writes: the engine (Troupe.assign) vs raw RocksDB synced "
        + "writes at the same concurrency. Goal: engine / raw throughput >= 0.7.")
final class StorageBenchmark extends Benchmark {
  static final Goal GOAL = Goal.atLeast(0.7);

  @Option(names = "--threads", defaultValue = "64",
      description = "Concurrent writers, each waiting for its acknowledgement"
          + " (default: ${DEFAULT-VALUE}).")
  int threads;

  @Mixin AlternationOptions alternation;

  @Option(names = "--value-bytes", defaultValue = "100",
      description = "Bytes per written value (default: ${DEFAULT-VALUE}).")
  int valueBytes;

  @Option(names = "--postgres",
      description = "Also run the engine with its store on PostgreSQL (a throwaway local server,"
          + " page checksums on, fsync and synchronous_commit on; troupe.storage.backend ="
          + " postgres) and report engine_postgres / engine (no goal).")
  boolean postgres;

  @Override
  BenchReport run() throws Exception {
    if (valueBytes < 1) {
      throw new IllegalArgumentException("--value-bytes must be positive");
    }
    AlternatingComparison.Settings settings = alternation.settings(threads);
    BenchReport report = new BenchReport("storage",
        "durable single-key writes, engine (Troupe.assign) vs raw RocksDB synced write batches");
    settings.describe(report);
    report.parameter("value_bytes", valueBytes);
    String value = "v".repeat(valueBytes);
    PostgresInstance database = postgres ? PostgresInstance.startForTroupe(256) : null;
    try (TemporaryDirectory work = TemporaryDirectory.create("storage")) {
      List<AlternatingComparison.Contender> contenders = new java.util.ArrayList<>(List.of(
          new EngineWrites(work, Json.NODES.textNode(value), null),
          new RawWrites(work, value.getBytes(StandardCharsets.UTF_8))));
      if (database != null) {
        contenders.add(new EngineWrites(work, Json.NODES.textNode(value), database));
      }
      Map<String, AlternatingComparison.Outcome> outcomes =
          AlternatingComparison.run("storage", settings, contenders, report);
      AlternatingComparison.ratio(report, "engine / raw_rocksdb throughput",
          outcomes.get(EngineWrites.NAME), outcomes.get(RawWrites.NAME), 1, GOAL);
      if (database != null) {
        AlternatingComparison.ratio(report, "engine_postgres / engine throughput",
            outcomes.get(EngineWrites.POSTGRES_NAME), outcomes.get(EngineWrites.NAME), 1, null);
      }
    } finally {
      if (database != null) {
        database.close();
      }
    }
    return report;
  }

  /**
   * Each worker assigns one key of its own entity through the engine; a fresh engine per round,
   * on RocksDB, or on a fresh database of {@code postgres} when it is given.
   */
  private static final class EngineWrites implements AlternatingComparison.Contender {
    static final String NAME = "engine";
    static final String POSTGRES_NAME = "engine_postgres";

    private final TemporaryDirectory work;
    private final JsonNode value;
    private final PostgresInstance postgres;
    private int rounds;

    EngineWrites(TemporaryDirectory work, JsonNode value, PostgresInstance postgres) {
      this.work = work;
      this.value = value;
      this.postgres = postgres;
    }

    @Override
    public String name() {
      return postgres == null ? NAME : POSTGRES_NAME;
    }

    private RuntimeSettings settings(Path directory) {
      if (postgres == null) {
        return RuntimeSettings.forDirectory(directory);
      }
      String database = "bench_" + rounds;
      postgres.createDatabase(database);
      return RuntimeSettings.fromConfig(ConfigFactory.parseMap(Map.of(
              "troupe.data-directory", directory.toString(),
              "troupe.storage.backend", "postgres",
              "troupe.storage.postgres.jdbc-url", postgres.jdbcUrl(database)))
          .withFallback(ConfigFactory.load()));
    }

    @Override
    public AlternatingComparison.Session open(int workers) {
      EntityId[] entities = new EntityId[workers];
      for (int worker = 0; worker < workers; worker++) {
        entities[worker] = new EntityId("Bench", "writer-" + worker);
      }
      Path directory = work.resolve(name() + "-" + ++rounds);
      Troupe troupe = Troupe.open(settings(directory));
      return new AlternatingComparison.Session() {
        @Override
        public void perform(int worker, long sequence) {
          TurnOutcome outcome = troupe.assign(entities[worker], "field0", value).join();
          if (!outcome.changed()) {
            throw new BenchmarkException("the engine acknowledged a write that wrote nothing");
          }
        }

        @Override
        public void close() {
          troupe.close();
          TemporaryDirectory.deleteRecursively(directory);
        }
      };
    }
  }

  /** Each worker puts a new key per synced single-put batch; a fresh database per round. */
  private static final class RawWrites implements AlternatingComparison.Contender {
    static final String NAME = "raw_rocksdb";

    private final TemporaryDirectory work;
    private final byte[] value;
    private int rounds;

    RawWrites(TemporaryDirectory work, byte[] value) {
      this.work = work;
      this.value = value;
    }

    @Override
    public String name() {
      return NAME;
    }

    @Override
    public AlternatingComparison.Session open(int workers) {
      Path directory = work.resolve(NAME + "-" + ++rounds);
      RawRocksBaseline database = RawRocksBaseline.open(directory);
      return new AlternatingComparison.Session() {
        @Override
        public void perform(int worker, long sequence) {
          byte[] key = ("writer-" + worker + "-" + sequence).getBytes(StandardCharsets.UTF_8);
          database.putSynced(key, value);
        }

        @Override
        public void close() {
          database.close();
          TemporaryDirectory.deleteRecursively(directory);
        }
      };
    }
  }
}
