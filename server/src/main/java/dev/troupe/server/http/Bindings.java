package dev.troupe.server.http;

import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.japi.function.Function;

/** Binding and unbinding a request handler, the same way for every server on this stack. */
final class Bindings {
  private static final long BIND_TIMEOUT_SECONDS = 30;
  private static final Duration DRAIN_TIMEOUT = Duration.ofSeconds(10);

  private Bindings() {}

  /**
   * Binds {@code handler} and waits until it listens; port 0 picks a free port.
   *
   * @throws IllegalStateException naming the address if it cannot listen
   */
  static ServerBinding bind(ActorSystem<?> system, String host, int port,
      Function<HttpRequest, CompletionStage<HttpResponse>> handler) {
    try {
      return Http.get(system).newServerAt(host, port).bind(handler)
          .toCompletableFuture().get(BIND_TIMEOUT_SECONDS, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException(
          "cannot listen on " + host + ":" + port + ": " + e.getMessage(), e);
    }
  }

  /** Stops accepting connections and lets in-flight requests finish (up to 10 s). */
  static void terminate(ServerBinding binding) {
    try {
      binding.terminate(DRAIN_TIMEOUT).toCompletableFuture()
          .get(DRAIN_TIMEOUT.toSeconds() + 5, TimeUnit.SECONDS);
    } catch (Exception ignored) {
      // Closing anyway: what was acknowledged is already durable.
    }
  }
}
