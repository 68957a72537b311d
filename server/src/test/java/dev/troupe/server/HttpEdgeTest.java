package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Requests that break HTTP itself, written byte by byte on raw sockets (no client library would
 * send them): each is refused with the right status and a JSON error from the closed set, changes
 * nothing, and leaves the server healthy. Also: HEAD answers like GET without a body, and slow
 * senders of headers and of bodies are cut off by the named timeouts.
 */
class HttpEdgeTest {
  private static final long IDLE_TIMEOUT_MILLIS = 2_000;
  private static final long BODY_READ_TIMEOUT_MILLIS = 1_500;

  @TempDir static Path data;
  static ServerProcess server;
  static String userBefore;

  @BeforeAll
  static void start() throws Exception {
    server = ServerProcess.start(data.resolve("node"),
        "troupe.http.idle-timeout-millis=" + IDLE_TIMEOUT_MILLIS,
        "troupe.http.body-read-timeout-millis=" + BODY_READ_TIMEOUT_MILLIS);
    assertEquals(200, server.send("PUT", "/v1/entities/User/x/keys/a", "1").status());
    userBefore = server.get("/v1/entities/User/x").text();
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
  }

  static Stream<Arguments> brokenRequests() {
    String tooLongTarget = "/v1/entities/User/" + "a".repeat(3_000);
    String manyHeaders = "";
    for (int i = 0; i < 80; i++) {
      manyHeaders += "X-Header-" + i + ": " + i + "\r\n";
    }
    return Stream.of(
        Arguments.of("too-long request target",
            "GET " + tooLongTarget + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
            414, "uri_too_long"),
        Arguments.of("malformed percent-encoding",
            "GET /v1/entities/User/%zz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
            400, "invalid_request"),
        Arguments.of("malformed request line",
            "GET /v1/health\r\nHost: t\r\nConnection: close\r\n\r\n",
            400, "invalid_request"),
        Arguments.of("unknown method",
            "FROB /v1/entities/User/x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
            501, "not_implemented"),
        Arguments.of("known method no route takes",
            "TRACE /v1/entities/User/x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
            405, "method_not_allowed"),
        Arguments.of("header value too long",
            "GET /v1/entities/User/x HTTP/1.1\r\nHost: t\r\nX-Big: " + "b".repeat(9_000)
                + "\r\nConnection: close\r\n\r\n",
            431, "headers_too_large"),
        Arguments.of("too many headers",
            "GET /v1/entities/User/x HTTP/1.1\r\nHost: t\r\n" + manyHeaders
                + "Connection: close\r\n\r\n",
            431, "headers_too_large"),
        Arguments.of("malformed chunked body",
            "PUT /v1/entities/User/x/keys/a HTTP/1.1\r\nHost: t\r\nContent-Type: application/json"
                + "\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n12\r\n0\r\n\r\n",
            400, "invalid_request"),
        Arguments.of("raw bytes outside URI syntax in the target",
            "GET /v1/entities/User/x\u00e9{} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
            400, "invalid_request"),
        Arguments.of("declared body past the limit",
            "PUT /v1/entities/User/x/keys/a HTTP/1.1\r\nHost: t\r\nContent-Type: application/json"
                + "\r\nContent-Length: 100000000\r\nConnection: close\r\n\r\n1",
            413, "too_large"),
        Arguments.of("two different Content-Length headers",
            "PUT /v1/entities/User/x/keys/a HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n"
                + "Content-Length: 2\r\nConnection: close\r\n\r\n12",
            400, "invalid_request"),
        Arguments.of("unsupported HTTP version",
            "GET /v1/health HTTP/3.7\r\nHost: t\r\nConnection: close\r\n\r\n",
            400, "invalid_request"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("brokenRequests")
  void isRefusedAsJsonAndChangesNothing(String description, String request, int status,
      String code) throws Exception {
    RawAnswer answer = exchange(request.getBytes(StandardCharsets.ISO_8859_1));
    assertEquals(status, answer.status, description + ": " + answer);
    assertJsonError(code, answer);
    if (status == 405) {
      assertEquals("GET, PATCH, DELETE, HEAD", answer.headers.get("allow"), answer.toString());
    }
    assertStillServing();
  }

  @Test
  void headAnswersLikeGetWithoutABody() throws Exception {
    for (String path : new String[] {"/v1/entities/User/x", "/v1/entities/User/absent",
        "/v1/types", "/v1/health"}) {
      RawAnswer get = exchange(("GET " + path + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
          .getBytes(StandardCharsets.US_ASCII));
      RawAnswer head = exchange(("HEAD " + path + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
          .getBytes(StandardCharsets.US_ASCII));
      assertEquals(get.status, head.status, path);
      assertEquals(get.headers.get("content-type"), head.headers.get("content-type"), path);
      assertEquals(get.headers.get("content-length"), head.headers.get("content-length"), path);
      assertTrue(get.body.length > 0, path);
      assertEquals(0, head.body.length, "HEAD has no body: " + head);
    }
  }

  @Test
  void corsIsOffByDefault() throws Exception {
    RawAnswer preflight = exchange(("OPTIONS /v1/entities/User/x HTTP/1.1\r\nHost: t\r\n"
        + "Origin: https://app.example.com\r\nAccess-Control-Request-Method: PUT\r\n"
        + "Connection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
    assertEquals(405, preflight.status, preflight.toString());
    assertJsonError("method_not_allowed", preflight);
    assertTrue(preflight.headers.keySet().stream().noneMatch(name -> name.startsWith("access-control-")),
        preflight.toString());
  }

  @Test
  void headersThatStopArrivingAreCutOffByTheIdleTimeout() throws Exception {
    try (Socket socket = new Socket("127.0.0.1", server.port())) {
      socket.setSoTimeout((int) (IDLE_TIMEOUT_MILLIS * 10));
      OutputStream out = socket.getOutputStream();
      out.write("GET /v1/health HTTP/1.1\r\nHost: t\r\nX-Slow: ".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      long started = System.nanoTime();
      // The server closes the connection (end of stream or reset) rather than wait for ever.
      boolean closed;
      try {
        closed = socket.getInputStream().readAllBytes().length >= 0;
      } catch (SocketTimeoutException stillOpen) {
        closed = false;
      } catch (IOException reset) {
        closed = true;
      }
      long waitedMillis = (System.nanoTime() - started) / 1_000_000;
      assertTrue(closed, "the server kept a connection with unfinished headers open");
      assertTrue(waitedMillis >= IDLE_TIMEOUT_MILLIS / 2,
          "closed after " + waitedMillis + " ms, before the idle timeout");
    }
    assertStillServing();
  }

  @Test
  void aBodyThatStopsArrivingIsARequestTimeout() throws Exception {
    try (Socket socket = new Socket("127.0.0.1", server.port())) {
      socket.setSoTimeout((int) (BODY_READ_TIMEOUT_MILLIS * 10));
      OutputStream out = socket.getOutputStream();
      out.write(("PUT /v1/entities/User/x/keys/a HTTP/1.1\r\nHost: t\r\nContent-Type:"
          + " application/json\r\nContent-Length: 10\r\n\r\n12").getBytes(StandardCharsets.US_ASCII));
      out.flush();
      RawAnswer answer = RawAnswer.read(socket.getInputStream());
      assertEquals(408, answer.status, answer.toString());
      assertJsonError("request_timeout", answer);
    }
    assertStillServing();
  }

  private static void assertJsonError(String code, RawAnswer answer) {
    assertTrue(answer.headers.getOrDefault("content-type", "").startsWith("application/json"),
        answer.toString());
    JsonNode body = Json.parse(answer.body);
    assertEquals(code, body.path("error").asText(), answer.toString());
    assertTrue(Arrays.stream(ErrorCode.values()).anyMatch(c -> c.wireName().equals(code)));
    assertFalse(body.path("message").asText("").isEmpty(), answer.toString());
    assertFalse(answer.toString().contains("Exception"), "no stack traces: " + answer);
  }

  /** The server still answers, and the entity the broken requests aimed at is unchanged. */
  private static void assertStillServing() throws Exception {
    assertEquals(200, server.get("/v1/health/live").status());
    assertEquals(userBefore, server.get("/v1/entities/User/x").text());
    assertTrue(server.isAlive());
    assertFalse(server.log().contains("unexpected failure"), "an error reached the log as a bug");
  }

  /** Writes {@code request} on a new connection and reads the one answer. */
  private static RawAnswer exchange(byte[] request) throws IOException {
    try (Socket socket = new Socket("127.0.0.1", server.port())) {
      socket.setSoTimeout(20_000);
      socket.getOutputStream().write(request);
      socket.getOutputStream().flush();
      return RawAnswer.read(socket.getInputStream());
    }
  }

  /** An HTTP/1.1 answer read off a socket: status, headers (lower-case names), body. */
  record RawAnswer(int status, Map<String, String> headers, byte[] body) {
    static RawAnswer read(InputStream in) throws IOException {
      ByteArrayOutputStream head = new ByteArrayOutputStream();
      int matched = 0;
      while (matched < 4) {
        int b = in.read();
        if (b < 0) {
          throw new IOException("connection closed before an answer: " + head);
        }
        head.write(b);
        matched = (b == "\r\n\r\n".charAt(matched)) ? matched + 1 : (b == '\r' ? 1 : 0);
      }
      String[] lines = head.toString(StandardCharsets.ISO_8859_1).split("\r\n");
      int status = Integer.parseInt(lines[0].split(" ")[1]);
      Map<String, String> headers = new LinkedHashMap<>();
      for (int i = 1; i < lines.length; i++) {
        int colon = lines[i].indexOf(':');
        if (colon > 0) {
          headers.put(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT),
              lines[i].substring(colon + 1).trim());
        }
      }
      int length = Integer.parseInt(headers.getOrDefault("content-length", "0"));
      byte[] body = in.readNBytes(length);
      return new RawAnswer(status, headers, body);
    }

    @Override
    public String toString() {
      return status + " " + headers + " " + new String(body, StandardCharsets.UTF_8);
    }
  }
}
