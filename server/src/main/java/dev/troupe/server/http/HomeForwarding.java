package dev.troupe.server.http;

import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.server.replication.DataCentreReplication;
import dev.troupe.server.replication.ReplicationServerSettings;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.ClassicActorSystemProvider;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpMethods;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.stream.Materializer;

/**
 * Forwards a write refused here with {@code not_home} to the strong type's home DC and relays its
 * answer (docs/ARCHITECTURE.md, "Strong types with a home DC").
 *
 * <p>The engine decides which writes this DC may run ({@code Troupe} refuses a write to a strong
 * entity homed elsewhere before doing anything, and the error answer names the home in {@value
 * #HOME_HEADER}); this class only carries the request. So every route is covered without a list
 * of routes here: a request that would write such an entity is first tried here, refused, then
 * sent as it came (method, path and query, body, the client's {@code Authorization}, {@code
 * Idempotency-Key} and causal token) to the home's REST server, the peer URL of {@code serve
 * --peer}, with {@value #FORWARDED_HEADER} naming this DC. The home's answer (status, headers,
 * body) is relayed as is; the edge then merges the home's causal token with this DC's, so a read
 * here with that token waits until the write is visible here. A request that already was
 * forwarded once is never forwarded again (two DCs that disagree about a home answer {@code
 * not_home} instead of looping).
 *
 * <p>Authentication: the client's own credentials travel with it, so every DC of a set must
 * accept the same client tokens (the replication secret opens only the log). Failures: a home
 * that cannot be connected to is {@code 503 unavailable} (nothing was done); a forward that fails
 * or times out ({@code troupe.replication.forward-timeout-millis}) once sent is {@code 500
 * outcome_unknown} (the home may have run it; a retry with the same {@code Idempotency-Key} is
 * safe).
 *
 * <p>Thread-safe; called from Pekko HTTP's threads.
 */
final class HomeForwarding {
  /** On a not_home answer: the home DC's name. */
  static final String HOME_HEADER = "Troupe-Home-Dc";
  /** On a forwarded request: the DC that forwarded it. */
  static final String FORWARDED_HEADER = "Troupe-Forwarded-By";

  /** Request headers not carried to the home (the connection's own, or Pekko's synthetic ones). */
  private static final Set<String> REQUEST_HEADERS_DROPPED = Set.of("host", "timeout-access",
      "remote-address", "raw-request-uri", "tls-session-info", "content-length", "content-type",
      "connection", "transfer-encoding", "keep-alive", "upgrade", FORWARDED_HEADER.toLowerCase(
          Locale.ROOT));
  /** Answer headers not relayed (this server sets its own). */
  private static final Set<String> RESPONSE_HEADERS_DROPPED = Set.of("date", "server",
      "content-length", "content-type", "connection", "transfer-encoding", "keep-alive");

  private final Optional<DataCentreReplication> replication;
  private final HttpSettings settings;
  private final Materializer materializer;
  private final Http http;

  HomeForwarding(Optional<DataCentreReplication> replication, HttpSettings settings,
      Materializer materializer, ClassicActorSystemProvider system) {
    this.replication = replication.filter(node -> !node.settings().peers().isEmpty());
    this.settings = settings;
    this.materializer = materializer;
    this.http = Http.get(system);
  }

  /** Whether {@code request} may need forwarding: a DC with peers, a method that may write. */
  boolean mayForward(HttpRequest request) {
    return replication.isPresent() && !request.method().equals(HttpMethods.GET)
        && !request.method().equals(HttpMethods.HEAD)
        && !request.method().equals(HttpMethods.OPTIONS);
  }

  /** {@code request} with its body read, so that it can be sent a second time. */
  CompletionStage<HttpRequest> strict(HttpRequest request) {
    if (request.entity().isKnownEmpty() || request.entity().isStrict()) {
      return CompletableFuture.completedFuture(request);
    }
    return request.entity().withSizeLimit(settings.maxBodyBytes())
        .toStrict(settings.bodyReadTimeoutMillis(), materializer)
        .thenApply(request::withEntity);
  }

  /**
   * {@code answered} itself, unless it is a {@code not_home} naming a peer and {@code request}
   * was not forwarded before: then the home's answer to {@code request}.
   */
  CompletionStage<HttpResponse> relayIfNotHome(HttpRequest request, HttpResponse answered) {
    Optional<String> home = answered.getHeader(HOME_HEADER).map(HttpHeader::value);
    if (home.isEmpty() || replication.isEmpty()
        || request.getHeader(FORWARDED_HEADER).isPresent()) {
      return CompletableFuture.completedFuture(answered);
    }
    ReplicationServerSettings dataCentres = replication.get().settings();
    Optional<ReplicationServerSettings.Peer> peer = dataCentres.peerNamed(home.get());
    if (peer.isEmpty()) {
      return CompletableFuture.completedFuture(answered);
    }
    answered.discardEntityBytes(materializer);
    long timeoutMillis = dataCentres.forwardTimeoutMillis();
    // The path as its segments render (a segment's own '/' or '[' stays percent-encoded).
    String target = peer.get().url() + request.getUri().toRelative().toString();
    List<HttpHeader> headers = new ArrayList<>();
    for (HttpHeader header : request.getHeaders()) {
      if (!REQUEST_HEADERS_DROPPED.contains(header.lowercaseName())) {
        headers.add(header);
      }
    }
    headers.add(RawHeader.create(FORWARDED_HEADER, dataCentres.dataCentreName()));
    HttpRequest forwarded = HttpRequest.create(target).withMethod(request.method())
        .addHeaders(headers).withEntity(request.entity());
    return http.singleRequest(forwarded).toCompletableFuture()
        .thenCompose(response -> response.entity().toStrict(timeoutMillis, materializer)
            .thenApply(body -> relayed(response, body)))
        .orTimeout(timeoutMillis, TimeUnit.MILLISECONDS)
        .exceptionally(failure -> failed(home.get(), failure));
  }

  private static HttpResponse relayed(HttpResponse response,
      org.apache.pekko.http.javadsl.model.HttpEntity.Strict body) {
    List<HttpHeader> headers = new ArrayList<>();
    for (HttpHeader header : response.getHeaders()) {
      String name = header.lowercaseName();
      if (!RESPONSE_HEADERS_DROPPED.contains(name) && !name.startsWith("access-control-")) {
        headers.add(header);
      }
    }
    return HttpResponse.create().withStatus(response.status()).addHeaders(headers)
        .withEntity(body);
  }

  private static HttpResponse failed(String home, Throwable failure) {
    Throwable cause = failure instanceof CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
    String text = String.valueOf(cause);
    if (cause instanceof java.net.ConnectException || text.contains("ConnectException")
        || text.contains("Connect(") || cause instanceof org.apache.pekko.stream.BufferOverflowException) {
      return RequestSupport.error(new TroupeException(ErrorCode.UNAVAILABLE, "the home data"
          + " centre '" + home + "' of the entity this request writes cannot be reached from"
          + " here (" + cause.getClass().getSimpleName() + "); nothing was done: retry, or send"
          + " it to the home"));
    }
    return RequestSupport.error(new TroupeException(ErrorCode.OUTCOME_UNKNOWN, "the request was"
        + " forwarded to the home data centre '" + home + "' of the entity it writes and its"
        + " answer did not arrive (" + cause.getClass().getSimpleName() + "): it may have run"
        + " there; retry with the same Idempotency-Key, or read to find out"));
  }
}
