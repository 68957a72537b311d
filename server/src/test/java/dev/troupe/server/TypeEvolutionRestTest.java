package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Json;
import dev.troupe.server.ServerProcess.Answer;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Type evolution through REST against a real server (docs/ARCHITECTURE.md, "Type evolution"):
 * redeclarations that would hide stored values are refused with 409 {@code incompatible_type}
 * naming each key and change nothing; compatible ones keep every stored value; {@code
 * ?migration=discard} deletes exactly the values the new declaration does not show, durably
 * (checked after a restart and after {@code kill -9}).
 */
class TypeEvolutionRestTest {
  @TempDir Path data;

  private static final String ACCOUNT = """
      {"keys": {"balance": {"kind": "register", "default": 0},
                "visits": {"kind": "counter"}}}""";

  private static String withBalanceCounter() {
    return ACCOUNT.replace("\"balance\": {\"kind\": \"register\", \"default\": 0}",
        "\"balance\": {\"kind\": \"counter\"}");
  }

  private static JsonNode state(ServerProcess server, String entity) throws Exception {
    Answer answer = server.get("/v1/entities/" + entity);
    assertEquals(200, answer.status(), answer.text());
    return answer.body().get("state");
  }

  private static void assertRefused(Answer answer, String... namedKeys) {
    assertEquals(409, answer.status(), answer.text());
    assertEquals("incompatible_type", answer.errorCode(), answer.text());
    for (String key : namedKeys) {
      assertTrue(answer.body().get("message").asText().contains("'" + key + "'"),
          key + " not named in " + answer.text());
    }
  }

  @Test
  void declaringOverSchemalessDataIsRefusedUnlessDiscarded() throws Exception {
    try (ServerProcess server = ServerProcess.start(data.resolve("node"))) {
      assertEquals(200, server.send("PATCH", "/v1/entities/Legacy/e1",
          "{\"name\": \"Ada\", \"count\": 5, \"note\": \"kept?\"}").status());
      String declared = """
          {"keys": {"name": {"kind": "register"}, "count": {"kind": "counter"}}}""";
      Answer refused = server.send("PUT", "/v1/types/Legacy", declared);
      assertRefused(refused, "count", "note");
      assertTrue(refused.body().get("message").asText().contains("key 'count' stores register"
          + " values but is declared of kind counter"), refused.text());
      // Nothing changed: still schemaless, every value readable.
      assertEquals(404, server.get("/v1/types/Legacy").status());
      assertEquals(Json.parse("{\"count\": 5, \"name\": \"Ada\", \"note\": \"kept?\"}"),
          state(server, "Legacy/e1"));
      // Declaring what the entities hold is compatible.
      String matching = """
          {"keys": {"name": {"kind": "register"}, "count": {"kind": "register"},
                    "note": {"kind": "register"}, "added": {"kind": "set"}}}""";
      assertEquals(200, server.send("PUT", "/v1/types/Legacy", matching).status());
      assertEquals(Json.parse("{\"name\": \"Ada\", \"count\": 5, \"note\": \"kept?\","
          + " \"added\": []}"), state(server, "Legacy/e1"));
      // The discard migration: count's register and note are deleted, name is kept.
      Answer discarded = server.send("PUT", "/v1/types/Legacy?migration=discard", declared);
      assertEquals(200, discarded.status(), discarded.text());
      assertEquals(Json.parse("{\"name\": \"Ada\", \"count\": 0}"), state(server, "Legacy/e1"));
    }
  }

  @Test
  void redeclaringADeclaredTypeKeepsEveryStoredValueOrSaysWhy() throws Exception {
    Path node = data.resolve("node");
    try (ServerProcess server = ServerProcess.start(node)) {
      assertEquals(200, server.send("PUT", "/v1/types/Account", ACCOUNT).status());
      assertEquals(200, server.send("PUT", "/v1/entities/Account/a1/keys/balance", "10")
          .status());
      assertEquals(200, server.send("POST", "/v1/entities/Account/a1/keys/visits/increment",
          "{\"by\": 2}").status());
      JsonNode before = Json.parse("{\"balance\": 10, \"visits\": 2}");
      JsonNode declared = server.get("/v1/types/Account").body();

      // A key's kind changed: refused, data intact, declaration unchanged.
      assertRefused(server.send("PUT", "/v1/types/Account", withBalanceCounter()), "balance");
      assertEquals(before, state(server, "Account/a1"));
      assertEquals(declared, server.get("/v1/types/Account").body());

      // A key with data removed: refused.
      assertRefused(server.send("PUT", "/v1/types/Account",
          "{\"keys\": {\"balance\": {\"kind\": \"register\", \"default\": 0}}}"), "visits");
      // A plain key turned into a family: refused.
      assertRefused(server.send("PUT", "/v1/types/Account", ACCOUNT.replace(
          "\"visits\": {\"kind\": \"counter\"}",
          "\"visits\": {\"kind\": \"counter\", \"family\": true}")), "visits");
      assertEquals(before, state(server, "Account/a1"));

      // An unknown migration is a bad request and changes nothing.
      Answer unknown = server.send("PUT", "/v1/types/Account?migration=convert",
          withBalanceCounter());
      assertEquals(400, unknown.status(), unknown.text());
      assertEquals("invalid_request", unknown.errorCode());
      assertEquals(declared, server.get("/v1/types/Account").body());

      // A key added: accepted, old data intact, the new key shows its default.
      String withNote = ACCOUNT.replace("\"visits\"",
          "\"note\": {\"kind\": \"register\", \"default\": \"none\"}, \"visits\"");
      assertEquals(200, server.send("PUT", "/v1/types/Account", withNote).status());
      assertEquals(Json.parse("{\"balance\": 10, \"note\": \"none\", \"visits\": 2}"),
          state(server, "Account/a1"));

      // The kind change with ?migration=discard: the register value is deleted, so balance reads
      // as the counter's default; the others are kept.
      String counterWithNote = withNote.replace(
          "\"balance\": {\"kind\": \"register\", \"default\": 0}",
          "\"balance\": {\"kind\": \"counter\"}");
      Answer migrated = server.send("PUT", "/v1/types/Account?migration=discard",
          counterWithNote);
      assertEquals(200, migrated.status(), migrated.text());
      assertEquals(Json.parse("{\"balance\": 0, \"note\": \"none\", \"visits\": 2}"),
          state(server, "Account/a1"));
      assertEquals(200, server.send("POST", "/v1/entities/Account/a1/keys/balance/increment",
          "{\"by\": 4}").status());
    }
    // Durable: after a clean restart the new declaration and the migrated state are there.
    try (ServerProcess server = ServerProcess.start(node)) {
      assertEquals("counter",
          server.get("/v1/types/Account").body().at("/keys/balance/kind").asText());
      assertEquals(Json.parse("{\"balance\": 4, \"note\": \"none\", \"visits\": 2}"),
          state(server, "Account/a1"));
      // Declaring balance a register again would hide the counter: refused. With discard the
      // counter goes, and the old register value (10) does not come back: it was deleted.
      assertRefused(server.send("PUT", "/v1/types/Account", ACCOUNT), "balance");
      assertEquals(200, server.send("PUT", "/v1/types/Account?migration=discard", ACCOUNT)
          .status());
      server.kill();
    }
    // And after kill -9.
    try (ServerProcess server = ServerProcess.start(node)) {
      assertEquals(Json.parse("{\"balance\": 0, \"visits\": 2}"), state(server, "Account/a1"));
    }
  }
}
