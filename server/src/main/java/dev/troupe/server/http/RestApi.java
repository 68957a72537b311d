package dev.troupe.server.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.value.DependencyTable;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.spec.StateProjection;
import dev.troupe.model.spec.TypeEvolution;
import dev.troupe.model.spec.TypeSpec;
import dev.troupe.runtime.Troupe;
import dev.troupe.runtime.TransactionRequest;
import dev.troupe.runtime.TurnOutcome;
import dev.troupe.server.replication.DataCentreReplication;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.LongAdder;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpMethod;
import org.apache.pekko.http.javadsl.model.HttpMethods;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.Location;
import org.apache.pekko.stream.Materializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * REST API v1 over the embedded engine. A hand-written router on Pekko HTTP's low-level API: every
 * path, method and failure is answered here with a JSON body, so no client mistake ever surfaces as
 * a 500 or a stack trace, and validation happens before anything is changed.
 *
 * <p>Routes: see README.md ("REST API") and docs/ARCHITECTURE.md.
 */
public final class RestApi
    implements org.apache.pekko.japi.function.Function<HttpRequest, CompletionStage<HttpResponse>> {
  private static final Logger log = LoggerFactory.getLogger(RestApi.class);
  private static final byte[] LIVE = "{\"status\":\"ok\"}".getBytes(StandardCharsets.UTF_8);
  /**
   * The OpenAPI 3.1 document of this API, served as it is stored (openapi/troupe-v1.json, checked
   * against real answers by OpenApiContractTest and fuzzed by SchemathesisTest).
   */
  private static final byte[] OPENAPI_DOCUMENT = readResource("/openapi/troupe-v1.json");

  private final Troupe troupe;
  private final IdempotentRequests idempotentRequests;
  private final Materializer materializer;
  private final PrometheusMetrics metrics;
  private final RequestSupport support;
  private final HttpSettings settings;
  private final TransactionRequests transactionRequests;
  private final RequestAdmission admission;
  private final HttpEdge edge;
  private final CausalTokens causalTokens;
  private final ReplicationEndpoint replicationEndpoint;
  private final Optional<DataCentreReplication> replication;
  private final HomeForwarding homeForwarding;
  private final LongAdder requests = new LongAdder();
  /** The web console's files ({@code /console}). */
  private final ConsoleAssets console = new ConsoleAssets();
  /** The bounds of a page of an entity's versions ({@code troupe.versions}). */
  private final PageQuery.Bounds versionBounds;

  /**
   * Adds metrics of a part wired outside the engine (the system-of-record exporter) to {@code
   * GET /metrics}: the source appends lines in the Prometheus text format.
   */
  public void addMetricsSource(java.util.function.Consumer<StringBuilder> source) {
    metrics.addSource(source);
  }

  public RestApi(Troupe troupe, HttpSettings settings, Materializer materializer) {
    this(troupe, settings, materializer, Optional.empty());
  }

  /**
   * The API of a node; with {@code replication}, a named DC's: peers pull its log, answers carry
   * causal tokens and requests wait for theirs ({@link CausalTokens}).
   */
  public RestApi(Troupe troupe, HttpSettings settings, Materializer materializer,
      Optional<DataCentreReplication> replication) {
    this.troupe = troupe;
    this.materializer = materializer;
    this.versionBounds = PageQuery.Bounds.fromConfig(troupe.settings().config(), "troupe.versions");
    this.admission = new RequestAdmission(settings);
    this.edge = new HttpEdge(settings, replication
        .map(node -> Authorization.PeerAccess.of(node.settings().secret(),
            node.settings().allowUnauthenticated()))
        .orElse(Authorization.PeerAccess.NONE));
    this.causalTokens = new CausalTokens(replication, settings, materializer);
    this.replicationEndpoint = new ReplicationEndpoint(replication);
    this.replication = replication;
    this.homeForwarding =
        new HomeForwarding(replication, settings, materializer, troupe.actorSystem());
    this.metrics = new PrometheusMetrics(troupe, requests, admission, replication);
    this.support = new RequestSupport(settings, materializer);
    this.settings = settings;
    this.transactionRequests = new TransactionRequests(support);
    this.idempotentRequests = new IdempotentRequests(troupe,
        IdempotencySettings.fromConfig(troupe.settings().config()));
  }

  /**
   * The edge first ({@link HttpEdge}): a CORS preflight is answered at once, and a request without
   * the token its route needs is refused with 401 or 403, before admission counting and before its
   * body is read. Then health and {@code /metrics} are routed at once, never counted against a
   * limit; every other request is admitted by its class's limit ({@link RequestAdmission}) or
   * refused at once with 429 and {@code Retry-After}, before its body is read. Between the two, a
   * request carrying a causal token waits until the token is visible here, or is answered 503
   * {@code not_yet_visible} ({@link CausalTokens}). Every answer gets the CORS headers its origin
   * is due, and a named DC's causal token. An answer not ready when this returns is given the
   * JSON answer to a request timeout ({@link HttpEdge#answerTimeoutAsJson}).
   */
  @Override
  public CompletionStage<HttpResponse> apply(HttpRequest request) {
    requests.increment();
    if (edge.isPreflight(request)) {
      request.discardEntityBytes(materializer);
      return CompletableFuture.completedFuture(edge.preflight(request));
    }
    // The path rendered once: Pekko renders it anew on every getUri().path().
    String path = request.getUri().path();
    Authorization.Decision decision = edge.authorize(request, path);
    if (!(decision instanceof Authorization.Decision.Allowed allowed)) {
      request.discardEntityBytes(materializer);
      return CompletableFuture.completedFuture(
          edge.withCors(request, edge.refusal(decision)));
    }
    if (bootstrapping() && !ReplicationEndpoint.servedWhileBootstrapping(path)) {
      // Added to a running set and not yet caught up (docs/ARCHITECTURE.md, "Bootstrapping a
      // new data centre"): it could show part of a multi-entity transaction.
      request.discardEntityBytes(materializer);
      return CompletableFuture.completedFuture(edge.withCors(request, RequestSupport.error(
          new TroupeException(ErrorCode.BOOTSTRAPPING, "this data centre is applying the"
              + " replication logs after its bootstrap image; retry later or elsewhere"))
          .addHeader(org.apache.pekko.http.javadsl.model.headers.RetryAfter.create(1L))));
    }
    // Idempotency keys are the client's namespace: two tokens' keys never meet.
    String idempotencyNamespace = allowed.tokenName().orElse(IdempotentRequests.NO_NAMESPACE);
    Optional<DependencyVector> token;
    try {
      token = causalTokens.of(request);
    } catch (TroupeException malformed) {
      request.discardEntityBytes(materializer);
      return CompletableFuture.completedFuture(edge.withCors(request,
          causalTokens.withToken(RequestSupport.error(malformed), Optional.empty())));
    }
    // A causal token is waited for before admission: a wait holds no permit.
    CompletionStage<HttpResponse> answered =
        token.isPresent() && CausalTokens.honoured(path)
            ? causalTokens.whenVisible(request, token.get(),
                visible -> admitted(visible, idempotencyNamespace, path), support)
            : admitted(request, idempotencyNamespace, path);
    CompletionStage<HttpResponse> response = answered.thenApply(answer ->
        edge.withCors(request, causalTokens.withToken(answer, token)));
    if (!(response instanceof CompletableFuture<HttpResponse> done && done.isDone())) {
      // Only an answer still on its way can outlive request-timeout-millis; one made on this
      // thread (a cached read, every refusal) is out before, so its timer is not rescheduled
      // (issue 20: the reschedule was a fiftieth of a cached read's CPU).
      edge.answerTimeoutAsJson(request);
    }
    return response;
  }

  /** {@code path}: the request's, as {@code request.getUri().path()} renders it. */
  private CompletionStage<HttpResponse> admitted(HttpRequest request, String idempotencyNamespace,
      String path) {
    RequestAdmission.WorkClass workClass =
        RequestAdmission.classify(request.method().name(), path);
    java.util.function.Function<HttpRequest, CompletionStage<HttpResponse>> route =
        admittedRequest -> homeForwarding.mayForward(admittedRequest)
            ? forwardable(admittedRequest, idempotencyNamespace, path)
            : route(admittedRequest, idempotencyNamespace, path);
    if (workClass == RequestAdmission.WorkClass.EXEMPT) {
      return support.answer(request, route);
    }
    Optional<RequestAdmission.Permit> permit = admission.admit(workClass);
    if (permit.isEmpty()) {
      request.discardEntityBytes(materializer);
      return CompletableFuture.completedFuture(admission.refusal(workClass));
    }
    return support.answer(request, route).thenApply(admission::withRetryAfter)
        .whenComplete((response, failure) ->
            permit.get().release(failure != null ? RequestAdmission.Outcome.DROPPED
                : RequestAdmission.Outcome.ofStatus(response.status().intValue())));
  }

  /**
   * A write of a DC with peers, once admitted, has its body read first, so that when the engine
   * refuses it as {@code not_home} (a strong type homed elsewhere) it can be forwarded to the home
   * and the home's answer relayed ({@link HomeForwarding}). The permit is held meanwhile: it
   * bounds the forwards in flight like any other work.
   */
  private CompletionStage<HttpResponse> forwardable(HttpRequest request,
      String idempotencyNamespace, String path) {
    return homeForwarding.strict(request)
        .thenCompose(strict -> route(strict, idempotencyNamespace, path)
            .exceptionally(support::failureResponse)
            .thenCompose(answer -> homeForwarding.relayIfNotHome(strict, answer)));
  }

  /**
   * A write with an {@code Idempotency-Key} runs at most once ({@link IdempotentRequests}); the
   * key is looked up in {@code idempotencyNamespace}, the name of the request's token.
   */
  private CompletionStage<HttpResponse> route(HttpRequest request, String idempotencyNamespace,
      String pathText) {
    // The segments decoded once, for the idempotency check and the routing both.
    List<String> path = RequestSupport.segments(request);
    return idempotentRequests.answer(request, path, idempotencyNamespace,
        routed -> routeOnce(routed, pathText, path), support);
  }

  /**
   * Routes {@code request}; {@code pathText} is its path as {@code getUri().path()} renders it,
   * {@code path} its decoded segments (both of the request as received: a retried or forwarded
   * request keeps its URI).
   */
  private CompletionStage<HttpResponse> routeOnce(HttpRequest request, String pathText,
      List<String> path) {
    HttpMethod method = request.method();
    int size = path.size();
    if (size == 1 && path.get(0).equals("metrics")) {
      support.requireMethod(request, HttpMethods.GET);
      return RequestSupport.completed(HttpResponse.create().withEntity(
          ContentTypes.create(org.apache.pekko.http.javadsl.model.MediaTypes.TEXT_PLAIN,
              org.apache.pekko.http.javadsl.model.HttpCharsets.UTF_8),
          metrics.render()));
    }
    if (ConsoleAssets.isConsolePath(pathText)) {
      return consoleRoute(request);
    }
    if (size < 2 || !path.get(0).equals("v1")) {
      return support.notFound(request);
    }
    String resource = path.get(1);
    switch (resource) {
      case "health" -> {
        // /v1/health is readiness, kept for the probes that already use it.
        if (size > 3 || (size == 3 && !path.get(2).equals("live") && !path.get(2).equals("ready"))) {
          return support.notFound(request);
        }
        support.requireMethod(request, HttpMethods.GET);
        request.discardEntityBytes(materializer);
        if (size == 3 && path.get(2).equals("live")) {
          // Liveness: the process answers HTTP. Restarting it cures nothing a failed store or
          // damaged data needs, so those are readiness problems only.
          return RequestSupport.completed(RequestSupport.json(200, LIVE));
        }
        return RequestSupport.completed(readiness());
      }
      case "replication" -> {
        if (size >= 3 && path.get(2).equals("peers")) {
          return peersRoute(request, path);
        }
        if (size != 3 || !(path.get(2).equals("log") || path.get(2).equals("stream")
            || path.get(2).equals("status") || path.get(2).equals("bootstrap"))) {
          return support.notFound(request);
        }
        support.requireMethod(request, HttpMethods.GET);
        request.discardEntityBytes(materializer);
        return switch (path.get(2)) {
          case "log" -> replicationEndpoint.log(request);
          case "stream" -> RequestSupport.completed(replicationEndpoint.stream(request));
          case "bootstrap" -> RequestSupport.completed(replicationEndpoint.bootstrap(request));
          default -> RequestSupport.completed(replicationEndpoint.status());
        };
      }
      case "cluster" -> {
        if (size != 2) {
          return support.notFound(request);
        }
        support.requireMethod(request, HttpMethods.GET);
        request.discardEntityBytes(materializer);
        return ClusterStatus.answer(troupe);
      }
      case "openapi.json" -> {
        if (size != 2) {
          return support.notFound(request);
        }
        support.requireMethod(request, HttpMethods.GET);
        request.discardEntityBytes(materializer);
        return RequestSupport.completed(RequestSupport.json(200, OPENAPI_DOCUMENT));
      }
      case "types" -> {
        if (size == 2) {
          support.requireMethod(request, HttpMethods.GET);
          ArrayNode types = Json.NODES.arrayNode();
          troupe.types().forEach(type -> types.add(type.toJson()));
          ObjectNode body = Json.NODES.objectNode();
          body.set("types", types);
          return RequestSupport.completed(RequestSupport.json(200, body));
        }
        if (size == 3) {
          String typeName = support.checkTypeName(path.get(2));
          if (method.equals(HttpMethods.GET)) {
            request.discardEntityBytes(materializer);
            TypeSpec type = troupe.type(typeName).orElseThrow(() -> new TroupeException(
                ErrorCode.UNKNOWN_TYPE, "type '" + typeName + "' is not declared"));
            return RequestSupport.completed(RequestSupport.json(200, type.toJson()));
          }
          support.requireMethod(request, HttpMethods.PUT);
          boolean yaml = request.entity().getContentType().mediaType().toString().contains("yaml");
          return support.body(request).thenCompose(bytes -> {
            TypeEvolution.Migration migration = migrationOf(request);
            TypeSpec spec = SpecParser.parse(typeName, bytes, yaml);
            return troupe.defineType(spec, migration);
          }).thenApply(spec -> RequestSupport.json(200, spec.toJson()));
        }
        return support.notFound(request);
      }
      case "transactions" -> {
        if (size == 3 && path.get(2).equals("recent")) {
          return recentTransactionsRoute(request);
        }
        if (size == 3 && path.get(2).equals("begin")) {
          support.requireMethod(request, HttpMethods.POST);
          request.discardEntityBytes(materializer);
          ObjectNode body = Json.NODES.objectNode();
          body.put("txId", troupe.beginInteractive());
          body.put("idleTimeoutMillis",
              troupe.settings().transactions().interactiveIdleTimeoutMillis());
          return RequestSupport.completed(RequestSupport.json(200, body));
        }
        if (size == 4) {
          support.requireMethod(request, HttpMethods.POST);
          return interactiveRoute(request, parseTransactionId(path.get(2)), path.get(3));
        }
        if (size != 2) {
          return support.notFound(request);
        }
        support.requireMethod(request, HttpMethods.POST);
        return support.body(request).thenCompose(bytes -> {
          TransactionRequest transaction = transactionRequests.parse(bytes);
          return troupe.transact(transaction).thenApply(outcome -> RequestSupport.json(200,
              TransactionRequests.render(outcome, transaction.reads())));
        });
      }
      case "snapshot-read" -> {
        if (size != 2) {
          return support.notFound(request);
        }
        support.requireMethod(request, HttpMethods.POST);
        return support.body(request).thenCompose(bytes -> {
          List<EntityId> entities = transactionRequests.parseSnapshotRead(bytes);
          return troupe.transact(new TransactionRequest(List.of(), entities))
              .thenApply(outcome -> RequestSupport.json(200,
                  TransactionRequests.renderSnapshot(outcome)));
        });
      }
      case "dependencies" -> {
        if (size == 2) {
          support.requireMethod(request, HttpMethods.POST);
          return support.body(request).thenCompose(bytes -> {
            Dependency dependency = support.dependency(Json.parse(bytes));
            return troupe.registerDependency(dependency).thenApply(outcome -> {
              ObjectNode body = dependency.toJson();
              body.put("txId", outcome.transactionId());
              return RequestSupport.json(201, body)
                  .addHeader(Location.create(dependencyPath(dependency.id())));
            });
          });
        }
        if (size == 3) {
          return dependencyRoute(request, path.get(2));
        }
        return support.notFound(request);
      }
      case "entities" -> {
        if (size == 3) {
          return listingRoute(request, support.checkTypeName(path.get(2)));
        }
        if (size < 4) {
          return support.notFound(request);
        }
        EntityId entity = support.entity(path.get(2), path.get(3));
        CompletionStage<HttpResponse> answer = entitiesRoute(request, path, size, entity);
        return troupe.cluster().isEmpty() ? answer
            : answer.thenApply(response -> PlacementHeader.mark(troupe, entity, response));
      }
      default -> {
        return support.notFound(request);
      }
    }
  }

  /** {@code /v1/entities/{type}/{id}/...}: the entity, its keys, dependencies and actions. */
  private CompletionStage<HttpResponse> entitiesRoute(HttpRequest request, List<String> path,
      int size, EntityId entity) {
    if (size == 4) {
      return entityRoute(request, entity);
    }
    if (size == 5 && path.get(4).equals("versions")) {
      support.requireMethod(request, HttpMethods.GET);
      request.discardEntityBytes(materializer);
      PageQuery query = PageQuery.parse(request.getUri().query()::get, versionBounds);
      return troupe.versions(entity, query.before(), query.limit())
          .thenApply(versions -> RequestSupport.json(200, ConsoleBodies.versions(entity,
              versions, query.limit())));
    }
    if (size == 5 && path.get(4).equals("dependencies")) {
      support.requireMethod(request, HttpMethods.GET);
      request.discardEntityBytes(materializer);
      return troupe.dependencies(entity)
          .thenApply(dependencies -> RequestSupport.json(200, dependenciesBody(dependencies)));
    }
    if (size >= 6 && path.get(4).equals("keys")) {
      String key = support.checkKey(path.get(5));
      if (size == 6) {
        return keyRoute(request, entity, key);
      }
      if (size == 7) {
        support.requireMethod(request, HttpMethods.POST);
        return switch (path.get(6)) {
          case "increment" -> support.body(request).thenCompose(bytes -> {
            JsonNode by = RequestSupport.onlyField(bytes, "by");
            if (!by.isIntegralNumber() || !by.canConvertToLong()) {
              throw TroupeException.invalid("'by' must be a 64-bit integer, was " + by);
            }
            Optional<StateProjection> projection = projectionOf(request, entity);
            return troupe.increment(entity, key, by.asLong())
                .thenApply(outcome -> versionAndState(outcome, projection));
          });
          case "add" -> support.body(request).thenCompose(bytes -> {
            JsonNode element = support.checkValueSize(RequestSupport.onlyField(bytes, "element"));
            Optional<StateProjection> projection = projectionOf(request, entity);
            return troupe.add(entity, key, element)
                .thenApply(outcome -> versionAndState(outcome, projection));
          });
          case "remove" -> support.body(request).thenCompose(bytes -> {
            JsonNode element = RequestSupport.onlyField(bytes, "element");
            Optional<StateProjection> projection = projectionOf(request, entity);
            return troupe.remove(entity, key, element)
                .thenApply(outcome -> versionAndState(outcome, projection));
          });
          default -> support.notFound(request);
        };
      }
    }
    if (size == 6 && path.get(4).equals("actions")) {
      support.requireMethod(request, HttpMethods.POST);
      String action = path.get(5);
      return support.body(request).thenCompose(bytes -> {
        JsonNode params = bytes.length == 0 ? Json.NODES.objectNode() : Json.parse(bytes);
        if (!params.isObject()) {
          throw TroupeException.invalid("action parameters must be a JSON object");
        }
        Optional<StateProjection> projection = projectionOf(request, entity);
        return troupe.invoke(entity, action, params)
            .thenApply(outcome -> versionAndState(outcome, projection));
      });
    }
    return support.notFound(request);
  }

  /**
   * {@code GET /v1/entities/{type}?after=ID|from=ID&limit=N&at=VERSION&states=BOOLEAN}: a page of
   * the type's entities in id order ({@link dev.troupe.runtime.EntityListing}). Every parameter
   * is checked before anything is read ({@link ListingQuery}): a bad one is a 400, never a partial
   * answer.
   */
  private CompletionStage<HttpResponse> listingRoute(HttpRequest request, String type) {
    support.requireMethod(request, HttpMethods.GET);
    request.discardEntityBytes(materializer);
    ListingQuery query =
        ListingQuery.parse(request.getUri().query()::get, troupe.settings().listing());
    query.start().ifPresent(id -> support.entity(type, id)); // any id's rules
    return troupe.listEntities(type, query.start().orElse(null), query.includeStart(),
        query.limit(), query.at(), query.withStates())
        .thenApply(page -> RequestSupport.json(200, listingBody(page)));
  }


  /**
   * {@code {"type", "entities": [{"id", "version"[, "state"]}], "next"}}, written straight into
   * bytes: each state is already JSON (the type's rendering, as a {@code GET} answers it, memoized
   * per state) and is copied in as it is, never parsed or re-encoded.
   */
  static byte[] listingBody(dev.troupe.runtime.EntityListing.Page page) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(256);
    try {
      out.write(LISTING_TYPE);
      out.write(Json.MAPPER.writeValueAsBytes(page.type()));
      out.write(LISTING_ENTITIES);
      boolean first = true;
      for (dev.troupe.runtime.EntityListing.Entry entry : page.entities()) {
        out.write(first ? LISTING_FIRST_ID : LISTING_NEXT_ID);
        first = false;
        out.write(Json.MAPPER.writeValueAsBytes(entry.id()));
        out.write(LISTING_VERSION);
        out.write(Long.toString(entry.version()).getBytes(StandardCharsets.US_ASCII));
        if (entry.stateJson() != null) {
          out.write(LISTING_STATE);
          out.write(entry.stateJson());
        }
        out.write('}');
      }
      out.write(LISTING_NEXT);
      out.write(page.next() == null ? LISTING_NULL : Json.MAPPER.writeValueAsBytes(page.next()));
      out.write('}');
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    return out.toByteArray();
  }

  private static final byte[] LISTING_TYPE = ascii("{\"type\":");
  private static final byte[] LISTING_ENTITIES = ascii(",\"entities\":[");
  private static final byte[] LISTING_FIRST_ID = ascii("{\"id\":");
  private static final byte[] LISTING_NEXT_ID = ascii(",{\"id\":");
  private static final byte[] LISTING_VERSION = ascii(",\"version\":");
  private static final byte[] LISTING_STATE = ascii(",\"state\":");
  private static final byte[] LISTING_NEXT = ascii("],\"next\":");
  private static final byte[] LISTING_NULL = ascii("null");

  private static byte[] ascii(String text) {
    return text.getBytes(StandardCharsets.US_ASCII);
  }

  private CompletionStage<HttpResponse> entityRoute(HttpRequest request, EntityId entity) {
    HttpMethod method = request.method();
    if (method.equals(HttpMethods.GET)) {
      request.discardEntityBytes(materializer);
      Optional<String> at = request.getUri().query().get("at");
      Optional<StateProjection> projection = projectionOf(request, entity);
      if (at.isEmpty()) {
        return (projection.isEmpty() ? troupe.getRendered(entity)
            : troupe.getRendered(entity, projection.get()))
            .thenApply(rendered -> RequestSupport.json(200,
                RequestSupport.entityBody(entity, rendered.stateJson(), rendered.version())));
      }
      long timestamp = parseTimestamp(at.get());
      return (projection.isEmpty() ? troupe.readAt(entity, timestamp)
          : troupe.readAt(entity, timestamp, projection.get())).thenApply(view ->
          RequestSupport.json(200, RequestSupport.entityBody(entity,
              dev.troupe.model.Json.writeBytes(view.state()), view.version())));
    }
    if (method.equals(HttpMethods.PATCH)) {
      return support.body(request).thenCompose(bytes -> {
        JsonNode patch = Json.parse(bytes);
        if (!patch.isObject() || patch.isEmpty()) {
          throw TroupeException.invalid(
              "PATCH body must be a non-empty JSON object of key: value assignments");
        }
        Map<String, JsonNode> assignments = new LinkedHashMap<>();
        Iterator<Map.Entry<String, JsonNode>> fields = patch.fields();
        while (fields.hasNext()) {
          Map.Entry<String, JsonNode> field = fields.next();
          assignments.put(support.checkKey(field.getKey()), support.checkValueSize(field.getValue()));
        }
        Optional<StateProjection> projection = projectionOf(request, entity);
        return troupe.patch(entity, assignments)
            .thenApply(outcome -> versionAndState(outcome, projection));
      });
    }
    if (method.equals(HttpMethods.DELETE)) {
      request.discardEntityBytes(materializer);
      return troupe.delete(entity).thenApply(outcome -> RequestSupport.version(outcome.version()));
    }
    throw support.methodNotAllowed(request,
        HttpMethods.GET, HttpMethods.PATCH, HttpMethods.DELETE);
  }

  private CompletionStage<HttpResponse> keyRoute(HttpRequest request, EntityId entity, String key) {
    HttpMethod method = request.method();
    if (method.equals(HttpMethods.GET)) {
      request.discardEntityBytes(materializer);
      return troupe.getKey(entity, key).thenApply(value -> {
        ObjectNode body = Json.NODES.objectNode();
        body.set("value", value);
        return RequestSupport.json(200, body);
      });
    }
    if (method.equals(HttpMethods.PUT)) {
      return support.body(request)
          .thenCompose(bytes -> troupe.assign(entity, key, support.checkValueSize(Json.parse(bytes))))
          .thenApply(outcome -> RequestSupport.version(outcome.version()));
    }
    if (method.equals(HttpMethods.DELETE)) {
      request.discardEntityBytes(materializer);
      return troupe.deleteKey(entity, key).thenApply(outcome -> RequestSupport.version(outcome.version()));
    }
    throw support.methodNotAllowed(request,
        HttpMethods.GET, HttpMethods.PUT, HttpMethods.DELETE);
  }

  /**
   * {@code GET /console} and its files ({@link ConsoleAssets}): public, as they are stored, never
   * cached stale (a new server's console is loaded at once).
   */
  private CompletionStage<HttpResponse> consoleRoute(HttpRequest request) {
    support.requireMethod(request, HttpMethods.GET);
    request.discardEntityBytes(materializer);
    ConsoleAssets.Asset asset = console.asset(request.getUri().path());
    return RequestSupport.completed(HttpResponse.create()
        .withEntity(org.apache.pekko.http.javadsl.model.ContentTypes.parse(
            asset.mediaType() + "; charset=UTF-8"), asset.bytes())
        .addHeader(org.apache.pekko.http.javadsl.model.headers.RawHeader.create(
            "Cache-Control", "no-cache"))
        .addHeader(org.apache.pekko.http.javadsl.model.headers.RawHeader.create(
            "X-Content-Type-Options", "nosniff"))
        .addHeader(org.apache.pekko.http.javadsl.model.headers.RawHeader.create(
            "Content-Security-Policy", ConsoleAssets.CONTENT_SECURITY_POLICY)));
  }

  /** {@code GET /v1/transactions/recent?before=SEQUENCE&limit=N}: newest first. */
  private CompletionStage<HttpResponse> recentTransactionsRoute(HttpRequest request) {
    support.requireMethod(request, HttpMethods.GET);
    request.discardEntityBytes(materializer);
    dev.troupe.runtime.RecentTransactions recent = troupe.recentTransactions();
    PageQuery query = PageQuery.parse(request.getUri().query()::get, new PageQuery.Bounds(
        recent.settings().defaultLimit(), recent.settings().maxLimit(),
        "troupe.recent-transactions"));
    return RequestSupport.completed(RequestSupport.json(200,
        ConsoleBodies.recentTransactions(recent.page(query.before(), query.limit()))));
  }

  /** {@code GET | DELETE /v1/dependencies/{id}}. */
  /**
   * {@code /v1/replication/peers} (GET, POST) and {@code /v1/replication/peers/{name}} (DELETE):
   * the peers of a named DC, changed at runtime ({@link ReplicationEndpoint#addPeer}).
   */
  private CompletionStage<HttpResponse> peersRoute(HttpRequest request, List<String> path) {
    if (path.size() == 3) {
      HttpMethod method = request.method();
      if (method.equals(HttpMethods.GET)) {
        request.discardEntityBytes(materializer);
        return RequestSupport.completed(replicationEndpoint.peers());
      }
      if (!method.equals(HttpMethods.POST)) {
        throw support.methodNotAllowed(request, HttpMethods.GET, HttpMethods.POST);
      }
      return support.body(request).thenCompose(bytes ->
          replicationEndpoint.addPeer(Json.parse(bytes)));
    }
    if (path.size() == 4) {
      support.requireMethod(request, HttpMethods.DELETE);
      request.discardEntityBytes(materializer);
      return replicationEndpoint.removePeer(path.get(3));
    }
    return support.notFound(request);
  }

  private CompletionStage<HttpResponse> dependencyRoute(HttpRequest request, String id) {
    HttpMethod method = request.method();
    if (!method.equals(HttpMethods.GET) && !method.equals(HttpMethods.DELETE)) {
      throw support.methodNotAllowed(request, HttpMethods.GET, HttpMethods.DELETE);
    }
    request.discardEntityBytes(materializer);
    support.dependencyId(id);
    if (method.equals(HttpMethods.GET)) {
      return troupe.dependency(id)
          .thenApply(dependency -> RequestSupport.json(200, dependency.toJson()));
    }
    return troupe.deregisterDependency(id).thenApply(outcome -> {
      ObjectNode body = Json.NODES.objectNode();
      body.put("id", id);
      body.put("txId", outcome.transactionId());
      return RequestSupport.json(200, body);
    });
  }

  /**
   * The {@code migration} query parameter of {@code PUT /v1/types/{type}} (docs/ARCHITECTURE.md,
   * "Type evolution"): absent means none; {@code discard} is the one migration.
   */
  private static TypeEvolution.Migration migrationOf(HttpRequest request) {
    Optional<String> named = request.getUri().query().get("migration");
    if (named.isEmpty()) {
      return TypeEvolution.Migration.NONE;
    }
    TypeEvolution.Migration migration = TypeEvolution.Migration.fromWireName(named.get());
    if (migration == null) {
      throw TroupeException.invalid("migration: unknown migration '" + named.get()
          + "'; the one migration is 'discard' (docs/ARCHITECTURE.md, \"Type evolution\")");
    }
    return migration;
  }

  private static byte[] readResource(String name) {
    try (java.io.InputStream in = RestApi.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException(name + " is not on the class path");
      }
      return in.readAllBytes();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private static String dependencyPath(String id) {
    return "/v1/dependencies/" + id;
  }

  /**
   * {@code {"entity","version","leads":[dependency...],"follows":[dependency and "contribution"...]}}:
   * a followed aggregate ({@code sum}, {@code count}, {@code min}, {@code max}) shows the leader's
   * last forwarded value, the part of the follower's value that leader accounts for, when it is not
   * null. Other functions keep no contribution up to date, so none is shown.
   */
  private static ObjectNode dependenciesBody(Troupe.EntityDependencies dependencies) {
    ObjectNode body = Json.NODES.objectNode();
    body.put("entity", dependencies.entity().toString());
    body.put("version", dependencies.version());
    ArrayNode leads = body.putArray("leads");
    for (Dependency dependency : dependencies.leads()) {
      leads.add(dependency.toJson());
    }
    ArrayNode follows = body.putArray("follows");
    for (DependencyTable.Entry entry : dependencies.follows()) {
      ObjectNode node = entry.dependency().toJson();
      if (entry.dependency().function() != null && entry.dependency().function().isAggregate()
          && entry.contribution() != null && !entry.contribution().isNull()) {
        node.set("contribution", entry.contribution());
      }
      follows.add(node);
    }
    return body;
  }

  /** {@code POST /v1/transactions/{txId}/read|write|action|commit|abort}. */
  private CompletionStage<HttpResponse> interactiveRoute(HttpRequest request, long transactionId,
      String step) {
    return switch (step) {
      case "commit" -> {
        request.discardEntityBytes(materializer);
        yield troupe.commitInteractive(transactionId).thenApply(outcome ->
            RequestSupport.json(200, TransactionRequests.render(outcome, List.of())));
      }
      case "abort" -> {
        request.discardEntityBytes(materializer);
        if (!troupe.isInteractiveOpen(transactionId)) {
          throw new TroupeException(ErrorCode.NOT_FOUND,
              "no open transaction " + transactionId + " (it committed, aborted or timed out)");
        }
        troupe.abortInteractive(transactionId);
        ObjectNode body = Json.NODES.objectNode();
        body.put("txId", transactionId);
        body.put("aborted", true);
        yield RequestSupport.completed(RequestSupport.json(200, body));
      }
      case "read", "write", "action" -> support.body(request).thenCompose(bytes -> {
        TransactionRequest.Operation operation = transactionRequests.parseStep(step, bytes);
        return operation.turn() == null
            ? troupe.readInteractive(transactionId, operation.entity())
            : troupe.stepInteractive(transactionId, operation.entity(), operation.turn());
      }).thenApply(view -> RequestSupport.json(200,
          RequestSupport.entityBody(view.entity(), Json.writeBytes(view.state()), view.version())));
      default -> support.notFound(request);
    };
  }

  private static long parseTransactionId(String text) {
    try {
      long value = Long.parseLong(text);
      if (value <= 0) {
        throw TroupeException.invalid("a transaction id is a positive integer, was " + text);
      }
      return value;
    } catch (NumberFormatException e) {
      throw TroupeException.invalid("a transaction id is a positive integer, was '" + text + "'");
    }
  }

  private static long parseTimestamp(String text) {
    try {
      long value = Long.parseLong(text);
      if (value < 0) {
        throw TroupeException.invalid("'at' must be a non-negative version, was " + text);
      }
      return value;
    } catch (NumberFormatException e) {
      throw TroupeException.invalid("'at' must be a version (an integer), was '" + text + "'");
    }
  }

  // ---------------------------------------------------------------- responses

  /**
   * {@code 200 {"status":"ok"}}, or {@code 503 {"status":"not_ready","problems":[{"code",
   * "message"}]}} with the reasons (see {@link Troupe#health}).
   */
  private HttpResponse readiness() {
    dev.troupe.runtime.NodeHealth health = troupe.health();
    boolean bootstrapping = bootstrapping();
    boolean ready = health.ready() && !bootstrapping;
    ObjectNode body = Json.NODES.objectNode();
    body.put("status", ready ? "ok" : "not_ready");
    if (!ready) {
      ArrayNode problems = body.putArray("problems");
      for (dev.troupe.runtime.NodeHealth.Problem problem : health.problems()) {
        problems.addObject().put("code", problem.code()).put("message", problem.message());
      }
      if (bootstrapping) {
        problems.addObject().put("code", ErrorCode.BOOTSTRAPPING.wireName()).put("message",
            "applying the replication logs after the bootstrap image; clients are refused");
      }
    }
    return RequestSupport.json(ready ? 200 : 503, body);
  }

  /** Whether client requests wait for a bootstrap's tails (a named DC added to a set). */
  private boolean bootstrapping() {
    return replication.isPresent() && replication.get().bootstrapGate().bootstrapping();
  }

  /**
   * {@code {"version","state"}}: the whole state, or only the keys the request's projection
   * names (rendering those alone).
   */
  private static HttpResponse versionAndState(TurnOutcome outcome,
      Optional<StateProjection> projection) {
    // Written as bytes around the state's own JSON, not as a tree holding the state's tree: the
    // same bytes, one tree and one copy fewer; with no key asked for, no tree and no Jackson at
    // all (issue 20: a write's answer was an eighth of the server's CPU under YCSB A).
    byte[] state = projection.isPresent() && projection.get().keys().isEmpty()
        ? EMPTY_STATE
        : Json.writeBytes(projection.isEmpty() ? outcome.state() : outcome.state(projection.get()));
    byte[] version = Long.toString(outcome.version()).getBytes(StandardCharsets.US_ASCII);
    byte[] body = new byte[ANSWER_VERSION.length + version.length + ANSWER_STATE.length
        + state.length + 1];
    int at = 0;
    System.arraycopy(ANSWER_VERSION, 0, body, at, ANSWER_VERSION.length);
    at += ANSWER_VERSION.length;
    System.arraycopy(version, 0, body, at, version.length);
    at += version.length;
    System.arraycopy(ANSWER_STATE, 0, body, at, ANSWER_STATE.length);
    at += ANSWER_STATE.length;
    System.arraycopy(state, 0, body, at, state.length);
    body[body.length - 1] = '}';
    return RequestSupport.json(200, body);
  }

  private static final byte[] ANSWER_VERSION = ascii("{\"version\":");
  private static final byte[] ANSWER_STATE = ascii(",\"state\":");
  private static final byte[] EMPTY_STATE = ascii("{}");

  /**
   * The projection the request's query asks for ({@link ProjectionQuery}), checked against the
   * entity's type when it is declared (a key it does not have is {@code invalid_request}); empty:
   * the whole state. Parsed before the read or write it shapes the answer of.
   */
  private Optional<StateProjection> projectionOf(HttpRequest request, EntityId entity) {
    Optional<StateProjection> projection =
        ProjectionQuery.parse(request.getUri().query(), settings);
    projection.ifPresent(asked -> troupe.type(entity.type()).ifPresent(asked::checkAgainst));
    return projection;
  }

}
