package dev.troupe.server.cli;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.runtime.RuntimeSettings;
import dev.troupe.runtime.StorageBackend;
import dev.troupe.runtime.Troupe;
import dev.troupe.server.http.HttpSettings;
import dev.troupe.server.http.TroupeServer;
import dev.troupe.server.replication.DataCentreReplication;
import dev.troupe.server.logging.LogFormat;
import dev.troupe.server.replication.ReplicationServerSettings;
import dev.troupe.storage.CorruptDataException;
import java.io.File;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import dev.troupe.storage.systemofrecord.PostgresExporter;
import dev.troupe.storage.systemofrecord.SystemOfRecordSettings;

/** {@code troupe serve}: runs the engine with embedded storage and the REST API. */
@Command(
    name = "serve",
    mixinStandardHelpOptions = true,
    description = "Run a Troupe node: its storage (embedded RocksDB, or PostgreSQL with --storage"
        + " postgres) and the REST API.")
public final class ServeCommand implements Callable<Integer> {
  private static final Logger log = LoggerFactory.getLogger(ServeCommand.class);

  @Option(names = "--data", description = "Data directory (default: ${DEFAULT-VALUE}).",
      defaultValue = "./data")
  Path data;

  @Option(names = "--port", description = "HTTP port; 0 picks a free one (default: ${DEFAULT-VALUE}).",
      defaultValue = "8080")
  int port;

  @Option(names = "--host", description = "Address to listen on (default: ${DEFAULT-VALUE}).",
      defaultValue = "127.0.0.1")
  String host;

  @Option(names = "--tls-certificate", paramLabel = "FILE",
      description = "Serve HTTPS with this PEM certificate chain (the server's certificate first).")
  File tlsCertificate;

  @Option(names = "--tls-key", paramLabel = "FILE",
      description = "The PKCS#8 PEM private key of --tls-certificate.")
  File tlsKey;

  @Option(names = "--dc", paramLabel = "NAME",
      description = "This data centre's name (troupe.dc.name): 1-63 letters, digits, '.', '_',"
          + " '-'. Needed for --peer; a named node issues causal tokens (docs/OPERATIONS.md).")
  String dataCentre;

  @Option(names = "--peer", paramLabel = "NAME=URL",
      description = "Another data centre and the base URL of its REST server, e.g. --peer"
          + " paris=http://10.0.0.2:8080 (repeatable; troupe.dc.peers, troupe.dc.peer-urls).")
  List<String> peers = List.of();

  @Option(names = "--replication-secret-file", paramLabel = "FILE",
      description = "File holding the secret every data centre shares, checked on every pull"
          + " (troupe.replication.secret-file).")
  File replicationSecretFile;

  @Option(names = "--bootstrap-from", paramLabel = "NAME",
      description = "Fill this new data centre's empty store from the peer NAME's bootstrap image"
          + " and the logs' tails before serving clients (docs/OPERATIONS.md, \"Adding a data"
          + " centre\"). Refused on a store with data, unless its bootstrap from NAME was cut.")
  String bootstrapFrom;

  @Option(names = "--node-id", paramLabel = "ID",
      description = "This node's id, 0..63, unique in its cluster (troupe.node.id).")
  Integer nodeId;

  @Option(names = "--cluster-port", paramLabel = "PORT",
      description = "Join a cluster of nodes sharing one data centre's store, reachable by the"
          + " other members at --cluster-host:PORT (troupe.cluster.enabled, troupe.cluster.port;"
          + " docs/OPERATIONS.md, \"A cluster of nodes\").")
  Integer clusterPort;

  @Option(names = "--cluster-host", paramLabel = "HOST",
      description = "The address other members reach this node at (troupe.cluster.host; default"
          + " 127.0.0.1).")
  String clusterHost;

  @Option(names = "--seed-nodes", paramLabel = "HOST:PORT", split = ",",
      description = "Members to join through, e.g. --seed-nodes 10.0.0.1:7355,10.0.0.2:7355"
          + " (troupe.cluster.seed-nodes); the first node lists itself.")
  List<String> seedNodes = List.of();

  @Option(names = "--storage", paramLabel = "BACKEND",
      description = "Where the store keeps its data: rocksdb (embedded, in --data; the default) or"
          + " postgres (a PostgreSQL database, --jdbc-url) (troupe.storage.backend).")
  String storage;

  @Option(names = "--jdbc-url", paramLabel = "URL",
      description = "The PostgreSQL database of --storage postgres, e.g."
          + " jdbc:postgresql://10.0.0.5:5432/troupe (troupe.storage.postgres.jdbc-url).")
  String jdbcUrl;

  @Option(names = "--system-of-record", paramLabel = "JDBC_URL",
      description = "Keep one PostgreSQL table per type equal to the entities' states, fed from"
          + " the journal, e.g. jdbc:postgresql://127.0.0.1:5432/reports?user=troupe"
          + " (troupe.system-of-record.jdbc-url).")
  String systemOfRecord;

  @Option(names = "--config", description = "HOCON file overriding reference.conf settings.")
  File configFile;

  @Option(names = "--set", description = "Override one setting, e.g. --set troupe.storage.durability=async.",
      paramLabel = "PATH=VALUE")
  Map<String, String> overrides = Map.of();

  @Override
  public Integer call() throws Exception {
    Config config;
    try {
      config = configuration();
    } catch (IllegalArgumentException e) {
      System.err.println("troupe: invalid settings: " + e.getMessage());
      return EXIT_CONFIGURATION;
    }
    HttpSettings http;
    ReplicationServerSettings replication;
    StorageBackend backend;
    SystemOfRecordSettings systemOfRecordSettings;
    LogFormat logFormat;
    try {
      systemOfRecordSettings = systemOfRecordSettings(config);
      logFormat = LogFormat.fromConfig(config);
      http = HttpSettings.fromConfig(config);
      replication = ReplicationServerSettings.fromConfig(config);
      backend = StorageBackend.fromConfig(config);
    } catch (RuntimeException e) {
      System.err.println("troupe: invalid settings: " + e.getMessage());
      return EXIT_CONFIGURATION;
    }
    logFormat.apply(logIdentity(config));
    if (backend.kind() == StorageBackend.Kind.POSTGRES && bootstrapFrom != null) {
      // The bootstrap installs a peer's image into an embedded store before the engine opens.
      System.err.println("troupe: --bootstrap-from fills an embedded RocksDB store; it cannot be"
          + " combined with --storage postgres");
      return EXIT_CONFIGURATION;
    }
    RuntimeSettings settings;
    try {
      settings = RuntimeSettings.fromConfig(config);
    } catch (IllegalArgumentException e) {
      System.err.println("troupe: invalid settings: " + e.getMessage());
      return EXIT_CONFIGURATION;
    }
    // Before the store is opened: an API exposed without authentication never starts at all.
    if (http.exposureProblem().isPresent()) {
      System.err.println("troupe: " + http.exposureProblem().get());
      return EXIT_CONFIGURATION;
    }
    // Before the engine opens the store: a new DC fills it from a peer's image first.
    Optional<String> bootstrapProblem =
        dev.troupe.server.replication.BootstrapFetch.prepare(settings, replication, bootstrapFrom);
    if (bootstrapProblem.isPresent()) {
      System.err.println("troupe: " + bootstrapProblem.get());
      return EXIT_CONFIGURATION;
    }
    boolean exitOnStorageFailure = exitOnStorageFailure(config);
    Troupe troupe;
    try {
      troupe = Troupe.open(settings, (where, error) -> {
        // A violated invariant: stop at once rather than acknowledge anything more.
        System.err.println("troupe: fatal error in " + where + ": " + error);
        Runtime.getRuntime().halt(70);
      });
    } catch (CorruptDataException damage) {
      // Refuse to serve rather than serve an older state as the truth.
      return refuseDamagedStore(damage);
    } catch (java.io.UncheckedIOException unreachable) {
      if (backend.kind() != StorageBackend.Kind.POSTGRES) {
        throw unreachable;
      }
      // The database is down, unreachable or refuses the login: say so in one line.
      log.error("cannot open the store on PostgreSQL", unreachable);
      System.err.println("troupe: cannot open the store on PostgreSQL: "
          + unreachable.getMessage());
      return EXIT_STORAGE_FAILED;
    } catch (TroupeException failure) {
      // Recovery read a damaged entity (the type definitions, an in-doubt transaction's part).
      if (failure.code() == ErrorCode.CORRUPT_DATA) {
        return refuseDamagedStore(failure);
      }
      if (failure.code() == ErrorCode.INVALID_REQUEST) {
        // Stored declarations this DC's settings refuse (a causal type unsafe with peers, a
        // strong type homed at no known DC): a configuration problem, said in one line.
        System.err.println("troupe: " + failure.getMessage());
        return EXIT_CONFIGURATION;
      }
      throw failure;
    }
    if (exitOnStorageFailure) {
      troupe.onStorageFailure(cause -> {
        // On a thread of its own: System.exit waits for the shutdown hook, which closes the store
        // and so waits for the very writer thread that reports the failure.
        Thread exit = new Thread(() -> {
          System.err.println("troupe: storage failed (" + cause + "); exiting with status "
              + EXIT_STORAGE_FAILED + " so that a supervisor restarts the node"
              + " (troupe.server.on-storage-failure = exit)");
          System.exit(EXIT_STORAGE_FAILED);
        }, "troupe-exit-on-storage-failure");
        exit.start();
      });
    }
    // A named DC replicates (with peers) and issues causal tokens; the shell re-feeds what was
    // received and not applied before a restart.
    Optional<DataCentreReplication> replicating;
    try {
      replicating = replication.named()
          ? Optional.of(DataCentreReplication.start(troupe, replication)) : Optional.empty();
    } catch (RuntimeException e) {
      log.error("replication did not start", e);
      troupe.close();
      System.err.println("troupe: replication did not start: " + e.getMessage());
      return 2;
    }
    Optional<PostgresExporter> exporter;
    try {
      exporter = startSystemOfRecord(systemOfRecordSettings, settings, troupe);
    } catch (IllegalArgumentException e) {
      replicating.ifPresent(DataCentreReplication::close);
      troupe.close();
      System.err.println("troupe: " + e.getMessage());
      return EXIT_CONFIGURATION;
    }
    TroupeServer server;
    try {
      server = TroupeServer.start(troupe, http, replicating);
    } catch (RuntimeException e) {
      exporter.ifPresent(PostgresExporter::close);
      replicating.ifPresent(DataCentreReplication::close);
      troupe.close();
      System.err.println("troupe: " + e.getMessage());
      return 2;
    }
    exporter.ifPresent(running -> server.addMetricsSource(
        out -> SystemOfRecordMetrics.render(out, running.statistics())));
    troupe.cluster().ifPresent(cluster -> cluster.advertiseHttpUrl(advertisedHttpUrl(
        server.scheme(), server.host(), server.port(), settings.cluster().host())));
    CountDownLatch stopped = new CountDownLatch(1);
    // Registered through the actor system's CoordinatedShutdown rather than as a plain JVM hook:
    // Pekko's remoting (Artery) has a JVM hook of its own that shuts the remote transport down at
    // once unless a hook registered this way is still running. As a plain hook, a member was cut
    // off from the cluster the moment SIGTERM arrived: it could not leave or hand its partitions
    // off, the others found it unreachable and downed it (its partitions moved ~11 s after it
    // exited), and the stopping member, downed as a minority, took everyone else for removed.
    org.apache.pekko.actor.CoordinatedShutdown.get(troupe.actorSystem()).addJvmShutdownHook(() -> {
      // Stops taking requests and lets those in flight finish; a cluster member then drains the
      // transactions it started before it leaves (troupe.cluster.drain-timeout-millis).
      long signalled = System.nanoTime();
      server.close();
      troupe.cluster().ifPresent(member -> dev.troupe.runtime.cluster.Drain
          .awaitNoOpenTransactions(troupe.transactionMetrics()::open,
              settings.cluster().drainTimeoutMillis()));
      replicating.ifPresent(DataCentreReplication::close);
      exporter.ifPresent(PostgresExporter::close);
      // Leaves the cluster (sharding hands the partitions off while this member still answers),
      // then closes the store.
      troupe.close();
      log.info("stopped {} ms after the shutdown began",
          java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - signalled));
      stopped.countDown();
    });
    replicating.ifPresent(node -> System.out.printf("Data centre %s (id %d), pulling from %s%n",
        replication.dataCentreName(), replication.dataCentreId(),
        replication.peers().isEmpty() ? "no peers" : String.join(", ",
            replication.peers().stream().map(peer -> peer.name() + " at " + peer.url()).toList())));
    log.info("storage recovered in {} ms", troupe.storageStatistics().recoveryMillis());
    System.out.printf("Troupe listening on %s://%s:%d (%s, durability: %s)%n",
        server.scheme(), server.host(), server.port(), backend.describe(settings.storage()),
        settings.storage().durability().name().toLowerCase(java.util.Locale.ROOT));
    troupe.cluster().ifPresent(cluster -> System.out.printf(
        "Cluster member pekko://troupe@%s:%d as node %d (seed nodes: %s)%n",
        settings.cluster().host(), settings.cluster().port(), settings.storage().nodeId(),
        settings.cluster().seedNodes().isEmpty() ? "none, waiting to be joined"
            : String.join(", ", settings.cluster().seedNodes())));
    System.out.flush();
    stopped.await();
    return 0;
  }

  /** {@code troupe.system-of-record.*}, parsed once. */
  static SystemOfRecordSettings systemOfRecordSettings(Config config) {
    Config section = config.getConfig("troupe.system-of-record");
    return new SystemOfRecordSettings(section.getString("jdbc-url"),
        section.getInt("batch-max-records"), section.getLong("poll-interval-millis"),
        section.getLong("retry-min-backoff-millis"), section.getLong("retry-max-backoff-millis"),
        section.getInt("connect-timeout-seconds"), section.getInt("socket-timeout-seconds"),
        section.getInt("initial-export-page-entities"),
        section.getInt("read-ahead-max-records"));
  }

  /**
   * Starts the system-of-record exporter when a database is set (docs/ARCHITECTURE.md, "System
   * of record"): a node of one data centre's only node; a misconfigured database is refused.
   */
  static Optional<PostgresExporter> startSystemOfRecord(SystemOfRecordSettings exportSettings,
      RuntimeSettings settings, Troupe troupe) {
    if (!exportSettings.enabled()) {
      return Optional.empty();
    }
    if (settings.storage().partitionOwnership()
        != dev.troupe.storage.PartitionOwnership.ALL) {
      throw new IllegalArgumentException("--system-of-record runs on a data centre of one node;"
          + " this node shares its store with a cluster (not built yet)");
    }
    PostgresExporter started =
        PostgresExporter.start(troupe.store(), settings.storage().dataCentreId(), exportSettings,
            troupe::typeForExport);
    System.out.println("System of record: exporting to "
        + exportSettings.jdbcUrl().replaceAll("password=[^&]*", "password=..."));
    return Optional.of(started);
  }

  /**
   * The base URL a cluster member reports for its REST API ({@code GET /v1/cluster}, each member's
   * {@code node.httpUrl}): the bound address, or, when the server listens on every interface, the
   * host the other members reach it at (its cluster host), which is what a client beside them can
   * reach too.
   */
  static String advertisedHttpUrl(String scheme, String boundHost, int port, String clusterHost) {
    String host = boundHost == null || boundHost.isEmpty() || boundHost.equals("0.0.0.0")
        || boundHost.equals("::") || boundHost.equals("[::]") ? clusterHost : boundHost;
    if (host.contains(":") && !host.startsWith("[")) {
      host = "[" + host + "]"; // an IPv6 literal
    }
    return scheme + "://" + host + ":" + port;
  }

  private static int refuseDamagedStore(RuntimeException damage) {
    log.error("refusing to start: stored data is damaged", damage);
    System.err.println("troupe: refusing to start: " + damage.getMessage());
    return EXIT_CORRUPT_DATA;
  }

  /** Exit status when the store is damaged at start (sysexits' EX_DATAERR). */
  static final int EXIT_CORRUPT_DATA = 65;
  /** Exit status when the settings are invalid or unsafe (sysexits' EX_CONFIG). */
  static final int EXIT_CONFIGURATION = 78;
  /** Exit status after a storage failure under on-storage-failure = exit (EX_IOERR). */
  static final int EXIT_STORAGE_FAILED = 74;

  /**
   * {@code --dc}, {@code --peer} and {@code --replication-secret-file} onto {@code troupe.dc.name},
   * {@code troupe.dc.peers} and {@code troupe.dc.peer-urls} (replacing the configured ones: the
   * command line names every peer) and {@code troupe.replication.secret-file}.
   */
  Config withDataCentres(Config config) {
    if (dataCentre != null) {
      config = config.withValue("troupe.dc.name", ConfigValueFactory.fromAnyRef(dataCentre));
    }
    if (!peers.isEmpty()) {
      List<String> names = new ArrayList<>();
      Map<String, String> urls = new java.util.LinkedHashMap<>();
      for (String peer : peers) {
        int equals = peer.indexOf('=');
        if (equals <= 0) {
          throw new IllegalArgumentException(
              "--peer: expected NAME=URL (e.g. --peer paris=http://10.0.0.2:8080), was '" + peer
                  + "'");
        }
        names.add(peer.substring(0, equals));
        urls.put(peer.substring(0, equals), peer.substring(equals + 1));
      }
      // A map's keys are taken as they are (not as paths), so names with dots stay whole.
      config = config.withValue("troupe.dc.peers", ConfigValueFactory.fromIterable(names))
          .withValue("troupe.dc.peer-urls", ConfigValueFactory.fromMap(urls));
    }
    if (replicationSecretFile != null) {
      config = config.withValue("troupe.replication.secret-file",
          ConfigValueFactory.fromAnyRef(replicationSecretFile.getPath()));
    }
    return config;
  }

  /**
   * {@code --storage} and {@code --jdbc-url} onto {@code troupe.storage.backend} and {@code
   * troupe.storage.postgres.jdbc-url}. A JDBC URL for a node that does not run on PostgreSQL is
   * refused: the operator meant one of the two.
   */
  Config withStorage(Config config) {
    if (storage != null) {
      config = config.withValue("troupe.storage.backend", ConfigValueFactory.fromAnyRef(storage));
    }
    if (jdbcUrl != null) {
      config = config.withValue("troupe.storage.postgres.jdbc-url",
          ConfigValueFactory.fromAnyRef(jdbcUrl));
      if (!"postgres".equalsIgnoreCase(config.getString("troupe.storage.backend"))) {
        throw new IllegalArgumentException("--jdbc-url is the database of --storage postgres;"
            + " this node runs on " + config.getString("troupe.storage.backend")
            + " (add --storage postgres, or drop --jdbc-url)");
      }
    }
    return config;
  }

  /** {@code troupe.server.on-storage-failure}: {@code exit} or {@code stay-up}. */
  /**
   * {@code --node-id}, {@code --cluster-port}, {@code --cluster-host} and {@code --seed-nodes}
   * onto {@code troupe.node.id} and {@code troupe.cluster.*}; a cluster port turns the cluster on.
   */
  Config withCluster(Config config) {
    if (nodeId != null) {
      config = config.withValue("troupe.node.id", ConfigValueFactory.fromAnyRef(nodeId));
    }
    if (clusterPort != null) {
      config = config.withValue("troupe.cluster.enabled", ConfigValueFactory.fromAnyRef(true))
          .withValue("troupe.cluster.port", ConfigValueFactory.fromAnyRef(clusterPort));
    }
    if (clusterHost != null) {
      config = config.withValue("troupe.cluster.host", ConfigValueFactory.fromAnyRef(clusterHost));
    }
    if (!seedNodes.isEmpty()) {
      config = config.withValue("troupe.cluster.seed-nodes",
          ConfigValueFactory.fromIterable(seedNodes));
    }
    return config;
  }

  /** This node's identity in every JSON log line: its node id and, when named, its DC. */
  static Map<String, String> logIdentity(Config config) {
    Map<String, String> identity = new java.util.LinkedHashMap<>();
    identity.put("troupe.node.id", config.getString("troupe.node.id"));
    String dataCentre = config.getString("troupe.dc.name");
    if (!dataCentre.isEmpty()) {
      identity.put("troupe.dc.name", dataCentre);
    }
    return identity;
  }

  static boolean exitOnStorageFailure(Config config) {
    String policy = config.getString("troupe.server.on-storage-failure");
    return switch (policy) {
      case "exit" -> true;
      case "stay-up" -> false;
      default -> throw new IllegalArgumentException(
          "troupe.server.on-storage-failure must be exit or stay-up, was '" + policy + "'");
    };
  }

  Config configuration() {
    Config config = ConfigFactory.load();
    if (configFile != null) {
      config = ConfigFactory.parseFile(configFile).withFallback(config).resolve();
    }
    for (Map.Entry<String, String> override : overrides.entrySet()) {
      config = ConfigFactory.parseString(override.getKey() + " = " + override.getValue())
          .withFallback(config);
    }
    if (tlsCertificate != null) {
      config = config.withValue("troupe.http.tls.certificate-path",
          ConfigValueFactory.fromAnyRef(tlsCertificate.getPath()));
    }
    if (tlsKey != null) {
      config = config.withValue("troupe.http.tls.key-path",
          ConfigValueFactory.fromAnyRef(tlsKey.getPath()));
    }
    config = withDataCentres(config);
    config = withCluster(config);
    config = withStorage(config);
    if (systemOfRecord != null) {
      config = config.withValue("troupe.system-of-record.jdbc-url",
          ConfigValueFactory.fromAnyRef(systemOfRecord));
    }
    return config
        .withValue("troupe.data-directory", ConfigValueFactory.fromAnyRef(data.toString()))
        .withValue("troupe.http.port", ConfigValueFactory.fromAnyRef(port))
        .withValue("troupe.http.host", ConfigValueFactory.fromAnyRef(host));
  }
}
