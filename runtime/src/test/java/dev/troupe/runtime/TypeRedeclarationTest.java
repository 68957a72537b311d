package dev.troupe.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.spec.TypeEvolution;
import dev.troupe.model.spec.TypeSpec;
import dev.troupe.storage.EntityWrite;
import dev.troupe.storage.RocksStore;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Redeclaring types through the embedded API (docs/ARCHITECTURE.md, "Type evolution"): the bound on
 * entities examined only makes the check stricter, and a discard migration interrupted by a crash
 * right after its definition committed is finished when the engine opens again.
 */
class TypeRedeclarationTest {
  @TempDir Path directory;

  private RuntimeSettings settings(String... overrides) {
    return RuntimeSettings.fromConfig(ConfigFactory.parseString(String.join("\n", overrides))
        .withFallback(ConfigFactory.parseMap(Map.of("troupe.data-directory", directory.toString())))
        .withFallback(ConfigFactory.load()));
  }

  private static TypeSpec spec(String json) {
    return SpecParser.parse("Item", json.getBytes(StandardCharsets.UTF_8), false);
  }

  private static TroupeException failure(Runnable action) {
    CompletionException thrown =
        org.junit.jupiter.api.Assertions.assertThrows(CompletionException.class, action::run);
    return assertInstanceOf(TroupeException.class, thrown.getCause());
  }

  @Test
  void pastTheBoundOnEntitiesExaminedChangedKeysAreTakenToHoldValues() {
    try (Troupe troupe = Troupe.open(settings("troupe.types.max-entities-checked = 2"))) {
      TypeSpec declared = spec("{\"keys\": {\"a\": {\"kind\": \"register\"},"
          + " \"b\": {\"kind\": \"counter\"}}}");
      troupe.defineType(declared).join();
      for (int i = 0; i < 3; i++) {
        troupe.assign(new EntityId("Item", "i" + i), "a", LongNode.valueOf(i)).join();
      }
      // Nobody wrote b, but only 2 of 3 entities are examined: removing b is refused.
      TroupeException refused = failure(() -> troupe.defineType(
          spec("{\"keys\": {\"a\": {\"kind\": \"register\"}}}")).join());
      assertEquals(ErrorCode.INCOMPATIBLE_TYPE, refused.code());
      assertTrue(refused.getMessage().contains("key 'b'"), refused.getMessage());
      assertEquals(declared, troupe.type("Item").orElseThrow());
      // Adding a key needs no examination at all.
      troupe.defineType(spec("{\"keys\": {\"a\": {\"kind\": \"register\"},"
          + " \"b\": {\"kind\": \"counter\"}, \"c\": {\"kind\": \"set\"}}}")).join();
      assertEquals(2, troupe.get(new EntityId("Item", "i2")).join().state().get("a").asLong());
    }
  }

  @Test
  void aDiscardMigrationInterruptedAfterItsDefinitionCommittedFinishesAtTheNextStart() {
    EntityId first = new EntityId("Item", "first");
    EntityId second = new EntityId("Item", "second");
    try (Troupe troupe = Troupe.open(settings())) {
      troupe.defineType(spec("{\"keys\": {\"a\": {\"kind\": \"register\"},"
          + " \"b\": {\"kind\": \"counter\"}}}")).join();
      troupe.assign(first, "a", LongNode.valueOf(1)).join();
      troupe.increment(first, "b", 3).join();
      troupe.assign(second, "a", LongNode.valueOf(2)).join();
    }
    // The state a crash leaves right after the redeclaration's commit (a: register -> counter
    // with ?migration=discard): the new definition and the record of the migration, no entity
    // rewritten yet.
    TypeSpec counters = spec("{\"keys\": {\"a\": {\"kind\": \"counter\"},"
        + " \"b\": {\"kind\": \"counter\"}}}");
    RuntimeSettings settings = settings();
    try (RocksStore store = RocksStore.open(settings.storage(), System::currentTimeMillis)) {
      JsonNode record = Json.parse("{\"migration\": \"discard\", \"recordVersion\": 1}");
      store.commit(store.newTransactionId(), List.of(new EntityWrite(
          new EntityId(Troupe.SYSTEM_TYPE, "types"), List.of(
              new Operation.Assign("Item", counters.toJson()),
              new Operation.Assign(Troupe.MIGRATION_KEY_PREFIX + "Item", record))))).join();
    }
    try (Troupe troupe = Troupe.open(settings)) {
      assertEquals(counters, troupe.type("Item").orElseThrow());
      JsonNode state = troupe.get(first).join().state();
      assertEquals(0, state.get("a").asLong(), state.toString());
      assertEquals(3, state.get("b").asLong(), state.toString());
      // The migration finished: a redeclaration without one is accepted again, and declaring a
      // as a register once more shows no old value (the register values were deleted, not hidden).
      troupe.defineType(spec("{\"keys\": {\"a\": {\"kind\": \"register\"},"
          + " \"b\": {\"kind\": \"counter\"}}}")).join();
      assertTrue(troupe.get(first).join().state().get("a").isNull());
      assertTrue(troupe.get(second).join().state().get("a").isNull());
    }
  }

  @Test
  void aDiscardMigrationDeletesHiddenValuesAndKeepsTheRest() {
    EntityId item = new EntityId("Item", "x");
    try (Troupe troupe = Troupe.open(settings())) {
      troupe.assign(item, "a", LongNode.valueOf(5)).join();
      troupe.assign(item, "gone", LongNode.valueOf(6)).join();
      TypeSpec declared = spec("{\"keys\": {\"a\": {\"kind\": \"register\"}}}");
      TroupeException refused = failure(() -> troupe.defineType(declared).join());
      assertEquals(ErrorCode.INCOMPATIBLE_TYPE, refused.code());
      assertTrue(refused.getMessage().contains("key 'gone' stores register values but is not"
          + " declared"), refused.getMessage());
      assertTrue(troupe.type("Item").isEmpty(), "a refused declaration changes nothing");
      assertEquals(6, troupe.get(item).join().state().get("gone").asLong());
      troupe.defineType(declared, TypeEvolution.Migration.DISCARD).join();
      assertEquals(Json.parse("{\"a\": 5}"), troupe.get(item).join().state());
      // Back to schemaless: the discarded key is gone for good.
      troupe.defineType(TypeSpec.schemaless("Item")).join();
      assertEquals(Json.parse("{\"a\": 5}"), troupe.get(item).join().state());
    }
  }
}
