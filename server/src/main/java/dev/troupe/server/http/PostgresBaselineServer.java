package dev.troupe.server.http;

import dev.troupe.server.postgres.PostgresEntities;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.stream.Materializer;
import com.typesafe.config.Config;

/**
 * The PostgreSQL baseline server: {@link PostgresRestApi} on its own actor system, with the same
 * Pekko HTTP settings as a Troupe node ({@code reference.conf}), over a pool of JDBC connections
 * and one blocking thread per connection.
 */
public final class PostgresBaselineServer implements AutoCloseable {
  private final ActorSystem<Void> system;
  private final ServerBinding binding;
  private final PostgresEntities entities;
  private final ThreadPoolExecutor executor;

  private PostgresBaselineServer(ActorSystem<Void> system, ServerBinding binding,
      PostgresEntities entities, ThreadPoolExecutor executor) {
    this.system = system;
    this.binding = binding;
    this.entities = entities;
    this.executor = executor;
  }

  /** Connects to {@code jdbcUrl}, creates the schema if needed, binds and waits until listening. */
  public static PostgresBaselineServer start(String jdbcUrl, Config config) {
    HttpSettings http = HttpSettings.fromConfig(config);
    PostgresBaselineSettings baseline = PostgresBaselineSettings.fromConfig(config);
    PostgresEntities entities = PostgresEntities.open(new PostgresEntities.Settings(jdbcUrl,
        baseline.poolSize(), baseline.maxRetries(), baseline.connectionTimeoutMillis(),
        baseline.jdbcIsolation()));
    AtomicInteger threads = new AtomicInteger();
    ThreadPoolExecutor executor = new ThreadPoolExecutor(baseline.poolSize(), baseline.poolSize(),
        0, TimeUnit.MILLISECONDS, new ArrayBlockingQueue<>(baseline.queueLimit()), runnable -> {
          Thread thread = new Thread(runnable, "postgres-jdbc-" + threads.incrementAndGet());
          thread.setDaemon(true);
          return thread;
        });
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "postgres-baseline", config);
    try {
      Materializer materializer = Materializer.matFromSystem(system);
      ServerBinding binding = Bindings.bind(system, http,
          new PostgresRestApi(entities, executor, http,
              dev.troupe.runtime.RuntimeSettings.ListingSettings.fromConfig(
                  config.getConfig("troupe")),
              materializer));
      return new PostgresBaselineServer(system, binding, entities, executor);
    } catch (RuntimeException e) {
      system.terminate();
      executor.shutdownNow();
      entities.close();
      throw e;
    }
  }

  public int port() {
    return binding.localAddress().getPort();
  }

  public String host() {
    return binding.localAddress().getHostString();
  }

  @Override
  public void close() {
    Bindings.terminate(binding);
    executor.shutdown();
    system.terminate();
    entities.close();
  }
}
