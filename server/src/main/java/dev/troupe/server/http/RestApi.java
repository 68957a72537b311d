package dev.troupe.server.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.spec.TypeSpec;
import dev.troupe.runtime.EntityView;
import dev.troupe.runtime.Troupe;
import dev.troupe.runtime.TurnOutcome;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.HttpMethod;
import org.apache.pekko.http.javadsl.model.HttpMethods;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.scaladsl.model.EntityStreamSizeException;
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
  private static final byte[] HEALTH_OK = "{\"status\":\"ok\"}".getBytes(StandardCharsets.UTF_8);

  private final Troupe troupe;
  private final HttpSettings settings;
  private final Materializer materializer;
  private final PrometheusMetrics metrics;
  private final AtomicInteger inFlight = new AtomicInteger();
  private final LongAdder requests = new LongAdder();
  private final LongAdder refusedOverloaded = new LongAdder();

  public RestApi(Troupe troupe, HttpSettings settings, Materializer materializer) {
    this.troupe = troupe;
    this.settings = settings;
    this.materializer = materializer;
    this.metrics = new PrometheusMetrics(troupe, requests, refusedOverloaded, inFlight);
  }

  @Override
  public CompletionStage<HttpResponse> apply(HttpRequest request) {
    requests.increment();
    if (inFlight.incrementAndGet() > settings.maxInFlightRequests()) {
      inFlight.decrementAndGet();
      refusedOverloaded.increment();
      request.discardEntityBytes(materializer);
      return CompletableFuture.completedFuture(error(new TroupeException(ErrorCode.OVERLOADED,
          "the server is serving its maximum of " + settings.maxInFlightRequests()
              + " requests; retry later")));
    }
    CompletionStage<HttpResponse> response;
    try {
      response = route(request);
    } catch (RuntimeException e) {
      request.discardEntityBytes(materializer);
      response = CompletableFuture.failedFuture(e);
    }
    return response
        .exceptionally(this::failureResponse)
        .whenComplete((ignored, failure) -> inFlight.decrementAndGet());
  }

  private CompletionStage<HttpResponse> route(HttpRequest request) {
    List<String> path = new ArrayList<>();
    for (String segment : request.getUri().pathSegments()) {
      path.add(segment);
    }
    HttpMethod method = request.method();
    int size = path.size();
    if (size == 1 && path.get(0).equals("metrics")) {
      requireMethod(request, HttpMethods.GET);
      return completed(HttpResponse.create().withEntity(
          ContentTypes.create(org.apache.pekko.http.javadsl.model.MediaTypes.TEXT_PLAIN,
              org.apache.pekko.http.javadsl.model.HttpCharsets.UTF_8),
          metrics.render()));
    }
    if (size < 2 || !path.get(0).equals("v1")) {
      return notFound(request);
    }
    String resource = path.get(1);
    switch (resource) {
      case "health" -> {
        if (size != 2) {
          return notFound(request);
        }
        requireMethod(request, HttpMethods.GET);
        return completed(json(200, HEALTH_OK));
      }
      case "types" -> {
        if (size == 2) {
          requireMethod(request, HttpMethods.GET);
          ArrayNode types = Json.NODES.arrayNode();
          troupe.types().forEach(type -> types.add(type.toJson()));
          ObjectNode body = Json.NODES.objectNode();
          body.set("types", types);
          return completed(json(200, body));
        }
        if (size == 3) {
          String typeName = checkTypeName(path.get(2));
          if (method.equals(HttpMethods.GET)) {
            request.discardEntityBytes(materializer);
            TypeSpec type = troupe.type(typeName).orElseThrow(() -> new TroupeException(
                ErrorCode.UNKNOWN_TYPE, "type '" + typeName + "' is not declared"));
            return completed(json(200, type.toJson()));
          }
          requireMethod(request, HttpMethods.PUT);
          boolean yaml = request.entity().getContentType().mediaType().toString().contains("yaml");
          return body(request).thenCompose(bytes -> {
            TypeSpec spec = SpecParser.parse(typeName, bytes, yaml);
            return troupe.defineType(spec);
          }).thenApply(spec -> json(200, spec.toJson()));
        }
        return notFound(request);
      }
      case "entities" -> {
        if (size < 4) {
          return notFound(request);
        }
        EntityId entity = entity(path.get(2), path.get(3));
        if (size == 4) {
          return entityRoute(request, entity);
        }
        if (size >= 6 && path.get(4).equals("keys")) {
          String key = checkKey(path.get(5));
          if (size == 6) {
            return keyRoute(request, entity, key);
          }
          if (size == 7) {
            requireMethod(request, HttpMethods.POST);
            return switch (path.get(6)) {
              case "increment" -> body(request).thenCompose(bytes -> {
                JsonNode by = onlyField(bytes, "by");
                if (!by.isIntegralNumber() || !by.canConvertToLong()) {
                  throw TroupeException.invalid("'by' must be a 64-bit integer, was " + by);
                }
                return troupe.increment(entity, key, by.asLong());
              }).thenApply(this::versionAndState);
              case "add" -> body(request)
                  .thenCompose(bytes ->
                      troupe.add(entity, key, checkValueSize(onlyField(bytes, "element"))))
                  .thenApply(this::versionAndState);
              case "remove" -> body(request)
                  .thenCompose(bytes -> troupe.remove(entity, key, onlyField(bytes, "element")))
                  .thenApply(this::versionAndState);
              default -> notFound(request);
            };
          }
        }
        if (size == 6 && path.get(4).equals("actions")) {
          requireMethod(request, HttpMethods.POST);
          String action = path.get(5);
          return body(request).thenCompose(bytes -> {
            JsonNode params = bytes.length == 0 ? Json.NODES.objectNode() : Json.parse(bytes);
            if (!params.isObject()) {
              throw TroupeException.invalid("action parameters must be a JSON object");
            }
            return troupe.invoke(entity, action, params);
          }).thenApply(outcome -> {
            ObjectNode body = Json.NODES.objectNode();
            body.put("version", outcome.version());
            body.set("state", outcome.state());
            return json(200, body);
          });
        }
        return notFound(request);
      }
      default -> {
        return notFound(request);
      }
    }
  }

  private CompletionStage<HttpResponse> entityRoute(HttpRequest request, EntityId entity) {
    HttpMethod method = request.method();
    if (method.equals(HttpMethods.GET)) {
      request.discardEntityBytes(materializer);
      Optional<String> at = request.getUri().query().get("at");
      CompletableFuture<EntityView> view = at.isPresent()
          ? troupe.readAt(entity, parseTimestamp(at.get()))
          : troupe.get(entity);
      return view.thenApply(v -> {
        ObjectNode body = Json.NODES.objectNode();
        body.put("type", entity.type());
        body.put("id", entity.id());
        body.set("state", v.state());
        body.put("version", v.version());
        return json(200, body);
      });
    }
    if (method.equals(HttpMethods.PATCH)) {
      return body(request).thenCompose(bytes -> {
        JsonNode patch = Json.parse(bytes);
        if (!patch.isObject() || patch.isEmpty()) {
          throw TroupeException.invalid(
              "PATCH body must be a non-empty JSON object of key: value assignments");
        }
        Map<String, JsonNode> assignments = new LinkedHashMap<>();
        Iterator<Map.Entry<String, JsonNode>> fields = patch.fields();
        while (fields.hasNext()) {
          Map.Entry<String, JsonNode> field = fields.next();
          assignments.put(checkKey(field.getKey()), checkValueSize(field.getValue()));
        }
        return troupe.patch(entity, assignments);
      }).thenApply(this::versionAndState);
    }
    if (method.equals(HttpMethods.DELETE)) {
      request.discardEntityBytes(materializer);
      return troupe.delete(entity).thenApply(outcome -> version(outcome.version()));
    }
    throw methodNotAllowed(request, "GET, PATCH or DELETE");
  }

  private CompletionStage<HttpResponse> keyRoute(HttpRequest request, EntityId entity, String key) {
    HttpMethod method = request.method();
    if (method.equals(HttpMethods.GET)) {
      request.discardEntityBytes(materializer);
      return troupe.getKey(entity, key).thenApply(value -> {
        ObjectNode body = Json.NODES.objectNode();
        body.set("value", value);
        return json(200, body);
      });
    }
    if (method.equals(HttpMethods.PUT)) {
      return body(request)
          .thenCompose(bytes -> troupe.assign(entity, key, checkValueSize(Json.parse(bytes))))
          .thenApply(outcome -> version(outcome.version()));
    }
    if (method.equals(HttpMethods.DELETE)) {
      request.discardEntityBytes(materializer);
      return troupe.deleteKey(entity, key).thenApply(outcome -> version(outcome.version()));
    }
    throw methodNotAllowed(request, "GET, PUT or DELETE");
  }

  // ---------------------------------------------------------------- request helpers

  /** Reads the whole body within the size limit; too large is a 413 before anything changes. */
  private CompletableFuture<byte[]> body(HttpRequest request) {
    HttpEntity entity = request.entity();
    if (entity.getContentLengthOption().isPresent()
        && entity.getContentLengthOption().getAsLong() > settings.maxBodyBytes()) {
      request.discardEntityBytes(materializer);
      return CompletableFuture.failedFuture(tooLargeBody());
    }
    return entity
        .withSizeLimit(settings.maxBodyBytes())
        .toStrict(settings.bodyReadTimeoutMillis(), materializer)
        .thenApply(strict -> strict.getData().toArray())
        .toCompletableFuture();
  }

  private TroupeException tooLargeBody() {
    return new TroupeException(ErrorCode.TOO_LARGE,
        "request body exceeds " + settings.maxBodyBytes() + " bytes");
  }

  /** The value of the body's only field, {@code name}. */
  private static JsonNode onlyField(byte[] bytes, String name) {
    JsonNode body = Json.parse(bytes);
    if (!body.isObject() || body.size() != 1 || body.get(name) == null) {
      throw TroupeException.invalid("body must be a JSON object with just '" + name + "'");
    }
    return body.get(name);
  }

  private JsonNode checkValueSize(JsonNode value) {
    int size = Json.writeBytes(value).length;
    if (size > settings.maxValueBytes()) {
      throw new TroupeException(ErrorCode.TOO_LARGE,
          "value of " + size + " bytes exceeds the limit of " + settings.maxValueBytes());
    }
    return value;
  }

  private EntityId entity(String type, String id) {
    checkTypeName(type);
    if (id.isEmpty() || id.length() > settings.maxIdLength()) {
      throw TroupeException.invalid(
          "entity id must have 1 to " + settings.maxIdLength() + " characters");
    }
    return new EntityId(type, id);
  }

  private String checkTypeName(String type) {
    if (type.isEmpty() || type.length() > settings.maxTypeNameLength()) {
      throw TroupeException.invalid(
          "type name must have 1 to " + settings.maxTypeNameLength() + " characters");
    }
    if (type.startsWith("$")) {
      throw TroupeException.invalid("type names starting with '$' are reserved");
    }
    if (!EntityId.isValidName(type)) {
      throw TroupeException.invalid("invalid type name '" + type + "'");
    }
    return type;
  }

  private String checkKey(String key) {
    if (key.isEmpty() || key.length() > settings.maxKeyLength()) {
      throw TroupeException.invalid(
          "key must have 1 to " + settings.maxKeyLength() + " characters");
    }
    for (int i = 0; i < key.length(); i++) {
      if (Character.isISOControl(key.charAt(i))) {
        throw TroupeException.invalid("key must not contain control characters");
      }
    }
    return key;
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

  private void requireMethod(HttpRequest request, HttpMethod expected) {
    if (!request.method().equals(expected)) {
      throw methodNotAllowed(request, expected.name());
    }
  }

  private TroupeException methodNotAllowed(HttpRequest request, String allowed) {
    request.discardEntityBytes(materializer);
    return new MethodNotAllowed(request.method().name() + " is not allowed on "
        + request.getUri().path() + "; use " + allowed);
  }

  /** 405 with the invalid_request code: the request's form is wrong, not the resource. */
  private static final class MethodNotAllowed extends TroupeException {
    MethodNotAllowed(String message) {
      super(ErrorCode.INVALID_REQUEST, message);
    }
  }

  private CompletionStage<HttpResponse> notFound(HttpRequest request) {
    request.discardEntityBytes(materializer);
    return CompletableFuture.failedFuture(new TroupeException(ErrorCode.NOT_FOUND,
        "no such resource: " + request.method().name() + " " + request.getUri().path()));
  }

  // ---------------------------------------------------------------- responses

  private HttpResponse versionAndState(TurnOutcome outcome) {
    ObjectNode body = Json.NODES.objectNode();
    body.put("version", outcome.version());
    body.set("state", outcome.state());
    return json(200, body);
  }

  private static HttpResponse version(long version) {
    ObjectNode body = Json.NODES.objectNode();
    body.put("version", version);
    return json(200, body);
  }

  private static CompletionStage<HttpResponse> completed(HttpResponse response) {
    return CompletableFuture.completedFuture(response);
  }

  static HttpResponse json(int status, JsonNode body) {
    return json(status, Json.writeBytes(body));
  }

  static HttpResponse json(int status, byte[] body) {
    return HttpResponse.create().withStatus(status).withEntity(ContentTypes.APPLICATION_JSON, body);
  }

  private HttpResponse failureResponse(Throwable failure) {
    Throwable cause = failure;
    while ((cause instanceof CompletionException || cause instanceof java.util.concurrent.ExecutionException)
        && cause.getCause() != null) {
      cause = cause.getCause();
    }
    if (cause instanceof MethodNotAllowed notAllowed) {
      return error(405, notAllowed);
    }
    if (cause instanceof TroupeException troupeError) {
      return error(troupeError);
    }
    if (cause instanceof EntityStreamSizeException) {
      return error(tooLargeBody());
    }
    if (cause instanceof org.apache.pekko.http.scaladsl.model.IllegalUriException
        || cause instanceof IllegalArgumentException) {
      return error(TroupeException.invalid(String.valueOf(cause.getMessage())));
    }
    if (cause instanceof java.util.concurrent.TimeoutException) {
      return error(new TroupeException(ErrorCode.INVALID_REQUEST,
          "the request body did not arrive in time"));
    }
    log.error("unexpected failure serving a request", cause);
    return error(new TroupeException(ErrorCode.UNAVAILABLE,
        "internal error; the request may not have been applied; see the server log"));
  }

  static HttpResponse error(TroupeException error) {
    return error(error.code().httpStatus(), error);
  }

  private static HttpResponse error(int status, TroupeException error) {
    ObjectNode body = Json.NODES.objectNode();
    body.put("error", error.code().wireName());
    body.put("message", error.getMessage());
    return json(status, body);
  }
}
