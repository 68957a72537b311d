package dev.troupe.server.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.model.ErrorCode;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.japi.Function;
import org.junit.jupiter.api.Test;

/** The edge's pure parts: the timeout answer, the parser's error codes, CORS origins, exposure. */
class HttpEdgeUnitTest {
  private static HttpSettings settings(String overrides) {
    return HttpSettings.fromConfig(ConfigFactory.parseString(overrides)
        .withFallback(ConfigFactory.load()));
  }

  @Test
  void aRequestThatOutlivesTheRequestTimeoutIsAnsweredAsJson() throws Exception {
    AtomicReference<Function<HttpRequest, HttpResponse>> handler = new AtomicReference<>();
    // What Pekko attaches to each request: its handler is the one a timeout answers with.
    org.apache.pekko.http.scaladsl.TimeoutAccess access =
        new org.apache.pekko.http.scaladsl.TimeoutAccess() {
      @Override public scala.concurrent.duration.Duration timeout() {
        return scala.concurrent.duration.Duration.Inf();
      }
      @Override public void updateTimeout(scala.concurrent.duration.Duration timeout) {}
      @Override public void updateHandler(scala.Function1<
          org.apache.pekko.http.scaladsl.model.HttpRequest,
          org.apache.pekko.http.scaladsl.model.HttpResponse> newHandler) {
        throw new AssertionError("the edge uses the Java API");
      }
      @Override public void update(scala.concurrent.duration.Duration timeout, scala.Function1<
          org.apache.pekko.http.scaladsl.model.HttpRequest,
          org.apache.pekko.http.scaladsl.model.HttpResponse> newHandler) {
        throw new AssertionError("the edge uses the Java API");
      }
      @Override public void updateTimeout(java.time.Duration timeout) {}
      @Override public void updateHandler(Function<HttpRequest, HttpResponse> newHandler) {
        handler.set(newHandler);
      }
      @Override public void update(scala.concurrent.duration.Duration timeout,
          Function<HttpRequest, HttpResponse> newHandler) {
        handler.set(newHandler);
      }
      @Override public void update(java.time.Duration timeout,
          Function<HttpRequest, HttpResponse> newHandler) {
        handler.set(newHandler);
      }
    };
    HttpRequest request = HttpRequest.create("/v1/entities/A/a")
        .addHeader(org.apache.pekko.http.javadsl.model.headers.TimeoutAccess.create(access));
    new HttpEdge(settings("troupe.http.request-timeout-millis = 1234")).answerTimeoutAsJson(request);
    HttpResponse response = handler.get().apply(request);
    assertEquals(503, response.status().intValue());
    assertTrue(response.getHeader("Retry-After").isPresent());
    String body = new String(((HttpEntity.Strict) response.entity()).getData().toArray(),
        java.nio.charset.StandardCharsets.UTF_8);
    assertTrue(body.contains("\"error\":\"unavailable\""), body);
    assertTrue(body.contains("1234 ms"), body);
  }

  @Test
  void parserRefusalsMapOntoTheClosedSet() {
    assertEquals(ErrorCode.URI_TOO_LONG, JsonParsingErrorHandler.code(414, "URI too long"));
    assertEquals(ErrorCode.HEADERS_TOO_LARGE, JsonParsingErrorHandler.code(431, ""));
    assertEquals(ErrorCode.HEADERS_TOO_LARGE, JsonParsingErrorHandler.code(400,
        "HTTP message contains more than the configured limit of 64 headers"));
    assertEquals(ErrorCode.NOT_IMPLEMENTED, JsonParsingErrorHandler.code(501, ""));
    assertEquals(ErrorCode.TOO_LARGE, JsonParsingErrorHandler.code(413, ""));
    assertEquals(ErrorCode.REQUEST_TIMEOUT, JsonParsingErrorHandler.code(408, ""));
    assertEquals(ErrorCode.INVALID_REQUEST, JsonParsingErrorHandler.code(505, ""));
    assertEquals(ErrorCode.INVALID_REQUEST, JsonParsingErrorHandler.code(417, ""));
    assertEquals(ErrorCode.INVALID_REQUEST, JsonParsingErrorHandler.code(400, "Illegal URI"));
  }

  @Test
  void corsAllowsListedOriginsOrAny() {
    HttpSettings.CorsSettings listed =
        new HttpSettings.CorsSettings(List.of("https://a.example"), 60);
    assertEquals(Optional.of("https://a.example"), listed.allowOriginFor("https://a.example"));
    assertEquals(Optional.empty(), listed.allowOriginFor("https://a.example:8443"));
    assertEquals(Optional.empty(), listed.allowOriginFor("null"));
    HttpSettings.CorsSettings any = new HttpSettings.CorsSettings(List.of("*"), 60);
    assertEquals(Optional.of("*"), any.allowOriginFor("https://b.example"));
    HttpSettings.CorsSettings off = settings("").cors();
    assertTrue(!off.enabled());
    assertEquals(Optional.empty(), off.allowOriginFor("https://a.example"));
  }

  @Test
  void onlyLoopbackMayGoWithoutTokens() {
    assertEquals(Optional.empty(), settings("troupe.http.host = \"127.0.0.1\"").exposureProblem());
    assertEquals(Optional.empty(), settings("troupe.http.host = \"::1\"").exposureProblem());
    assertEquals(Optional.empty(), settings("troupe.http.host = localhost").exposureProblem());
    assertTrue(settings("troupe.http.host = \"0.0.0.0\"").exposureProblem().isPresent());
    assertTrue(settings("troupe.http.host = \"10.1.2.3\"").exposureProblem().isPresent());
    HttpSettings withToken = settings("troupe.http.host = \"0.0.0.0\"\n"
        + "troupe.http.auth.tokens = [{name = a, sha256 = \"" + Authorization.sha256Hex("s")
        + "\", scopes = [read]}]");
    assertEquals(Optional.empty(), withToken.exposureProblem());
    assertNotNull(withToken.tokens().get(0));
  }

  @Test
  void tlsNeedsBothPemFilesOrAKeystoreNotBoth() {
    assertTrue(!settings("").tls().enabled());
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> settings("troupe.http.tls.key-path = k.pem"));
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> settings("troupe.http.tls { certificate-path = c.pem, key-path = k.pem,"
            + " keystore-path = s.p12 }"));
    assertTrue(settings("troupe.http.tls { certificate-path = c.pem, key-path = k.pem }")
        .tls().enabled());
  }
}
