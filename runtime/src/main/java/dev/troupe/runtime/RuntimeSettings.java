package dev.troupe.runtime;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.troupe.storage.Durability;
import dev.troupe.storage.StorageSettings;
import dev.troupe.txn.TurnLimits;
import java.nio.file.Path;
import java.util.Locale;

/**
 * The engine's settings, parsed once from the {@code troupe} section of the configuration
 * (reference.conf documents each one). Immutable.
 */
public record RuntimeSettings(
    StorageSettings storage,
    TurnLimits turnLimits,
    int maxEntityActors,
    long passivateAfterIdleMillis,
    long turnTimeoutMillis,
    int materializationThreads,
    int materializationQueueLimit,
    long renderedStateCacheBytes,
    TransactionSettings transactions,
    Config config) {

  /**
   * The {@code troupe.transactions} settings (reference.conf documents each).
   */
  public record TransactionSettings(
      long prepareTimeoutMillis,
      int maxLockConflictRetries,
      long retryBackoffMillis,
      int maxParticipants,
      int maxOperations,
      int maxSyncDepth,
      long interactiveIdleTimeoutMillis,
      int maxInteractiveTransactions,
      int maxForwardRounds,
      int maxParticipantsWithFollowers,
      int maxReplans) {
    /** @param troupe the {@code troupe} section (forward rounds are a dependency setting) */
    static TransactionSettings fromConfig(Config troupe) {
      Config transactions = troupe.getConfig("transactions");
      int retries = transactions.getInt("max-lock-conflict-retries");
      if (retries < 0) {
        throw new IllegalArgumentException("max-lock-conflict-retries must be >= 0, was " + retries);
      }
      return new TransactionSettings(
          positiveLong(transactions, "prepare-timeout-millis"),
          retries,
          positiveLong(transactions, "retry-backoff-millis"),
          positive(transactions, "max-participants"),
          positive(transactions, "max-operations"),
          positive(transactions, "max-sync-depth"),
          positiveLong(transactions, "interactive-idle-timeout-millis"),
          positive(transactions, "max-interactive-transactions"),
          positive(troupe.getConfig("dependencies"), "max-forward-rounds"),
          positive(troupe.getConfig("dependencies"), "max-participants"),
          nonNegative(troupe.getConfig("dependencies"), "max-replans"));
    }
  }


  public static RuntimeSettings load() {
    return fromConfig(ConfigFactory.load());
  }

  /** Loads defaults with the data directory replaced; what tests and benchmarks use. */
  public static RuntimeSettings forDirectory(Path directory) {
    return fromConfig(
        ConfigFactory.parseMap(java.util.Map.of("troupe.data-directory", directory.toString()))
            .withFallback(ConfigFactory.load()));
  }

  public static RuntimeSettings fromConfig(Config config) {
    Config troupe = config.getConfig("troupe");
    Config storage = troupe.getConfig("storage");
    Config entity = troupe.getConfig("entity");
    String durability = storage.getString("durability").toUpperCase(Locale.ROOT);
    StorageSettings storageSettings =
        new StorageSettings(
            Path.of(troupe.getString("data-directory")),
            positive(storage, "partitions"),
            Durability.valueOf(durability),
            positive(storage, "group-commit-max-records"),
            positive(storage, "group-commit-queue-limit"),
            positiveLong(storage, "async-flush-interval-millis"),
            cacheMaxWeightBytes(storage),
            positive(storage, "checkpoint-every-operations"),
            positiveLong(storage, "checkpoint-interval-millis"),
            positiveLong(storage, "checkpoint-journal-records"),
            storage.getLong("history-retention-millis"),
            troupe.getInt("data-centre-id"),
            positiveLong(storage, "clock-ceiling-millis"),
            positive(storage, "checkpoint-bytes-per-operation"));
    TurnLimits limits =
        new TurnLimits(
            positive(entity, "max-keys"),
            positive(entity, "max-set-elements"),
            positive(entity, "max-in-flight-commits"),
            positive(entity, "max-queued-turns"),
            positive(entity, "max-open-transactions"),
            positive(entity, "remembered-aborts"),
            positive(troupe.getConfig("dependencies"), "max-per-key"),
            positive(troupe.getConfig("dependencies"), "max-chain-length"));
    return new RuntimeSettings(
        storageSettings,
        limits,
        positive(entity, "max-actors"),
        positiveLong(entity, "passivate-after-idle-millis"),
        positiveLong(entity, "turn-timeout-millis"),
        positive(entity, "materialization-threads"),
        positive(entity, "materialization-queue-limit"),
        positiveLong(entity, "rendered-state-cache-bytes"),
        TransactionSettings.fromConfig(troupe),
        config);
  }

  private static int nonNegative(Config config, String path) {
    int value = config.getInt(path);
    if (value < 0) {
      throw new IllegalArgumentException(path + " must be >= 0, was " + value);
    }
    return value;
  }

  private static int positive(Config config, String path) {
    int value = config.getInt(path);
    if (value <= 0) {
      throw new IllegalArgumentException(path + " must be positive, was " + value);
    }
    return value;
  }

  /**
   * {@code cache-max-weight-bytes} when positive; when 0, {@code cache-heap-percent} of the JVM's
   * maximum heap, so that the cache grows with the memory the node is given.
   */
  static long cacheMaxWeightBytes(Config storage) {
    long bytes = storage.getLong("cache-max-weight-bytes");
    if (bytes < 0) {
      throw new IllegalArgumentException("cache-max-weight-bytes must be 0 (a share of the heap)"
          + " or positive, was " + bytes);
    }
    if (bytes > 0) {
      return bytes;
    }
    int percent = storage.getInt("cache-heap-percent");
    if (percent < 1 || percent > 90) {
      throw new IllegalArgumentException("cache-heap-percent must be 1 to 90, was " + percent);
    }
    return Runtime.getRuntime().maxMemory() / 100 * percent;
  }

  private static long positiveLong(Config config, String path) {
    long value = config.getLong(path);
    if (value <= 0) {
      throw new IllegalArgumentException(path + " must be positive, was " + value);
    }
    return value;
  }
}
