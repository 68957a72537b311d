package dev.troupe.client;

import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

/**
 * What both faces of the client share: the server's address, the bearer token, the timeouts, the
 * retry policy, the causal token and the JDK {@link HttpClient}. It turns a {@link Call} into
 * requests and their answers into an {@link Exchange}'s decisions, and drives an exchange either
 * blocking ({@link #run}) or with futures ({@link #runAsync}): the decisions are the exchange's,
 * so the two drivers only differ in how they wait.
 *
 * <p>Concurrency: safe to share between threads; the only mutable state is the causal token
 * ({@link CausalTokens}, merged atomically) and the HttpClient's connection pool.
 */
final class ClientCore implements AutoCloseable {
  static final String CAUSAL_TOKEN_HEADER = "Troupe-Causal-Token";
  static final String IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
  static final String REPLAYED_HEADER = "Idempotent-Replayed";

  private final URI baseUri;
  private final String bearerToken;
  private final Duration requestTimeout;
  private final RetryPolicy retryPolicy;
  private final CausalTokens causalTokens;
  private final HttpClient http;

  ClientCore(URI baseUri, String bearerToken, Duration connectTimeout, Duration requestTimeout,
      RetryPolicy retryPolicy, String causalToken, java.util.concurrent.Executor executor) {
    String base = baseUri.toString();
    this.baseUri = URI.create(base.endsWith("/") ? base.substring(0, base.length() - 1) : base);
    this.bearerToken = bearerToken == null || bearerToken.isBlank() ? null : bearerToken;
    this.requestTimeout = requestTimeout;
    this.retryPolicy = retryPolicy;
    this.causalTokens = new CausalTokens(causalToken);
    // HTTP/1.1: the server speaks it, and the JDK's default (HTTP/2) would first try an h2c
    // upgrade on every new plain-text connection.
    HttpClient.Builder builder = HttpClient.newBuilder();
    if (executor != null) {
      builder.executor(executor);
    }
    this.http = builder
        .version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(connectTimeout)
        .followRedirects(HttpClient.Redirect.NEVER)
        .build();
  }

  Optional<String> causalToken() {
    return causalTokens.current();
  }

  URI baseUri() {
    return baseUri;
  }

  <T> Exchange<T> start(Call<T> call) {
    return new Exchange<>(call, retryPolicy, UUID.randomUUID().toString(), System.nanoTime());
  }

  /** The request of the exchange's next attempt (the causal token as held now). */
  HttpRequest request(Exchange<?> exchange) {
    Call<?> call = exchange.call();
    StringBuilder target = new StringBuilder(baseUri.toString()).append(call.path());
    char separator = '?';
    for (Map.Entry<String, String> parameter : call.query()) {
      target.append(separator).append(Calls.segment(parameter.getKey())).append('=')
          .append(Calls.segment(parameter.getValue()));
      separator = '&';
    }
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(target.toString()))
        .timeout(requestTimeout)
        .header("Accept", "application/json")
        .method(call.method(), call.body() == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofByteArray(call.body()));
    if (call.body() != null) {
      request.header("Content-Type", call.contentType());
    }
    if (bearerToken != null) {
      request.header("Authorization", "Bearer " + bearerToken);
    }
    causalTokens.current().ifPresent(token -> request.header(CAUSAL_TOKEN_HEADER, token));
    if (exchange.idempotencyKey() != null) {
      request.header(IDEMPOTENCY_KEY_HEADER, exchange.idempotencyKey());
    }
    return request.build();
  }

  /** An attempt's answer: the causal token it carries is kept, then the exchange decides. */
  <T> Exchange.Next<T> answered(Exchange<T> exchange, HttpResponse<byte[]> response) {
    response.headers().firstValue(CAUSAL_TOKEN_HEADER).ifPresent(causalTokens::received);
    return exchange.answered(response.statusCode(), Wire.parse(response.body()),
        response.headers().firstValue(REPLAYED_HEADER).map("true"::equalsIgnoreCase)
            .orElse(false),
        retryAfter(response), System.nanoTime());
  }

  /** An attempt's failure to get an answer. */
  <T> Exchange.Next<T> failed(Exchange<T> exchange, Throwable failure) {
    Throwable cause = failure;
    // The JDK wraps a refused connection in an IOException of its own.
    boolean neverSent = false;
    for (Throwable each = failure; each != null; each = each.getCause()) {
      if (each instanceof ConnectException || each instanceof HttpConnectTimeoutException) {
        neverSent = true;
      }
    }
    return exchange.failed(cause, neverSent, System.nanoTime());
  }

  private static Duration retryAfter(HttpResponse<?> response) {
    Optional<String> value = response.headers().firstValue("Retry-After");
    if (value.isEmpty()) {
      return null;
    }
    try {
      double seconds = Double.parseDouble(value.get().strip());
      return seconds <= 0 ? Duration.ZERO : Duration.ofNanos((long) (seconds * 1e9));
    } catch (NumberFormatException httpDate) {
      return null;
    }
  }

  /** Runs the call to its result, blocking the calling thread (the blocking face). */
  <T> T run(Call<T> call) {
    Exchange<T> exchange = start(call);
    while (true) {
      Exchange.Next<T> next;
      try {
        next = answered(exchange, http.send(request(exchange),
            HttpResponse.BodyHandlers.ofByteArray()));
      } catch (InterruptedException interrupted) {
        Thread.currentThread().interrupt();
        throw TroupeClientException.connectionFailed(interrupted);
      } catch (java.io.IOException failure) {
        next = failed(exchange, failure);
      }
      switch (next) {
        case Exchange.Done<T> done -> {
          return done.result();
        }
        case Exchange.Fail<T> fail -> throw fail.error();
        case Exchange.Retry<T> retry -> {
          try {
            Thread.sleep(retry.delay());
          } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            throw TroupeClientException.connectionFailed(interrupted);
          }
        }
      }
    }
  }

  /** Runs the call to its result without blocking (the asynchronous face). */
  <T> CompletableFuture<T> runAsync(Call<T> call) {
    return attempt(start(call));
  }

  private <T> CompletableFuture<T> attempt(Exchange<T> exchange) {
    return http.sendAsync(request(exchange), HttpResponse.BodyHandlers.ofByteArray())
        .handle((response, failure) -> {
          if (failure == null) {
            return answered(exchange, response);
          }
          Throwable cause = failure instanceof CompletionException && failure.getCause() != null
              ? failure.getCause() : failure;
          if (!(cause instanceof java.io.IOException)) {
            throw new CompletionException(cause);
          }
          return failed(exchange, cause);
        })
        .thenCompose(next -> switch (next) {
          case Exchange.Done<T> done -> CompletableFuture.completedFuture(done.result());
          case Exchange.Fail<T> fail -> CompletableFuture.<T>failedFuture(fail.error());
          case Exchange.Retry<T> retry -> CompletableFuture.runAsync(() -> {},
                  CompletableFuture.delayedExecutor(retry.delay().toNanos(), TimeUnit.NANOSECONDS))
              .thenCompose(waited -> attempt(exchange));
        });
  }

  @Override
  public void close() {
    http.close();
  }
}
