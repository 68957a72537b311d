package dev.troupe.runtime.messages;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.node.LongNode;
import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.runtime.RuntimeSettings;
import dev.troupe.runtime.Troupe;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Receiving actions that cannot run as one turn, over real RocksDB and actors: an action with
 * sync calls, and one whose write is forwarded to a dependency's follower. Each message is
 * delivered through the transaction the REST invocation of the action takes, its marker in that
 * transaction: exactly once, atomically; a permanent failure consumes it.
 */
class TransactionalDeliveryTest {
  static final String SENDER = """
      {"type": "Sender", "keys": {"n": {"kind": "register", "default": 0}},
       "actions": {
         "transfer": {"params": {"to": "string", "amount": "int"}, "effect": {"n": "n + 1"},
                      "send": [{"entity": "Account/{to}", "action": "pay",
                                "args": {"amount": "amount"}}]},
         "reprice": {"params": {"to": "string", "price": "int"}, "effect": {"n": "n + 1"},
                     "send": [{"entity": "Product/{to}", "action": "setPrice",
                               "args": {"newPrice": "price"}}]}}}
      """;

  /** pay moves amount from this account to the ledger in one transaction (a sync call). */
  static final String ACCOUNT = """
      {"type": "Account",
       "keys": {"balance": {"kind": "register", "default": 100},
                "paid": {"kind": "register", "default": 0}},
       "actions": {
         "pay": {"params": {"amount": "int"}, "pre": ["balance - amount >= 0"],
                 "effect": {"balance": "balance - amount", "paid": "paid + 1"},
                 "sync": [{"entity": "Ledger/main", "action": "record",
                           "args": {"amount": "amount"}}]}}}
      """;

  static final String LEDGER = """
      {"type": "Ledger",
       "keys": {"total": {"kind": "register", "default": 0},
                "entries": {"kind": "register", "default": 0}},
       "actions": {"record": {"params": {"amount": "int"},
                              "effect": {"total": "total + amount", "entries": "entries + 1"}}}}
      """;

  static final String PRODUCT = """
      {"type": "Product", "keys": {"price": {"kind": "register", "default": 0}},
       "actions": {"setPrice": {"params": {"newPrice": "int"}, "effect": {"price": "newPrice"}}}}
      """;

  @TempDir Path directory;

  private RuntimeSettings settings() {
    return RuntimeSettings.fromConfig(ConfigFactory.parseMap(Map.of("troupe.data-directory",
            directory.toString()))
        .withFallback(ConfigFactory.load()));
  }

  private static void define(Troupe troupe, String... specs) {
    for (String spec : specs) {
      troupe.defineType(SpecParser.parse(null, spec.getBytes(StandardCharsets.UTF_8), false))
          .join();
    }
  }

  @Test
  void aReceivingActionWithSyncCallsIsDeliveredOnceAtomicallyAndConsumedWhenItCannotRun()
      throws Exception {
    try (Troupe troupe = Troupe.open(settings())) {
      define(troupe, SENDER, ACCOUNT, LEDGER);
      EntityId sender = new EntityId("Sender", "s");
      EntityId account = new EntityId("Account", "x");
      EntityId ledger = new EntityId("Ledger", "main");
      // 30 + 30 + 30 fit the balance of 100; the fourth 30 does not (a false precondition).
      for (int i = 0; i < 4; i++) {
        troupe.invoke(sender, "transfer", Json.parse("{\"to\": \"x\", \"amount\": 30}")).join();
      }
      MessageDeliveryTest.await(() -> troupe.messageDelivery().deliveredCount() == 3
          && troupe.messageDelivery().failedCounts().size() == 1, "every message handled");
      Thread.sleep(300); // nothing else comes
      assertEquals(10, MessageDeliveryTest.value(troupe, account, "balance"));
      assertEquals(3, MessageDeliveryTest.value(troupe, account, "paid"));
      // The sync call ran with each delivery, once: never without it, never twice.
      assertEquals(90, MessageDeliveryTest.value(troupe, ledger, "total"));
      assertEquals(3, MessageDeliveryTest.value(troupe, ledger, "entries"));
      assertEquals(Map.of("precondition_failed", 1L), troupe.messageDelivery().failedCounts());
    }
    // After a restart from a watermark maybe not recorded, the markers skip what was delivered
    // (the delivery transaction meets the marker and runs nothing again).
    try (Troupe troupe = Troupe.open(settings())) {
      Thread.sleep(500);
      assertEquals(3, MessageDeliveryTest.value(troupe, new EntityId("Ledger", "main"),
          "entries"));
      assertEquals(10, MessageDeliveryTest.value(troupe, new EntityId("Account", "x"),
          "balance"));
      assertEquals(0, troupe.messageDelivery().deliveredCount());
    }
  }

  @Test
  void aReceivingActionWhoseWriteAFollowerMustJoinIsDeliveredOnce() throws Exception {
    try (Troupe troupe = Troupe.open(settings())) {
      define(troupe, SENDER, PRODUCT);
      EntityId product = new EntityId("Product", "p1");
      EntityId cart = new EntityId("Cart", "c1");
      troupe.invoke(product, "setPrice", Json.parse("{\"newPrice\": 10}")).join();
      troupe.assign(cart, "owner", LongNode.valueOf(1)).join();
      troupe.registerDependency(Dependency.fromJson(Json.parse("""
          {"kind": "update", "leader": {"entity": "Product/p1", "key": "price"},
           "follower": {"entity": "Cart/c1", "key": "item:p1:price"}, "function": "replicate"}
          """))).join();
      EntityId sender = new EntityId("Sender", "s");
      for (int price = 11; price <= 15; price++) {
        troupe.invoke(sender, "reprice", Json.parse("{\"to\": \"p1\", \"price\": " + price + "}"))
            .join();
      }
      MessageDeliveryTest.await(() -> troupe.messageDelivery().deliveredCount() == 5,
          "the messages delivered");
      Thread.sleep(300);
      assertEquals(15, MessageDeliveryTest.value(troupe, product, "price"));
      assertEquals(15, troupe.getKey(cart, "item:p1:price").join().asLong(),
          "the follower joined each delivery's transaction");
      assertEquals(5, troupe.messageDelivery().deliveredCount());
      assertEquals(Map.of(), troupe.messageDelivery().failedCounts());
    }
  }
}
