package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.Json;
import dev.troupe.server.ServerProcess.Answer;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
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
 * Declared dependencies through REST against a real server: registration ({@code POST
 * /v1/dependencies} and the {@code registerDependency} transaction op, all or nothing with the
 * other ops), forwarding of a leader's writes in the same transaction, listings in both
 * directions, deregistration, delete cascades, aggregates, and a table of bad requests that are
 * refused with the documented status and error code and change nothing.
 */
class DependencyRestTest {
  /** A declared follower type: a register that may follow, a counter that may not. */
  static final String SELLER_YAML = """
      type: Seller
      keys:
        total:  {kind: register, default: 0}
        orders: {kind: counter}
      """;
  static final int MAX_CHAIN = 3;
  static final int MAX_PER_KEY = 4;

  @TempDir static Path data;
  static ServerProcess server;

  /** The entities the bad requests aim at, and what they were before any of them. */
  static final List<String> FIXTURES = List.of("Product/p1", "Cart/c1", "Seller/s1", "A/a", "B/b",
      "C/c", "D/d", "E/e", "G/g", "H/h", "Fan/f", "Z/z");
  static final Map<String, String> before = new LinkedHashMap<>();

  @BeforeAll
  static void start() throws Exception {
    server = ServerProcess.start(data.resolve("node"),
        "troupe.dependencies.max-chain-length=" + MAX_CHAIN,
        "troupe.dependencies.max-per-key=" + MAX_PER_KEY);
    for (String yaml : List.of(SELLER_YAML)) {
      String type = yaml.lines().findFirst().orElseThrow().substring("type: ".length());
      Answer defined = server.send("PUT", "/v1/types/" + type, yaml, "application/yaml");
      assertEquals(200, defined.status(), defined.text());
    }
    // The fixtures of the bad-request table.
    put("Product/p1", "price", "10");
    put("Cart/c1", "owner", "\"ada\"");
    put("Seller/s1", "total", "0");
    put("Z/z", "v", "1");
    for (String entity : List.of("A/a", "B/b", "C/c", "D/d", "E/e", "G/g", "H/h", "Fan/f")) {
      put(entity, "v", "1");
    }
    registered(replicate("Product/p1", "price", "Cart/c1", "item:p1:price"));
    // A chain as long as allowed: A -> B -> C -> D.
    registered(replicate("A/a", "v", "B/b", "v"));
    registered(replicate("B/b", "v", "C/c", "v"));
    registered(replicate("C/c", "v", "D/d", "v"));
    // A short chain to close a cycle on: G -> H.
    registered(replicate("G/g", "v", "H/h", "v"));
    // A key leading as many dependencies as allowed.
    for (int i = 0; i < MAX_PER_KEY; i++) {
      registered(dependency("delete", null, "Fan/f", "v", "Fan/follower" + i, "v"));
    }
    for (String entity : FIXTURES) {
      before.put(entity, snapshot(entity));
    }
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
  }

  // ------------------------------------------------------------------------------- helpers

  static String dependency(String kind, String function, String leader, String leaderKey,
      String follower, String followerKey) {
    ObjectNode json = Json.NODES.objectNode();
    json.put("kind", kind);
    json.putObject("leader").put("entity", leader).put("key", leaderKey);
    json.putObject("follower").put("entity", follower).put("key", followerKey);
    if (function != null) {
      json.put("function", function);
    }
    return Json.write(json);
  }

  static String replicate(String leader, String leaderKey, String follower, String followerKey) {
    return dependency("update", "replicate", leader, leaderKey, follower, followerKey);
  }

  /** The id Troupe derives for a dependency (as it answers on registration). */
  static String idOf(String kind, String leader, String leaderKey, String follower,
      String followerKey) {
    String[] ends = (leader + "/" + follower).split("/");
    return encodeId("[\"" + kind + "\",\"" + ends[0] + "\",\"" + ends[1] + "\",\"" + leaderKey
        + "\",\"" + ends[2] + "\",\"" + ends[3] + "\",\"" + followerKey + "\"]");
  }

  static String encodeId(String json) {
    return Base64.getUrlEncoder().withoutPadding()
        .encodeToString(json.getBytes(StandardCharsets.UTF_8));
  }

  static void put(String entity, String key, String value) throws Exception {
    Answer answer = server.send("PUT", "/v1/entities/" + entity + "/keys/" + key, value);
    assertEquals(200, answer.status(), answer.text());
  }

  static JsonNode registered(String dependency) throws Exception {
    Answer answer = server.send("POST", "/v1/dependencies", dependency);
    assertEquals(201, answer.status(), answer.text());
    return answer.body();
  }

  static JsonNode value(String entity, String key) throws Exception {
    Answer answer = server.get("/v1/entities/" + entity + "/keys/" + key);
    return answer.status() == 404 ? null : answer.body().get("value");
  }

  static JsonNode dependencies(String entity) throws Exception {
    Answer answer = server.get("/v1/entities/" + entity + "/dependencies");
    assertEquals(200, answer.status(), answer.text());
    return answer.body();
  }

  /** An entity's state and its dependency listing, as text (a 404 is part of the text). */
  static String snapshot(String entity) throws Exception {
    Answer state = server.get("/v1/entities/" + entity);
    Answer listing = server.get("/v1/entities/" + entity + "/dependencies");
    return state.status() + " " + state.text() + "\n" + listing.status() + " " + listing.text();
  }

  static String transaction(String... ops) {
    return "{\"ops\": [" + String.join(", ", ops) + "]}";
  }

  static String registerOp(String dependency) {
    return "{\"op\": \"registerDependency\", \"dependency\": " + dependency + "}";
  }

  static String assignOp(String entity, String key, String value) {
    return "{\"entity\": \"" + entity + "\", \"op\": \"assign\", \"key\": \"" + key
        + "\", \"value\": " + value + "}";
  }

  // ------------------------------------------------------------------------------- behaviour

  @Test
  void aRegisteredDependencyForwardsTheLeadersWritesAndIsListedUntilDeregistered()
      throws Exception {
    put("Product/r1", "price", "10");
    put("Cart/r1", "owner", "\"ada\"");
    String body = replicate("Product/r1", "price", "Cart/r1", "item:r1:price");
    HttpResponse<String> created = ServerProcess.client().send(HttpRequest.newBuilder(
            URI.create(server.baseUrl() + "/v1/dependencies"))
        .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(201, created.statusCode(), created.body());
    String id = idOf("update", "Product/r1", "price", "Cart/r1", "item:r1:price");
    assertEquals("/v1/dependencies/" + id, created.headers().firstValue("Location").orElse(null));
    JsonNode answer = Json.parse(created.body());
    assertTrue(answer.get("txId").canConvertToLong() && answer.get("txId").asLong() > 0,
        created.body());
    ObjectNode expected = (ObjectNode) Json.parse(body);
    expected.put("id", id);
    ObjectNode withoutTransaction = ((ObjectNode) answer).deepCopy();
    withoutTransaction.remove("txId");
    assertEquals(expected, withoutTransaction);
    assertEquals(List.of("id", "kind", "leader", "follower", "function", "txId"),
        fieldNames(answer), "the dependency's fields in their documented order");

    Answer byId = server.get("/v1/dependencies/" + id);
    assertEquals(200, byId.status(), byId.text());
    assertEquals(expected, byId.body());
    assertEquals(10, value("Cart/r1", "item:r1:price").asLong(), "registration takes the value");

    // A plain PUT of the leader key: the follower has changed by the time the PUT is answered.
    put("Product/r1", "price", "12");
    assertEquals(12, value("Cart/r1", "item:r1:price").asLong());
    // In a transaction, the follower is one of the entities the transaction wrote.
    Answer written = server.send("POST", "/v1/transactions",
        "{\"ops\": [" + assignOp("Product/r1", "price", "13") + "],"
            + " \"reads\": [{\"entity\": \"Cart/r1\"}]}");
    assertEquals(200, written.status(), written.text());
    assertEquals(List.of("Product/r1", "Cart/r1"), written.body().findValuesAsText("entity")
        .subList(0, 2));
    assertTrue(written.body().at("/entities/1/wrote").asBoolean(), written.text());
    assertEquals(13, written.body().at("/reads/0/state/item:r1:price").asLong(), written.text());
    JsonNode cart = server.get("/v1/entities/Cart/r1").body();
    assertEquals(Json.parse("{\"item:r1:price\":13,\"owner\":\"ada\"}"), cart.get("state"),
        "dependency records never render");

    JsonNode leads = dependencies("Product/r1");
    assertEquals("Product/r1", leads.get("entity").asText());
    assertEquals(server.get("/v1/entities/Product/r1").body().get("version"), leads.get("version"));
    assertEquals(List.of(expected), list(leads.get("leads")));
    assertEquals(List.of(), list(leads.get("follows")));
    JsonNode follows = dependencies("Cart/r1");
    assertEquals(cart.get("version"), follows.get("version"));
    assertEquals(List.of(), list(follows.get("leads")));
    assertEquals(List.of(expected), list(follows.get("follows")),
        "a replicated key shows no contribution");

    Answer deregistered = server.send("DELETE", "/v1/dependencies/" + id, null);
    assertEquals(200, deregistered.status(), deregistered.text());
    assertEquals(List.of("id", "txId"), fieldNames(deregistered.body()));
    assertEquals(id, deregistered.body().get("id").asText());
    assertTrue(deregistered.body().get("txId").asLong() > 0);
    assertEquals(404, server.get("/v1/dependencies/" + id).status());
    put("Product/r1", "price", "14");
    assertEquals(13, value("Cart/r1", "item:r1:price").asLong(), "the follower keeps its value");
    assertEquals(List.of(), list(dependencies("Product/r1").get("leads")));
    assertEquals(List.of(), list(dependencies("Cart/r1").get("follows")));
    Answer again = server.send("DELETE", "/v1/dependencies/" + id, null);
    assertEquals(404, again.status(), again.text());
    assertEquals("not_found", again.errorCode());
  }

  @Test
  void transactionsRegisterAndDeregisterDependenciesAllOrNothing() throws Exception {
    String dependency = replicate("X/t1", "v", "Y/t1", "w");
    String id = idOf("update", "X/t1", "v", "Y/t1", "w");
    // The leader key is written first, then registered, in one transaction with other writes.
    Answer committed = server.send("POST", "/v1/transactions", "{\"ops\": ["
        + assignOp("X/t1", "v", "5") + ", " + registerOp(dependency) + ", "
        + assignOp("Y/t1", "o", "1") + "], \"reads\": [{\"entity\": \"Y/t1\"}]}");
    assertEquals(200, committed.status(), committed.text());
    assertEquals(Json.parse("{\"o\":1,\"w\":5}"), committed.body().at("/reads/0/state"));
    assertEquals(id, dependencies("X/t1").at("/leads/0/id").asText());
    assertEquals(id, dependencies("Y/t1").at("/follows/0/id").asText());

    // Another op fails: the registration it came with does not happen either.
    String second = replicate("X/t1", "v", "Y/t2", "w");
    String beforeX = snapshot("X/t1");
    String beforeY = snapshot("Y/t1");
    Answer failed = server.send("POST", "/v1/transactions", transaction(
        "{\"entity\": \"X/t1\", \"op\": \"registerDependency\", \"dependency\": " + second + "}",
        assignOp("Y/t1", "o", "2"),
        "{\"entity\": \"Y/t1\", \"op\": \"deleteKey\", \"key\": \"missing\"}"));
    assertEquals(404, failed.status(), failed.text());
    assertEquals(beforeX, snapshot("X/t1"));
    assertEquals(beforeY, snapshot("Y/t1"));
    assertEquals(404, server.get("/v1/entities/Y/t2").status());
    assertEquals(404, server.get("/v1/dependencies/" + idOf("update", "X/t1", "v", "Y/t2", "w"))
        .status());

    // Deregistration by op, with a write of the leader that is then not forwarded.
    Answer deregistered = server.send("POST", "/v1/transactions", transaction(
        "{\"op\": \"deregisterDependency\", \"id\": \"" + id + "\"}", assignOp("X/t1", "v", "6")));
    assertEquals(200, deregistered.status(), deregistered.text());
    assertEquals(5, value("Y/t1", "w").asLong());
    assertEquals(List.of(), list(dependencies("X/t1").get("leads")));
    assertEquals(List.of(), list(dependencies("Y/t1").get("follows")));

    // An interactive transaction takes the same ops.
    Answer begun = server.send("POST", "/v1/transactions/begin", null);
    long transaction = begun.body().get("txId").asLong();
    Answer step = server.send("POST", "/v1/transactions/" + transaction + "/write",
        registerOp(dependency));
    assertEquals(200, step.status(), step.text());
    Answer done = server.send("POST", "/v1/transactions/" + transaction + "/commit", null);
    assertEquals(200, done.status(), done.text());
    assertEquals(6, value("Y/t1", "w").asLong());
    assertEquals(id, dependencies("Y/t1").at("/follows/0/id").asText());
  }

  @Test
  void deletingALeaderCascadesAlongDeleteDependencies() throws Exception {
    put("Product/d1", "price", "10");
    put("Stock/d1", "available", "5");
    put("Stock/d1", "location", "\"hall 2\"");
    put("Reservation/d1", "units", "2");
    put("Cart/d1", "owner", "\"ada\"");
    registered(dependency("delete", null, "Product/d1", "price", "Stock/d1", "available"));
    registered(dependency("delete", null, "Stock/d1", "available", "Reservation/d1", "units"));
    registered(replicate("Product/d1", "price", "Cart/d1", "item:d1:price"));

    Answer deleted = server.send("DELETE", "/v1/entities/Product/d1", null);
    assertEquals(200, deleted.status(), deleted.text());
    assertEquals(404, server.get("/v1/entities/Product/d1").status());
    assertEquals(Json.parse("{\"location\":\"hall 2\"}"),
        server.get("/v1/entities/Stock/d1").body().get("state"), "the follower key went");
    assertEquals(Json.parse("{}"), server.get("/v1/entities/Reservation/d1").body().get("state"),
        "and along the chain");
    assertEquals(10, value("Cart/d1", "item:d1:price").asLong(),
        "an update dependency's follower keeps its value");
    for (String entity : List.of("Stock/d1", "Reservation/d1", "Cart/d1")) {
      JsonNode left = dependencies(entity);
      assertTrue(left.get("leads").isEmpty() && left.get("follows").isEmpty(), left.toString());
    }
  }

  @Test
  void aSumFollowsEveryLeaderAndShowsTheirContributions() throws Exception {
    put("Seller/agg", "total", "0");
    for (int order = 1; order <= 3; order++) {
      put("Order/agg" + order, "total", String.valueOf(order * 10));
      registered(dependency("update", "sum", "Order/agg" + order, "total", "Seller/agg", "total"));
    }
    assertEquals(60, value("Seller/agg", "total").asLong());
    put("Order/agg1", "total", "15");
    assertEquals(65, value("Seller/agg", "total").asLong());
    JsonNode follows = dependencies("Seller/agg").get("follows");
    assertEquals(3, follows.size(), follows.toString());
    List<Long> contributions = new ArrayList<>();
    for (JsonNode follow : follows) {
      assertEquals("sum", follow.get("function").asText());
      contributions.add(follow.get("contribution").asLong());
    }
    contributions.sort(null);
    assertEquals(List.of(15L, 20L, 30L), contributions);

    assertEquals(200, server.send("DELETE", "/v1/entities/Order/agg2", null).status());
    assertEquals(45, value("Seller/agg", "total").asLong(), "a deleted leader drops out");
    Answer deregistered = server.send("DELETE",
        "/v1/dependencies/" + idOf("update", "Order/agg3", "total", "Seller/agg", "total"), null);
    assertEquals(200, deregistered.status(), deregistered.text());
    assertEquals(15, value("Seller/agg", "total").asLong(), "a deregistered leader drops out");
    assertEquals(1, dependencies("Seller/agg").get("follows").size());
  }

  // ------------------------------------------------------------------------------- bad input

  static Stream<Arguments> badRequests() {
    String product = "/v1/entities/Product/p1";
    String existing = idOf("update", "Product/p1", "price", "Cart/c1", "item:p1:price");
    String fresh = replicate("Product/p1", "price", "Z/z", "copy");
    String tooLong = "i".repeat(300);
    return Stream.of(
        row("malformed JSON", "POST", "/v1/dependencies", "{\"kind\":", 400, "invalid_request"),
        row("empty body", "POST", "/v1/dependencies", "", 400, "invalid_request"),
        row("not an object", "POST", "/v1/dependencies", "[]", 400, "invalid_request"),
        row("missing kind", "POST", "/v1/dependencies",
            fresh.replace("\"kind\":\"update\",", ""), 400, "invalid_request"),
        row("unknown kind", "POST", "/v1/dependencies",
            fresh.replace("\"update\"", "\"rename\""), 400, "invalid_request"),
        row("kind not a string", "POST", "/v1/dependencies",
            fresh.replace("\"update\"", "1"), 400, "invalid_request"),
        row("missing leader", "POST", "/v1/dependencies",
            "{\"kind\":\"update\",\"follower\":{\"entity\":\"Z/z\",\"key\":\"copy\"},"
                + "\"function\":\"replicate\"}", 400, "invalid_request"),
        row("missing follower", "POST", "/v1/dependencies",
            "{\"kind\":\"update\",\"leader\":{\"entity\":\"Product/p1\",\"key\":\"price\"},"
                + "\"function\":\"replicate\"}", 400, "invalid_request"),
        row("leader not an object", "POST", "/v1/dependencies",
            fresh.replace("{\"entity\":\"Product/p1\",\"key\":\"price\"}", "\"Product/p1\""),
            400, "invalid_request"),
        row("unknown field", "POST", "/v1/dependencies",
            fresh.replace("{\"kind\"", "{\"priority\":1,\"kind\""), 400, "invalid_request"),
        row("unknown field of an end", "POST", "/v1/dependencies",
            fresh.replace("\"key\":\"copy\"", "\"key\":\"copy\",\"path\":\"x\""), 400,
            "invalid_request"),
        row("entity reference without a slash", "POST", "/v1/dependencies",
            replicate("Productp1", "price", "Z/z", "copy"), 400, "invalid_request"),
        row("entity id over the limit", "POST", "/v1/dependencies",
            replicate("Product/p1", "price", "Z/" + tooLong, "copy"), 400, "invalid_request"),
        row("reserved type name", "POST", "/v1/dependencies",
            replicate("Product/p1", "price", "$system/z", "copy"), 400, "invalid_request"),
        row("'$' leader key", "POST", "/v1/dependencies",
            replicate("Product/p1", "$out:price", "Z/z", "copy"), 400, "invalid_request"),
        row("'$' follower key", "POST", "/v1/dependencies",
            replicate("Product/p1", "price", "Z/z", "$in:v"), 400, "invalid_request"),
        row("empty key", "POST", "/v1/dependencies",
            replicate("Product/p1", "price", "Z/z", ""), 400, "invalid_request"),
        row("key over the limit", "POST", "/v1/dependencies",
            replicate("Product/p1", "price", "Z/z", "k".repeat(300)), 400, "invalid_request"),
        row("same entity on both ends", "POST", "/v1/dependencies",
            replicate("Product/p1", "price", "Product/p1", "copy"), 400, "invalid_request"),
        row("a key on itself", "POST", "/v1/dependencies",
            replicate("Product/p1", "price", "Product/p1", "price"), 400, "invalid_request"),
        row("unknown function", "POST", "/v1/dependencies",
            fresh.replace("replicate", "average"), 400, "invalid_request"),
        row("function not a string", "POST", "/v1/dependencies",
            fresh.replace("\"replicate\"", "5"), 400, "invalid_request"),
        row("bad CEL", "POST", "/v1/dependencies", fresh.replace("replicate", "cel:1 +"), 400,
            "invalid_request"),
        row("delete dependency with a function", "POST", "/v1/dependencies",
            fresh.replace("\"update\"", "\"delete\""), 400, "invalid_request"),
        row("update dependency without a function", "POST", "/v1/dependencies",
            dependency("update", null, "Product/p1", "price", "Z/z", "copy"), 400,
            "invalid_request"),
        row("leader key missing", "POST", "/v1/dependencies",
            replicate("Product/p1", "weight", "Z/z", "copy"), 404, "not_found"),
        row("leader entity missing", "POST", "/v1/dependencies",
            replicate("Product/none", "price", "Z/z", "copy"), 404, "not_found"),
        row("follower key a declared type does not have", "POST", "/v1/dependencies",
            replicate("Product/p1", "price", "Seller/s1", "discount"), 400, "invalid_request"),
        row("follower a declared counter", "POST", "/v1/dependencies",
            replicate("Product/p1", "price", "Seller/s1", "orders"), 400, "invalid_request"),
        row("duplicate", "POST", "/v1/dependencies",
            replicate("Product/p1", "price", "Cart/c1", "item:p1:price"), 409, "conflict"),
        row("update cycle", "POST", "/v1/dependencies", replicate("H/h", "v", "G/g", "v"), 409,
            "conflict"),
        row("chain over max-chain-length", "POST", "/v1/dependencies",
            replicate("D/d", "v", "E/e", "v"), 413, "too_large"),
        row("chain over max-chain-length from above", "POST", "/v1/dependencies",
            replicate("E/e", "v", "A/a", "v"), 413, "too_large"),
        row("fan-out over max-per-key", "POST", "/v1/dependencies",
            dependency("delete", null, "Fan/f", "v", "Z/z", "v"), 413, "too_large"),
        row("body over the limit", "POST", "/v1/dependencies",
            fresh.replace("replicate", "cel:'" + "x".repeat(2 * 1024 * 1024) + "'"), 413,
            "too_large"),
        row("GET of an unparsable id", "GET", "/v1/dependencies/not-an-id", null, 400,
            "invalid_request"),
        row("GET of an unknown id", "GET",
            "/v1/dependencies/" + idOf("update", "Product/p1", "price", "Z/z", "copy"), null, 404,
            "not_found"),
        row("GET of an id naming a '$' key", "GET", "/v1/dependencies/"
            + encodeId("[\"update\",\"Product\",\"p1\",\"$out:price\",\"Z\",\"z\",\"v\"]"), null,
            400, "invalid_request"),
        row("GET of an id naming a reserved type", "GET", "/v1/dependencies/"
            + encodeId("[\"update\",\"$system\",\"p1\",\"price\",\"Z\",\"z\",\"v\"]"), null, 400,
            "invalid_request"),
        row("DELETE of an unparsable id", "DELETE", "/v1/dependencies/%7B%7D", null, 400,
            "invalid_request"),
        row("DELETE of an unknown id", "DELETE",
            "/v1/dependencies/" + idOf("delete", "Product/p1", "price", "Cart/c1", "owner"), null,
            404, "not_found"),
        row("DELETE of an id whose leader does not exist", "DELETE",
            "/v1/dependencies/" + idOf("update", "Product/none", "price", "Z/z", "v"), null, 404,
            "not_found"),
        row("listing of a missing entity", "GET", "/v1/entities/Product/none/dependencies", null,
            404, "not_found"),
        row("wrong method on /v1/dependencies", "GET", "/v1/dependencies", null, 405,
            "method_not_allowed"),
        row("wrong method on a dependency", "PUT", "/v1/dependencies/" + existing, fresh, 405,
            "method_not_allowed"),
        row("wrong method on a listing", "POST", product + "/dependencies", fresh, 405,
            "method_not_allowed"),
        row("path below a dependency", "GET", "/v1/dependencies/" + existing + "/x", null, 404,
            "not_found"),
        row("transaction op with another entity", "POST", "/v1/transactions", transaction(
            "{\"entity\": \"Z/z\", \"op\": \"registerDependency\", \"dependency\": " + fresh + "}"),
            400, "invalid_request"),
        row("transaction op without a dependency", "POST", "/v1/transactions",
            transaction("{\"op\": \"registerDependency\"}"), 400, "invalid_request"),
        row("transaction op with an unknown field", "POST", "/v1/transactions",
            transaction("{\"op\": \"registerDependency\", \"key\": \"v\", \"dependency\": "
                + fresh + "}"), 400, "invalid_request"),
        row("transaction op with a bad dependency", "POST", "/v1/transactions",
            transaction(registerOp(fresh.replace("replicate", "cel:1 +"))), 400,
            "invalid_request"),
        row("transaction op registering a duplicate", "POST", "/v1/transactions",
            transaction(assignOp("Z/z", "v", "2"),
                registerOp(replicate("Product/p1", "price", "Cart/c1", "item:p1:price"))), 409,
            "conflict"),
        row("transaction registering with a failing op", "POST", "/v1/transactions",
            transaction(registerOp(fresh), assignOp("Product/p1", "price", "11"),
                "{\"entity\": \"Cart/c1\", \"op\": \"deleteKey\", \"key\": \"missing\"}"), 404,
            "not_found"),
        row("transaction op deregistering an unparsable id", "POST", "/v1/transactions",
            transaction("{\"op\": \"deregisterDependency\", \"id\": \"nope\"}"), 400,
            "invalid_request"),
        row("transaction op deregistering an unknown id", "POST", "/v1/transactions",
            transaction("{\"op\": \"deregisterDependency\", \"id\": \""
                + idOf("update", "Product/p1", "price", "Z/z", "copy") + "\"}"), 404, "not_found"),
        row("transaction op deregistering with another entity", "POST", "/v1/transactions",
            transaction("{\"entity\": \"Cart/c1\", \"op\": \"deregisterDependency\", \"id\": \""
                + existing + "\"}"), 400, "invalid_request"),
        row("'$' key in a key path", "PUT", "/v1/entities/Cart/c1/keys/%24in:item:p1:price",
            "1", 400, "invalid_request"),
        row("'$' key read", "GET", "/v1/entities/Product/p1/keys/%24out:price", null, 400,
            "invalid_request"),
        row("'$' key deleted", "DELETE", "/v1/entities/Product/p1/keys/%24out:price", null, 400,
            "invalid_request"),
        row("'$' key incremented", "POST", "/v1/entities/Product/p1/keys/%24n/increment",
            "{\"by\": 1}", 400, "invalid_request"),
        row("'$' key in a PATCH", "PATCH", "/v1/entities/Cart/c1",
            "{\"owner\": \"bob\", \"$in:item:p1:price\": []}", 400, "invalid_request"),
        row("'$' key in a transaction op", "POST", "/v1/transactions",
            transaction(assignOp("Product/p1", "$out:price", "{}")), 400, "invalid_request"));
  }

  private static Arguments row(String description, String method, String path, String body,
      int status, String code) {
    return Arguments.of(description, method, path, body, status, code);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badRequests")
  void badRequestsAreRefusedWithTheirCodeAndChangeNothing(String description, String method,
      String path, String body, int status, String code) throws Exception {
    Answer answer = server.send(method, path, body);
    assertEquals(status, answer.status(), description + ": " + answer.text());
    assertEquals(code, answer.errorCode(), answer.text());
    assertNotNull(answer.body().get("message"), "every error has a message");
    assertFalse(answer.text().contains("Exception"), "no stack traces: " + answer.text());
    for (String entity : FIXTURES) {
      assertEquals(before.get(entity), snapshot(entity), entity + " changed");
    }
  }

  // ------------------------------------------------------------------------------- utilities

  private static List<String> fieldNames(JsonNode node) {
    List<String> names = new ArrayList<>();
    node.fieldNames().forEachRemaining(names::add);
    return names;
  }

  private static List<JsonNode> list(JsonNode array) {
    List<JsonNode> items = new ArrayList<>();
    array.forEach(items::add);
    return items;
  }
}
