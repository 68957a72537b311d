package dev.troupe.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.TextNode;
import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.spec.SpecParser;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Declared dependencies end to end: the embedded API over real RocksDB storage and real Pekko
 * actors, under both locking policies.
 */
class DependencyTest {
  @TempDir Path directory;

  /**
   * Settings every test here adds (none; {@link DependencyThroughTransportTest} sends every entity
   * message through the transport).
   */
  String routingSettings() {
    return "";
  }

  private RuntimeSettings settings(String... overrides) {
    return RuntimeSettings.fromConfig(ConfigFactory.parseString(String.join("\n", overrides))
        .withFallback(ConfigFactory.parseString(routingSettings()))
        .withFallback(ConfigFactory.parseMap(Map.of("troupe.data-directory", directory.toString())))
        .withFallback(ConfigFactory.load()));
  }

  private static Dependency dependency(String json) {
    return Dependency.fromJson(Json.parse(json));
  }

  private static Dependency replicate(String leader, String leaderKey, String follower,
      String followerKey) {
    return dependency(("{\"kind\":\"update\",\"leader\":{\"entity\":\"%s\",\"key\":\"%s\"},"
        + "\"follower\":{\"entity\":\"%s\",\"key\":\"%s\"},\"function\":\"replicate\"}")
        .formatted(leader, leaderKey, follower, followerKey));
  }

  private static Dependency ofKind(String kind, String function, String leader, String leaderKey,
      String follower, String followerKey) {
    return dependency(("{\"kind\":\"%s\",\"leader\":{\"entity\":\"%s\",\"key\":\"%s\"},"
        + "\"follower\":{\"entity\":\"%s\",\"key\":\"%s\"}%s}").formatted(kind, leader, leaderKey,
        follower, followerKey, function == null ? "" : ",\"function\":\"" + function + "\""));
  }

  private static JsonNode key(Troupe troupe, String entity, String key) {
    try {
      return troupe.getKey(EntityId.parse(entity), key).join();
    } catch (CompletionException e) {
      if (e.getCause() instanceof TroupeException error && error.code() == ErrorCode.NOT_FOUND) {
        return null;
      }
      throw e;
    }
  }

  private static TroupeException failure(CompletableFuture<?> future) {
    try {
      future.join();
    } catch (CompletionException e) {
      if (e.getCause() instanceof TroupeException error) {
        return error;
      }
      throw e;
    }
    return fail("expected a failure");
  }

  @Test
  void aReplicatedKeyFollowsItsLeaderThroughUpdatesAndDeregistration() {
    try (Troupe troupe = Troupe.open(settings())) {
      EntityId product = EntityId.parse("Product/p1");
      troupe.assign(product, "price", LongNode.valueOf(10)).join();
      troupe.assign(EntityId.parse("Cart/c1"), "owner", TextNode.valueOf("ada")).join();
      Dependency price = replicate("Product/p1", "price", "Cart/c1", "item:p1:price");
      troupe.registerDependency(price).join();
      assertEquals(10, key(troupe, "Cart/c1", "item:p1:price").asLong(),
          "registration takes the leader's value");

      troupe.assign(product, "price", LongNode.valueOf(12)).join();
      assertEquals(12, key(troupe, "Cart/c1", "item:p1:price").asLong(),
          "a single-entity write of the leader is forwarded in the same transaction");

      Troupe.EntityDependencies leads = troupe.dependencies(product).join();
      assertEquals(List.of(price), leads.leads());
      Troupe.EntityDependencies follows = troupe.dependencies(EntityId.parse("Cart/c1")).join();
      assertEquals(price, follows.follows().get(0).dependency());
      assertEquals(price, troupe.dependency(price.id()).join());
      assertFalse(troupe.get(EntityId.parse("Cart/c1")).join().state().has("$in:item:p1:price"),
          "dependency records never render");

      assertEquals(ErrorCode.CONFLICT, failure(troupe.registerDependency(price)).code());

      troupe.deregisterDependency(price.id()).join();
      troupe.assign(product, "price", LongNode.valueOf(14)).join();
      assertEquals(12, key(troupe, "Cart/c1", "item:p1:price").asLong(),
          "after deregistration the follower keeps its last value");
      assertTrue(troupe.dependencies(product).join().leads().isEmpty());
      assertEquals(ErrorCode.NOT_FOUND, failure(troupe.dependency(price.id())).code());
    }
  }

  @Test
  void deletingALeaderCascadesAlongDeleteDependenciesAndDeregistersUpdateOnes() {
    try (Troupe troupe = Troupe.open(settings())) {
      troupe.assign(EntityId.parse("Product/p1"), "price", LongNode.valueOf(10)).join();
      troupe.assign(EntityId.parse("Stock/p1"), "available", LongNode.valueOf(5)).join();
      troupe.assign(EntityId.parse("Cart/c1"), "owner", TextNode.valueOf("ada")).join();
      troupe.assign(EntityId.parse("Reservation/r1"), "units", LongNode.valueOf(2)).join();
      troupe.registerDependency(ofKind("delete", null, "Product/p1", "price", "Stock/p1",
          "available")).join();
      // A chain: the stock's deletion deletes a reservation in turn.
      troupe.registerDependency(ofKind("delete", null, "Stock/p1", "available", "Reservation/r1",
          "units")).join();
      troupe.registerDependency(replicate("Product/p1", "price", "Cart/c1", "item:p1:price"))
          .join();

      troupe.deleteKey(EntityId.parse("Product/p1"), "price").join();
      assertNull(key(troupe, "Stock/p1", "available"), "the delete dependency cascaded");
      assertNull(key(troupe, "Reservation/r1", "units"), "and along the chain");
      assertEquals(10, key(troupe, "Cart/c1", "item:p1:price").asLong(),
          "an update dependency's follower keeps its value");
      for (String entity : List.of("Product/p1", "Stock/p1", "Reservation/r1", "Cart/c1")) {
        Troupe.EntityDependencies left = troupe.dependencies(EntityId.parse(entity)).join();
        assertTrue(left.leads().isEmpty() && left.follows().isEmpty(), entity + " " + left);
      }
    }
  }

  @Test
  void deletingAFollowerDeregistersItAtTheLeader() {
    try (Troupe troupe = Troupe.open(settings())) {
      troupe.assign(EntityId.parse("Product/p1"), "price", LongNode.valueOf(10)).join();
      troupe.assign(EntityId.parse("Cart/c1"), "owner", TextNode.valueOf("ada")).join();
      troupe.registerDependency(replicate("Product/p1", "price", "Cart/c1", "item:p1:price"))
          .join();
      troupe.deleteKey(EntityId.parse("Cart/c1"), "item:p1:price").join();
      assertTrue(troupe.dependencies(EntityId.parse("Product/p1")).join().leads().isEmpty());
      troupe.assign(EntityId.parse("Product/p1"), "price", LongNode.valueOf(11)).join();
      assertNull(key(troupe, "Cart/c1", "item:p1:price"));
    }
  }

  @Test
  void aggregatesAreExactOverAllLeaders() {
    try (Troupe troupe = Troupe.open(settings())) {
      troupe.assign(EntityId.parse("Seller/s1"), "name", TextNode.valueOf("s")).join();
      for (int order = 1; order <= 4; order++) {
        troupe.assign(EntityId.parse("Order/o" + order), "total", LongNode.valueOf(order * 10))
            .join();
        for (String function : List.of("sum", "count", "min", "max")) {
          troupe.registerDependency(ofKind("update", function, "Order/o" + order, "total",
              "Seller/s1", function)).join();
        }
      }
      assertEquals(100, key(troupe, "Seller/s1", "sum").asLong());
      assertEquals(4, key(troupe, "Seller/s1", "count").asLong());
      assertEquals(10, key(troupe, "Seller/s1", "min").asLong());
      assertEquals(40, key(troupe, "Seller/s1", "max").asLong());
      troupe.assign(EntityId.parse("Order/o1"), "total", LongNode.valueOf(55)).join();
      assertEquals(145, key(troupe, "Seller/s1", "sum").asLong());
      assertEquals(20, key(troupe, "Seller/s1", "min").asLong(), "a decrease of the minimum");
      assertEquals(55, key(troupe, "Seller/s1", "max").asLong());
      troupe.delete(EntityId.parse("Order/o1")).join();
      assertEquals(90, key(troupe, "Seller/s1", "sum").asLong(), "a deleted leader drops out");
      assertEquals(3, key(troupe, "Seller/s1", "count").asLong());
      assertEquals(40, key(troupe, "Seller/s1", "max").asLong());
    }
  }

  @Test
  void updateCyclesAndChainsOverTheLimitAreRefusedAtRegistration() {
    try (Troupe troupe = Troupe.open(settings("troupe.dependencies.max-chain-length = 3"))) {
      for (String entity : List.of("A/a", "B/b", "C/c", "D/d", "E/e")) {
        troupe.assign(EntityId.parse(entity), "v", LongNode.valueOf(1)).join();
      }
      troupe.registerDependency(replicate("A/a", "v", "B/b", "v")).join();
      troupe.registerDependency(replicate("B/b", "v", "C/c", "v")).join();
      TroupeException cycle = failure(troupe.registerDependency(replicate("C/c", "v", "A/a", "v")));
      assertEquals(ErrorCode.CONFLICT, cycle.code(), cycle.getMessage());
      assertTrue(cycle.getMessage().contains("cycle"), cycle.getMessage());
      troupe.registerDependency(replicate("C/c", "v", "D/d", "v")).join();
      TroupeException longChain = failure(troupe.registerDependency(
          replicate("D/d", "v", "E/e", "v")));
      assertEquals(ErrorCode.TOO_LARGE, longChain.code(), longChain.getMessage());
      TroupeException fromAbove = failure(troupe.registerDependency(
          replicate("E/e", "v", "A/a", "v")));
      assertEquals(ErrorCode.TOO_LARGE, fromAbove.code(), fromAbove.getMessage());
      // Nothing of the refused registrations remains, and the chain still works.
      assertTrue(troupe.dependencies(EntityId.parse("E/e")).join().leads().isEmpty());
      troupe.assign(EntityId.parse("A/a"), "v", LongNode.valueOf(7)).join();
      assertEquals(7, key(troupe, "D/d", "v").asLong(), "forwarded along the whole chain");
      assertEquals(1, key(troupe, "E/e", "v").asLong());
    }
  }

  @Test
  void registrationRacingLeaderUpdatesNeverMissesOne() {
    // smsa.txt §3.1: an update forwarded before the registration's confirmation must not be
    // lost. Here registrations of many carts race with a stream of price updates.
    try (Troupe troupe = Troupe.open(settings("troupe.entity.passivate-after-idle-millis = 60000"))) {
      EntityId product = EntityId.parse("Product/hot");
      troupe.assign(product, "price", LongNode.valueOf(0)).join();
      int carts = 40;
      for (int cart = 0; cart < carts; cart++) {
        troupe.assign(EntityId.parse("Cart/c" + cart), "owner", TextNode.valueOf("x")).join();
      }
      List<CompletableFuture<?>> work = new ArrayList<>();
      for (int i = 0; i < carts; i++) {
        work.add(troupe.registerDependency(
            replicate("Product/hot", "price", "Cart/c" + i, "item:hot:price")));
        work.add(troupe.assign(product, "price", LongNode.valueOf(i + 1)));
      }
      for (CompletableFuture<?> future : work) {
        future.join();
      }
      // Concurrent writes commit in some order; whichever came last, every cart has it.
      long finalPrice = key(troupe, "Product/hot", "price").asLong();
      for (int cart = 0; cart < carts; cart++) {
        assertEquals(finalPrice, key(troupe, "Cart/c" + cart, "item:hot:price").asLong(),
            "cart " + cart);
      }
    }
  }

  @Test
  void dependenciesWorkUnderKeyLevelLockingAndSurviveARestart() {
    try (Troupe troupe = Troupe.open(settings())) {
      troupe.defineType(SpecParser.parse("Cart", ("{\"admission\": \"keys\", \"keys\": {"
          + "\"item\": {\"kind\": \"register\", \"family\": true},"
          + "\"note\": {\"kind\": \"register\"}}}").getBytes(StandardCharsets.UTF_8), false)).join();
      troupe.assign(EntityId.parse("Product/p1"), "price", LongNode.valueOf(3)).join();
      troupe.registerDependency(replicate("Product/p1", "price", "Cart/c1", "item[p1]")).join();
      troupe.assign(EntityId.parse("Product/p1"), "price", LongNode.valueOf(4)).join();
      assertEquals(4, troupe.get(EntityId.parse("Cart/c1")).join().state().get("item").get("p1")
          .asLong());
      TroupeException counter = failure(troupe.registerDependency(
          replicate("Product/p1", "price", "Cart/c1", "nope")));
      assertEquals(ErrorCode.INVALID_REQUEST, counter.code(), counter.getMessage());
    }
    try (Troupe troupe = Troupe.open(settings())) {
      // Nothing is cached after the restart, so a planned transaction cannot see that the
      // product leads a dependency: its planned attempt forwards, aborts, and runs again dynamic.
      troupe.transact(new TransactionRequest(List.of(new TransactionRequest.Operation(
          EntityId.parse("Product/p1"), new dev.troupe.txn.Turn.AssignKeys(
              Map.of("price", LongNode.valueOf(5))))), List.of(),
          TransactionRequest.Mode.PLANNED)).join();
      assertEquals(5, troupe.get(EntityId.parse("Cart/c1")).join().state().get("item").get("p1")
          .asLong(), "the dependency survived the restart");
      assertEquals(1L, troupe.transactionMetrics().failedByReason()
          .get(dev.troupe.model.TransactionAbort.DEPENDENCIES_INVOLVED),
          "the planned attempt was given up: " + troupe.transactionMetrics().failedByReason());
      // Now cached: the reconnaissance predicts the cart and the transaction runs planned.
      troupe.transact(new TransactionRequest(List.of(new TransactionRequest.Operation(
          EntityId.parse("Product/p1"), new dev.troupe.txn.Turn.AssignKeys(
              Map.of("price", LongNode.valueOf(6))))), List.of(),
          TransactionRequest.Mode.PLANNED)).join();
      assertEquals(6, troupe.get(EntityId.parse("Cart/c1")).join().state().get("item").get("p1")
          .asLong());
      assertEquals(1L, troupe.transactionMetrics().failedByReason()
          .get(dev.troupe.model.TransactionAbort.DEPENDENCIES_INVOLVED), "no second give-up");
    }
  }

  @Test
  void dependenciesDeclaredInTypeSpecsRegisterWhenTheFollowerKeyIsWritten() {
    try (Troupe troupe = Troupe.open(settings())) {
      troupe.defineType(SpecParser.parse(null, """
          type: Cart
          admission: keys
          keys:
            item: {kind: register, family: true}
            quantity: {kind: register, family: true}
          dependencies:
            - {follower: "item[p]", kind: update, leader: {entity: "Product/{p}", key: price},
               function: replicate}
          """.getBytes(StandardCharsets.UTF_8), true)).join();
      troupe.defineType(SpecParser.parse(null, """
          type: Stock
          keys:
            available: {kind: register, default: 0}
          dependencies:
            - {follower: available, kind: delete, leader: {entity: "Product/{id}", key: price}}
          """.getBytes(StandardCharsets.UTF_8), true)).join();
      troupe.assign(EntityId.parse("Product/p1"), "price", LongNode.valueOf(30)).join();
      EntityId cart = EntityId.parse("Cart/c1");
      troupe.patch(cart, Map.of("item[p1]", LongNode.valueOf(0),
          "quantity[p1]", LongNode.valueOf(2))).join();
      assertEquals(30, troupe.get(cart).join().state().get("item").get("p1").asLong(),
          "the declared dependency registered and replicated the price");
      troupe.assign(EntityId.parse("Product/p1"), "price", LongNode.valueOf(31)).join();
      assertEquals(31, troupe.get(cart).join().state().get("item").get("p1").asLong());
      troupe.assign(cart, "quantity[p1]", LongNode.valueOf(3)).join(); // no registration again
      assertEquals(1, troupe.dependencies(cart).join().follows().size());

      // A declared delete dependency is a foreign key: no stock for a product that does not exist.
      TroupeException orphan = failure(
          troupe.assign(EntityId.parse("Stock/p9"), "available", LongNode.valueOf(5)));
      assertEquals(ErrorCode.NOT_FOUND, orphan.code(), orphan.getMessage());
      assertEquals(ErrorCode.NOT_FOUND,
          failure(troupe.get(EntityId.parse("Stock/p9"))).code(), "the refused write left nothing");
      troupe.assign(EntityId.parse("Stock/p1"), "available", LongNode.valueOf(5)).join();
      troupe.delete(EntityId.parse("Product/p1")).join();
      assertEquals(0, troupe.get(EntityId.parse("Stock/p1")).join().state().get("available")
          .asLong(), "the product's deletion deleted its stock (the key is back to its default)");
      assertTrue(troupe.dependencies(EntityId.parse("Stock/p1")).join().follows().isEmpty());
      assertTrue(troupe.dependencies(cart).join().follows().isEmpty(),
          "and deregistered the cart's update dependency");
    }
  }

  @Test
  void psacEntitiesTakePartInDependenciesAdmittedAlone() {
    try (Troupe troupe = Troupe.open(settings())) {
      troupe.defineType(SpecParser.parse(null, """
          type: Account
          admission: psac
          psac: {maxInFlight: 4, maxOvertakes: 8}
          keys:
            balance: {kind: register, default: 0}
          actions:
            deposit:  {params: {amount: int}, pre: ["amount > 0"],
                       effect: {balance: "balance + amount"}}
            withdraw: {params: {amount: int}, pre: ["amount > 0", "balance >= amount"],
                       effect: {balance: "balance - amount"}}
          """.getBytes(StandardCharsets.UTF_8), true)).join();
      EntityId rich = EntityId.parse("Account/rich");
      EntityId plain = EntityId.parse("Account/plain");
      troupe.invoke(rich, "deposit", Json.parse("{\"amount\": 1000}")).join();
      troupe.invoke(plain, "deposit", Json.parse("{\"amount\": 1000}")).join();
      troupe.registerDependency(replicate("Account/rich", "balance", "Dashboard/d", "rich"))
          .join();
      troupe.registerDependency(ofKind("update", "sum", "Account/rich", "balance", "Dashboard/d",
          "total")).join();
      troupe.registerDependency(ofKind("update", "sum", "Account/plain", "balance",
          "Dashboard/d", "total")).join();
      List<CompletableFuture<?>> work = new ArrayList<>();
      for (int i = 0; i < 60; i++) {
        work.add(troupe.invoke(rich, i % 3 == 0 ? "withdraw" : "deposit",
            Json.parse("{\"amount\": " + (1 + i % 7) + "}")));
        work.add(troupe.transact(new TransactionRequest(List.of(
            new TransactionRequest.Operation(plain, new dev.troupe.txn.Turn.InvokeAction(
                "withdraw", Json.parse("{\"amount\": 1}"))),
            new TransactionRequest.Operation(rich, new dev.troupe.txn.Turn.InvokeAction(
                "deposit", Json.parse("{\"amount\": 1}")))), List.of())));
      }
      for (CompletableFuture<?> future : work) {
        future.join();
      }
      long richBalance = key(troupe, "Account/rich", "balance").asLong();
      long plainBalance = key(troupe, "Account/plain", "balance").asLong();
      assertEquals(richBalance, key(troupe, "Dashboard/d", "rich").asLong());
      assertEquals(richBalance + plainBalance, key(troupe, "Dashboard/d", "total").asLong());
      assertEquals(2000 + sumOfDeposits(), richBalance + plainBalance,
          "money moved only by the deposits and withdrawals; transfers conserve it");
    }
  }

  /** Net deposits of the psac test's single turns: deposits of 1 + i % 7, withdrawals every third. */
  private static long sumOfDeposits() {
    long net = 0;
    for (int i = 0; i < 60; i++) {
      net += (i % 3 == 0 ? -1 : 1) * (1 + i % 7);
    }
    return net;
  }
}
