package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Json;
import dev.troupe.server.ServerProcess.Answer;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Key families through REST against a real server: actions reach members through bindings, states
 * show members under their family, key routes and transaction key operations name members, bad
 * members change nothing, and under {@code keys} admission a lock on one member leaves the
 * others free while under {@code serial} it holds the whole entity.
 */
class KeyFamilyRestTest {
  @TempDir static Path data;
  static ServerProcess server;

  static String branchType(String name, String admission) {
    return """
        type: %s
        admission: %s
        keys:
          owner:    {kind: register, default: "bank"}
          checking: {kind: register, default: 0, family: true}
          visits:   {kind: counter, family: true}
        actions:
          deposit:
            params: {customer: string, amount: int}
            members: {checking: "checking[customer]"}
            pre: ["amount > 0"]
            effect: {checking: "checking + amount"}
          pay:
            params: {from: string, to: string, amount: int}
            members: {source: "checking[from]", target: "checking[to]"}
            pre: ["source >= amount"]
            effect: {source: "source - amount", target: "target + amount"}
        """.formatted(name, admission);
  }

  @BeforeAll
  static void start() throws Exception {
    server = ServerProcess.start(data.resolve("node"));
    for (String[] type : new String[][] {{"Branch", "keys"}, {"SerialBranch", "serial"}}) {
      Answer defined = server.send("PUT", "/v1/types/" + type[0],
          branchType(type[0], type[1]), "application/yaml");
      assertEquals(200, defined.status(), defined.text());
    }
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
  }

  private static Answer deposit(String type, String branch, String customer, long amount)
      throws Exception {
    return server.send("POST", "/v1/entities/" + type + "/" + branch + "/actions/deposit",
        "{\"customer\": \"" + customer + "\", \"amount\": " + amount + "}");
  }

  @Test
  void actionsWriteMembersAndStatesShowThemUnderTheirFamily() throws Exception {
    assertEquals(200, deposit("Branch", "b1", "c1", 30).status());
    assertEquals(200, deposit("Branch", "b1", "c2", 5).status());
    Answer paid = server.send("POST", "/v1/entities/Branch/b1/actions/pay",
        "{\"from\": \"c1\", \"to\": \"c2\", \"amount\": 10}");
    assertEquals(200, paid.status(), paid.text());
    JsonNode state = server.get("/v1/entities/Branch/b1").body().get("state");
    assertEquals(Json.parse("{\"owner\":\"bank\",\"checking\":{\"c1\":20,\"c2\":15},"
        + "\"visits\":{}}"), state);
    Answer member = server.get("/v1/entities/Branch/b1/keys/checking%5Bc2%5D");
    assertEquals(200, member.status(), member.text());
    assertEquals(15, member.body().get("value").asLong(), member.text());
    Answer refused = server.send("POST", "/v1/entities/Branch/b1/actions/pay",
        "{\"from\": \"c2\", \"to\": \"c1\", \"amount\": 16}");
    assertEquals(409, refused.status(), refused.text());
  }

  /**
   * A projection names members: a read and an action's answer show only them, nested under
   * their family as in the whole state; a key the type does not have is refused before the
   * action runs.
   */
  @Test
  void aProjectionOfMembersAnswersOnlyThem() throws Exception {
    assertEquals(200, deposit("Branch", "b5", "c1", 30).status());
    Answer paid = server.send("POST", "/v1/entities/Branch/b5/actions/pay"
        + "?key=checking%5Bc1%5D&key=checking%5Bc2%5D",
        "{\"from\": \"c1\", \"to\": \"c2\", \"amount\": 10}");
    assertEquals(200, paid.status(), paid.text());
    assertEquals(Json.parse("{\"checking\":{\"c1\":20,\"c2\":10}}"), paid.body().get("state"));
    Answer read = server.get("/v1/entities/Branch/b5?key=owner&key=checking%5Bc2%5D&key=visits%5Bc9%5D");
    assertEquals(200, read.status(), read.text());
    assertEquals(Json.parse("{\"owner\":\"bank\",\"checking\":{\"c2\":10},\"visits\":{\"c9\":0}}"),
        read.body().get("state"), read.text());
    long version = read.body().get("version").asLong();
    assertEquals(paid.body().get("version").asLong(), version);
    Answer at = server.get("/v1/entities/Branch/b5?at=" + version + "&key=checking");
    assertEquals(Json.parse("{\"checking\":{\"c1\":20,\"c2\":10}}"), at.body().get("state"),
        at.text());
    Answer none = server.send("POST", "/v1/entities/Branch/b5/keys/visits%5Bc1%5D/increment"
        + "?state=none", "{\"by\": 2}");
    assertEquals(Json.parse("{}"), none.body().get("state"), none.text());
    long incremented = none.body().get("version").asLong();
    for (String bad : new String[] {"?key=nope", "?key=owner%5Bx%5D", "?key=checking%5B%5D"}) {
      Answer refused = server.send("POST", "/v1/entities/Branch/b5/actions/deposit" + bad,
          "{\"customer\": \"c1\", \"amount\": 1}");
      assertEquals(400, refused.status(), refused.text());
      assertTrue(refused.body().get("message").asText().contains("has no key"), refused.text());
    }
    assertEquals(incremented, server.get("/v1/entities/Branch/b5").body().get("version").asLong());
  }

  @Test
  void transactionsOperateOnMembersByName() throws Exception {
    Answer committed = server.send("POST", "/v1/transactions", """
        {"ops": [
          {"entity": "Branch/b2", "action": "deposit", "args": {"customer": "x", "amount": 7}},
          {"entity": "Branch/b2", "op": "increment", "key": "visits[x]", "by": 3},
          {"entity": "Branch/b3", "op": "assign", "key": "checking[y]", "value": 9}]}""");
    assertEquals(200, committed.status(), committed.text());
    assertEquals(Json.parse("{\"x\":7}"),
        server.get("/v1/entities/Branch/b2").body().at("/state/checking"));
    assertEquals(Json.parse("{\"x\":3}"),
        server.get("/v1/entities/Branch/b2").body().at("/state/visits"));
    assertEquals(9, server.get("/v1/entities/Branch/b3").body().at("/state/checking/y").asLong());
  }

  @Test
  void badMembersAndBadFamiliesAreRefusedAndChangeNothing() throws Exception {
    assertEquals(200, deposit("Branch", "b4", "ok", 1).status());
    long version = server.get("/v1/entities/Branch/b4").body().get("version").asLong();
    for (Answer bad : new Answer[] {
        deposit("Branch", "b4", "a]b", 1),
        deposit("Branch", "b4", "", 1),
        deposit("Branch", "b4", "x".repeat(129), 1),
        server.send("POST", "/v1/transactions", "{\"ops\": [{\"entity\": \"Branch/b4\","
            + " \"op\": \"assign\", \"key\": \"checking\", \"value\": 1}]}"),
        server.send("POST", "/v1/transactions", "{\"ops\": [{\"entity\": \"Branch/b4\","
            + " \"op\": \"increment\", \"key\": \"checking[ok]\", \"by\": 1}]}"),
        server.send("PUT", "/v1/entities/Branch/b4/keys/owner%5Bx%5D", "{\"value\": 1}")}) {
      assertTrue(bad.status() == 400, bad.status() + " " + bad.text());
      assertTrue(bad.body().has("error"), bad.text());
    }
    assertEquals(version, server.get("/v1/entities/Branch/b4").body().get("version").asLong());
    Answer badType = server.send("PUT", "/v1/types/Broken", """
        type: Broken
        keys:
          checking: {kind: register, family: true}
        actions:
          set: {params: {v: int}, effect: {checking: "v"}}
        """, "application/yaml");
    assertEquals(400, badType.status(), badType.text());
    assertTrue(badType.body().get("message").asText().contains("is a key family"),
        badType.text());
  }

  @Test
  void underKeysAdmissionALockedMemberLeavesTheOthersFreeAndUnderSerialItDoesNot()
      throws Exception {
    for (String[] type : new String[][] {{"Branch", "true"}, {"SerialBranch", "false"}}) {
      String name = type[0];
      boolean othersFree = Boolean.parseBoolean(type[1]);
      assertEquals(200, deposit(name, "locked", "a", 100).status());
      Answer begun = server.send("POST", "/v1/transactions/begin", null);
      long transaction = begun.body().get("txId").asLong();
      Answer step = server.send("POST", "/v1/transactions/" + transaction + "/action",
          "{\"entity\": \"" + name + "/locked\", \"action\": \"deposit\","
              + " \"args\": {\"customer\": \"a\", \"amount\": 1}}");
      assertEquals(200, step.status(), step.text());
      // Another customer of the same branch, while the transaction holds member a.
      CompletableFuture<Answer> other = CompletableFuture.supplyAsync(() -> {
        try {
          return deposit(name, "locked", "b", 1);
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      });
      boolean finishedWhileLocked;
      try {
        assertEquals(200, other.get(2, TimeUnit.SECONDS).status());
        finishedWhileLocked = true;
      } catch (TimeoutException waiting) {
        finishedWhileLocked = false;
      }
      assertEquals(othersFree, finishedWhileLocked, name);
      Answer committed =
          server.send("POST", "/v1/transactions/" + transaction + "/commit", null);
      assertEquals(200, committed.status(), committed.text());
      assertEquals(200, other.get(10, TimeUnit.SECONDS).status());
      JsonNode checking = server.get("/v1/entities/" + name + "/locked").body()
          .at("/state/checking");
      assertEquals(Json.parse("{\"a\":101,\"b\":1}"), checking, name);
      assertFalse(checking.has("c"));
    }
  }
}
