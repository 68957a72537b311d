package dev.troupe.server.http;

import dev.troupe.runtime.Troupe;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.stream.Materializer;

/** The REST server: binds {@link RestApi} for an engine on the engine's actor system. */
public final class TroupeServer implements AutoCloseable {
  private final ServerBinding binding;
  private final boolean tls;
  private final RestApi api;

  private TroupeServer(ServerBinding binding, boolean tls, RestApi api) {
    this.binding = binding;
    this.tls = tls;
    this.api = api;
  }

  /** Adds metrics of a part wired outside the engine to {@code GET /metrics}. */
  public void addMetricsSource(java.util.function.Consumer<StringBuilder> source) {
    api.addMetricsSource(source);
  }

  /**
   * Binds and waits until the server listens; port 0 picks a free port.
   *
   * @throws IllegalStateException when the settings would expose the API without authentication
   *     ({@link HttpSettings#exposureProblem}) or the address cannot be bound
   */
  public static TroupeServer start(Troupe troupe, HttpSettings settings) {
    return start(troupe, settings, java.util.Optional.empty());
  }

  /**
   * Like {@link #start(Troupe, HttpSettings)}, for a named DC with {@code replication} running:
   * peers pull its log here, and answers carry causal tokens.
   */
  public static TroupeServer start(Troupe troupe, HttpSettings settings,
      java.util.Optional<dev.troupe.server.replication.DataCentreReplication> replication) {
    settings.exposureProblem().ifPresent(problem -> {
      throw new IllegalStateException(problem);
    });
    Materializer materializer = Materializer.matFromSystem(troupe.actorSystem());
    RestApi api = new RestApi(troupe, settings, materializer, replication);
    return new TroupeServer(Bindings.bind(troupe.actorSystem(), settings, api),
        settings.tls().enabled(), api);
  }

  /** {@code https} with TLS, else {@code http}. */
  public String scheme() {
    return tls ? "https" : "http";
  }

  public int port() {
    return binding.localAddress().getPort();
  }

  public String host() {
    return binding.localAddress().getHostString();
  }

  /** Stops accepting connections and lets in-flight requests finish (up to 10 s). */
  @Override
  public void close() {
    Bindings.terminate(binding);
  }
}
