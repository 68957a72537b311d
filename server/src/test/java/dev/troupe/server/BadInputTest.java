package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.server.ServerProcess.Answer;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * Malformed requests get the documented status and error code as JSON, and change nothing: after
 * each one, the entities and types it aimed at are exactly as before (same state, same version).
 */
class BadInputTest {
  @TempDir static Path data;
  static ServerProcess server;
  static String accountBefore;
  static String userBefore;
  static String typesBefore;

  @BeforeAll
  static void start() throws Exception {
    server = ServerProcess.start(data.resolve("node"));
    assertEquals(200, server.send("PUT", "/v1/types/Account", RestEndToEndTest.ACCOUNT_YAML,
        "application/yaml").status());
    assertEquals(200, server.send("POST", "/v1/entities/Account/carol/actions/open",
        "{\"initial\": 50}").status());
    assertEquals(200, server.send("PUT", "/v1/entities/User/x/keys/a", "1").status());
    accountBefore = server.get("/v1/entities/Account/carol").text();
    userBefore = server.get("/v1/entities/User/x").text();
    typesBefore = server.get("/v1/types").text();
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
  }

  static Stream<Arguments> badRequests() {
    String account = "/v1/entities/Account/carol";
    String user = "/v1/entities/User/x";
    return Stream.of(
        Arguments.of("malformed JSON value", "PUT", user + "/keys/a", "{\"a\":", 400, "invalid_request"),
        Arguments.of("empty body for a value", "PUT", user + "/keys/a", "", 400, "invalid_request"),
        Arguments.of("patch that is not an object", "PATCH", user, "[1,2]", 400, "invalid_request"),
        Arguments.of("empty patch", "PATCH", user, "{}", 400, "invalid_request"),
        Arguments.of("patch of an undeclared key", "PATCH", account, "{\"nope\": 1}", 400, "invalid_request"),
        Arguments.of("patch mixing a good and a wrong-kind key", "PATCH", account,
            "{\"balance\": 1, \"logins\": 5}", 400, "invalid_request"),
        Arguments.of("increment of a register", "POST", account + "/keys/balance/increment",
            "{\"by\": 1}", 400, "invalid_request"),
        Arguments.of("increment by a string", "POST", account + "/keys/logins/increment",
            "{\"by\": \"x\"}", 400, "invalid_request"),
        Arguments.of("increment by a fraction", "POST", account + "/keys/logins/increment",
            "{\"by\": 1.5}", 400, "invalid_request"),
        Arguments.of("increment without by", "POST", account + "/keys/logins/increment",
            "{}", 400, "invalid_request"),
        Arguments.of("increment overflowing", "POST", account + "/keys/logins/increment",
            "{\"by\": 9223372036854775807}", 200, null),
        Arguments.of("add to a counter", "POST", account + "/keys/logins/add",
            "{\"element\": 1}", 400, "invalid_request"),
        Arguments.of("ill-typed parameter", "POST", account + "/actions/deposit",
            "{\"amount\": \"5\"}", 400, "invalid_request"),
        Arguments.of("unknown parameter", "POST", account + "/actions/deposit",
            "{\"amount\": 5, \"memo\": 1}", 400, "invalid_request"),
        Arguments.of("missing parameter", "POST", account + "/actions/deposit", "{}", 400, "invalid_request"),
        Arguments.of("parameters not an object", "POST", account + "/actions/deposit", "5", 400, "invalid_request"),
        Arguments.of("unknown action", "POST", account + "/actions/close", "{}", 404, "unknown_action"),
        Arguments.of("action on an undeclared type", "POST", user + "/actions/open", "{}", 404, "unknown_type"),
        Arguments.of("false precondition", "POST", account + "/actions/withdraw",
            "{\"amount\": 51}", 409, "precondition_failed"),
        Arguments.of("missing entity", "GET", "/v1/entities/User/nobody", null, 404, "not_found"),
        Arguments.of("delete of a missing entity", "DELETE", "/v1/entities/User/nobody", null, 404, "not_found"),
        Arguments.of("delete of a missing key", "DELETE", user + "/keys/zzz", null, 404, "not_found"),
        Arguments.of("unknown path", "GET", "/v1/nothing", null, 404, "not_found"),
        Arguments.of("wrong method", "POST", user, "{}", 405, "method_not_allowed"),
        Arguments.of("body over the limit", "PUT", user + "/keys/a",
            "\"" + "x".repeat(2 * 1024 * 1024) + "\"", 413, "too_large"),
        Arguments.of("value over the limit", "PUT", user + "/keys/a",
            "\"" + "x".repeat(70 * 1024) + "\"", 413, "too_large"),
        Arguments.of("number beyond a double's range", "PUT", user + "/keys/a", "1e400", 400,
            "invalid_request"),
        Arguments.of("integer beyond 64 bits", "PATCH", user, "{\"a\": 18446744073709551616}",
            400, "invalid_request"),
        Arguments.of("value nested past the limit", "PUT", user + "/keys/a",
            "[".repeat(65) + "]".repeat(65), 413, "too_large"),
        Arguments.of("id over the limit", "PUT", "/v1/entities/User/" + "i".repeat(300) + "/keys/a",
            "1", 400, "invalid_request"),
        Arguments.of("reserved type name", "PUT", "/v1/entities/$system/types/keys/a", "1", 400, "invalid_request"),
        Arguments.of("spec with a CEL error", "PUT", "/v1/types/Account",
            "{\"keys\": {\"balance\": {\"kind\": \"register\"}}, \"actions\": {\"a\": {\"pre\": [\"balance >\"]}}}",
            400, "invalid_request"),
        Arguments.of("spec with an unknown kind", "PUT", "/v1/types/Account",
            "{\"keys\": {\"balance\": {\"kind\": \"tensor\"}}}", 400, "invalid_request"),
        Arguments.of("spec that is not JSON", "PUT", "/v1/types/Account", "{keys", 400, "invalid_request"),
        Arguments.of("reserved spec name", "PUT", "/v1/types/$system", "{\"schemaless\": true}", 400, "invalid_request"),
        Arguments.of("version that is not a number", "GET", user + "?at=yesterday", null, 400, "invalid_request"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badRequests")
  void isRefusedWithAClearErrorAndChangesNothing(String description, String method, String path,
      String body, int status, String code) throws Exception {
    if (description.equals("increment overflowing")) {
      // First bring the counter to the maximum, then overflow it: the second must fail.
      Answer first = server.send(method, path, body);
      assertEquals(status, first.status(), first.text());
      Answer overflow = server.send(method, path, body);
      assertEquals(400, overflow.status(), overflow.text());
      assertEquals("invalid_request", overflow.errorCode());
      assertEquals(200, server.send(method, path, "{\"by\": -9223372036854775807}").status());
      accountBefore = server.get("/v1/entities/Account/carol").text();
      return;
    }
    Answer answer = server.send(method, path, body);
    assertEquals(status, answer.status(), description + ": " + answer.text());
    assertEquals(code, answer.errorCode(), answer.text());
    assertNotNull(answer.body().get("message"), "every error has a message");
    assertTrue(!answer.text().contains("Exception"), "no stack traces: " + answer.text());
    assertEquals(accountBefore, server.get("/v1/entities/Account/carol").text(), "Account changed");
    assertEquals(userBefore, server.get("/v1/entities/User/x").text(), "User changed");
    assertEquals(typesBefore, server.get("/v1/types").text(), "types changed");
    assertStillServing();
  }

  /** After a refusal the node is alive, ready, and its memory is not short. */
  private static void assertStillServing() throws Exception {
    assertTrue(server.isAlive(), "the server is alive");
    Answer ready = server.get("/v1/health/ready");
    assertEquals(200, ready.status(), ready.text());
    double refusing = server.get("/metrics").text().lines()
        .filter(line -> line.startsWith("troupe_memory_refusing "))
        .mapToDouble(line -> Double.parseDouble(line.substring(line.indexOf(' ') + 1)))
        .findFirst().orElseThrow();
    assertEquals(0.0, refusing, "memory is not short after the refusal");
  }
}
