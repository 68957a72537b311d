package dev.troupe.server.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.model.causal.DataCentreIds;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationCodec;
import dev.troupe.runtime.replication.BootstrapImageReader;
import dev.troupe.runtime.replication.ReplicationStatus;
import dev.troupe.server.replication.DataCentreReplication;
import dev.troupe.server.replication.PullStatistics;
import dev.troupe.server.replication.ReplicationProtocol;
import dev.troupe.server.replication.ReplicationPuller;
import dev.troupe.server.replication.ReplicationServerSettings;
import dev.troupe.server.replication.VectorText;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * {@code /v1/replication/...}: the log a peer DC pulls, and the replication status a client or
 * {@code troupe status} reads. Authentication happened before ({@link Authorization}: the log
 * needs the replication secret, the status a {@code read} token).
 *
 * <p>{@code GET /v1/replication/bootstrap}: the bootstrap image, see {@link #bootstrap}.
 *
 * <p>{@code GET /v1/replication/log?origin=&after=&limit=} with {@code Troupe-Dc: <puller's
 * name>} and {@code Troupe-Received-Vector: <the puller's received vector>}: the entries of
 * {@code origin}'s log after timestamp {@code after}, at most {@code limit} (default and ceiling
 * {@code troupe.replication.pull-batch-max-entries}), one batch in {@link ReplicationCodec}'s
 * encoding. With {@code wait=MILLIS} (a long poll) an answer that would carry no entries is held
 * until the log has entries after {@code after} or the wait (at most {@code
 * troupe.replication.long-poll-max-millis}) has passed, re-reading the log every {@code
 * long-poll-check-interval-millis}; the answer then carries whatever the last read found (entries,
 * or a heartbeat with the newest bound). So a puller that has everything is answered as soon as
 * the next commit is in the log instead of finding it on its next pull, and an idle link still
 * carries a heartbeat at least every wait. Every parameter is checked before anything is read or
 * recorded: a request that fails
 * is {@code 400 invalid_request} (or {@code 403 forbidden} for a puller that is not a configured
 * peer) and changes nothing. A node without a DC name answers {@code 404 not_found}.
 *
 * <p>{@code GET /v1/replication/stream?origin=&after=} with the same headers, checked the same
 * way: a replication stream ({@link ReplicationStream}), one chunked answer carrying batch after
 * batch of {@code origin}'s entries after {@code after} as they come into the log, heartbeats
 * while idle, until {@code troupe.replication.stream-max-millis}.
 *
 * <p>Concurrency: stateless; the shell is thread-safe. The log read runs on the request's thread
 * (a held poll's and an idle stream's re-reads on {@link DataCentreReplication#logChecks}'s
 * thread): it is one bounded RocksDB iteration.
 */
final class ReplicationEndpoint {
  private static final Set<String> LOG_PARAMETERS = Set.of("origin", "after", "limit", "wait");
  private static final Set<String> STREAM_PARAMETERS = Set.of("origin", "after");

  private final Optional<DataCentreReplication> replication;

  ReplicationEndpoint(Optional<DataCentreReplication> replication) {
    this.replication = replication;
  }

  /** {@code GET /v1/replication/log}. */
  CompletionStage<HttpResponse> log(HttpRequest request) {
    DataCentreReplication node = named();
    ReplicationServerSettings settings = node.settings();
    Pull pull = pull(node, request, LOG_PARAMETERS, "origin, after, limit and wait");
    Map<String, String> query = pull.query();
    int maxEntries = node.engineSettings().pullBatchMaxEntries();
    int limit = query.containsKey("limit")
        ? (int) Math.min(number(query.get("limit"), "limit", 1), maxEntries) : maxEntries;
    long waitMillis = query.containsKey("wait")
        ? Math.min(number(query.get("wait"), "wait", 0), settings.longPollMaxMillis()) : 0;
    int puller = pull.puller();
    DependencyVector received = pull.received();
    int origin = pull.origin();
    long after = pull.after();
    ReplicationBatch batch = node.shell().serve(puller, received, origin, after, limit);
    if (!batch.entries().isEmpty() || waitMillis == 0) {
      return CompletableFuture.completedFuture(answer(batch));
    }
    CompletableFuture<HttpResponse> answer = new CompletableFuture<>();
    long deadlineNanos = System.nanoTime() + waitMillis * 1_000_000;
    recheck(() -> node.shell().serve(puller, received, origin, after, limit), deadlineNanos,
        settings.longPollCheckIntervalMillis(), node.logChecks(), answer);
    return answer;
  }

  /**
   * {@code GET /v1/replication/stream}: a replication stream ({@link ReplicationStream}); checked
   * and reported like {@link #log}, and its first batch read before the answer starts, so a
   * refusal or a failed store is an error answer, not a broken stream.
   */
  HttpResponse stream(HttpRequest request) {
    DataCentreReplication node = named();
    Pull pull = pull(node, request, STREAM_PARAMETERS, "origin and after");
    int maxEntries = node.engineSettings().pullBatchMaxEntries();
    ReplicationBatch first = node.shell().serve(pull.puller(), pull.received(), pull.origin(),
        pull.after(), maxEntries);
    return HttpResponse.create().withStatus(200).withEntity(HttpEntities.createChunked(
        ContentTypes.APPLICATION_OCTET_STREAM,
        ReplicationStream.source(node.shell(), pull.origin(), pull.after(), first, maxEntries,
            node.settings(), node.logChecks())));
  }

  /** A pull's checked request: who pulls, what it has, and from which origin after when. */
  private record Pull(int puller, DependencyVector received, int origin, long after,
      Map<String, String> query) {}

  /**
   * Checks what every pull carries (the puller's name and received vector, the parameters, {@code
   * origin} and {@code after}); anything wrong is a {@link TroupeException} (4xx), nothing read.
   */
  private static Pull pull(DataCentreReplication node, HttpRequest request,
      Set<String> parameters, String parameterNames) {
    ReplicationServerSettings settings = node.settings();
    String pullerName = header(request, ReplicationProtocol.DC_HEADER);
    if (!DataCentreIds.isValidName(pullerName)) {
      throw TroupeException.invalid(ReplicationProtocol.DC_HEADER + ": '" + pullerName
          + "' is not a data centre name");
    }
    int puller = DataCentreIds.of(pullerName);
    if (settings.peer(puller).filter(peer -> peer.name().equals(pullerName)).isEmpty()) {
      throw new TroupeException(ErrorCode.FORBIDDEN, "data centre '" + pullerName
          + "' is not a peer of '" + settings.dataCentreName() + "' (troupe.dc.peers)");
    }
    DependencyVector received = VectorText.parse(
        header(request, ReplicationProtocol.RECEIVED_VECTOR_HEADER),
        ReplicationProtocol.RECEIVED_VECTOR_HEADER);
    Map<String, String> query = request.getUri().query().toMap();
    for (String name : query.keySet()) {
      if (!parameters.contains(name)) {
        throw TroupeException.invalid("unknown parameter '" + name
            + "'; the parameters are " + parameterNames);
      }
    }
    String originText = required(query, "origin");
    int origin = settings.idOf(originText).orElseThrow(() -> TroupeException.invalid(
        "origin: '" + originText + "' is neither this data centre nor one of its peers"));
    long after = number(required(query, "after"), "after", 0);
    return new Pull(puller, received, origin, after, query);
  }

  /**
   * {@code GET /v1/replication/bootstrap} with {@code Troupe-Dc: <the new DC's name>}: this DC's
   * bootstrap image (docs/ARCHITECTURE.md, "Bootstrapping a new data centre"), chunked, one
   * {@link dev.troupe.model.causal.BootstrapImageCodec} frame per record, read from the store as
   * the connection takes them (a stream with backpressure on Pekko's blocking dispatcher: at most a
   * page of entity ids and a few frames in memory). The secret authenticated the requester (it
   * need not be a configured peer yet); its name says whom the truncation hold is for.
   */
  HttpResponse bootstrap(HttpRequest request) {
    DataCentreReplication node = named();
    String requesterName = header(request, ReplicationProtocol.DC_HEADER);
    if (!DataCentreIds.isValidName(requesterName)
        || requesterName.equals(node.settings().dataCentreName())) {
      throw TroupeException.invalid(ReplicationProtocol.DC_HEADER + ": '" + requesterName
          + "' is not the name of another data centre");
    }
    if (!request.getUri().query().toMap().isEmpty()) {
      throw TroupeException.invalid("the bootstrap image takes no parameters");
    }
    int requester = DataCentreIds.of(requesterName);
    Source<ByteString, ?> frames = Source.unfoldResource(
        () -> new BootstrapImageReader(node.troupeStore(), node.shell(), requester,
            node.bootstrapSettings()),
        reader -> Optional.ofNullable(reader.next()).map(ByteString::fromArray),
        BootstrapImageReader::close);
    return HttpResponse.create().withStatus(200).withEntity(
        HttpEntities.createChunked(ContentTypes.APPLICATION_OCTET_STREAM, frames));
  }

  /** Whether a client request to {@code path} waits for a bootstrap (all but these are). */
  static boolean servedWhileBootstrapping(String path) {
    return path.equals("/metrics") || path.equals("/v1/health") || path.startsWith("/v1/health/")
        || path.equals("/v1/openapi.json") || path.startsWith("/v1/replication/");
  }

  /**
   * Re-reads the log every {@code intervalMillis} until it has entries or the deadline passed,
   * then completes {@code answer} with the last read (a read that fails completes it
   * exceptionally: answered as that error, as an immediate read would have been).
   */
  private void recheck(Supplier<ReplicationBatch> read, long deadlineNanos, long intervalMillis,
      ScheduledExecutorService checks, CompletableFuture<HttpResponse> answer) {
    try {
      checks.schedule(() -> {
        try {
          ReplicationBatch batch = read.get();
          if (!batch.entries().isEmpty() || System.nanoTime() >= deadlineNanos) {
            answer.complete(answer(batch));
          } else {
            recheck(read, deadlineNanos, intervalMillis, checks, answer);
          }
        } catch (RuntimeException e) {
          answer.completeExceptionally(e);
        }
      }, intervalMillis, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException closing) {
      answer.completeExceptionally(new TroupeException(ErrorCode.UNAVAILABLE,
          "replication is closing"));
    }
  }

  private static HttpResponse answer(ReplicationBatch batch) {
    return HttpResponse.create().withStatus(200)
        .withEntity(ContentTypes.APPLICATION_OCTET_STREAM, ReplicationCodec.encodeBatch(batch));
  }

  /**
   * {@code GET /v1/replication/peers}: this DC and its current peers, each with its URL and
   * whether the configuration names it (otherwise it was added at runtime).
   */
  HttpResponse peers() {
    DataCentreReplication node = named();
    ReplicationServerSettings settings = node.settings();
    ObjectNode body = Json.NODES.objectNode();
    body.put("dataCentre", settings.dataCentreName());
    ArrayNode peers = body.putArray("peers");
    for (ReplicationServerSettings.Peer peer : settings.peers()) {
      peer(peers.addObject(), node, peer);
    }
    return RequestSupport.json(200, body);
  }

  /**
   * {@code POST /v1/replication/peers} with {@code {"name": ..., "url": ...}}: adds the peer
   * (201), changes a known peer's URL (200, {@code "change": "updated"}), or finds it as it is
   * (200, {@code "unchanged"}). Refused, changing nothing: {@code invalid_request} (the body, the
   * name, the URL, this DC's own name), {@code conflict} (an id collision, no replication
   * secret).
   */
  CompletionStage<HttpResponse> addPeer(JsonNode json) {
    DataCentreReplication node = named();
    if (json == null || !json.isObject()) {
      throw TroupeException.invalid("the body must be {\"name\": \"<data centre>\","
          + " \"url\": \"http://host:port\"}");
    }
    java.util.Iterator<String> fields = json.fieldNames();
    while (fields.hasNext()) {
      String field = fields.next();
      if (!field.equals("name") && !field.equals("url")) {
        throw TroupeException.invalid("unknown field '" + field + "' (the fields are name and"
            + " url)");
      }
    }
    if (!json.path("name").isTextual() || !json.path("url").isTextual()) {
      throw TroupeException.invalid("name and url are required strings");
    }
    String name = json.path("name").textValue();
    return node.addPeer(name, json.path("url").textValue()).thenApply(change -> {
      ObjectNode body = Json.NODES.objectNode();
      peer(body, node, node.settings().peerNamed(name).orElseThrow());
      body.put("change", change.name().toLowerCase(java.util.Locale.ROOT));
      return RequestSupport.json(change == DataCentreReplication.PeerChange.ADDED ? 201 : 200,
          body);
    });
  }

  /** {@code DELETE /v1/replication/peers/{name}}: removes the peer; {@code not_found} if none. */
  CompletionStage<HttpResponse> removePeer(String name) {
    DataCentreReplication node = named();
    return node.removePeer(name).thenApply(ignored -> {
      ObjectNode body = Json.NODES.objectNode();
      body.put("name", name);
      body.put("removed", true);
      body.put("configured", node.configured(name));
      return RequestSupport.json(200, body);
    });
  }

  private static void peer(ObjectNode node, DataCentreReplication replication,
      ReplicationServerSettings.Peer peer) {
    node.put("name", peer.name());
    node.put("dataCentreId", peer.id());
    node.put("url", peer.url().toString());
    node.put("configured", replication.configured(peer.name()));
  }

  /** {@code GET /v1/replication/status}: this DC, its vectors, and every peer's link and lag. */
  HttpResponse status() {
    DataCentreReplication node = named();
    ReplicationServerSettings settings = node.settings();
    ReplicationStatus status = node.shell().status();
    ObjectNode body = Json.NODES.objectNode();
    body.put("dataCentre", settings.dataCentreName());
    body.put("dataCentreId", settings.dataCentreId());
    body.put("pendingRemoteTransactions", status.pendingRemoteTransactions());
    body.put("applyingTransactions", status.applyingTransactions());
    body.put("stableVectorAgeMillis", status.stableVectorAgeMillis());
    body.put("logEntries", status.logEntries());
    body.set("receivedVector", vector(settings, status.receivedVector()));
    body.set("appliedVector", vector(settings, status.appliedVector()));
    body.set("stableVector", vector(settings, status.stableVector()));
    ArrayNode peers = body.putArray("peers");
    for (ReplicationStatus.PeerStatus peer : status.peers()) {
      ObjectNode peerNode = peers.addObject();
      peerNode.put("name", peer.name());
      peerNode.put("dataCentreId", peer.dataCentreId());
      settings.peer(peer.dataCentreId()).ifPresent(configured -> {
        peerNode.put("url", configured.url().toString());
        peerNode.put("configured", node.configured(configured.name()));
      });
      peerNode.put("lagTransactions", peer.pendingTransactions());
      peerNode.put("lagMillis", peer.lagMillis());
      peerNode.put("receivedTimestamp", peer.receivedTimestamp());
      peerNode.put("appliedTimestamp", peer.appliedTimestamp());
      node.pullers().stream().filter(puller -> puller.peer().id() == peer.dataCentreId())
          .findFirst().map(ReplicationPuller::statistics)
          .ifPresent(pulls -> link(peerNode.putObject("link"), pulls));
    }
    return RequestSupport.json(200, body);
  }

  private static void link(ObjectNode link, PullStatistics.Snapshot pulls) {
    link.put("up", pulls.consecutiveFailures() == 0 && pulls.lastSuccessMillis() > 0);
    link.put("pulls", pulls.pulls());
    link.put("entries", pulls.entries());
    link.put("failures", pulls.failures());
    link.put("consecutiveFailures", pulls.consecutiveFailures());
    link.put("lastSuccessMillis", pulls.lastSuccessMillis());
    link.put("lastFailure", pulls.lastFailure());
    // The peer's log lost entries this DC still needs (410 truncated): not cured by retrying;
    // the origin comes through another peer, or this DC needs a bootstrap.
    link.put("lastFailureTruncated", pulls.lastFailure().startsWith("truncated:"));
  }

  /** {@code {"<dc name>": timestamp, ...}}; an unknown DC by its id. */
  private static ObjectNode vector(ReplicationServerSettings settings, DependencyVector vector) {
    ObjectNode node = Json.NODES.objectNode();
    vector.entries().forEach((dc, timestamp) -> node.put(settings.nameOf(dc), timestamp));
    return node;
  }

  private DataCentreReplication named() {
    return replication.orElseThrow(() -> new TroupeException(ErrorCode.NOT_FOUND,
        "replication is off: this server has no data centre name (serve --dc NAME,"
            + " troupe.dc.name)"));
  }

  private static String header(HttpRequest request, String name) {
    return request.getHeader(name).map(HttpHeader::value).orElseThrow(() ->
        TroupeException.invalid("a replication pull needs the header " + name));
  }

  private static String required(Map<String, String> query, String name) {
    String value = query.get(name);
    if (value == null) {
      throw TroupeException.invalid("the parameter '" + name + "' is required");
    }
    return value;
  }

  private static long number(String text, String name, long minimum) {
    long value;
    try {
      value = Long.parseLong(text);
    } catch (NumberFormatException e) {
      throw TroupeException.invalid(name + " must be an integer, was '" + text + "'");
    }
    if (value < minimum || text.startsWith("+")) {
      throw TroupeException.invalid(name + " must be an integer of at least " + minimum
          + ", was " + text);
    }
    return value;
  }
}
