package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Json;
import dev.troupe.server.ServerProcess.Answer;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The limits on values hold for what turns compute, against a real server with a small heap
 * (128 MiB): an action doubling a string, a comprehension building a string per iteration,
 * dependency functions, counters. Each refusal has the documented status, code and reason, changes
 * nothing (state and version as before), and leaves the server ready and alive; an unbounded
 * evaluation would have run this heap out of memory.
 */
class ComputedLimitsTest {
  private static final String NOTE_TYPE = """
      {"keys": {"text": {"kind": "register", "default": "ab"},
                "n": {"kind": "register", "default": 0},
                "hits": {"kind": "counter"}},
       "actions": {
         "double": {"effect": {"text": "text + text"}},
         "spam": {"params": {"l": "list"}, "effect": {"n": "l.map(i, text + text).size()"}},
         "divide": {"params": {"by": "int"}, "effect": {"n": "10 / by"}},
         "bump": {"params": {"by": "int"}, "effect": {"hits": "hits + by"}},
         "set": {"params": {"to": "string"}, "effect": {"text": "to"}}}}
      """;

  @TempDir static Path data;
  static ServerProcess server;

  @BeforeAll
  static void start() throws Exception {
    server = ServerProcess.startWithJvmOptions(
        List.of("-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"), data.resolve("node"));
    Answer declared = server.send("PUT", "/v1/types/Note", NOTE_TYPE);
    assertEquals(200, declared.status(), declared.text());
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
  }

  private static Answer act(String entity, String action, String args) throws Exception {
    return server.send("POST", "/v1/entities/" + entity + "/actions/" + action, args);
  }

  private static void assertRefused(Answer answer, int status, String code, String reason) {
    assertEquals(status, answer.status(), answer.text());
    assertEquals(code, answer.errorCode(), answer.text());
    assertEquals(reason, answer.body().path("reason").textValue(), answer.text());
    assertTrue(answer.body().path("message").isTextual(), answer.text());
  }

  private static String state(String entity) throws Exception {
    Answer answer = server.get("/v1/entities/" + entity);
    return answer.status() + " " + answer.text();
  }

  private static void assertHealthy() throws Exception {
    assertTrue(server.isAlive(), "the server is alive");
    Answer ready = server.get("/v1/health/ready");
    assertEquals(200, ready.status(), ready.text());
  }

  private static String transaction(String... ops) {
    return "{\"ops\": [" + String.join(", ", ops) + "]}";
  }

  @Test
  void anActionDoublingAStringIsRefusedAtTheLimitAndChangesNothing() throws Exception {
    Answer answer = null;
    int doublings = 0;
    // "ab" doubled 15 times is 65,536 characters: JSON of 65,538 bytes, past 65,536.
    while (doublings < 40) {
      String before = state("Note/d");
      answer = act("Note/d", "double", "{}");
      if (answer.status() != 200) {
        assertEquals(before, state("Note/d"), "the refused turn changed nothing");
        break;
      }
      doublings++;
    }
    assertEquals(14, doublings, "refused exactly when the value passes max-value-bytes");
    assertRefused(answer, 413, "too_large", null);
    JsonNode text = server.get("/v1/entities/Note/d/keys/text").body().get("value");
    assertEquals(2 << 14, text.textValue().length(), "the last value within the limit stays");
    // Refused again and again without growing anything.
    for (int i = 0; i < 5; i++) {
      assertRefused(act("Note/d", "double", "{}"), 413, "too_large", null);
    }
    assertHealthy();
  }

  @Test
  void aComprehensionBuildingAStringPerIterationStopsWithinItsBudget() throws Exception {
    assertEquals(200, act("Note/s", "set", "{\"to\": \"" + "s".repeat(30_000) + "\"}").status());
    String before = state("Note/s");
    // 10,000 strings of 60,000 characters: 1.2 GB of heap if evaluated in full.
    StringBuilder list = new StringBuilder("[1");
    for (int i = 1; i < 10_000; i++) {
      list.append(",1");
    }
    list.append(']');
    for (int attempt = 0; attempt < 3; attempt++) {
      assertRefused(act("Note/s", "spam", "{\"l\": " + list + "}"), 413, "too_large", null);
    }
    assertEquals(before, state("Note/s"));
    assertHealthy();
    String metrics = server.get("/metrics").text();
    double refusing = metrics.lines().filter(line -> line.startsWith("troupe_memory_refusing "))
        .mapToDouble(line -> Double.parseDouble(line.substring(line.indexOf(' ') + 1)))
        .findFirst().orElseThrow();
    assertEquals(0.0, refusing, "memory is not short after the refusals");
  }

  @Test
  void insideATransactionATooLargeValueAbortsItAndNothingChanges() throws Exception {
    assertEquals(200, act("Note/t1", "set", "{\"to\": \"" + "t".repeat(40_000) + "\"}").status());
    assertEquals(200, act("Note/t2", "set", "{\"to\": \"before\"}").status());
    String first = state("Note/t1");
    String second = state("Note/t2");
    Answer answer = server.send("POST", "/v1/transactions", transaction(
        "{\"entity\": \"Note/t2\", \"op\": \"assign\", \"key\": \"text\", \"value\": \"after\"}",
        "{\"entity\": \"Note/t1\", \"action\": \"double\", \"args\": {}}"));
    assertRefused(answer, 409, "aborted", "too_large");
    assertEquals(first, state("Note/t1"));
    assertEquals(second, state("Note/t2"));
    assertHealthy();
  }

  @Test
  void aFailingActionInsideATransactionAbortsWithItsReason() throws Exception {
    assertEquals(200, act("Note/f1", "set", "{\"to\": \"before\"}").status());
    String before = state("Note/f1");
    Answer answer = server.send("POST", "/v1/transactions", transaction(
        "{\"entity\": \"Note/f1\", \"action\": \"set\", \"args\": {\"to\": \"after\"}}",
        "{\"entity\": \"Note/f2\", \"action\": \"divide\", \"args\": {\"by\": 0}}"));
    assertRefused(answer, 409, "aborted", "evaluation_failed");
    assertEquals(before, state("Note/f1"));
    assertEquals(404, server.get("/v1/entities/Note/f2").status());
    // The same action alone is the client's invalid request, as documented.
    assertRefused(act("Note/f2", "divide", "{\"by\": 0}"), 400, "invalid_request", null);
  }

  @Test
  void aCounterOverflowIsRefusedNotWrapped() throws Exception {
    String path = "/v1/entities/Note/c/keys/hits/increment";
    assertEquals(200, server.send("POST", path, "{\"by\": 9223372036854775806}").status());
    String before = state("Note/c");
    assertRefused(server.send("POST", path, "{\"by\": 2}"), 400, "invalid_request", null);
    assertRefused(act("Note/c", "bump", "{\"by\": 2}"), 400, "invalid_request", null);
    assertRefused(server.send("POST", "/v1/transactions", transaction(
            "{\"entity\": \"Note/c\", \"op\": \"increment\", \"key\": \"hits\", \"by\": 2}")),
        409, "aborted", "evaluation_failed");
    assertRefused(server.send("POST", "/v1/transactions", transaction(
            "{\"entity\": \"Note/c\", \"action\": \"bump\", \"args\": {\"by\": 2}}")),
        409, "aborted", "evaluation_failed");
    assertEquals(before, state("Note/c"));
    assertEquals(9223372036854775806L,
        server.get("/v1/entities/Note/c/keys/hits").body().get("value").longValue());
  }

  @Test
  void numbersJsonCannotCarryAreRefusedAndNothingIsStored() throws Exception {
    assertRefused(server.send("PUT", "/v1/entities/Plain/n/keys/x", "1e400"), 400,
        "invalid_request", null);
    assertRefused(server.send("PATCH", "/v1/entities/Plain/n", "{\"x\": -1e400}"), 400,
        "invalid_request", null);
    assertRefused(server.send("PUT", "/v1/entities/Plain/n/keys/x", "123456789012345678901234"),
        400, "invalid_request", null);
    assertRefused(server.send("POST", "/v1/transactions", transaction(
            "{\"entity\": \"Plain/n\", \"op\": \"assign\", \"key\": \"x\", \"value\": 1e400}")),
        400, "invalid_request", null);
    assertEquals(404, server.get("/v1/entities/Plain/n").status());
    // The largest finite double is a number like any other.
    assertEquals(200,
        server.send("PUT", "/v1/entities/Plain/m/keys/x", "1.7976931348623157e308").status());
    assertEquals(1.7976931348623157e308,
        server.get("/v1/entities/Plain/m/keys/x").body().get("value").doubleValue());
  }

  private static void register(String function, String leader, String follower) throws Exception {
    String dependency = Json.write(Json.parse("{\"kind\": \"update\", \"function\": \""
        + function + "\", \"leader\": {\"entity\": \"" + leader + "\", \"key\": \"v\"},"
        + " \"follower\": {\"entity\": \"" + follower + "\", \"key\": \"v\"}}"));
    Answer answer = server.send("POST", "/v1/dependencies", dependency);
    assertEquals(201, answer.status(), answer.text());
  }

  @Test
  void aSumThatWouldOverflowIsRefusedAndNothingChanges() throws Exception {
    assertEquals(200, server.send("PUT", "/v1/entities/Part/a/keys/v", "1").status());
    assertEquals(200, server.send("PUT", "/v1/entities/Part/b/keys/v", "2").status());
    register("sum", "Part/a", "Total/t");
    register("sum", "Part/b", "Total/t");
    assertEquals(3, server.get("/v1/entities/Total/t/keys/v").body().get("value").longValue());
    String leader = state("Part/b");
    String total = state("Total/t");
    assertRefused(server.send("PUT", "/v1/entities/Part/b/keys/v", "9223372036854775807"), 400,
        "invalid_request", null);
    assertRefused(server.send("POST", "/v1/transactions", transaction(
            "{\"entity\": \"Part/b\", \"op\": \"assign\", \"key\": \"v\","
                + " \"value\": 9223372036854775807}")),
        409, "aborted", "evaluation_failed");
    assertEquals(leader, state("Part/b"));
    assertEquals(total, state("Total/t"));
    assertHealthy();
  }

  @Test
  void aCelDependencyFunctionProducingATooLargeValueIsRefused() throws Exception {
    assertEquals(200, server.send("PUT", "/v1/entities/Source/a/keys/v", "\"x\"").status());
    register("cel:new_value + new_value", "Source/a", "Copy/a");
    assertEquals("xx", server.get("/v1/entities/Copy/a/keys/v").body().get("value").textValue());
    String source = state("Source/a");
    String copy = state("Copy/a");
    String forty = "\"" + "y".repeat(40_000) + "\"";
    assertRefused(server.send("PUT", "/v1/entities/Source/a/keys/v", forty), 413, "too_large",
        null);
    assertRefused(server.send("POST", "/v1/transactions", transaction(
            "{\"entity\": \"Source/a\", \"op\": \"assign\", \"key\": \"v\", \"value\": " + forty
                + "}")),
        409, "aborted", "too_large");
    assertEquals(source, state("Source/a"));
    assertEquals(copy, state("Copy/a"));
    assertHealthy();
  }
  @Test
  void aSyncCallWhoseComputedArgumentOrEffectIsTooLargeIsRefusedAndChangesNothing()
      throws Exception {
    Answer declared = server.send("PUT", "/v1/types/Copier", """
        {"actions": {
           "grow": {"params": {"target": "string", "s": "string"},
                    "sync": [{"entity": "Note/{target}", "action": "set",
                              "args": {"to": "s + s + s"}}]},
           "twice": {"params": {"target": "string"},
                     "sync": [{"entity": "Note/{target}", "action": "double", "args": {}}]}}}
        """);
    assertEquals(200, declared.status(), declared.text());
    assertEquals(200, act("Note/y1", "set", "{\"to\": \"before\"}").status());
    assertEquals(200, act("Note/y2", "set", "{\"to\": \"" + "y".repeat(40_000) + "\"}").status());
    String first = state("Note/y1");
    String second = state("Note/y2");
    // The argument the sync call computes (90,000 characters) is past max-value-bytes.
    Answer grown = act("Copier/c", "grow",
        "{\"target\": \"y1\", \"s\": \"" + "z".repeat(30_000) + "\"}");
    assertTooLarge(grown);
    // The effect the called action computes (80,000 characters) is past it too.
    assertTooLarge(act("Copier/c", "twice", "{\"target\": \"y2\"}"));
    assertEquals(first, state("Note/y1"));
    assertEquals(second, state("Note/y2"));
    assertEquals(404, server.get("/v1/entities/Copier/c").status(), "the caller was not created");
    assertHealthy();
  }

  /** A too-large value computed inside a transaction: 413, or 409 aborted for that reason. */
  private static void assertTooLarge(Answer answer) {
    if (answer.status() == 413) {
      assertRefused(answer, 413, "too_large", null);
    } else {
      assertRefused(answer, 409, "aborted", "too_large");
    }
  }
}
