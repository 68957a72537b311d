package dev.troupe.server.cli;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.troupe.server.logging.LogFormat;
import com.typesafe.config.ConfigValueFactory;
import dev.troupe.server.http.PostgresBaselineServer;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code troupe serve-postgres}: the benchmark baseline, Troupe's entity REST paths executed
 * directly against PostgreSQL in SERIALIZABLE transactions (READ COMMITTED with {@code --set
 * troupe.baseline.postgres.isolation=read-committed}). {@code troupe bench ycsb} starts it
 * (and a throwaway PostgreSQL) itself; this command is for running it by hand.
 */
@Command(
    name = "serve-postgres",
    mixinStandardHelpOptions = true,
    description = {"Benchmark baseline: the entity REST paths (GET/PATCH/DELETE entity, GET/PUT/"
        + "DELETE key) over PostgreSQL, SERIALIZABLE (or troupe.baseline.postgres.isolation),"
        + " fsync and synchronous commit on."})
public final class ServePostgresCommand implements Callable<Integer> {
  @Option(names = "--jdbc-url", required = true,
      description = "PostgreSQL to use, e.g. jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres")
  String jdbcUrl;

  @Option(names = "--port", defaultValue = "8081",
      description = "HTTP port; 0 picks a free one (default: ${DEFAULT-VALUE}).")
  int port;

  @Option(names = "--host", defaultValue = "127.0.0.1",
      description = "Address to listen on (default: ${DEFAULT-VALUE}).")
  String host;

  @Option(names = "--set", paramLabel = "PATH=VALUE",
      description = "Override one setting, e.g. --set troupe.baseline.postgres.pool-size=32.")
  Map<String, String> overrides = Map.of();

  @Override
  public Integer call() throws Exception {
    Config config = ConfigFactory.load();
    for (Map.Entry<String, String> override : overrides.entrySet()) {
      config = ConfigFactory.parseString(override.getKey() + " = " + override.getValue())
          .withFallback(config);
    }
    config = config
        .withValue("troupe.http.port", ConfigValueFactory.fromAnyRef(port))
        .withValue("troupe.http.host", ConfigValueFactory.fromAnyRef(host));
    PostgresBaselineServer server;
    try {
      LogFormat.fromConfig(config).apply(Map.of());
      server = PostgresBaselineServer.start(jdbcUrl, config);
    } catch (RuntimeException e) {
      System.err.println("troupe: " + e.getMessage());
      return 2;
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.close();
      stopped.countDown();
    }, "postgres-baseline-shutdown"));
    System.out.printf("PostgreSQL baseline listening on http://%s:%d%n", server.host(),
        server.port());
    System.out.flush();
    stopped.await();
    return 0;
  }
}
