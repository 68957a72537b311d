package dev.troupe.server.http;

import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import java.util.Optional;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpMethods;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.HttpChallenge;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.http.javadsl.model.headers.RetryAfter;
import org.apache.pekko.http.javadsl.model.headers.TimeoutAccess;
import org.apache.pekko.http.javadsl.model.headers.WWWAuthenticate;

/**
 * What {@link RestApi} does to a request before routing it and to every answer after: CORS
 * preflights and headers, authentication and authorization ({@link Authorization}: 401 and 403
 * before admission counting and before the body is read), and a JSON answer when a request runs
 * past Pekko HTTP's {@code request-timeout}.
 *
 * <p>Concurrency: immutable; called from Pekko HTTP's threads at once.
 */
final class HttpEdge {
  /** Headers a page may send: the token, JSON bodies, idempotent retries. */
  static final String ALLOWED_HEADERS =
      "Authorization, Content-Type, Idempotency-Key, Troupe-Causal-Token";
  static final String ALLOWED_METHODS = "GET, HEAD, PUT, PATCH, POST, DELETE";
  /** Answer headers a page may read beyond the CORS-safelisted ones. */
  static final String EXPOSED_HEADERS =
      "Location, Retry-After, WWW-Authenticate, Allow, Idempotent-Replayed, Troupe-Causal-Token,"
          + " Troupe-Forwarded";
  /** The header a token comes in, in lower case as header names compare. */
  private static final String AUTHORIZATION = "authorization";
  private static final HttpHeader BEARER_CHALLENGE =
      WWWAuthenticate.create(HttpChallenge.create("Bearer", "troupe"));

  private final HttpSettings settings;
  private final Authorization authorization;
  private final HttpResponse timeoutResponse;

  HttpEdge(HttpSettings settings) {
    this(settings, Authorization.PeerAccess.NONE);
  }

  HttpEdge(HttpSettings settings, Authorization.PeerAccess peerAccess) {
    this.settings = settings;
    this.authorization = new Authorization(settings.tokens(), peerAccess);
    this.timeoutResponse = RequestSupport.error(new TroupeException(ErrorCode.UNAVAILABLE,
            "no answer within " + settings.requestTimeoutMillis()
                + " ms (troupe.http.request-timeout-millis); a write may or may not have been"
                + " applied: read before retrying, or retry with the same Idempotency-Key"))
        .addHeader(RetryAfter.create(settings.requestAdmission().retryAfterSeconds()));
  }

  /**
   * Makes Pekko's answer to a request that outlives {@code request-timeout} a JSON {@code 503
   * unavailable} with {@code Retry-After} instead of its plain-text default.
   */
  void answerTimeoutAsJson(HttpRequest request) {
    Optional<TimeoutAccess> access = request.getHeader(TimeoutAccess.class);
    access.ifPresent(header -> header.timeoutAccess().updateHandler(timedOut -> timeoutResponse));
  }

  /**
   * Who sent {@code request} and whether its route allows them ({@link Authorization});
   * {@code path} is the request's, as {@code getUri().path()} renders it.
   */
  Authorization.Decision authorize(HttpRequest request, String path) {
    return authorization.decide(request.method().name(), path,
        RequestSupport.headerValue(request, AUTHORIZATION));
  }

  /** The answer to a refused request: 401 with the bearer challenge, or 403. */
  HttpResponse refusal(Authorization.Decision refused) {
    return switch (refused) {
      case Authorization.Decision.Allowed allowed ->
          throw new IllegalArgumentException("an allowed request is not refused");
      case Authorization.Decision.Unauthenticated unauthenticated -> RequestSupport.error(
          new TroupeException(ErrorCode.UNAUTHORIZED, unauthenticated.message()))
          .addHeader(BEARER_CHALLENGE);
      case Authorization.Decision.Forbidden forbidden -> RequestSupport.error(
          new TroupeException(ErrorCode.FORBIDDEN, forbidden.message()));
    };
  }

  /** A browser's preflight: OPTIONS with Origin and Access-Control-Request-Method, CORS on. */
  boolean isPreflight(HttpRequest request) {
    return settings.cors().enabled() && request.method().equals(HttpMethods.OPTIONS)
        && request.getHeader("Origin").isPresent()
        && request.getHeader("Access-Control-Request-Method").isPresent();
  }

  /**
   * 204 with what the page may send, for an allowed origin; 204 without any CORS header for
   * another (the browser then refuses the page's request). Needs no token: browsers never send
   * one with a preflight.
   */
  HttpResponse preflight(HttpRequest request) {
    HttpResponse response = HttpResponse.create().withStatus(204)
        .addHeader(RawHeader.create("Vary", "Origin"));
    Optional<String> allowed = allowedOrigin(request);
    if (allowed.isEmpty()) {
      return response;
    }
    return response
        .addHeader(RawHeader.create("Access-Control-Allow-Origin", allowed.get()))
        .addHeader(RawHeader.create("Access-Control-Allow-Methods", ALLOWED_METHODS))
        .addHeader(RawHeader.create("Access-Control-Allow-Headers", ALLOWED_HEADERS))
        .addHeader(RawHeader.create("Access-Control-Max-Age",
            Long.toString(settings.cors().maxAgeSeconds())));
  }

  /** {@code response} with the CORS headers {@code request}'s origin is due (none if not allowed). */
  HttpResponse withCors(HttpRequest request, HttpResponse response) {
    if (!settings.cors().enabled()) {
      return response;
    }
    Optional<String> allowed = allowedOrigin(request);
    HttpResponse varied = response.addHeader(RawHeader.create("Vary", "Origin"));
    if (allowed.isEmpty()) {
      return varied;
    }
    return varied
        .addHeader(RawHeader.create("Access-Control-Allow-Origin", allowed.get()))
        .addHeader(RawHeader.create("Access-Control-Expose-Headers", EXPOSED_HEADERS));
  }

  private Optional<String> allowedOrigin(HttpRequest request) {
    return request.getHeader("Origin").map(HttpHeader::value)
        .flatMap(origin -> settings.cors().allowOriginFor(origin));
  }
}
