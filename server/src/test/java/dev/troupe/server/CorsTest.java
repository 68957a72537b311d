package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.server.http.Authorization;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * CORS on a server with tokens: a preflight from an allowed origin is answered 204 with what the
 * page may send, without a token; answers to an allowed origin carry Access-Control-Allow-Origin
 * and Vary: Origin, even refusals; other origins get no CORS header.
 */
class CorsTest {
  static final String ALLOWED = "https://app.example.com";
  static final String OTHER = "https://evil.example.net";
  static final String TOKEN = "troupe_cors-test-secret-0123456789abcdefghijklmnop";

  @TempDir static Path data;
  static ServerProcess server;

  @BeforeAll
  static void start() throws Exception {
    server = ServerProcess.start(data.resolve("node"),
        "troupe.http.cors.allowed-origins=[\"" + ALLOWED + "\", \"http://localhost:3000\"]",
        "troupe.http.cors.max-age-seconds=120",
        "troupe.http.auth.tokens=[{name = page, sha256 = \"" + Authorization.sha256Hex(TOKEN)
            + "\", scopes = [read, write]}]");
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
  }

  @Test
  void aPreflightFromAnAllowedOriginIsAnsweredWithoutAToken() throws Exception {
    HttpResponse<String> preflight = preflight(ALLOWED);
    assertEquals(204, preflight.statusCode(), preflight.body());
    assertEquals(Optional.of(ALLOWED), header(preflight, "Access-Control-Allow-Origin"));
    String methods = header(preflight, "Access-Control-Allow-Methods").orElseThrow();
    for (String method : new String[] {"GET", "PUT", "PATCH", "POST", "DELETE"}) {
      assertTrue(methods.contains(method), methods);
    }
    String headers = header(preflight, "Access-Control-Allow-Headers").orElseThrow();
    for (String name : new String[] {"Authorization", "Content-Type", "Idempotency-Key"}) {
      assertTrue(headers.contains(name), headers);
    }
    assertEquals(Optional.of("120"), header(preflight, "Access-Control-Max-Age"));
    assertEquals(Optional.of("Origin"), header(preflight, "Vary"));
  }

  @Test
  void aPreflightFromAnotherOriginGetsNoCorsHeaders() throws Exception {
    HttpResponse<String> preflight = preflight(OTHER);
    assertEquals(204, preflight.statusCode());
    assertNoCorsHeaders(preflight);
  }

  @Test
  void answersToAnAllowedOriginCarryItsHeadersEvenRefusals() throws Exception {
    HttpResponse<String> written = send("PUT", "/v1/entities/User/c/keys/a", "1", ALLOWED, TOKEN);
    assertEquals(200, written.statusCode(), written.body());
    assertEquals(Optional.of(ALLOWED), header(written, "Access-Control-Allow-Origin"));
    assertEquals(Optional.of("Origin"), header(written, "Vary"));
    assertTrue(header(written, "Access-Control-Expose-Headers").orElseThrow()
        .contains("WWW-Authenticate"));
    HttpResponse<String> refused = send("GET", "/v1/entities/User/c", null, ALLOWED, null);
    assertEquals(401, refused.statusCode());
    assertEquals(Optional.of(ALLOWED), header(refused, "Access-Control-Allow-Origin"));
    HttpResponse<String> missing = send("GET", "/v1/entities/User/c/keys/none", null,
        "http://localhost:3000", TOKEN);
    assertEquals(404, missing.statusCode(), missing.body());
    assertEquals(Optional.of("http://localhost:3000"),
        header(missing, "Access-Control-Allow-Origin"));
  }

  @Test
  void answersToAnotherOriginOrToNoOriginCarryNoCorsHeaders() throws Exception {
    HttpResponse<String> other = send("GET", "/v1/entities/User/c", null, OTHER, TOKEN);
    assertEquals(200, other.statusCode(), other.body());
    assertNoCorsHeaders(other);
    HttpResponse<String> none = send("GET", "/v1/entities/User/c", null, null, TOKEN);
    assertEquals(200, none.statusCode(), none.body());
    assertNoCorsHeaders(none);
  }

  private static void assertNoCorsHeaders(HttpResponse<String> answer) {
    for (String name : answer.headers().map().keySet()) {
      assertTrue(!name.toLowerCase().startsWith("access-control-"), answer.headers().toString());
    }
  }

  private static Optional<String> header(HttpResponse<String> answer, String name) {
    return answer.headers().firstValue(name);
  }

  private static HttpResponse<String> preflight(String origin) throws Exception {
    return ServerProcess.client().send(HttpRequest.newBuilder(
            URI.create(server.baseUrl() + "/v1/entities/User/c/keys/a"))
        .timeout(Duration.ofSeconds(30))
        .method("OPTIONS", HttpRequest.BodyPublishers.noBody())
        .header("Origin", origin)
        .header("Access-Control-Request-Method", "PUT")
        .header("Access-Control-Request-Headers", "authorization, content-type")
        .build(), HttpResponse.BodyHandlers.ofString());
  }

  private static HttpResponse<String> send(String method, String path, String body, String origin,
      String token) throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(server.baseUrl() + path))
        .timeout(Duration.ofSeconds(30))
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body));
    if (body != null) {
      request.header("Content-Type", "application/json");
    }
    if (origin != null) {
      request.header("Origin", origin);
    }
    if (token != null) {
      request.header("Authorization", "Bearer " + token);
    }
    return ServerProcess.client().send(request.build(), HttpResponse.BodyHandlers.ofString());
  }
}
