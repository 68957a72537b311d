package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.Json;
import dev.troupe.server.http.Authorization;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bearer-token authentication and scopes on a real server: every route without a token, with a
 * wrong token and with a token lacking its scope is refused (401 with WWW-Authenticate, 403) as
 * JSON and changes nothing; the right token is let through; health stays open; /metrics needs a
 * token. A server on an address other than loopback without tokens refuses to start.
 */
class AuthTest {
  static final String READER = "troupe_reader-secret-for-tests-only-0123456789abcdef";
  static final String WRITER = "troupe_writer-secret-for-tests-only-0123456789abcdef";
  static final String ADMIN = "troupe_admin-secret-for-tests-only-0123456789abcdef";
  static final String OTHER_WRITER = "troupe_other-writer-secret-for-tests-only-0123456789";

  @TempDir static Path data;
  static ServerProcess server;

  /** A route, a body it accepts, and the scope it needs ("any" for any valid token). */
  record Route(String method, String path, String body, String scope) {}

  static final List<Route> ROUTES = List.of(
      new Route("GET", "/v1/types", null, "read"),
      new Route("GET", "/v1/types/Account", null, "read"),
      new Route("PUT", "/v1/types/Account", null, "admin"),
      new Route("GET", "/v1/entities/User/x", null, "read"),
      new Route("HEAD", "/v1/entities/User/x", null, "read"),
      new Route("GET", "/v1/entities/User/x/keys/a", null, "read"),
      new Route("GET", "/v1/entities/User/x/dependencies", null, "read"),
      new Route("GET", "/v1/entities/User/x/versions", null, "read"),
      new Route("GET", "/v1/transactions/recent", null, "read"),
      new Route("PUT", "/v1/entities/User/x/keys/a", "2", "write"),
      new Route("PATCH", "/v1/entities/User/x", "{\"a\": 3}", "write"),
      new Route("DELETE", "/v1/entities/User/x/keys/b", null, "write"),
      new Route("DELETE", "/v1/entities/User/gone", null, "write"),
      new Route("POST", "/v1/entities/Account/carol/keys/logins/increment", "{\"by\": 1}", "write"),
      new Route("POST", "/v1/entities/Account/carol/keys/tags/add", "{\"element\": \"t\"}", "write"),
      new Route("POST", "/v1/entities/Account/carol/keys/tags/remove", "{\"element\": \"t\"}",
          "write"),
      new Route("POST", "/v1/entities/Account/carol/actions/deposit", "{\"amount\": 5}", "write"),
      new Route("POST", "/v1/transactions",
          "{\"ops\": [{\"entity\": \"User/t\", \"assign\": {\"key\": \"a\", \"value\": 1}}]}",
          "write"),
      new Route("POST", "/v1/transactions/begin", null, "write"),
      new Route("POST", "/v1/transactions/99/abort", null, "write"),
      new Route("POST", "/v1/snapshot-read", "{\"entities\": [\"User/x\"]}", "read"),
      new Route("POST", "/v1/dependencies",
          "{\"leader\": {\"entity\": \"User/l\", \"key\": \"a\"}, \"follower\": {\"entity\":"
              + " \"User/f\", \"key\": \"a\"}, \"kind\": \"update\", \"function\": \"copy\"}",
          "admin"),
      new Route("GET", "/v1/dependencies/User%2Fl.a-User%2Ff.a", null, "read"),
      new Route("DELETE", "/v1/dependencies/User%2Fl.a-User%2Ff.a", null, "admin"),
      new Route("GET", "/v1/replication/peers", null, "read"),
      new Route("POST", "/v1/replication/peers",
          "{\"name\": \"tokyo\", \"url\": \"http://127.0.0.1:9\"}", "admin"),
      new Route("DELETE", "/v1/replication/peers/tokyo", null, "admin"),
      new Route("GET", "/v1/no-such-route", null, "read"),
      new Route("GET", "/metrics", null, "any"));

  @BeforeAll
  static void start() throws Exception {
    server = ServerProcess.start(data.resolve("node"), "troupe.http.auth.tokens=["
        + token("reader", READER, "read") + ", " + token("writer", WRITER, "read, write") + ", "
        + token("admin", ADMIN, "admin") + ", " + token("other-writer", OTHER_WRITER, "write")
        + "]");
    assertEquals(200, send("PUT", "/v1/types/Account", RestEndToEndTest.ACCOUNT_YAML, ADMIN)
        .statusCode());
    assertEquals(200, send("POST", "/v1/entities/Account/carol/actions/open",
        "{\"initial\": 50}", WRITER).statusCode());
    assertEquals(200, send("PUT", "/v1/entities/User/x/keys/a", "1", WRITER).statusCode());
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
  }

  private static String token(String name, String secret, String scopes) {
    return "{name = " + name + ", sha256 = \"" + Authorization.sha256Hex(secret)
        + "\", scopes = [" + scopes + "]}";
  }

  @Test
  void everyRouteRefusesAMissingAWrongAndAnUnderScopedTokenAndChangesNothing() throws Exception {
    String before = state();
    for (Route route : ROUTES) {
      String what = route.method + " " + route.path;
      HttpResponse<String> missing = send(route.method, route.path, route.body, null);
      assertRefused(401, "unauthorized", missing, what + " without a token");
      assertTrue(missing.headers().firstValue("WWW-Authenticate").orElse("").startsWith("Bearer"),
          what + ": " + missing.headers());
      HttpResponse<String> wrong = send(route.method, route.path, route.body, "troupe_wrong");
      assertRefused(401, "unauthorized", wrong, what + " with an unknown token");
      HttpResponse<String> basic =
          sendWithHeader(route.method, route.path, route.body, "Basic dXNlcjpwYXNz");
      assertRefused(401, "unauthorized", basic, what + " with Basic credentials");
      String lacking = switch (route.scope) {
        case "read" -> ADMIN;
        case "write" -> READER;
        case "admin" -> WRITER;
        default -> null;
      };
      if (lacking != null) {
        assertRefused(403, "forbidden", send(route.method, route.path, route.body, lacking),
            what + " with a token lacking '" + route.scope + "'");
      }
    }
    assertEquals(before, state(), "a refused request changed something");
  }

  /**
   * The console's files need no token (they hold no data), its calls do; the outcomes of recent
   * transactions are a reader's, interactive aborts included.
   */
  @Test
  void theConsoleIsPublicAndWhatItReadsIsNot() throws Exception {
    HttpResponse<String> page = send("GET", "/console", null, null);
    assertEquals(200, page.statusCode(), page.body());
    assertTrue(page.headers().firstValue("Content-Type").orElse("").startsWith("text/html"));
    assertTrue(page.headers().firstValue("Content-Security-Policy").orElse("")
        .contains("default-src 'self'"), page.headers().toString());
    assertTrue(page.body().contains("/console/app.js"), page.body());
    HttpResponse<String> module = send("GET", "/console/app.js", null, null);
    assertEquals(200, module.statusCode());
    assertTrue(module.headers().firstValue("Content-Type").orElse("").startsWith(
        "text/javascript"));
    assertRefused(404, "not_found", send("GET", "/console/secret.txt", null, null),
        "no other file");
    assertRefused(401, "unauthorized", send("POST", "/console", "{}", null), "only reads");
    HttpResponse<String> begun = send("POST", "/v1/transactions/begin", null, WRITER);
    String transaction = Json.parse(begun.body()).path("txId").asText();
    assertEquals(200, send("POST", "/v1/transactions/" + transaction + "/abort", null, WRITER)
        .statusCode());
    HttpResponse<String> recent = send("GET", "/v1/transactions/recent?limit=1", null, READER);
    assertEquals(200, recent.statusCode(), recent.body());
    com.fasterxml.jackson.databind.JsonNode outcome = Json.parse(recent.body())
        .at("/transactions/0");
    assertEquals(transaction, outcome.path("txId").asText(), recent.body());
    assertEquals("interactive", outcome.path("kind").asText());
    assertEquals("aborted", outcome.path("outcome").asText());
    assertEquals("interactive_aborted", outcome.path("reason").asText());
  }

  @Test
  void theRightTokenIsLetThrough() throws Exception {
    for (Route route : ROUTES) {
      String secret = switch (route.scope) {
        case "read", "any" -> READER;
        case "write" -> WRITER;
        default -> ADMIN;
      };
      HttpResponse<String> answer = send(route.method, route.path, route.body, secret);
      assertNotEquals(401, answer.statusCode(), route + ": " + answer.body());
      assertNotEquals(403, answer.statusCode(), route + ": " + answer.body());
      assertTrue(answer.statusCode() < 500, route + ": " + answer.body());
    }
  }

  @Test
  void healthAndTheApiDescriptionStayOpen() throws Exception {
    for (String path : List.of("/v1/health", "/v1/health/live", "/v1/health/ready")) {
      assertEquals(200, send("GET", path, null, null).statusCode(), path);
    }
    HttpResponse<String> openapi = send("GET", "/v1/openapi.json", null, null);
    assertNotEquals(401, openapi.statusCode(), openapi.body());
    assertNotEquals(403, openapi.statusCode(), openapi.body());
    // Only GET of the description is open.
    assertEquals(401, send("PUT", "/v1/openapi.json", "{}", null).statusCode());
  }

  @Test
  void theCliClientSendsItsToken() throws Exception {
    ServerProcess.Finished refused = ServerProcess.run(
        List.of("get", "User/x", "a", "--url", server.baseUrl()));
    assertEquals(1, refused.exitStatus(), refused.output());
    assertTrue(refused.output().contains("HTTP 401"), refused.output());
    assertTrue(refused.output().contains("needs a bearer token"), "no token was sent: "
        + refused.output());
    ServerProcess.Finished allowed = ServerProcess.run(
        List.of("get", "User/x", "a", "--url", server.baseUrl(), "--token", READER));
    assertEquals(0, allowed.exitStatus(), allowed.output());
    assertTrue(allowed.output().contains("\"value\""), allowed.output());
    ServerProcess.Finished fromEnvironment = ServerProcess.run(
        List.of("put", "User/cli", "a", "7", "--url", server.baseUrl()),
        java.util.Map.of("TROUPE_TOKEN", WRITER));
    assertEquals(0, fromEnvironment.exitStatus(), fromEnvironment.output());
    ServerProcess.Finished lacking = ServerProcess.run(
        List.of("put", "User/cli", "a", "8", "--url", server.baseUrl(), "--token", READER));
    assertEquals(1, lacking.exitStatus(), lacking.output());
    assertTrue(lacking.output().contains("HTTP 403"), lacking.output());
    assertEquals("{\"value\":7}", send("GET", "/v1/entities/User/cli/keys/a", null, READER).body());
  }

  @Test
  void aMintedTokenIsPrintedOnceWithTheConfigurationLineOfItsHash() throws Exception {
    ServerProcess.Finished minted = ServerProcess.run(
        List.of("token", "create", "--name", "ci", "--scopes", "read,admin"));
    assertEquals(0, minted.exitStatus(), minted.output());
    Matcher token = Pattern.compile("token: (troupe_[A-Za-z0-9_-]{43})").matcher(minted.output());
    assertTrue(token.find(), minted.output());
    String line = "{ name = \"ci\", sha256 = \"" + Authorization.sha256Hex(token.group(1))
        + "\", scopes = [read, admin] }";
    assertTrue(minted.output().contains(line), minted.output());
    ServerProcess.Finished badScope = ServerProcess.run(
        List.of("token", "create", "--name", "ci", "--scopes", "read,root"));
    assertEquals(2, badScope.exitStatus(), badScope.output());
  }

  @Test
  void refusesToStartOnANonLoopbackAddressWithoutTokens() throws Exception {
    Path directory = Files.createTempDirectory("troupe-exposed");
    ServerProcess.Finished refused = ServerProcess.run(List.of("serve", "--data",
        directory.resolve("node").toString(), "--port", "0", "--host", "0.0.0.0"));
    assertEquals(78, refused.exitStatus(), refused.output());
    assertTrue(refused.output().contains("refusing to listen on 0.0.0.0 without authentication"),
        refused.output());
    assertFalse(Files.exists(directory.resolve("node")), "the store was opened");
  }

  private static void assertRefused(int status, String code, HttpResponse<String> answer,
      String what) {
    assertEquals(status, answer.statusCode(), what + ": " + answer.body());
    if (!answer.request().method().equals("HEAD")) {
      assertEquals(code, Json.parse(answer.body()).path("error").asText(), what);
    }
  }

  /** Every entity and type the routes aim at, as read with a full token. */
  private static String state() throws Exception {
    StringBuilder state = new StringBuilder();
    for (String path : List.of("/v1/types", "/v1/entities/User/x", "/v1/entities/User/gone",
        "/v1/entities/User/t", "/v1/entities/Account/carol", "/v1/entities/User/f/dependencies")) {
      state.append(send("GET", path, null, WRITER).body()).append('\n');
    }
    return state.toString();
  }

  /**
   * Idempotency keys live in their token's namespace: the same key sent with two tokens names two
   * writes, each run once, each replayed only to its own token.
   */
  @Test
  void idempotencyKeysOfDifferentTokensNeverMeet() throws Exception {
    String path = "/v1/entities/User/keyed/keys/n";
    HttpResponse<String> writer = sendKeyed("PUT", path, "1", WRITER, "shared-key");
    HttpResponse<String> other = sendKeyed("PUT", path, "2", OTHER_WRITER, "shared-key");
    assertEquals(200, writer.statusCode(), writer.body());
    assertEquals(200, other.statusCode(), other.body());
    assertTrue(other.headers().firstValue("Idempotent-Replayed").isEmpty(), other.body());
    HttpResponse<String> writerAgain = sendKeyed("PUT", path, "1", WRITER, "shared-key");
    assertEquals("true", writerAgain.headers().firstValue("Idempotent-Replayed").orElse(""));
    assertEquals(writer.body(), writerAgain.body());
    // The replay changed nothing: the other token's write is the last one.
    assertEquals("{\"value\":2}", send("GET", path, null, WRITER).body());
  }

  private static HttpResponse<String> sendKeyed(String method, String path, String body,
      String token, String idempotencyKey) throws Exception {
    return ServerProcess.client().send(HttpRequest.newBuilder(URI.create(server.baseUrl() + path))
        .timeout(Duration.ofSeconds(30))
        .method(method, HttpRequest.BodyPublishers.ofString(body))
        .header("Content-Type", "application/json")
        .header("Authorization", "Bearer " + token)
        .header("Idempotency-Key", idempotencyKey)
        .build(), HttpResponse.BodyHandlers.ofString());
  }

  static HttpResponse<String> send(String method, String path, String body, String token)
      throws Exception {
    return sendWithHeader(method, path, body, token == null ? null : "Bearer " + token);
  }

  static HttpResponse<String> sendWithHeader(String method, String path, String body,
      String authorization) throws Exception {
    String content = body;
    String contentType = "application/json";
    if (method.equals("PUT") && path.startsWith("/v1/types/")) {
      content = body == null ? RestEndToEndTest.ACCOUNT_YAML : body;
      contentType = "application/yaml";
    }
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(server.baseUrl() + path))
        .timeout(Duration.ofSeconds(30))
        .method(method, content == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(content));
    if (content != null) {
      request.header("Content-Type", contentType);
    }
    if (authorization != null) {
      request.header("Authorization", authorization);
    }
    return ServerProcess.client().send(request.build(), HttpResponse.BodyHandlers.ofString());
  }
}
