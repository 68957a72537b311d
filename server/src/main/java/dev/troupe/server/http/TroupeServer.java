package dev.troupe.server.http;

import dev.troupe.runtime.Troupe;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.stream.Materializer;

/** The REST server: binds {@link RestApi} for an engine on the engine's actor system. */
public final class TroupeServer implements AutoCloseable {
  private final ServerBinding binding;

  private TroupeServer(ServerBinding binding) {
    this.binding = binding;
  }

  /** Binds and waits until the server listens; port 0 picks a free port. */
  public static TroupeServer start(Troupe troupe, HttpSettings settings) {
    Materializer materializer = Materializer.matFromSystem(troupe.actorSystem());
    RestApi api = new RestApi(troupe, settings, materializer);
    try {
      ServerBinding binding = Http.get(troupe.actorSystem())
          .newServerAt(settings.host(), settings.port())
          .bind(api)
          .toCompletableFuture()
          .get(30, TimeUnit.SECONDS);
      return new TroupeServer(binding);
    } catch (Exception e) {
      throw new IllegalStateException(
          "cannot listen on " + settings.host() + ":" + settings.port() + ": " + e.getMessage(), e);
    }
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
    try {
      binding.terminate(Duration.ofSeconds(10)).toCompletableFuture().get(15, TimeUnit.SECONDS);
    } catch (Exception ignored) {
      // Closing anyway: the engine closes next and acknowledged writes are already durable.
    }
  }
}
