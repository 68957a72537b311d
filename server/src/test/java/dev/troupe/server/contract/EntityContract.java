package dev.troupe.server.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Json;
import dev.troupe.server.ServerProcess;
import dev.troupe.server.ServerProcess.Answer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The entity REST contract, run against every server that claims to speak it: a Troupe node
 * ({@link TroupeEntityContractTest}) and the PostgreSQL baseline ({@link
 * PostgresEntityContractTest}). The same requests must give the same observable results: status
 * codes, error codes, states and key values, and versions that grow with every write to an entity
 * (their values differ by design: Troupe's are commit timestamps, the baseline's a sequence).
 *
 * <p>The cases also run through the Java client ({@code client.JavaClientTest}'s nested {@code
 * EntityContractThroughTheClient}): public, with {@link #server()} and {@link #send} protected, for
 * that subclass in another package.
 *
 * <p>Each test works on entities of its own, so the order of tests does not matter.
 */
public abstract class EntityContract {
  /** The server under test, started once per concrete class. */
  protected abstract ServerProcess server();

  private String prefix;

  @org.junit.jupiter.api.BeforeEach
  void name(TestInfo test) {
    prefix = test.getTestMethod().orElseThrow().getName();
  }

  private String entity(String id) {
    return "/v1/entities/Contract/" + prefix + "-" + id;
  }

  /**
   * Sends one request of the contract. Over REST by default; a client's contract test overrides
   * it to make the request through the client.
   */
  protected Answer send(String method, String path, String body) throws Exception {
    return server().send(method, path, body);
  }

  private static long version(Answer answer) {
    assertEquals(200, answer.status(), answer.text());
    JsonNode version = answer.body().get("version");
    assertTrue(version != null && version.canConvertToLong(), answer.text());
    return version.asLong();
  }

  private static void assertError(int status, String code, Answer answer) {
    assertEquals(status, answer.status(), answer.text());
    assertEquals(code, answer.errorCode(), answer.text());
    assertFalse(answer.body().path("message").asText("").isEmpty(), answer.text());
  }

  @Test
  void missingEntityIsNotFound() throws Exception {
    assertError(404, "not_found", send("GET", entity("none"), null));
    assertError(404, "not_found", send("GET", entity("none") + "/keys/k", null));
  }

  @Test
  void patchCreatesAndMergesAtomically() throws Exception {
    Answer created = send("PATCH", entity("e"),
        "{\"name\":\"Ada\",\"age\":36,\"ratio\":1.5,\"ok\":true,\"tags\":[\"x\",\"y\"],"
            + "\"address\":{\"city\":\"Zürich\",\"zip\":8001}}");
    long first = version(created);
    JsonNode expected = Json.parse("{\"name\":\"Ada\",\"age\":36,\"ratio\":1.5,\"ok\":true,"
        + "\"tags\":[\"x\",\"y\"],\"address\":{\"city\":\"Zürich\",\"zip\":8001}}");
    assertEquals(expected, created.body().get("state"));

    Answer read = send("GET", entity("e"), null);
    assertEquals(200, read.status(), read.text());
    assertEquals("Contract", read.body().get("type").asText());
    assertEquals(prefix + "-e", read.body().get("id").asText());
    assertEquals(expected, read.body().get("state"));
    assertEquals(first, read.body().get("version").asLong());

    Answer merged = send("PATCH", entity("e"), "{\"age\":37,\"email\":\"ada@example.com\"}");
    long second = version(merged);
    assertTrue(second > first, "versions grow: " + first + " then " + second);
    ((com.fasterxml.jackson.databind.node.ObjectNode) expected).put("age", 37L)
        .put("email", "ada@example.com");
    assertEquals(expected, merged.body().get("state"));
    assertEquals(expected, send("GET", entity("e"), null).body().get("state"));
  }

  @Test
  void keysArePutReadAndDeleted() throws Exception {
    long put = version(send("PUT", entity("k") + "/keys/colour", "\"blue\""));
    Answer value = send("GET", entity("k") + "/keys/colour", null);
    assertEquals(200, value.status(), value.text());
    assertEquals(Json.parse("{\"value\":\"blue\"}"), value.body());

    long overwritten = version(send("PUT", entity("k") + "/keys/colour", "{\"r\":0,\"g\":0}"));
    assertTrue(overwritten > put);
    assertEquals(Json.parse("{\"r\":0,\"g\":0}"),
        send("GET", entity("k") + "/keys/colour", null).body().get("value"));
    version(send("PUT", entity("k") + "/keys/size", "42"));

    assertError(404, "not_found", send("GET", entity("k") + "/keys/missing", null));

    long deleted = version(send("DELETE", entity("k") + "/keys/colour", null));
    assertTrue(deleted > overwritten);
    assertError(404, "not_found", send("GET", entity("k") + "/keys/colour", null));
    Answer remaining = send("GET", entity("k"), null);
    assertEquals(Json.parse("{\"size\":42}"), remaining.body().get("state"), remaining.text());
    assertEquals(deleted, remaining.body().get("version").asLong());
  }

  @Test
  void deletingTheLastKeyLeavesAnEmptyEntity() throws Exception {
    version(send("PUT", entity("last") + "/keys/only", "1"));
    long deleted = version(send("DELETE", entity("last") + "/keys/only", null));
    Answer read = send("GET", entity("last"), null);
    assertEquals(200, read.status(), read.text());
    assertEquals(Json.parse("{}"), read.body().get("state"));
    assertEquals(deleted, read.body().get("version").asLong());
  }

  /**
   * A listing pages through a type in id order, skips deleted entities, starts a range at an id
   * ({@code from}) or after a cursor ({@code after}), carries versions and, when asked, states.
   * Against a cluster every request goes to the next member: each page is answered by a member
   * that did not write most of the entities it lists.
   */
  @Test
  void aTypeIsListedInIdOrderPageByPage() throws Exception {
    String type = "/v1/entities/ContractListing";
    java.util.Map<String, Long> versions = new java.util.TreeMap<>();
    for (String id : List.of("b", "a", "d", "c")) {
      versions.put(id, version(send("PUT", type + "/" + id + "/keys/n", "\"" + id + "\"")));
    }
    version(send("DELETE", type + "/c", null));
    Answer first = send("GET", type + "?limit=2", null);
    assertEquals(200, first.status(), first.text());
    assertEquals(Json.parse("{\"type\":\"ContractListing\",\"entities\":[{\"id\":\"a\",\"version\":"
        + versions.get("a") + "},{\"id\":\"b\",\"version\":" + versions.get("b")
        + "}],\"next\":\"b\"}"), first.body());
    Answer second = send("GET", type + "?limit=2&after=b&states=true", null);
    assertEquals(Json.parse("{\"type\":\"ContractListing\",\"entities\":[{\"id\":\"d\",\"version\":"
        + versions.get("d") + ",\"state\":{\"n\":\"d\"}}],\"next\":null}"), second.body());
    Answer range = send("GET", type + "?from=b&limit=1", null);
    assertEquals(200, range.status(), range.text());
    assertEquals("b", range.body().at("/entities/0/id").asText(), range.text());
    assertEquals("b", range.body().path("next").asText(), range.text());
    Answer none = send("GET", "/v1/entities/ContractNeverWritten", null);
    assertEquals(Json.parse("{\"type\":\"ContractNeverWritten\",\"entities\":[],\"next\":null}"),
        none.body());
    assertError(400, "invalid_request", send("GET", type + "?limit=0", null));
    assertError(400, "invalid_request", send("GET", type + "?after=a&from=b", null));
    assertError(400, "invalid_request", send("GET", type + "?states=yes", null));
  }

  @Test
  void deletedEntityIsGoneAndCanBeRecreated() throws Exception {
    long created = version(send("PATCH", entity("d"), "{\"a\":1,\"b\":2}"));
    long deleted = version(send("DELETE", entity("d"), null));
    assertTrue(deleted > created);
    assertError(404, "not_found", send("GET", entity("d"), null));
    assertError(404, "not_found", send("GET", entity("d") + "/keys/a", null));

    Answer recreated = send("PATCH", entity("d"), "{\"c\":3}");
    assertTrue(version(recreated) > deleted, "versions grow across deletion");
    assertEquals(Json.parse("{\"c\":3}"), recreated.body().get("state"));
  }

  @Test
  void deletingAMissingEntityIsNotFound() throws Exception {
    assertError(404, "not_found", send("DELETE", entity("never"), null));
    assertError(404, "not_found", send("GET", entity("never"), null));
    version(send("PATCH", entity("twice"), "{\"a\":1}"));
    version(send("DELETE", entity("twice"), null));
    assertError(404, "not_found", send("DELETE", entity("twice"), null));
  }

  @Test
  void badRequestsAreRefusedAndChangeNothing() throws Exception {
    long created = version(send("PATCH", entity("bad"), "{\"a\":1}"));
    assertError(400, "invalid_request", send("PATCH", entity("bad"), "[1,2]"));
    assertError(400, "invalid_request", send("PATCH", entity("bad"), "{}"));
    assertError(400, "invalid_request", send("PATCH", entity("bad"), "{\"a\":"));
    assertError(400, "invalid_request", send("PUT", entity("bad") + "/keys/a", "not json"));
    assertError(405, "method_not_allowed", send("POST", entity("bad"), "{\"a\":2}"));
    assertError(405, "method_not_allowed", send("PATCH", entity("bad") + "/keys/a", "2"));
    assertError(413, "too_large", send("PUT", entity("bad") + "/keys/a",
        "\"" + "x".repeat(70_000) + "\""));
    assertError(400, "invalid_request", send("PUT",
        "/v1/entities/Contract/" + "i".repeat(300) + "/keys/a", "1"));
    assertError(400, "invalid_request", send("PUT", "/v1/entities/$system/x/keys/a", "1"));
    // Keys starting with '$' are reserved for the server's own records, on every route.
    assertError(400, "invalid_request", send("PUT", entity("bad") + "/keys/%24a", "2"));
    assertError(400, "invalid_request", send("GET", entity("bad") + "/keys/%24a", null));
    assertError(400, "invalid_request", send("DELETE", entity("bad") + "/keys/%24a", null));
    assertError(400, "invalid_request", send("PATCH", entity("bad"), "{\"a\":2,\"$b\":3}"));
    assertError(404, "not_found", send("GET", "/v1/nothing-here", null));

    Answer read = send("GET", entity("bad"), null);
    assertEquals(Json.parse("{\"a\":1}"), read.body().get("state"));
    assertEquals(created, read.body().get("version").asLong(), "nothing changed");
  }

  /**
   * A projection ({@code ?key=K}, repeated; {@code ?state=none}) answers only the keys it names,
   * from one committed state, on a read and on a write's answer; a bad one is refused before
   * anything is written.
   */
  @Test
  void aProjectionAnswersOnlyTheKeysItNames() throws Exception {
    Answer patched = send("PATCH", entity("p") + "?key=b&key=missing",
        "{\"a\":1,\"b\":{\"x\":[2]},\"c,d\":3}");
    long written = version(patched);
    assertEquals(Json.parse("{\"b\":{\"x\":[2]}}"), patched.body().get("state"), patched.text());
    Answer read = send("GET", entity("p") + "?key=c%2Cd&key=a", null);
    assertEquals(200, read.status(), read.text());
    assertEquals(Json.parse("{\"c,d\":3,\"a\":1}"), read.body().get("state"), read.text());
    assertEquals(written, read.body().get("version").asLong());
    Answer none = send("GET", entity("p") + "?state=none", null);
    assertEquals(Json.parse("{}"), none.body().get("state"), none.text());
    assertEquals(written, none.body().get("version").asLong());

    String tooMany = "?key=k0" + java.util.stream.IntStream.range(1, 65)
        .mapToObj(index -> "&key=k" + index).collect(java.util.stream.Collectors.joining());
    assertError(400, "invalid_request", send("GET", entity("p") + tooMany, null));
    assertError(400, "invalid_request", send("GET", entity("p") + "?key=a&key=a", null));
    assertError(400, "invalid_request", send("GET", entity("p") + "?state=all", null));
    assertError(400, "invalid_request", send("PATCH", entity("p") + "?key=%24a", "{\"a\":2}"));
    assertError(400, "invalid_request", send("PATCH", entity("p") + "?key=", "{\"a\":2}"));
    assertError(404, "not_found", send("GET", entity("none") + "?key=a", null));
    Answer after = send("GET", entity("p"), null);
    assertEquals(written, after.body().get("version").asLong(), "nothing changed");
    assertEquals(Json.parse("{\"a\":1,\"b\":{\"x\":[2]},\"c,d\":3}"), after.body().get("state"));

    // A write asking for no state (what the YCSB binding sends) writes as any other and answers
    // its version and an empty state, nothing else.
    Answer lean = send("PATCH", entity("p") + "?state=none", "{\"a\":5}");
    assertTrue(version(lean) > written, lean.text());
    assertEquals(Json.parse("{\"version\":" + version(lean) + ",\"state\":{}}"), lean.body());
    Answer leanRead = send("GET", entity("p") + "?key=a", null);
    assertEquals(Json.parse("{\"a\":5}"), leanRead.body().get("state"), leanRead.text());
    assertEquals(version(lean), version(leanRead));
  }

  /** Concurrent writers of one entity: every acknowledged write is in the final state. */
  @Test
  void concurrentWritesToOneEntityAreAllKept() throws Exception {
    int writers = 8;
    int writesEach = 15;
    ExecutorService pool = Executors.newFixedThreadPool(writers);
    try {
      List<Future<List<Long>>> results = new ArrayList<>();
      for (int writer = 0; writer < writers; writer++) {
        int me = writer;
        results.add(pool.submit(() -> {
          List<Long> versions = new ArrayList<>();
          for (int write = 0; write < writesEach; write++) {
            versions.add(version(send("PATCH", entity("hot"),
                "{\"w" + me + "\":" + write + ",\"last\":" + me + "}")));
          }
          return versions;
        }));
      }
      List<Long> all = new ArrayList<>();
      for (Future<List<Long>> result : results) {
        List<Long> versions = result.get();
        for (int i = 1; i < versions.size(); i++) {
          assertTrue(versions.get(i) > versions.get(i - 1), "a writer's versions grow");
        }
        all.addAll(versions);
      }
      assertEquals(all.size(), all.stream().distinct().count(), "every write has its own version");
      Answer read = send("GET", entity("hot"), null);
      for (int writer = 0; writer < writers; writer++) {
        assertEquals(writesEach - 1, read.body().get("state").get("w" + writer).asInt(),
            read.text());
      }
      assertEquals(all.stream().mapToLong(Long::longValue).max().orElseThrow(),
          read.body().get("version").asLong(), "the read sees the newest write");
    } finally {
      pool.shutdownNow();
    }
  }
}
