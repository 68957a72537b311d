package dev.troupe.server.http;

import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.ConnectionContext;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.ServerBuilder;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.settings.ServerSettings;
import org.apache.pekko.japi.function.Function;

/**
 * Binding and unbinding a request handler, the same way for every server on this stack: Pekko
 * HTTP's parser refusals answered as JSON ({@link JsonParsingErrorHandler}), {@code HEAD} served
 * as {@code GET} without the body (transparent HEAD requests), and, with {@link HttpSettings}, the
 * Troupe settings for timeouts and TLS mapped onto Pekko's.
 */
final class Bindings {
  private static final long BIND_TIMEOUT_SECONDS = 30;
  private static final Duration DRAIN_TIMEOUT = Duration.ofSeconds(10);

  private Bindings() {}

  /**
   * Binds {@code handler} with Pekko's configured timeouts, plain HTTP; port 0 picks a free port.
   *
   * @throws IllegalStateException naming the address if it cannot listen
   */
  static ServerBinding bind(ActorSystem<?> system, String host, int port,
      Function<HttpRequest, CompletionStage<HttpResponse>> handler) {
    return bind(Http.get(system).newServerAt(host, port).adaptSettings(Bindings::edge),
        host, port, handler);
  }

  /**
   * Binds {@code handler} on {@code settings}' host and port with its timeouts
   * ({@code idle-timeout-millis} onto Pekko's {@code idle-timeout}, {@code request-timeout-millis}
   * onto {@code request-timeout}) and, when configured, TLS.
   *
   * @throws IllegalStateException naming the address if it cannot listen
   * @throws IllegalArgumentException when the TLS files cannot be read
   */
  static ServerBinding bind(ActorSystem<?> system, HttpSettings settings,
      Function<HttpRequest, CompletionStage<HttpResponse>> handler) {
    ServerBuilder builder = Http.get(system).newServerAt(settings.host(), settings.port())
        .adaptSettings(server -> edge(server).withTimeouts(server.getTimeouts()
            .withIdleTimeout(millis(settings.idleTimeoutMillis()))
            .withRequestTimeout(millis(settings.requestTimeoutMillis()))));
    if (settings.tls().enabled()) {
      builder = builder.enableHttps(
          ConnectionContext.httpsServer(TlsContexts.serverContext(settings.tls())));
    }
    return bind(builder, settings.host(), settings.port(), handler);
  }

  private static ServerSettings edge(ServerSettings server) {
    return server.withParsingErrorHandler(JsonParsingErrorHandler.class.getName())
        .withTransparentHeadRequests(true);
  }

  private static scala.concurrent.duration.FiniteDuration millis(long millis) {
    return scala.concurrent.duration.Duration.create(millis, TimeUnit.MILLISECONDS);
  }

  private static ServerBinding bind(ServerBuilder builder, String host, int port,
      Function<HttpRequest, CompletionStage<HttpResponse>> handler) {
    try {
      return builder.bind(handler).toCompletableFuture().get(BIND_TIMEOUT_SECONDS, TimeUnit.SECONDS);
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
