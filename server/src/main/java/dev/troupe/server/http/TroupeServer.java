package dev.troupe.server.http;

import dev.troupe.runtime.Troupe;
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
    return new TroupeServer(
        Bindings.bind(troupe.actorSystem(), settings.host(), settings.port(), api));
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
