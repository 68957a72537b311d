package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.server.ServerProcess.Answer;
import io.swagger.v3.oas.models.OpenAPI;
import io.swagger.v3.oas.models.SpecVersion;
import io.swagger.v3.parser.OpenAPIV3Parser;
import io.swagger.v3.parser.core.models.ParseOptions;
import io.swagger.v3.parser.core.models.SwaggerParseResult;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The OpenAPI document against the code and a real server: it is valid OpenAPI 3.1; it describes
 * exactly the routes the router serves ({@link #ROUTES}); its error codes are the closed set of
 * {@link ErrorCode} with their statuses; and every route, exercised on a real server for success
 * and its main errors, answers only statuses the document lists for it, with bodies valid against
 * the documented schemas. Schemathesis fuzzes the same document ({@link SchemathesisTest}).
 */
class OpenApiContractTest {
  /**
   * Every (method, path template) the router ({@code RestApi.route}) serves. Kept in sync by hand
   * with the router: a route added there and not here (and in the document) is a review finding;
   * one added here and not in the document fails {@link #documentDescribesExactlyTheRoutes}.
   */
  static final List<String> ROUTES = List.of(
      "GET /v1/health",
      "GET /v1/health/ready",
      "GET /v1/health/live",
      "GET /v1/openapi.json",
      "GET /metrics",
      "GET /v1/types",
      "GET /v1/types/{type}",
      "PUT /v1/types/{type}",
      "GET /v1/entities/{type}",
      "GET /v1/entities/{type}/{id}",
      "PATCH /v1/entities/{type}/{id}",
      "DELETE /v1/entities/{type}/{id}",
      "GET /v1/entities/{type}/{id}/keys/{key}",
      "PUT /v1/entities/{type}/{id}/keys/{key}",
      "DELETE /v1/entities/{type}/{id}/keys/{key}",
      "POST /v1/entities/{type}/{id}/keys/{key}/increment",
      "POST /v1/entities/{type}/{id}/keys/{key}/add",
      "POST /v1/entities/{type}/{id}/keys/{key}/remove",
      "POST /v1/entities/{type}/{id}/actions/{action}",
      "GET /v1/entities/{type}/{id}/dependencies",
      "GET /v1/entities/{type}/{id}/versions",
      "POST /v1/transactions",
      "POST /v1/transactions/begin",
      "GET /v1/transactions/recent",
      "POST /v1/transactions/{txId}/read",
      "POST /v1/transactions/{txId}/write",
      "POST /v1/transactions/{txId}/action",
      "POST /v1/transactions/{txId}/commit",
      "POST /v1/transactions/{txId}/abort",
      "POST /v1/snapshot-read",
      "POST /v1/dependencies",
      "GET /v1/dependencies/{id}",
      "DELETE /v1/dependencies/{id}",
      "GET /v1/replication/bootstrap",
      "GET /v1/replication/log",
      "GET /v1/replication/stream",
      "GET /v1/replication/status",
      "GET /v1/replication/peers",
      "POST /v1/replication/peers",
      "DELETE /v1/replication/peers/{name}",
      "GET /v1/cluster");

  static final String ACCOUNT_YAML = RestEndToEndTest.ACCOUNT_YAML;

  @TempDir static Path data;
  static ServerProcess server;
  static OpenApiDocument document;
  /** The routes {@link #everyRouteAnswersAsDocumented} exercised. */
  private final Set<String> exercised = new LinkedHashSet<>();
  private final List<String> problems = new ArrayList<>();

  @BeforeAll
  static void start() throws Exception {
    document = OpenApiDocument.load();
    server = ServerProcess.start(data.resolve("node"));
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
  }

  @Test
  void documentIsValidOpenApi31() {
    ParseOptions options = new ParseOptions();
    options.setResolve(true);
    SwaggerParseResult result = new OpenAPIV3Parser().readContents(document.text(), null, options);
    assertEquals(List.of(), result.getMessages(), "the parser's complaints");
    OpenAPI openApi = result.getOpenAPI();
    assertEquals(SpecVersion.V31, openApi.getSpecVersion());
    assertEquals("3.1.0", openApi.getOpenapi());
    // Every $ref points at something: the parser reports none unresolved, and each local one is found.
    List<String> dangling = new ArrayList<>();
    collectDanglingReferences(document.json(), document.json(), dangling);
    assertEquals(List.of(), dangling, "$ref that point nowhere");
  }

  @Test
  void documentDescribesExactlyTheRoutes() {
    assertEquals(new TreeSet<>(ROUTES), new TreeSet<>(document.operations()));
  }

  /**
   * The Error schema's codes are ErrorCode's wire names, and each error response lists only codes
   * whose status is the response's status.
   */
  @Test
  void errorCodesAreTheClosedSetWithTheirStatuses() {
    JsonNode codes = document.json().at("/components/schemas/Error/properties/error/enum");
    Set<String> documented = new TreeSet<>();
    codes.forEach(code -> documented.add(code.asText()));
    Set<String> closedSet = Arrays.stream(ErrorCode.values()).map(ErrorCode::wireName)
        .collect(Collectors.toCollection(TreeSet::new));
    assertEquals(closedSet, documented);
    List<String> wrong = new ArrayList<>();
    Iterator<Map.Entry<String, JsonNode>> paths = document.json().path("paths").fields();
    while (paths.hasNext()) {
      Map.Entry<String, JsonNode> path = paths.next();
      path.getValue().fields().forEachRemaining(operation ->
          operation.getValue().path("responses").fields().forEachRemaining(response -> {
            JsonNode node = response.getValue();
            if (node.has("$ref")) {
              node = document.json().at(node.get("$ref").asText().substring(1));
            }
            JsonNode allOf = node.at("/content/application~1json/schema/allOf");
            for (JsonNode part : allOf) {
              for (JsonNode code : part.at("/properties/error/enum")) {
                ErrorCode errorCode = Arrays.stream(ErrorCode.values())
                    .filter(candidate -> candidate.wireName().equals(code.asText()))
                    .findFirst().orElseThrow();
                if (!Integer.toString(errorCode.httpStatus()).equals(response.getKey())) {
                  wrong.add(operation.getKey() + " " + path.getKey() + " " + response.getKey()
                      + ": " + code.asText() + " is " + errorCode.httpStatus());
                }
              }
            }
          }));
    }
    assertEquals(List.of(), wrong);
  }

  @Test
  void servedDocumentIsTheResource() throws Exception {
    Answer answer = server.get("/v1/openapi.json");
    assertEquals(200, answer.status(), answer.text());
    assertTrue(answer.header("Content-Type").orElse("").startsWith("application/json"));
    assertEquals(document.json(), answer.body());
  }

  @Test
  void everyRouteAnswersAsDocumented() throws Exception {
    // Health, the document, metrics.
    call("GET", "/v1/health", "/v1/health", null, 200);
    call("GET", "/v1/health/ready", "/v1/health/ready", null, 200);
    call("GET", "/v1/health/live", "/v1/health/live", null, 200);
    call("GET", "/v1/openapi.json", "/v1/openapi.json", null, 200);
    call("GET", "/metrics", "/metrics", null, 200);

    // Types: JSON and YAML declarations, bad ones, reads.
    String types = "/v1/types/{type}";
    callWith("PUT", types, "/v1/types/Account", ACCOUNT_YAML, "application/yaml", 200);
    call("PUT", types, "/v1/types/Note", """
        {"keys": {"text": {"kind": "register", "default": ""}}, "actions": {}}""", 200);
    call("PUT", types, "/v1/types/Loose", "{\"schemaless\": true}", 200);
    call("PUT", types, "/v1/types/Broken", "{\"keys\": {\"a\": {\"kind\": \"tree\"}}}", 400);
    call("PUT", types, "/v1/types/Broken", "not json", 400);
    call("PUT", types, "/v1/types/Other", "{\"type\": \"Mismatch\"}", 400);
    call("PUT", types, "/v1/types/Big", "{\"keys\": {\"a\": {\"kind\": \"register\", \"default\": \""
        + "x".repeat(1_100_000) + "\"}}}", 413);
    call("GET", "/v1/types", "/v1/types", null, 200);
    call("GET", types, "/v1/types/Account", null, 200);
    call("GET", types, "/v1/types/Loose", null, 200);
    call("GET", types, "/v1/types/Missing", null, 404);
    call("GET", types, "/v1/types/" + encode("$reserved"), null, 400);

    // Entities.
    String entity = "/v1/entities/{type}/{id}";
    call("GET", entity, "/v1/entities/Account/alice", null, 404);
    call("POST", "/v1/entities/{type}/{id}/actions/{action}",
        "/v1/entities/Account/alice/actions/open", "{\"initial\": 10}", 200);
    Answer patched = call("PATCH", entity, "/v1/entities/Account/alice",
        "{\"balance\": 20, \"status\": \"open\"}", 200);
    long version = patched.body().path("version").asLong();
    call("PATCH", entity, "/v1/entities/Account/alice", "{\"nokey\": 1}", 400);
    call("PATCH", entity, "/v1/entities/Account/alice", "{}", 400);
    call("PATCH", entity, "/v1/entities/Account/alice", "[1]", 400);
    call("PATCH", entity, "/v1/entities/Account/alice",
        "{\"status\": \"" + "x".repeat(70_000) + "\"}", 413);
    call("GET", entity, "/v1/entities/Account/alice", null, 200);
    call("GET", entity, "/v1/entities/Account/alice?at=" + version, null, 200);
    call("GET", entity, "/v1/entities/Account/alice?at=1", null, 404);
    call("GET", entity, "/v1/entities/Account/alice?at=soon", null, 400);
    call("GET", entity, "/v1/entities/Account/" + "i".repeat(300), null, 400);
    call("GET", entity, "/v1/entities/Loose/free", null, 404);

    // Listing: pages, a cursor, a version, and every bad parameter refused.
    String listing = "/v1/entities/{type}";
    call("PUT", "/v1/entities/{type}/{id}/keys/{key}", "/v1/entities/Account/bob/keys/status",
        "\"open\"", 200);
    Answer first = call("GET", listing, "/v1/entities/Account?limit=1", null, 200);
    assertEquals("alice", first.body().at("/entities/0/id").asText(), first.text());
    String next = first.body().path("next").asText();
    Answer rest = call("GET", listing, "/v1/entities/Account?after=" + encode(next), null, 200);
    assertEquals("bob", rest.body().at("/entities/0/id").asText(), rest.text());
    assertTrue(rest.body().path("next").isNull(), rest.text());
    Answer then = call("GET", listing, "/v1/entities/Account?at=" + version, null, 200);
    assertEquals(1, then.body().path("entities").size(), then.text());
    call("GET", listing, "/v1/entities/Loose", null, 200);
    Answer withStates = call("GET", listing, "/v1/entities/Account?from=bob&states=true", null,
        200);
    assertEquals("open", withStates.body().at("/entities/0/state/status").asText(),
        withStates.text());
    call("GET", listing, "/v1/entities/Account?from=alice&after=bob", null, 400);
    call("GET", listing, "/v1/entities/Account?states=maybe", null, 400);
    call("GET", listing, "/v1/entities/Account?limit=0", null, 400);
    call("GET", listing, "/v1/entities/Account?limit=1001", null, 400);
    call("GET", listing, "/v1/entities/Account?limit=ten", null, 400);
    call("GET", listing, "/v1/entities/Account?after=", null, 400);
    call("GET", listing, "/v1/entities/Account?after=" + "i".repeat(300), null, 400);
    call("GET", listing, "/v1/entities/Account?at=soon", null, 400);
    call("GET", listing, "/v1/entities/Account?at=" + Long.MAX_VALUE, null, 400);
    call("GET", listing, "/v1/entities/" + encode("$reserved"), null, 400);

    // An entity's versions: pages newest first, a cursor, and every bad parameter refused.
    String versions = "/v1/entities/{type}/{id}/versions";
    Answer newest = call("GET", versions, "/v1/entities/Account/alice/versions?limit=1", null, 200);
    Answer older = call("GET", versions, "/v1/entities/Account/alice/versions?before="
        + newest.body().path("next").asText(), null, 200);
    assertTrue(older.body().path("versions").size() >= 1, older.text());
    call("GET", versions, "/v1/entities/Account/nobody/versions", null, 200);
    call("GET", versions, "/v1/entities/Account/alice/versions?limit=0", null, 400);
    call("GET", versions, "/v1/entities/Account/alice/versions?limit=1001", null, 400);
    call("GET", versions, "/v1/entities/Account/alice/versions?before=0", null, 400);
    call("GET", versions, "/v1/entities/Account/alice/versions?before=soon", null, 400);
    call("GET", versions, "/v1/entities/Account/" + "i".repeat(300) + "/versions", null, 400);

    // Keys.
    String key = "/v1/entities/{type}/{id}/keys/{key}";
    call("GET", key, "/v1/entities/Account/alice/keys/balance", null, 200);
    call("GET", key, "/v1/entities/Account/nobody/keys/balance", null, 404);
    call("GET", key, "/v1/entities/Account/alice/keys/" + encode("$hidden"), null, 400);
    call("PUT", key, "/v1/entities/Account/alice/keys/status", "\"open\"", 200);
    call("PUT", key, "/v1/entities/Loose/free/keys/anything", "{\"nested\": [1, 2.5, null]}", 200);
    call("PUT", key, "/v1/entities/Account/alice/keys/status", "{broken", 400);
    call("PUT", key, "/v1/entities/Account/alice/keys/status",
        "\"" + "x".repeat(70_000) + "\"", 413);
    call("DELETE", key, "/v1/entities/Loose/free/keys/anything", null, 200);
    call("DELETE", key, "/v1/entities/Account/alice/keys/nokey", null, 400);
    call("POST", key + "/increment", "/v1/entities/Account/alice/keys/logins/increment",
        "{\"by\": 3}", 200);
    call("POST", key + "/increment", "/v1/entities/Account/alice/keys/balance/increment",
        "{\"by\": 3}", 400);
    call("POST", key + "/increment", "/v1/entities/Account/alice/keys/logins/increment",
        "{\"by\": 1.5}", 400);
    call("POST", key + "/add", "/v1/entities/Account/alice/keys/tags/add",
        "{\"element\": \"vip\"}", 200);
    call("POST", key + "/add", "/v1/entities/Account/alice/keys/tags/add", "{\"elements\": 1}",
        400);
    call("POST", key + "/remove", "/v1/entities/Account/alice/keys/tags/remove",
        "{\"element\": \"vip\"}", 200);
    call("POST", key + "/remove", "/v1/entities/Account/alice/keys/balance/remove",
        "{\"element\": 1}", 400);

    // Actions.
    String action = "/v1/entities/{type}/{id}/actions/{action}";
    call("POST", action, "/v1/entities/Account/alice/actions/deposit", "{\"amount\": 5}", 200);
    call("POST", action, "/v1/entities/Account/alice/actions/deposit", "{\"amount\": -5}", 409);
    call("POST", action, "/v1/entities/Account/alice/actions/deposit", "[]", 400);
    call("POST", action, "/v1/entities/Account/alice/actions/fly", "{}", 404);
    call("POST", action, "/v1/entities/Missing/alice/actions/fly", "{}", 404);

    // Transactions.
    Answer committed = call("POST", "/v1/transactions", "/v1/transactions", """
        {"ops": [{"entity": "Account/alice", "action": "withdraw", "args": {"amount": 1}},
                 {"entity": "Account/bob", "op": "assign", "key": "balance", "value": 1}],
         "reads": [{"entity": "Account/alice"}]}""", 200);
    assertEquals(1, committed.body().path("reads").size(), committed.text());
    Answer aborted = call("POST", "/v1/transactions", "/v1/transactions", """
        {"mode": "planned", "ops": [{"entity": "Account/alice", "action": "withdraw",
                                      "args": {"amount": 1000000}}]}""", 409);
    assertEquals("aborted", aborted.errorCode(), aborted.text());
    call("POST", "/v1/transactions", "/v1/transactions", "{\"ops\": []}", 400);
    String recent = "/v1/transactions/recent";
    Answer outcomes = call("GET", recent, recent + "?limit=2", null, 200);
    assertEquals("aborted", outcomes.body().at("/transactions/0/outcome").asText(),
        outcomes.text());
    assertEquals("committed", outcomes.body().at("/transactions/1/outcome").asText(),
        outcomes.text());
    Answer earlier = call("GET", recent, recent + "?before="
        + outcomes.body().at("/transactions/0/sequence").asText(), null, 200);
    assertEquals(outcomes.body().at("/transactions/1"), earlier.body().at("/transactions/0"),
        earlier.text());
    call("GET", recent, recent + "?limit=0", null, 400);
    call("GET", recent, recent + "?limit=1001", null, 400);
    call("GET", recent, recent + "?before=-1", null, 400);
    call("GET", recent, recent + "?before=x", null, 400);
    call("POST", "/v1/transactions", "/v1/transactions", "{\"mode\": \"eventually\"}", 400);

    // Interactive transactions.
    Answer begun = call("POST", "/v1/transactions/begin", "/v1/transactions/begin", null, 200);
    String transaction = "/v1/transactions/" + begun.body().path("txId").asText();
    call("POST", "/v1/transactions/{txId}/read", transaction + "/read",
        "{\"entity\": \"Account/alice\"}", 200);
    call("POST", "/v1/transactions/{txId}/read", transaction + "/read", "{\"entity\": 1}", 400);
    call("POST", "/v1/transactions/{txId}/write", transaction + "/write",
        "{\"entity\": \"Account/bob\", \"op\": \"increment\", \"key\": \"logins\", \"by\": 1}",
        200);
    call("POST", "/v1/transactions/{txId}/write", transaction + "/write",
        "{\"entity\": \"Account/bob\", \"action\": \"deposit\"}", 400);
    call("POST", "/v1/transactions/{txId}/action", transaction + "/action",
        "{\"entity\": \"Account/alice\", \"action\": \"deposit\", \"args\": {\"amount\": 2}}", 200);
    call("POST", "/v1/transactions/{txId}/commit", transaction + "/commit", null, 200);
    call("POST", "/v1/transactions/{txId}/commit", transaction + "/commit", null, 404);
    call("POST", "/v1/transactions/{txId}/read", transaction + "/read",
        "{\"entity\": \"Account/alice\"}", 404);
    Answer second = call("POST", "/v1/transactions/begin", "/v1/transactions/begin", null, 200);
    String secondPath = "/v1/transactions/" + second.body().path("txId").asText();
    call("POST", "/v1/transactions/{txId}/abort", secondPath + "/abort", null, 200);
    call("POST", "/v1/transactions/{txId}/abort", secondPath + "/abort", null, 404);
    call("POST", "/v1/transactions/{txId}/abort", "/v1/transactions/-3/abort", null, 400);
    call("POST", "/v1/transactions/{txId}/action", "/v1/transactions/x/action", "{}", 400);

    // Snapshot reads.
    call("POST", "/v1/snapshot-read", "/v1/snapshot-read",
        "{\"entities\": [\"Account/alice\", {\"entity\": \"Account/bob\"}, \"Account/nobody\"]}",
        200);
    call("POST", "/v1/snapshot-read", "/v1/snapshot-read", "{\"entities\": []}", 400);
    call("POST", "/v1/snapshot-read", "/v1/snapshot-read",
        "{\"entities\": [\"Account/alice\", \"Account/alice\"]}", 400);

    // Dependencies.
    String dependency = """
        {"kind": "update", "leader": {"entity": "Account/alice", "key": "balance"},
         "follower": {"entity": "Account/carol", "key": "balance"}, "function": "replicate"}""";
    Answer registered = call("POST", "/v1/dependencies", "/v1/dependencies", dependency, 201);
    assertEquals("/v1/dependencies/" + registered.body().path("id").asText(),
        registered.header("Location").orElse(""));
    call("POST", "/v1/dependencies", "/v1/dependencies", dependency, 409);
    call("POST", "/v1/dependencies", "/v1/dependencies", "{\"kind\": \"sideways\"}", 400);
    String id = registered.body().path("id").asText();
    call("GET", "/v1/dependencies/{id}", "/v1/dependencies/" + id, null, 200);
    call("GET", "/v1/entities/{type}/{id}/dependencies",
        "/v1/entities/Account/alice/dependencies", null, 200);
    call("GET", "/v1/entities/{type}/{id}/dependencies",
        "/v1/entities/Account/carol/dependencies", null, 200);
    call("DELETE", "/v1/dependencies/{id}", "/v1/dependencies/" + id, null, 200);
    call("GET", "/v1/dependencies/{id}", "/v1/dependencies/" + id, null, 404);
    call("DELETE", "/v1/dependencies/{id}", "/v1/dependencies/" + id, null, 404);
    call("GET", "/v1/dependencies/{id}", "/v1/dependencies/not-an-id", null, 400);

    // Idempotent retries: a repeat with the same key answers as the first time (replayed once
    // idempotency is in; before, simply done again); the same key with another body is refused
    // with 422 (or, before idempotency, done). Either way the answer must be a documented one.
    String keyPath = "/v1/entities/Account/alice/keys/status";
    for (int attempt = 0; attempt < 2; attempt++) {
      Answer retried = callWithKey("PUT", key, keyPath, "\"open\"", "contract-retry-1");
      assertEquals(200, retried.status(), retried.text());
    }
    Answer reused = callWithKey("PUT", key, keyPath, "\"closed\"", "contract-retry-1");
    assertTrue(reused.status() == 200 || reused.status() == 422, reused.text());

    // Replication is off on a node without a DC name: no status, and no pull without a secret.
    // (ReplicationEndpointTest exercises both on a named DC.)
    call("GET", "/v1/replication/status", "/v1/replication/status", null, 404);
    call("GET", "/v1/replication/log", "/v1/replication/log?origin=a&after=0", null, 401);
    call("GET", "/v1/replication/stream", "/v1/replication/stream?origin=a&after=0", null, 401);
    call("GET", "/v1/replication/bootstrap", "/v1/replication/bootstrap", null, 401);
    // And no peers to list or change (ReplicationPeersTest exercises them on a named DC).
    call("GET", "/v1/replication/peers", "/v1/replication/peers", null, 404);
    call("POST", "/v1/replication/peers", "/v1/replication/peers",
        "{\"name\": \"tokyo\", \"url\": \"http://127.0.0.1:9\"}", 404);
    call("DELETE", "/v1/replication/peers/{name}", "/v1/replication/peers/tokyo", null, 404);
    // A node that is not a cluster member has no cluster to show (ClusterTest shows one).
    call("GET", "/v1/cluster", "/v1/cluster", null, 404);

    // Deleting an entity.
    call("DELETE", entity, "/v1/entities/Account/bob", null, 200);
    call("DELETE", entity, "/v1/entities/Account/bob", null, 404);
    call("DELETE", entity, "/v1/entities/Account/" + "i".repeat(300), null, 400);

    // Outside the operations: an unknown path and a method a resource does not take are JSON
    // errors of the Error schema (statuses the document names for every request, not per route).
    for (String[] outside : List.of(new String[] {"GET", "/v1/nothing"},
        new String[] {"GET", "/nothing"}, new String[] {"POST", "/v1/types"},
        new String[] {"PUT", "/v1/entities/Account/alice/dependencies"})) {
      Answer answer = server.send(outside[0], outside[1], null);
      assertTrue(answer.status() == 404 || answer.status() == 405, outside[1] + ": " + answer);
      problems.addAll(document.validate("/components/schemas/Error", answer.text()));
    }

    assertEquals(List.of(), problems, "answers outside the document");
    assertEquals(new TreeSet<>(ROUTES), new TreeSet<>(exercised), "routes exercised");
  }

  /** Sends a JSON request, records whether the answer is documented, checks its status. */
  private Answer call(String method, String template, String path, String body, int status)
      throws Exception {
    return callWith(method, template, path, body, "application/json", status);
  }

  private Answer callWith(String method, String template, String path, String body,
      String contentType, int status) throws Exception {
    Answer answer = server.send(method, path, body, contentType);
    exercised.add(method + " " + template);
    assertEquals(status, answer.status(), method + " " + path + ": " + answer.text());
    problems.addAll(document.problems(method, template, answer));
    return answer;
  }

  /** Sends a JSON request with an {@code Idempotency-Key}; records whether the answer is documented. */
  private Answer callWithKey(String method, String template, String path, String body,
      String idempotencyKey) throws Exception {
    HttpResponse<String> response = ServerProcess.client().send(
        HttpRequest.newBuilder(URI.create(server.baseUrl() + path))
            .timeout(Duration.ofSeconds(60))
            .header("Content-Type", "application/json")
            .header("Idempotency-Key", idempotencyKey)
            .method(method, HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
    Answer answer = new Answer(response.statusCode(), Json.parse(response.body()),
        response.body(), response.headers());
    exercised.add(method + " " + template);
    problems.addAll(document.problems(method, template, answer));
    return answer;
  }

  private static String encode(String segment) {
    return URLEncoder.encode(segment, StandardCharsets.UTF_8);
  }

  private static void collectDanglingReferences(JsonNode root, JsonNode node, List<String> out) {
    if (node.isObject()) {
      JsonNode reference = node.get("$ref");
      if (reference != null && reference.isTextual()) {
        String target = reference.asText();
        if (!target.startsWith("#/") || root.at(target.substring(1)).isMissingNode()) {
          out.add(target);
        }
      }
      node.elements().forEachRemaining(child -> collectDanglingReferences(root, child, out));
    } else if (node.isArray()) {
      node.forEach(child -> collectDanglingReferences(root, child, out));
    }
  }
}
