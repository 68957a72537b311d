package dev.troupe.server.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyKeys;
import dev.troupe.model.dependency.KeyReference;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.HttpMethod;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.HttpMethods;
import org.apache.pekko.http.javadsl.model.headers.Allow;
import org.apache.pekko.http.scaladsl.model.EntityStreamSizeException;
import org.apache.pekko.http.scaladsl.model.ExceptionWithErrorInfo;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every REST front end on this HTTP stack shares: reading bodies within their limits,
 * validating names, keys and values, and turning failures into JSON errors with the closed set of
 * codes of {@link ErrorCode}. Used by {@link RestApi} and by the PostgreSQL baseline's API, so the
 * two answer the same request the same way.
 */
final class RequestSupport {
  private static final Logger log = LoggerFactory.getLogger(RequestSupport.class);
  /** The fields of a dependency a client declares, and of each of its ends. */
  private static final List<String> DEPENDENCY_FIELDS =
      List.of("follower", "function", "kind", "leader");
  private static final List<String> END_FIELDS = List.of("entity", "key");

  private final HttpSettings settings;
  private final Materializer materializer;

  RequestSupport(HttpSettings settings, Materializer materializer) {
    this.settings = settings;
    this.materializer = materializer;
  }

  /**
   * Runs {@code route} for {@code request} and turns whatever it throws or fails with into a JSON
   * error; a request refused before its body was read has the body discarded.
   */
  CompletionStage<HttpResponse> answer(HttpRequest request,
      java.util.function.Function<HttpRequest, CompletionStage<HttpResponse>> route) {
    CompletionStage<HttpResponse> response;
    try {
      response = route.apply(request);
    } catch (RuntimeException e) {
      request.discardEntityBytes(materializer);
      response = CompletableFuture.failedFuture(e);
    }
    return response.exceptionally(this::failureResponse);
  }

  /** The path's segments, decoded. */
  static java.util.List<String> segments(HttpRequest request) {
    java.util.List<String> path = new java.util.ArrayList<>();
    for (String segment : request.getUri().pathSegments()) {
      path.add(segment);
    }
    return path;
  }

  // ---------------------------------------------------------------- request helpers

  /**
   * The value of {@code request}'s first header named {@code lowerCaseName} (given in lower case,
   * as header names compare), as {@code getHeader(name)} finds it, without lower-casing the name
   * again on every call (issue 20: a read's most allocated string).
   */
  static java.util.Optional<String> headerValue(HttpRequest request, String lowerCaseName) {
    for (org.apache.pekko.http.javadsl.model.HttpHeader header : request.getHeaders()) {
      if (header.is(lowerCaseName)) {
        return java.util.Optional.of(header.value());
      }
    }
    return java.util.Optional.empty();
  }

  /** Reads the whole body within the size limit; too large is a 413 before anything changes. */
  CompletableFuture<byte[]> body(HttpRequest request) {
    HttpEntity entity = request.entity();
    if (entity.getContentLengthOption().isPresent()
        && entity.getContentLengthOption().getAsLong() > settings.maxBodyBytes()) {
      request.discardEntityBytes(materializer);
      return CompletableFuture.failedFuture(tooLargeBody());
    }
    return dev.troupe.runtime.Futures.onCompletingThread(entity
            .withSizeLimit(settings.maxBodyBytes())
            .toStrict(settings.bodyReadTimeoutMillis(), materializer))
        .thenApply(strict -> strict.getData().toArray());
  }

  TroupeException tooLargeBody() {
    return new TroupeException(ErrorCode.TOO_LARGE,
        "request body exceeds " + settings.maxBodyBytes() + " bytes");
  }

  /** The value of the body's only field, {@code name}. */
  static JsonNode onlyField(byte[] bytes, String name) {
    JsonNode body = Json.parse(bytes);
    if (!body.isObject() || body.size() != 1 || body.get(name) == null) {
      throw TroupeException.invalid("body must be a JSON object with just '" + name + "'");
    }
    return body.get(name);
  }

  /**
   * A client's value held to {@code troupe.limits} (bytes, nesting, string length, numbers), the
   * limits every computed value meets in the turn core too.
   */
  JsonNode checkValueSize(JsonNode value) {
    return settings.values().check(value, "the value");
  }

  EntityId entity(String type, String id) {
    checkTypeName(type);
    if (id.isEmpty() || id.length() > settings.maxIdLength()) {
      throw TroupeException.invalid(
          "entity id must have 1 to " + settings.maxIdLength() + " characters");
    }
    return new EntityId(type, id);
  }

  String checkTypeName(String type) {
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

  /**
   * A client's key: 1 to {@code max-key-length} characters, no control characters, and not
   * starting with '$' (Troupe keeps its own records, e.g. dependency records, in such keys).
   */
  String checkKey(String key) {
    return checkKey(key, settings.maxKeyLength());
  }

  /** A key name's rules (see {@link #checkKey(String)}) with the longest name allowed. */
  static String checkKey(String key, int maxKeyLength) {
    if (key.isEmpty() || key.length() > maxKeyLength) {
      throw TroupeException.invalid(
          "key must have 1 to " + maxKeyLength + " characters");
    }
    if (DependencyKeys.isHidden(key)) {
      throw TroupeException.invalid("keys starting with '$' are reserved for Troupe's own records");
    }
    for (int i = 0; i < key.length(); i++) {
      if (Character.isISOControl(key.charAt(i))) {
        throw TroupeException.invalid("key must not contain control characters");
      }
    }
    return key;
  }

  /**
   * A dependency as a client declares it ({@link Dependency#fromJson}), its ends held to the same
   * limits as every entity reference and key; every problem is {@code invalid_request}.
   */
  Dependency dependency(JsonNode json) {
    if (json != null && json.isObject()) {
      onlyFields(json, DEPENDENCY_FIELDS, "a dependency");
      // The keys first, so a reserved key is refused with the same words as everywhere else.
      for (String end : List.of("leader", "follower")) {
        JsonNode node = json.path(end);
        if (node.isObject()) {
          onlyFields(node, END_FIELDS, end);
        }
        if (node.path("key").isTextual()) {
          checkKey(node.path("key").textValue(), end + ".key: ");
        }
      }
    }
    Dependency dependency = Dependency.fromJson(json);
    checkEnds(dependency.leader(), dependency.follower());
    return dependency;
  }

  private static void onlyFields(JsonNode node, List<String> allowed, String where) {
    java.util.Iterator<String> names = node.fieldNames();
    while (names.hasNext()) {
      String name = names.next();
      if (!allowed.contains(name)) {
        throw TroupeException.invalid(where + " has an unknown field '" + name + "' (allowed: "
            + String.join(", ", allowed) + ")");
      }
    }
  }

  /**
   * The ends a dependency id names ({@link Dependency#parseId}), held to the limits of {@link
   * #dependency}; text that is not an id is {@code invalid_request}.
   */
  Dependency.Ends dependencyId(String id) {
    Dependency.Ends ends = Dependency.parseId(id);
    try {
      checkEnds(ends.leader(), ends.follower());
    } catch (TroupeException e) {
      throw TroupeException.invalid("'" + id + "' is not a dependency id (" + e.getMessage() + ")");
    }
    return ends;
  }

  private void checkEnds(KeyReference leader, KeyReference follower) {
    checkEnd(leader, "leader");
    checkEnd(follower, "follower");
  }

  private void checkEnd(KeyReference end, String where) {
    try {
      entity(end.entity().type(), end.entity().id());
    } catch (TroupeException e) {
      throw TroupeException.invalid(where + ".entity: " + e.getMessage());
    }
    checkKey(end.key(), where + ".key: ");
  }

  private void checkKey(String key, String where) {
    try {
      checkKey(key);
    } catch (TroupeException e) {
      throw TroupeException.invalid(where + e.getMessage());
    }
  }

  void requireMethod(HttpRequest request, HttpMethod expected) {
    if (!request.method().equals(expected)) {
      throw methodNotAllowed(request, expected);
    }
  }

  /** A 405 for {@code request}, whose resource accepts only {@code allowed}; the body discarded. */
  MethodNotAllowed methodNotAllowed(HttpRequest request, HttpMethod... allowed) {
    request.discardEntityBytes(materializer);
    return new MethodNotAllowed(request.method().name(), request.getUri().path(), allowed);
  }

  /**
   * 405 {@code method_not_allowed}, answered with an {@code Allow} header listing the methods the
   * resource accepts ({@code HEAD} too wherever {@code GET} is: it is served as a GET).
   */
  static final class MethodNotAllowed extends TroupeException {
    private final List<HttpMethod> allowed;

    MethodNotAllowed(String method, String path, HttpMethod... allowed) {
      super(ErrorCode.METHOD_NOT_ALLOWED, method + " is not allowed on " + path + "; use "
          + String.join(", ", java.util.Arrays.stream(allowed).map(HttpMethod::name).toList()));
      List<HttpMethod> methods = new java.util.ArrayList<>(List.of(allowed));
      if (methods.contains(HttpMethods.GET)) {
        methods.add(HttpMethods.HEAD);
      }
      this.allowed = List.copyOf(methods);
    }

    HttpResponse response() {
      return error(this).addHeader(Allow.create(allowed.toArray(new HttpMethod[0])));
    }
  }

  CompletionStage<HttpResponse> notFound(HttpRequest request) {
    request.discardEntityBytes(materializer);
    return CompletableFuture.failedFuture(new TroupeException(ErrorCode.NOT_FOUND,
        "no such resource: " + request.method().name() + " " + request.getUri().path()));
  }

  // ---------------------------------------------------------------- responses

  static CompletionStage<HttpResponse> completed(HttpResponse response) {
    return CompletableFuture.completedFuture(response);
  }

  /**
   * {@code {"type","id","state","version"}}, the answer to an entity read, with the state's JSON
   * bytes copied in as they are: one array of the answer's exact size, no stream and no Jackson
   * for names of plain ASCII ({@link #quoted}).
   */
  static byte[] entityBody(EntityId entity, byte[] stateJson, long version) {
    byte[] type = quoted(entity.type());
    byte[] id = quoted(entity.id());
    byte[] versionText = Long.toString(version).getBytes(StandardCharsets.US_ASCII);
    byte[] body = new byte[ENTITY_TYPE.length + type.length + ENTITY_ID.length + id.length
        + ENTITY_STATE.length + stateJson.length + ENTITY_VERSION.length + versionText.length + 1];
    int at = append(body, 0, ENTITY_TYPE);
    at = append(body, at, type);
    at = append(body, at, ENTITY_ID);
    at = append(body, at, id);
    at = append(body, at, ENTITY_STATE);
    at = append(body, at, stateJson);
    at = append(body, at, ENTITY_VERSION);
    at = append(body, at, versionText);
    body[at] = '}';
    return body;
  }

  /** Copies {@code part} into {@code into} at {@code at}; the index after it. */
  static int append(byte[] into, int at, byte[] part) {
    System.arraycopy(part, 0, into, at, part.length);
    return at + part.length;
  }

  /**
   * {@code text} as a JSON string, byte for byte what Jackson writes for it: text of printable
   * ASCII without {@code "} or {@code \} (every YCSB key, most names) needs no escaping and is
   * quoted as it is; anything else is written by Jackson. A read's answer wrote its type and id
   * through Jackson's generator before (issue 20: two generators per read).
   */
  static byte[] quoted(String text) {
    int length = text.length();
    byte[] quoted = new byte[length + 2];
    quoted[0] = '"';
    for (int i = 0; i < length; i++) {
      char c = text.charAt(i);
      if (c < 0x20 || c > 0x7E || c == '"' || c == '\\') {
        return Json.writeBytes(Json.NODES.textNode(text));
      }
      quoted[i + 1] = (byte) c;
    }
    quoted[length + 1] = '"';
    return quoted;
  }

  private static final byte[] ENTITY_TYPE = "{\"type\":".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] ENTITY_ID = ",\"id\":".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] ENTITY_STATE = ",\"state\":".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] ENTITY_VERSION = ",\"version\":".getBytes(StandardCharsets.US_ASCII);

  /** {@code {"version": version}}: the answer to a write that returns no state. */
  static HttpResponse version(long version) {
    ObjectNode body = Json.NODES.objectNode();
    body.put("version", version);
    return json(200, body);
  }

  /** {@code 200} without a body: answers are made from it (immutable, so shared). */
  private static final HttpResponse EMPTY_OK = HttpResponse.create();

  static HttpResponse json(int status, JsonNode body) {
    return json(status, Json.writeBytes(body));
  }

  /**
   * A JSON answer holding {@code body} itself, not a copy (issue 20: the copy was a read's second
   * of its whole answer): the caller hands the array over and never changes it after.
   */
  static HttpResponse json(int status, byte[] body) {
    HttpResponse response = EMPTY_OK.withEntity(
        HttpEntities.create(ContentTypes.APPLICATION_JSON, ByteString.fromArrayUnsafe(body)));
    return status == 200 ? response : response.withStatus(status);
  }

  HttpResponse failureResponse(Throwable failure) {
    Throwable cause = failure;
    while ((cause instanceof CompletionException || cause instanceof java.util.concurrent.ExecutionException)
        && cause.getCause() != null) {
      cause = cause.getCause();
    }
    if (cause instanceof MethodNotAllowed notAllowed) {
      return notAllowed.response();
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
      return error(new TroupeException(ErrorCode.REQUEST_TIMEOUT,
          "the request body did not arrive within " + settings.bodyReadTimeoutMillis()
              + " ms (troupe.http.body-read-timeout-millis)"));
    }
    if (cause instanceof ExceptionWithErrorInfo malformed) {
      // A body Pekko could not parse (a malformed chunk, a stream cut short): the client's fault.
      return error(TroupeException.invalid(
          "malformed request body: " + malformed.info().summary()));
    }
    log.error("unexpected failure serving a request", cause);
    return error(new TroupeException(ErrorCode.UNAVAILABLE,
        "internal error; the request may not have been applied; see the server log"));
  }

  static HttpResponse error(TroupeException error) {
    return error(error.code().httpStatus(), error);
  }

  static HttpResponse error(int status, TroupeException error) {
    ObjectNode body = Json.NODES.objectNode();
    body.put("error", error.code().wireName());
    // A reason is part of the answer only for aborted (the contract); other codes may carry the
    // abort reason they would become inside a transaction.
    if (error.reason() != null && error.code() == ErrorCode.ABORTED) {
      body.put("reason", error.reason());
    }
    body.put("message", error.getMessage());
    if (error instanceof dev.troupe.model.causal.ReplicationLogTruncatedException truncated) {
      // What a puller needs to tell a gap from an outage (docs/ARCHITECTURE.md, "Adding and
      // removing data centres").
      body.put("origin", truncated.originDc());
      body.put("truncatedThrough", truncated.truncatedThrough());
      body.put("lowestHeldTimestamp", truncated.lowestHeldTimestamp());
    }
    if (error instanceof dev.troupe.model.NotHomeException notHome) {
      // Where the write runs: the server forwards it there ({@link HomeForwarding}).
      return json(status, body).addHeader(org.apache.pekko.http.javadsl.model.headers.RawHeader
          .create(HomeForwarding.HOME_HEADER, notHome.homeDataCentre()));
    }
    return json(status, body);
  }
}
