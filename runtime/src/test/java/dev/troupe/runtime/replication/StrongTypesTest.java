package dev.troupe.runtime.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.IntNode;
import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.NotHomeException;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.spec.TypeSpec;
import dev.troupe.runtime.RuntimeSettings;
import dev.troupe.runtime.TransactionRequest;
import dev.troupe.runtime.Troupe;
import dev.troupe.txn.Turn;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Strong types in the engine (docs/ARCHITECTURE.md, "Strong types with a home DC"): a named DC
 * with peers refuses unsafe causal declarations and runs no write to a strong entity homed
 * elsewhere; the home's writes reach the other DC by replication.
 */
class StrongTypesTest {
  private static final String KEYS = "\"keys\": {\"balance\": {\"kind\": \"register\","
      + " \"default\": 0}},";
  private static final String ACTIONS = "\"actions\": {"
      + "\"deposit\": {\"params\": {\"amount\": \"int\"}, \"pre\": [\"amount > 0\"],"
      + " \"effect\": {\"balance\": \"balance + amount\"}},"
      + "\"withdraw\": {\"params\": {\"amount\": \"int\"},"
      + " \"pre\": [\"amount > 0\", \"balance - amount >= 0\"],"
      + " \"effect\": {\"balance\": \"balance - amount\"}}}";

  @TempDir Path root;

  private static TypeSpec spec(String type, String consistency) {
    return SpecParser.parse(type, ("{" + consistency + KEYS + ACTIONS + "}")
        .getBytes(StandardCharsets.UTF_8), false);
  }

  private static TroupeException failure(CompletableFuture<?> future) {
    CompletionException e = assertThrows(CompletionException.class, future::join);
    return assertInstanceOf(TroupeException.class, e.getCause());
  }

  @Test
  void unsafeCausalTypeIsRefusedWithPeersAndAStrongOneIsRoutedToItsHome() {
    try (DataCentres dcs = new DataCentres(root, Map.of(), "a", "b")) {
      TroupeException refused = failure(dcs.troupe("b").defineType(spec("Account", "")));
      assertEquals(ErrorCode.INVALID_REQUEST, refused.code());
      assertTrue(refused.getMessage().contains("actions.withdraw.pre[1]")
          && refused.getMessage().contains("key 'balance'"), refused.getMessage());
      TroupeException unknownHome =
          failure(dcs.troupe("b").defineType(spec("Account", strong("c"))));
      assertTrue(unknownHome.getMessage().contains("home: 'c' is neither"),
          unknownHome.getMessage());
      for (String dc : List.of("a", "b")) {
        dcs.troupe(dc).defineType(spec("Account", strong("a"))).join();
        dcs.troupe(dc).defineType(spec("Vault", strong("b"))).join();
      }

      EntityId account = new EntityId("Account", "x");
      Troupe b = dcs.troupe("b");
      // Every kind of write at b is refused, naming the home, and changes nothing.
      for (CompletableFuture<?> write : List.of(
          b.invoke(account, "deposit", Json.NODES.objectNode().put("amount", 5)),
          b.assign(account, "balance", IntNode.valueOf(7)),
          b.delete(account),
          b.transact(new TransactionRequest(List.of(new TransactionRequest.Operation(account,
              new Turn.InvokeAction("deposit", Json.NODES.objectNode().put("amount", 5)))),
              List.of())))) {
        NotHomeException notHome = assertInstanceOf(NotHomeException.class, failure(write));
        assertEquals(ErrorCode.NOT_HOME, notHome.code());
        assertEquals("a", notHome.homeDataCentre());
      }
      long interactive = b.beginInteractive();
      assertEquals(ErrorCode.INVALID_REQUEST, failure(b.stepInteractive(interactive, account,
          new Turn.AssignKeys(Map.of("balance", IntNode.valueOf(1))))).code());
      b.abortInteractive(interactive);
      // Strong entities of two homes in one transaction: no DC may run it.
      TroupeException twoHomes = failure(dcs.troupe("a").transact(new TransactionRequest(List.of(
          new TransactionRequest.Operation(account, new Turn.AssignKeys(
              Map.of("balance", IntNode.valueOf(1)))),
          new TransactionRequest.Operation(new EntityId("Vault", "v"), new Turn.AssignKeys(
              Map.of("balance", IntNode.valueOf(1))))), List.of())));
      assertEquals(ErrorCode.INVALID_REQUEST, twoHomes.code());
      assertTrue(twoHomes.getMessage().contains("several home data centres"),
          twoHomes.getMessage());

      // At the home the same write runs, and b sees it once replicated.
      long version = dcs.troupe("a").invoke(account, "deposit",
          Json.NODES.objectNode().put("amount", 100)).join().version();
      dcs.pullUntil(() -> {
        try {
          return b.get(account).join().version() >= version;
        } catch (CompletionException absent) {
          return false;
        }
      }, 30_000, "b applies a's deposit");
      assertEquals(100, b.get(account).join().state().get("balance").asInt());
      // A causal type without such preconditions is declared fine with peers.
      b.defineType(SpecParser.parse("Log", ("{\"keys\": {\"n\": {\"kind\": \"counter\"}},"
          + " \"actions\": {\"bump\": {\"effect\": {\"n\": \"1\"}}}}")
          .getBytes(StandardCharsets.UTF_8), false)).join();
    }
  }

  @Test
  void aPerEntityHomeRuleRoutesEachEntityToItsOwnHome() {
    try (DataCentres dcs = new DataCentres(root, Map.of(), "a", "b")) {
      String rule = "\"consistency\": \"strong\", \"home\": {\"rule\":"
          + " \"id.startsWith('a-') ? 'a' : (id.startsWith('z-') ? 'z' : 'b')\"}, ";
      for (String dc : List.of("a", "b")) {
        dcs.troupe(dc).defineType(spec("Account", rule)).join();
      }
      Troupe b = dcs.troupe("b");
      NotHomeException notHome = assertInstanceOf(NotHomeException.class,
          failure(b.invoke(new EntityId("Account", "a-1"), "deposit",
              Json.NODES.objectNode().put("amount", 5))));
      assertEquals("a", notHome.homeDataCentre());
      // b-1 is homed here; x as well (the rule's default).
      b.invoke(new EntityId("Account", "b-1"), "deposit",
          Json.NODES.objectNode().put("amount", 5)).join();
      b.invoke(new EntityId("Account", "x"), "deposit",
          Json.NODES.objectNode().put("amount", 5)).join();
      // A home that is no DC of the set: refused, nothing done.
      TroupeException unknown = failure(b.invoke(new EntityId("Account", "z-1"), "deposit",
          Json.NODES.objectNode().put("amount", 5)));
      assertEquals(ErrorCode.INVALID_REQUEST, unknown.code());
      assertTrue(unknown.getMessage().contains("gives 'z'"), unknown.getMessage());
      // Two entities of one type with two homes in one transaction: no DC may run it.
      TroupeException twoHomes = failure(b.transact(new TransactionRequest(List.of(
          new TransactionRequest.Operation(new EntityId("Account", "a-1"),
              new Turn.AssignKeys(Map.of("balance", IntNode.valueOf(1)))),
          new TransactionRequest.Operation(new EntityId("Account", "b-1"),
              new Turn.AssignKeys(Map.of("balance", IntNode.valueOf(1))))), List.of())));
      assertTrue(twoHomes.getMessage().contains("several home data centres"),
          twoHomes.getMessage());
    }
  }

  private static String strong(String home) {
    return "\"consistency\": \"strong\", \"home\": \"" + home + "\", ";
  }

  @Test
  void aStoredUnsafeCausalTypeStopsADcGivenPeersFromStarting() {
    Map<String, Object> config = new LinkedHashMap<>();
    config.put("troupe.data-directory", root.resolve("a").toString());
    config.put("troupe.dc.name", "a");
    try (Troupe alone = Troupe.open(settings(config))) {
      alone.defineType(spec("Account", "")).join();
    }
    config.put("troupe.dc.peers", List.of("b"));
    TroupeException refused =
        assertThrows(TroupeException.class, () -> Troupe.open(settings(config)).close());
    assertEquals(ErrorCode.INVALID_REQUEST, refused.code());
    assertTrue(refused.getMessage().contains("type 'Account': actions.withdraw.pre[1]"),
        refused.getMessage());
  }

  private static RuntimeSettings settings(Map<String, Object> config) {
    return RuntimeSettings.fromConfig(ConfigFactory.parseMap(config)
        .withFallback(ConfigFactory.load()));
  }
}
