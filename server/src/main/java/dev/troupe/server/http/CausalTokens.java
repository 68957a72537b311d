package dev.troupe.server.http;

import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.server.replication.DataCentreReplication;
import dev.troupe.server.replication.ReplicationProtocol;
import dev.troupe.server.replication.ReplicationServerSettings;
import dev.troupe.server.replication.VectorText;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.http.javadsl.model.headers.RetryAfter;
import org.apache.pekko.stream.Materializer;

/**
 * Causal tokens at the HTTP edge (docs/ARCHITECTURE.md, "Between data centres over HTTP"): a
 * client that moves between DCs never reads older than what it saw or wrote.
 *
 * <ul>
 *   <li>Every answer of a named DC carries {@code Troupe-Causal-Token}: the DC's causal token
 *       ({@code ReplicationShell#causalToken}: its applied vector with its own entry at its clock)
 *       merged with the token the request carried, so a client's token never moves back.
 *   <li>A request carrying {@code Troupe-Causal-Token} is served only once everything the token
 *       names is visible here ({@code ReplicationShell#whenVisible}), waiting up to {@code
 *       troupe.replication.token-wait-max-millis}; past that it is {@code 503 not_yet_visible} with
 *       {@code Retry-After}, and nothing was done. Health, {@code /metrics} and peers' pulls never
 *       wait: they are not a client's reads.
 *   <li>A token is parsed strictly ({@link VectorText}); a malformed one, or one naming a DC that
 *       is neither this one nor a peer, is {@code 400 invalid_request}.
 *   <li>A node without a DC name sends no token; a token sent to it is checked for form only and
 *       is always visible (there is nothing else to wait for).
 * </ul>
 *
 * <p>A request that must wait has its body read first (within {@code troupe.http.max-body-bytes}
 * and {@code body-read-timeout-millis}): Pekko cancels a request body nobody reads for a few
 * seconds, and the wait may be longer.
 *
 * <p>Concurrency: immutable; called from Pekko HTTP's threads at once.
 */
final class CausalTokens {
  /** {@link ReplicationProtocol#CAUSAL_TOKEN_HEADER} as header names compare. */
  private static final String CAUSAL_TOKEN_HEADER_LOWER_CASE =
      ReplicationProtocol.CAUSAL_TOKEN_HEADER.toLowerCase(java.util.Locale.ROOT);

  private final Optional<DataCentreReplication> replication;
  private final HttpSettings settings;
  private final Materializer materializer;

  CausalTokens(Optional<DataCentreReplication> replication, HttpSettings settings,
      Materializer materializer) {
    this.replication = replication;
    this.settings = settings;
    this.materializer = materializer;
  }

  /**
   * The token {@code request} carries, empty if none.
   *
   * @throws TroupeException {@code invalid_request} for a malformed token or one naming a DC this
   *     one does not know
   */
  Optional<DependencyVector> of(HttpRequest request) {
    Optional<String> header = RequestSupport.headerValue(request, CAUSAL_TOKEN_HEADER_LOWER_CASE);
    if (header.isEmpty()) {
      return Optional.empty();
    }
    DependencyVector token =
        VectorText.parse(header.get().trim(), ReplicationProtocol.CAUSAL_TOKEN_HEADER);
    if (replication.isPresent()) {
      ReplicationServerSettings dataCentres = replication.get().settings();
      for (Map.Entry<Integer, Long> entry : token.entries().entrySet()) {
        if (entry.getKey() != dataCentres.dataCentreId()
            && dataCentres.peer(entry.getKey()).isEmpty()) {
          throw TroupeException.invalid(ReplicationProtocol.CAUSAL_TOKEN_HEADER
              + " names data centre " + entry.getKey() + ", which is neither '"
              + dataCentres.dataCentreName() + "' nor one of its peers: a token from another"
              + " deployment?");
        }
      }
    }
    return Optional.of(token);
  }

  /** Whether a request to {@code path} waits for its token: every client route. */
  static boolean honoured(String path) {
    return !(path.equals("/metrics") || path.equals("/v1/health") || path.startsWith("/v1/health/")
        || path.equals(ReplicationProtocol.LOG_PATH)
        || path.equals(ReplicationProtocol.STREAM_PATH));
  }

  /**
   * Serves {@code request} with {@code route} once {@code token} is visible here, or answers
   * {@code 503 not_yet_visible} after the token wait.
   */
  CompletionStage<HttpResponse> whenVisible(HttpRequest request, DependencyVector token,
      java.util.function.Function<HttpRequest, CompletionStage<HttpResponse>> route,
      RequestSupport support) {
    if (replication.isEmpty()) {
      return route.apply(request);
    }
    CompletableFuture<Boolean> visible = replication.get().shell()
        .whenVisible(token, replication.get().engineSettings().tokenWaitMaxMillis());
    if (visible.isDone() && !visible.isCompletedExceptionally() && visible.join()) {
      return route.apply(request);
    }
    CompletionStage<HttpRequest> held;
    if (request.entity().isKnownEmpty() || request.entity().isStrict()) {
      held = CompletableFuture.completedFuture(request);
    } else {
      held = request.entity().withSizeLimit(settings.maxBodyBytes())
          .toStrict(settings.bodyReadTimeoutMillis(), materializer)
          .thenApply(request::withEntity);
    }
    return held.thenCompose(strict -> visible.exceptionally(failure -> false)
        .thenCompose(isVisible -> isVisible ? route.apply(strict)
            : CompletableFuture.completedFuture(notYetVisible(strict))))
        .exceptionally(support::failureResponse);
  }

  private HttpResponse notYetVisible(HttpRequest request) {
    request.discardEntityBytes(materializer);
    return RequestSupport.error(new TroupeException(ErrorCode.NOT_YET_VISIBLE,
            "what the causal token names is not yet visible in data centre '"
                + replication.orElseThrow().settings().dataCentreName() + "' after "
                + replication.orElseThrow().engineSettings().tokenWaitMaxMillis()
                + " ms (troupe.replication.token-wait-max-millis); nothing was done: retry, or"
                + " send the request to the data centre that issued the token"))
        .addHeader(RetryAfter.create(settings.requestAdmission().retryAfterSeconds()));
  }

  /**
   * {@code response} with this DC's causal token merged with {@code requested}; unchanged on a
   * node without a DC name.
   */
  HttpResponse withToken(HttpResponse response, Optional<DependencyVector> requested) {
    if (replication.isEmpty()) {
      return response;
    }
    DependencyVector token = replication.get().shell().causalToken();
    if (requested.isPresent()) {
      token = token.merge(requested.get());
    }
    Optional<String> relayed =
        response.getHeader(ReplicationProtocol.CAUSAL_TOKEN_HEADER).map(HttpHeader::value);
    if (relayed.isPresent()) {
      // The home DC's answer to a forwarded write (HomeForwarding): its token names the write.
      try {
        token = token.merge(
            VectorText.parse(relayed.get().trim(), ReplicationProtocol.CAUSAL_TOKEN_HEADER));
      } catch (TroupeException malformed) {
        // Not from a Troupe peer: this DC's token alone.
      }
      response = response.removeHeader(ReplicationProtocol.CAUSAL_TOKEN_HEADER);
    }
    return response.addHeader(
        RawHeader.create(ReplicationProtocol.CAUSAL_TOKEN_HEADER, VectorText.encode(token)));
  }
}
