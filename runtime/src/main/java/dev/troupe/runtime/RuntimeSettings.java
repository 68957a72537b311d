package dev.troupe.runtime;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.troupe.model.ValueLimits;
import dev.troupe.model.time.TransactionIds;
import dev.troupe.runtime.cluster.ClusterSettings;
import dev.troupe.runtime.replication.ReplicationSettings;
import dev.troupe.storage.Durability;
import dev.troupe.storage.RocksDiskSettings;
import dev.troupe.storage.StorageSettings;
import dev.troupe.txn.entity.MemoryBudgetCore;
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
    MemorySettings memory,
    long passivateAfterIdleMillis,
    long passivateOnceUsedAfterMillis,
    int rememberedOnceUsedEntities,
    long turnTimeoutMillis,
    int materializationThreads,
    int materializationQueueLimit,
    TransactionSettings transactions,
    TypeSettings types,
    TransportSettings transport,
    ReplicationSettings replication,
    ClusterSettings cluster,
    ListingSettings listing,
    Config config) {

  /**
   * One partition's share of {@code remembered-once-used-entities} (each partition's registry
   * remembers its own): at least one, or 0 when the node remembers none.
   */
  public int rememberedOnceUsedEntitiesPerPartition() {
    return rememberedOnceUsedEntities == 0
        ? 0 : Math.max(1, rememberedOnceUsedEntities / storage.partitions());
  }

  /**
   * The {@code troupe.listing} settings (reference.conf documents each): the bounds of one page of
   * a type's entities.
   *
   * @param defaultLimit entities in a page when the request names no limit
   * @param maxLimit most entities a request may ask for
   * @param maxExamined most listing keys one page reads (deleted entities' included)
   * @param concurrentReads most candidates of one page read at once
   */
  public record ListingSettings(int defaultLimit, int maxLimit, int maxExamined,
      int concurrentReads) {
    public ListingSettings {
      if (defaultLimit < 1 || maxLimit < defaultLimit || maxExamined < maxLimit
          || concurrentReads < 1) {
        throw new IllegalArgumentException("troupe.listing: need 1 <= default-limit <= max-limit"
            + " <= max-examined and concurrent-reads >= 1, was " + defaultLimit + ", " + maxLimit
            + ", " + maxExamined + ", " + concurrentReads);
      }
    }

    /** Parses {@code troupe.listing} of the {@code troupe} section. */
    public static ListingSettings fromConfig(Config troupe) {
      Config listing = troupe.getConfig("listing");
      return new ListingSettings(listing.getInt("default-limit"), listing.getInt("max-limit"),
          listing.getInt("max-examined"), listing.getInt("concurrent-reads"));
    }
  }

  /**
   * The {@code troupe.transport} settings (reference.conf documents each): how the node's {@link
   * LocalTransport} delivers the messages between cores.
   *
   * @param encodeLocalMessages encode and decode every envelope delivered in process with {@code
   *     WireCodec}, as a transport between nodes would (tests prove the formats carry the path)
   */
  /**
   * @param routeEntityMessages send every message to an entity through the transport, even to an
   *     entity of this node (the one-node evidence of the remote path; the cluster uses the path
   *     for other nodes' entities whatever this says)
   * @param maxPendingReplies turns and steps sent through the transport awaiting their answer, at
   *     most
   * @param pendingReplyTimeoutMillis how long one of them waits for its answer
   * @param rehomingWaitMillis how long one is held, unsent, while its partition has no live home
   *     (its member unreachable, down or just removed); then it is refused {@code unavailable}
   * @param rehomingProbeIntervalMillis how often a moving partition with held turns is probed
   *     (a read whose answer names its new home)
   * @param readResendMillis how long a read sent through the transport waits for its answer
   *     before it is sent again (a read is safe to send twice; sharding drops messages it buffered
   *     for a partition being handed off), within its pending-reply timeout
   * @param maxReroutes how many times one turn or read refused {@code not_owner} is sent again
   *     to the partition's new home
   */
  public record TransportSettings(boolean encodeLocalMessages, boolean routeEntityMessages,
      int maxPendingReplies, long pendingReplyTimeoutMillis, long rehomingWaitMillis,
      long rehomingProbeIntervalMillis, long readResendMillis, int maxReroutes) {
    static TransportSettings fromConfig(Config troupe) {
      Config transport = troupe.getConfig("transport");
      TransportSettings settings = new TransportSettings(
          transport.getBoolean("encode-local-messages"),
          transport.getBoolean("route-entity-messages"),
          transport.getInt("max-pending-replies"),
          transport.getLong("pending-reply-timeout-millis"),
          transport.getLong("rehoming-wait-millis"),
          transport.getLong("rehoming-probe-interval-millis"),
          transport.getLong("read-resend-millis"),
          transport.getInt("max-reroutes"));
      if (settings.maxPendingReplies() < 1 || settings.pendingReplyTimeoutMillis() < 1
          || settings.rehomingWaitMillis() < 1 || settings.rehomingProbeIntervalMillis() < 1
          || settings.readResendMillis() < 1 || settings.maxReroutes() < 0) {
        throw new IllegalArgumentException("troupe.transport.max-pending-replies,"
            + " pending-reply-timeout-millis, rehoming-wait-millis,"
            + " rehoming-probe-interval-millis and read-resend-millis must be positive,"
            + " max-reroutes at least 0");
      }
      return settings;
    }
  }

  /**
   * The {@code troupe.types} settings (reference.conf documents each): the bounds of a
   * redeclaration's check and of its migration.
   */
  public record TypeSettings(int maxEntitiesChecked, int migrationBatchEntities,
      int maxQueuedRedeclarations) {
    static TypeSettings fromConfig(Config troupe) {
      Config types = troupe.getConfig("types");
      return new TypeSettings(positive(types, "max-entities-checked"),
          positive(types, "migration-batch-entities"),
          positive(types, "max-queued-redeclarations"));
    }
  }

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
      int maxReplans,
      long decisionResendIntervalMillis,
      long inDoubtQueryIntervalMillis,
      int rememberedCommits) {
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
          nonNegative(troupe.getConfig("dependencies"), "max-replans"),
          positiveLong(transactions, "decision-resend-interval-millis"),
          positiveLong(transactions, "in-doubt-query-interval-millis"),
          nonNegative(transactions, "remembered-commits"));
    }

    /** The participant side's bounds over a network, for every entity core. */
    public dev.troupe.txn.entity.EntityTurnCore.ParticipantLimits participantLimits() {
      return new dev.troupe.txn.entity.EntityTurnCore.ParticipantLimits(inDoubtQueryIntervalMillis,
          rememberedCommits);
    }
  }


  /**
   * The {@code troupe.memory} settings with the absolute caps of other sections (reference.conf
   * documents each), and the heap they were derived from.
   *
   * @param maxHeapBytes the JVM's maximum heap ({@code Runtime.maxMemory()}) when parsed
   * @param budgetBytes {@code budget-heap-percent} of it
   * @param maximumActorsCap {@code troupe.entity.max-actors}; 0 for no cap
   * @param cacheCapBytes {@code troupe.storage.cache-max-weight-bytes}; 0 for no cap
   * @param renderedStatesCapBytes {@code troupe.entity.rendered-state-cache-bytes}; 0 for no cap
   */
  public record MemorySettings(
      long maxHeapBytes,
      long budgetBytes,
      int inFlightBudgetPercent,
      int renderedStatesBudgetPercent,
      int actorBudgetPercent,
      long actorOverheadBytes,
      int maximumActorsCap,
      long cacheCapBytes,
      long renderedStatesCapBytes,
      int shedAboveOldGenerationPercent,
      int refuseAboveOldGenerationPercent,
      int resumeBelowOldGenerationPercent,
      long checkIntervalMillis,
      long collectAfterMillis) {

    static MemorySettings fromConfig(Config troupe, long maxHeapBytes) {
      Config memory = troupe.getConfig("memory");
      int budgetPercent = percent(memory, "budget-heap-percent", 1, 90);
      int inFlight = percent(memory, "in-flight-budget-percent", 0, 50);
      int rendered = percent(memory, "rendered-states-budget-percent", 0, 50);
      if (inFlight + rendered >= 90) {
        throw new IllegalArgumentException("in-flight-budget-percent plus"
            + " rendered-states-budget-percent must leave at least 10% of the budget to entity"
            + " states, were " + inFlight + " and " + rendered);
      }
      int resume = percent(memory, "resume-below-old-generation-percent", 1, 99);
      int shed = percent(memory, "shed-above-old-generation-percent", 1, 99);
      int refuse = percent(memory, "refuse-above-old-generation-percent", 1, 99);
      if (!(resume <= shed && shed <= refuse)) {
        throw new IllegalArgumentException("memory marks must satisfy resume-below (" + resume
            + ") <= shed-above (" + shed + ") <= refuse-above (" + refuse + ")");
      }
      return new MemorySettings(
          maxHeapBytes,
          maxHeapBytes / 100 * budgetPercent,
          inFlight,
          rendered,
          percent(memory, "actor-budget-percent", 1, 99),
          positiveLong(memory, "actor-overhead-bytes"),
          nonNegative(troupe.getConfig("entity"), "max-actors"),
          nonNegativeLong(troupe.getConfig("storage"), "cache-max-weight-bytes"),
          nonNegativeLong(troupe.getConfig("entity"), "rendered-state-cache-bytes"),
          shed,
          refuse,
          resume,
          positiveLong(memory, "check-interval-millis"),
          positiveLong(memory, "collect-after-millis"));
    }

    /** The rendered-state memo's part of the budget, within its cap. */
    public long renderedStatesBytes() {
      long part = budgetBytes / 100 * renderedStatesBudgetPercent;
      return renderedStatesCapBytes > 0 ? Math.min(part, renderedStatesCapBytes) : part;
    }

    /**
     * The core's limits, with the marks taken on {@code oldGenerationBytes}: the space where what
     * survives collections lives, two thirds of the heap by default under G1, ParallelGC and
     * SerialGC alike ({@link MemoryBudgetCore#markedSpaceBytes}).
     */
    public MemoryBudgetCore.Limits limits(long oldGenerationBytes) {
      return new MemoryBudgetCore.Limits(
          budgetBytes,
          budgetBytes / 100 * inFlightBudgetPercent,
          renderedStatesBytes(),
          actorBudgetPercent,
          actorOverheadBytes,
          maximumActorsCap,
          cacheCapBytes,
          oldGenerationBytes / 100 * shedAboveOldGenerationPercent,
          oldGenerationBytes / 100 * refuseAboveOldGenerationPercent,
          oldGenerationBytes / 100 * resumeBelowOldGenerationPercent,
          collectAfterMillis);
    }

    /** The split before anything is measured (the marks do not enter it). */
    public MemoryBudgetCore.Decision initialSplit() {
      return MemoryBudgetCore.initial(limits(maxHeapBytes));
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

  /** {@code troupe.node.id}, in 0..63 (it is carried in the low bits of every timestamp). */
  private static int nodeId(Config troupe) {
    int value = troupe.getInt("node.id");
    if (!TransactionIds.isValidNodeId(value)) {
      throw new IllegalArgumentException(
          "troupe.node.id must be in 0.." + TransactionIds.MAX_NODE_ID + ", was " + value);
    }
    return value;
  }

  public static RuntimeSettings fromConfig(Config config) {
    Config troupe = config.getConfig("troupe");
    Config storage = troupe.getConfig("storage");
    Config entity = troupe.getConfig("entity");
    MemorySettings memory = MemorySettings.fromConfig(troupe, Runtime.getRuntime().maxMemory());
    ReplicationSettings replication = ReplicationSettings.fromConfig(troupe);
    // A named DC's commits carry the id derived from its name, the same in every DC.
    int dataCentreId = replication.enabled()
        ? replication.dataCentreId() : troupe.getInt("data-centre-id");
    String durability = storage.getString("durability").toUpperCase(Locale.ROOT);
    StorageSettings storageSettings =
        new StorageSettings(
            Path.of(troupe.getString("data-directory")),
            positive(storage, "partitions"),
            Durability.valueOf(durability),
            positive(storage, "group-commit-max-records"),
            positive(storage, "group-commit-queue-limit"),
            positiveLong(storage, "async-flush-interval-millis"),
            memory.initialSplit().cacheMaximumBytes(),
            positive(storage, "checkpoint-every-operations"),
            positiveLong(storage, "checkpoint-interval-millis"),
            positiveLong(storage, "checkpoint-journal-records"),
            storage.getLong("history-retention-millis"),
            dataCentreId,
            positiveLong(storage, "clock-ceiling-millis"),
            positive(storage, "checkpoint-bytes-per-operation"),
            nodeId(troupe),
            // Every commit also writes the replication log: a named DC ships it, and every node
            // delivers its causal messages from it (an unnamed one under origin 0).
            true);
    storageSettings = storageSettings.withRocksDisk(rocksDisk(storage.getConfig("rocksdb")))
        .withMaintenanceYieldMillis(storage.getLong("maintenance-yield-millis"))
        .withMaintenanceSliceMaxMillis(storage.getLong("maintenance-slice-max-millis"));
    ClusterSettings cluster = cluster(troupe, replication);
    if (cluster.enabled()) {
      // A member writes only the partitions sharding gave it, each fenced by its owner epoch in
      // the shared store (docs/design/cluster.md).
      storageSettings =
          storageSettings.withPartitionOwnership(dev.troupe.storage.PartitionOwnership.ACQUIRED);
    }
    Config valueLimits = troupe.getConfig("limits");
    TurnLimits limits =
        new TurnLimits(
            positive(valueLimits, "max-keys-per-entity"),
            positive(valueLimits, "max-set-elements"),
            positive(entity, "max-in-flight-commits"),
            positive(entity, "max-queued-turns"),
            positive(entity, "max-open-transactions"),
            positive(entity, "remembered-aborts"),
            positive(troupe.getConfig("dependencies"), "max-per-key"),
            positive(troupe.getConfig("dependencies"), "max-chain-length"),
            valueLimits(valueLimits));
    return new RuntimeSettings(
        storageSettings,
        limits,
        memory,
        positiveLong(entity, "passivate-after-idle-millis"),
        nonNegativeLong(entity, "passivate-once-used-after-millis"),
        nonNegative(entity, "remembered-once-used-entities"),
        positiveLong(entity, "turn-timeout-millis"),
        positive(entity, "materialization-threads"),
        positive(entity, "materialization-queue-limit"),
        TransactionSettings.fromConfig(troupe),
        TypeSettings.fromConfig(troupe),
        TransportSettings.fromConfig(troupe),
        replication,
        cluster,
        ListingSettings.fromConfig(troupe),
        config);
  }

  /** {@code troupe.storage.rocksdb}: how the embedded RocksDB reads data larger than memory. */
  static RocksDiskSettings rocksDisk(Config rocksdb) {
    return RocksDiskSettings.of(
        rocksDbBytes(rocksdb, "block-cache-bytes", "0 (automatic) or a positive size in bytes"
            + " (e.g. 512M)"),
        rocksdb.getInt("bloom-bits-per-key"),
        rocksdb.getInt("bloom-prefix-bytes"),
        rocksdb.getBoolean("cache-index-and-filter-blocks"),
        rocksDbBytes(rocksdb, "journal-blob-min-bytes", "0 (no blob files) or a size in bytes"
            + " (e.g. 256)"));
  }

  /** A size setting of {@code troupe.storage.rocksdb}; a value that is no size is refused. */
  private static long rocksDbBytes(Config rocksdb, String name, String expected) {
    try {
      return rocksdb.getBytes(name);
    } catch (com.typesafe.config.ConfigException.BadValue e) {
      throw new IllegalArgumentException("troupe.storage.rocksdb." + name + " must be " + expected
          + ": " + e.getMessage(), e);
    }
  }

  /**
   * {@code troupe.cluster}; refuses a cluster that would also replicate to other DCs (a DC of
   * several nodes replicating is not built yet: issue 18 leaves it out).
   */
  private static ClusterSettings cluster(Config troupe, ReplicationSettings replication) {
    ClusterSettings cluster = ClusterSettings.fromConfig(troupe);
    if (cluster.enabled() && !replication.peerNames().isEmpty()) {
      throw new IllegalArgumentException("troupe.cluster.enabled with replication peers"
          + " (troupe.dc.peers, --peer): a data centre of several nodes does not replicate to"
          + " other data centres yet; run it without peers, or one node per data centre");
    }
    if (cluster.enabled() && !"postgres".equalsIgnoreCase(
        troupe.getConfig("storage").getString("backend"))) {
      throw new IllegalArgumentException("troupe.cluster.enabled needs the shared store"
          + " (troupe.storage.backend = postgres, serve --storage postgres --jdbc-url URL): the"
          + " members of a data centre share one database, and a partition that moves to another"
          + " member must find its data there");
    }
    return cluster;
  }

  /** {@code troupe.limits}: the limits on one value, requested or computed ({@link ValueLimits}). */
  public static ValueLimits valueLimits(Config limits) {
    return new ValueLimits(
        positive(limits, "max-value-bytes"),
        positive(limits, "max-nesting-depth"),
        positive(limits, "max-string-length"),
        positiveLong(limits, "max-evaluation-string-characters"),
        positive(limits, "max-evaluation-collection-elements"));
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

  private static int percent(Config config, String path, int least, int most) {
    int value = config.getInt(path);
    if (value < least || value > most) {
      throw new IllegalArgumentException(
          path + " must be " + least + " to " + most + " (percent), was " + value);
    }
    return value;
  }

  private static long nonNegativeLong(Config config, String path) {
    long value = config.getLong(path);
    if (value < 0) {
      throw new IllegalArgumentException(path + " must be >= 0 (0: derived from the memory"
          + " budget), was " + value);
    }
    return value;
  }

  private static long positiveLong(Config config, String path) {
    long value = config.getLong(path);
    if (value <= 0) {
      throw new IllegalArgumentException(path + " must be positive, was " + value);
    }
    return value;
  }
}
