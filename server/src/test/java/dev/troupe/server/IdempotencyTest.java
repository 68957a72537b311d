package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Json;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code Idempotency-Key} against real server JVMs: a retry answers the first attempt's answer and
 * changes nothing again, for every kind of write, also after the process died between the commit
 * and the answer ({@code troupe.idempotency.testing.halt-after-commit} halts it exactly there, as
 * {@code kill -9} would); a key reused for another request is refused; keys expire.
 */
class IdempotencyTest {
  private static final String ACCOUNT = "/v1/entities/Account/";
  private static final String HALT = "troupe.idempotency.testing.halt-after-commit=true";
  private static final String MIRROR_DEPENDENCY = """
      {"kind": "update", "function": "replicate",
       "leader": {"entity": "Account/a", "key": "status"},
       "follower": {"entity": "Mirror/a", "key": "status"}}""";

  @TempDir Path data;

  /** One answer: status, raw body, whether it says it is a replay, its Location (or ""). */
  private record Reply(int status, String body, boolean replayed, String location) {
    JsonNode json() {
      return Json.parse(body);
    }
  }

  private static Reply send(ServerProcess server, String method, String path, String body,
      String key) throws IOException, InterruptedException {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(server.baseUrl() + path))
        .timeout(Duration.ofSeconds(60))
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body));
    if (body != null) {
      request.header("Content-Type", "application/json");
    }
    if (key != null) {
      request.header("Idempotency-Key", key);
    }
    HttpResponse<String> response =
        ServerProcess.client().send(request.build(), HttpResponse.BodyHandlers.ofString());
    Optional<String> replayed = response.headers().firstValue("Idempotent-Replayed");
    return new Reply(response.statusCode(), response.body(),
        replayed.map("true"::equals).orElse(false),
        response.headers().firstValue("Location").orElse(""));
  }

  /** Sends the request with {@code key} three times: one run, two identical replays. */
  private static Reply onceAndTwoReplays(ServerProcess server, String method, String path,
      String body, String key) throws Exception {
    Reply first = send(server, method, path, body, key);
    assertFalse(first.replayed(), first.toString());
    assertTrue(first.status() < 300, first.toString());
    for (int retry = 0; retry < 2; retry++) {
      Reply again = send(server, method, path, body, key);
      assertTrue(again.replayed(), again.toString());
      assertEquals(first.status(), again.status());
      assertEquals(first.body(), again.body());
    }
    return first;
  }

  private static void defineAccount(ServerProcess server) throws Exception {
    assertEquals(200, server.send("PUT", "/v1/types/Account", RestEndToEndTest.ACCOUNT_YAML,
        "application/yaml").status());
  }

  private static JsonNode state(ServerProcess server, String entity) throws Exception {
    return server.get("/v1/entities/" + entity).body().path("state");
  }

  @Test
  void everyKindOfWriteRetriedAnswersTheSameAndAppliesOnce() throws Exception {
    try (ServerProcess server = ServerProcess.start(data.resolve("node"))) {
      defineAccount(server);
      onceAndTwoReplays(server, "POST", ACCOUNT + "a/actions/open", "{\"initial\": 100}", "open-a");
      onceAndTwoReplays(server, "POST", ACCOUNT + "b/actions/open", "{\"initial\": 100}", "open-b");
      onceAndTwoReplays(server, "POST", ACCOUNT + "a/actions/deposit", "{\"amount\": 5}", "dep");
      assertEquals(105, state(server, "Account/a").path("balance").asLong());

      onceAndTwoReplays(server, "POST", ACCOUNT + "a/keys/logins/increment", "{\"by\": 1}", "inc");
      assertEquals(1, state(server, "Account/a").path("logins").asLong(), "incremented once");
      onceAndTwoReplays(server, "POST", ACCOUNT + "a/keys/tags/add", "{\"element\": \"x\"}", "add");
      onceAndTwoReplays(server, "POST", ACCOUNT + "a/keys/tags/remove", "{\"element\": \"x\"}",
          "remove");
      onceAndTwoReplays(server, "POST", ACCOUNT + "a/keys/tags/add", "{\"element\": \"y\"}",
          "add2");
      onceAndTwoReplays(server, "PATCH", ACCOUNT + "a", "{\"status\": \"vip\"}", "patch");
      onceAndTwoReplays(server, "PUT", ACCOUNT + "a/keys/status", "\"open\"", "put");
      assertEquals(200, server.send("PUT", ACCOUNT + "c/keys/status", "\"gone\"").status());
      onceAndTwoReplays(server, "DELETE", ACCOUNT + "c/keys/status", null, "delete-key");
      JsonNode a = state(server, "Account/a");
      assertEquals("open", a.path("status").asText());
      assertEquals(List.of("y"), Json.MAPPER.convertValue(a.path("tags"), List.class));

      // A static transaction retried: the transfer moves money once.
      String transfer = """
          {"ops": [{"entity": "Account/a", "action": "withdraw", "args": {"amount": 10}},
                   {"entity": "Account/b", "action": "deposit", "args": {"amount": 10}}]}""";
      Reply committed = onceAndTwoReplays(server, "POST", "/v1/transactions", transfer, "tx");
      assertTrue(committed.json().path("txId").asLong() > 0);
      assertEquals(95, state(server, "Account/a").path("balance").asLong());
      assertEquals(110, state(server, "Account/b").path("balance").asLong());

      // An interactive transaction's commit retried.
      long txId = server.send("POST", "/v1/transactions/begin", null).body().path("txId").asLong();
      assertEquals(200, server.send("POST", "/v1/transactions/" + txId + "/action",
          "{\"entity\": \"Account/b\", \"action\": \"deposit\", \"args\": {\"amount\": 1}}")
          .status());
      onceAndTwoReplays(server, "POST", "/v1/transactions/" + txId + "/commit", null, "commit");
      assertEquals(111, state(server, "Account/b").path("balance").asLong());

      // A dependency registered and deregistered, each retried.
      String dependency = DependencyRestTest.replicate("Account/b", "balance", "Account/d",
          "balance");
      Reply registered = onceAndTwoReplays(server, "POST", "/v1/dependencies", dependency, "reg");
      assertEquals(201, registered.status());
      String id = registered.json().path("id").asText();
      assertEquals(111, state(server, "Account/d").path("balance").asLong());
      onceAndTwoReplays(server, "DELETE", "/v1/dependencies/" + id, null, "dereg");
      assertEquals(404, server.get("/v1/dependencies/" + id).status());

      // The entity deleted, retried: the replay does not delete it again after a re-creation.
      onceAndTwoReplays(server, "DELETE", ACCOUNT + "c", null, "delete");
      assertEquals(200, server.send("PUT", ACCOUNT + "c/keys/status", "\"back\"").status());
      assertTrue(send(server, "DELETE", ACCOUNT + "c", null, "delete").replayed());
      assertEquals("back", state(server, "Account/c").path("status").asText());

      // Without the header a write runs every time.
      server.send("POST", ACCOUNT + "a/keys/logins/increment", "{\"by\": 1}");
      server.send("POST", ACCOUNT + "a/keys/logins/increment", "{\"by\": 1}");
      assertEquals(3, state(server, "Account/a").path("logins").asLong());
    }
  }

  @Test
  void aKeyReusedForAnotherRequestIsRefusedAndChangesNothing() throws Exception {
    try (ServerProcess server = ServerProcess.start(data.resolve("node"))) {
      defineAccount(server);
      String path = ACCOUNT + "a/keys/logins/increment";
      Reply first = send(server, "POST", path, "{\"by\": 1}", "k1");
      assertEquals(200, first.status());
      Reply otherBody = send(server, "POST", path, "{\"by\": 7}", "k1");
      assertEquals(422, otherBody.status(), otherBody.body());
      assertEquals("idempotency_key_reused", otherBody.json().path("error").asText());
      Reply otherPath = send(server, "POST", ACCOUNT + "b/keys/logins/increment", "{\"by\": 1}",
          "k1");
      assertEquals(422, otherPath.status(), otherPath.body());
      Reply otherMethod = send(server, "PUT", ACCOUNT + "a/keys/logins", "1", "k1");
      assertEquals(422, otherMethod.status(), otherMethod.body());
      assertEquals(1, state(server, "Account/a").path("logins").asLong());
      assertEquals(404, server.get("/v1/entities/Account/b").status());

      // A refusal that changed nothing is not remembered: its retry runs again.
      Reply refused = send(server, "POST", ACCOUNT + "a/actions/deposit", "{\"amount\": 5}", "k2");
      assertEquals(409, refused.status(), refused.body()); // status is 'new': precondition
      assertEquals(200, send(server, "POST", ACCOUNT + "a/actions/open", "{\"initial\": 1}",
          "k3").status());
      Reply retried = send(server, "POST", ACCOUNT + "a/actions/deposit", "{\"amount\": 5}", "k2");
      assertEquals(200, retried.status(), retried.body());
      assertFalse(retried.replayed());
      assertEquals(6, state(server, "Account/a").path("balance").asLong());
    }
  }

  @Test
  void badKeysAreRefusedAndChangeNothing() throws Exception {
    try (ServerProcess server = ServerProcess.start(data.resolve("node"))) {
      defineAccount(server);
      String path = ACCOUNT + "a/keys/logins/increment";
      for (String key : List.of("has space", "x".repeat(256), "quote\"d\u007f")) {
        Reply refused;
        try {
          refused = send(server, "POST", path, "{\"by\": 1}", key);
        } catch (IllegalArgumentException clientRefused) {
          continue; // the client itself refuses some values (control characters)
        }
        assertEquals(400, refused.status(), key + ": " + refused.body());
        assertEquals("invalid_request", refused.json().path("error").asText());
      }
      assertEquals(404, server.get("/v1/entities/Account/a").status());
      assertEquals(200, send(server, "POST", path, "{\"by\": 1}", "x".repeat(255)).status());
    }
  }

  @Test
  void aRetryAfterACrashBetweenCommitAndAnswerGetsTheFirstAnswer() throws Exception {
    Path directory = data.resolve("node");
    try (ServerProcess server = ServerProcess.start(directory)) {
      defineAccount(server);
      for (String account : List.of("a", "b")) {
        assertEquals(200, server.send("POST", ACCOUNT + account + "/actions/open",
            "{\"initial\": 100}").status());
      }
    }
    String increment = ACCOUNT + "a/keys/logins/increment";
    String deposit = ACCOUNT + "a/actions/deposit";
    String transfer = """
        {"ops": [{"entity": "Account/a", "action": "withdraw", "args": {"amount": 10}},
                 {"entity": "Account/b", "action": "deposit", "args": {"amount": 10}}]}""";
    List<String[]> writes = List.of(
        new String[] {"POST", increment, "{\"by\": 1}", "crash-increment"},
        new String[] {"POST", deposit, "{\"amount\": 5}", "crash-deposit"},
        new String[] {"POST", "/v1/transactions", transfer, "crash-transfer"},
        new String[] {"PUT", ACCOUNT + "a/keys/status", "\"frozen\"", "crash-put"},
        new String[] {"POST", "/v1/dependencies", MIRROR_DEPENDENCY, "crash-register"});
    for (String[] write : writes) {
      try (ServerProcess halting = ServerProcess.start(directory, HALT)) {
        try {
          fail("the process must die before answering, but answered "
              + send(halting, write[0], write[1], write[2], write[3]));
        } catch (IOException expected) {
          // the connection closed without an answer
        }
        assertEquals(99, halting.awaitExit(30), "halted after the commit");
      }
    }
    try (ServerProcess server = ServerProcess.start(directory)) {
      Reply replayedIncrement = send(server, "POST", increment, "{\"by\": 1}", "crash-increment");
      assertEquals(200, replayedIncrement.status(), replayedIncrement.body());
      assertTrue(replayedIncrement.replayed());
      long incrementVersion = replayedIncrement.json().path("version").asLong();
      assertEquals(1, replayedIncrement.json().path("state").path("logins").asLong());

      Reply replayedDeposit = send(server, "POST", deposit, "{\"amount\": 5}", "crash-deposit");
      assertTrue(replayedDeposit.replayed());
      assertEquals(105, replayedDeposit.json().path("state").path("balance").asLong(),
          "the state the deposit produced, not the current one");
      long depositVersion = replayedDeposit.json().path("version").asLong();
      assertTrue(depositVersion > incrementVersion);
      assertEquals(server.get("/v1/entities/Account/a?at=" + depositVersion).body().path("state"),
          replayedDeposit.json().path("state"));

      Reply replayedPut = send(server, "PUT", ACCOUNT + "a/keys/status", "\"frozen\"",
          "crash-put");
      assertTrue(replayedPut.replayed());
      assertEquals(List.of("version"), fieldNames(replayedPut.json()));

      Reply replayedTransfer = send(server, "POST", "/v1/transactions", transfer,
          "crash-transfer");
      assertEquals(200, replayedTransfer.status(), replayedTransfer.body());
      assertTrue(replayedTransfer.replayed());
      assertTrue(replayedTransfer.json().path("committed").asBoolean());
      assertTrue(replayedTransfer.json().path("txId").asLong() > 0);

      Reply replayedRegistration = send(server, "POST", "/v1/dependencies", MIRROR_DEPENDENCY,
          "crash-register");
      assertEquals(201, replayedRegistration.status(), replayedRegistration.body());
      assertTrue(replayedRegistration.replayed());
      String dependencyId = replayedRegistration.json().path("id").asText();
      assertEquals("/v1/dependencies/" + dependencyId, replayedRegistration.location());
      assertEquals(200, server.get("/v1/dependencies/" + dependencyId).status());

      // The answers rebuilt from records are the ones the API contract documents.
      OpenApiDocument contract = OpenApiDocument.load();
      for (Reply rebuilt : List.of(replayedPut, replayedTransfer, replayedRegistration)) {
        assertEquals(List.of(), contract.validate("/components/schemas/RebuiltAnswer",
            rebuilt.body()));
      }

      // Applied exactly once each, and the rebuilt answers are now stored: identical replays.
      JsonNode a = state(server, "Account/a");
      assertEquals(1, a.path("logins").asLong());
      assertEquals(95, a.path("balance").asLong());
      assertEquals("frozen", a.path("status").asText());
      assertEquals(110, state(server, "Account/b").path("balance").asLong());
      assertEquals(replayedDeposit, send(server, "POST", deposit, "{\"amount\": 5}",
          "crash-deposit"));
      assertEquals(replayedTransfer, send(server, "POST", "/v1/transactions", transfer,
          "crash-transfer"));
    }
  }

  @Test
  void anAnswerSurvivesARestartAndKeysExpireAfterTheRetentionWindow() throws Exception {
    Path directory = data.resolve("node");
    String path = ACCOUNT + "a/keys/logins/increment";
    Reply first;
    try (ServerProcess server = ServerProcess.start(directory)) {
      defineAccount(server);
      first = send(server, "POST", path, "{\"by\": 1}", "kept");
      assertEquals(200, first.status());
    }
    try (ServerProcess server = ServerProcess.start(directory)) {
      Reply replay = send(server, "POST", path, "{\"by\": 1}", "kept");
      assertTrue(replay.replayed(), "remembered across a restart");
      assertEquals(first.body(), replay.body());
    }
    try (ServerProcess server = ServerProcess.start(directory,
        "troupe.idempotency.retention-millis=1500",
        "troupe.idempotency.prune-interval-millis=100")) {
      Reply fresh = send(server, "POST", path, "{\"by\": 1}", "short");
      assertEquals(200, fresh.status());
      assertTrue(send(server, "POST", path, "{\"by\": 1}", "short").replayed());
      Thread.sleep(2_000);
      // Expired: the key runs again, even for another request.
      Reply again = send(server, "POST", path, "{\"by\": 5}", "short");
      assertEquals(200, again.status(), again.body());
      assertFalse(again.replayed());
      Reply kept = send(server, "POST", path, "{\"by\": 1}", "kept");
      assertFalse(kept.replayed(), "expired under the shorter window");
      assertEquals(8, state(server, "Account/a").path("logins").asLong());
    }
  }

  private static List<String> fieldNames(JsonNode node) {
    List<String> names = new java.util.ArrayList<>();
    node.fieldNames().forEachRemaining(names::add);
    return names;
  }
}
