package dev.troupe.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.TextNode;
import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.spec.StateProjection;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The embedded API over real RocksDB storage and real Pekko actors. */
class TroupeTest {
  @TempDir Path directory;

  private RuntimeSettings settings(String... overrides) {
    String text = String.join("\n", overrides);
    return RuntimeSettings.fromConfig(ConfigFactory.parseString(text)
        .withFallback(ConfigFactory.parseMap(Map.of("troupe.data-directory", directory.toString())))
        .withFallback(ConfigFactory.load()));
  }

  @Test
  void aHotEntityTakesConcurrentTurnsWithoutLosingAny() {
    try (Troupe troupe = Troupe.open(settings())) {
      EntityId hot = new EntityId("Counter", "hot");
      troupe.defineType(SpecParser.parse("Counter",
          "{\"keys\": {\"n\": {\"kind\": \"counter\"}}}".getBytes(StandardCharsets.UTF_8), false)).join();
      long groupCommitsBefore = troupe.storageStatistics().groupCommits();
      List<CompletableFuture<TurnOutcome>> turns = new ArrayList<>();
      for (int i = 1; i <= 2000; i++) {
        turns.add(troupe.increment(hot, "n", i));
      }
      CompletableFuture.allOf(turns.toArray(CompletableFuture[]::new)).join();
      assertEquals(2000L * 2001 / 2, troupe.get(hot).join().state().get("n").asLong());
      long versions = turns.stream().map(CompletableFuture::join).mapToLong(TurnOutcome::version)
          .distinct().count();
      assertEquals(2000, versions, "every turn committed on its own version");
      long groupCommits = troupe.storageStatistics().groupCommits() - groupCommitsBefore;
      assertTrue(groupCommits < 1000,
          "a hot entity's turns share group commits (pipelining), got " + groupCommits);
      // Turns one after another: once the registry has told the active entity everything sent
      // through it (it reports that right after telling, long before the turn's sync ends), the
      // next turn goes straight to the entity's actor. A bounded retry, not a timing assumption.
      long directBefore = troupe.directSends();
      for (int i = 0; i < 50 && troupe.directSends() == directBefore; i++) {
        troupe.increment(hot, "n", 1).join();
      }
      assertTrue(troupe.directSends() > directBefore,
          "turns to the active entity go straight to its actor (DirectRoutes)");
    }
  }

  @Test
  void entitiesUsedOnceArePassivatedSoonAndOnesUsedAgainStay() throws InterruptedException {
    try (Troupe troupe = Troupe.open(settings("troupe.entity.passivate-once-used-after-millis = 500",
        "troupe.entity.passivate-after-idle-millis = 600000"))) {
      EntityId hot = new EntityId("Item", "hot");
      troupe.assign(hot, "a", LongNode.valueOf(1)).join();
      troupe.assign(hot, "b", LongNode.valueOf(2)).join();
      List<CompletableFuture<TurnOutcome>> inserts = new ArrayList<>();
      for (int entity = 0; entity < 40; entity++) {
        inserts.add(troupe.assign(new EntityId("Item", "once" + entity), "r",
            LongNode.valueOf(entity)));
      }
      CompletableFuture.allOf(inserts.toArray(CompletableFuture[]::new)).join();
      assertTrue(troupe.turnMetrics().activeEntities() > 1, "the inserts' actors are active");
      assertEquals(41, troupe.turnMetrics().activations(), "one activation per entity");
      long deadline = System.nanoTime() + 10_000_000_000L;
      // The active count drops when the registry asks an actor to stop; a passivation is counted
      // when the actor has stopped, a moment later: wait for both.
      while ((troupe.turnMetrics().activeEntities() > 1 || troupe.turnMetrics().passivations() < 40)
          && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      // Only the entity written twice is left: the others went long before the idle period.
      assertEquals(1, troupe.turnMetrics().activeEntities());
      assertEquals(40, troupe.turnMetrics().passivations(), "each once-used actor stopped once");
      for (int entity = 0; entity < 40; entity++) {
        assertEquals(entity, troupe.get(new EntityId("Item", "once" + entity)).join().state()
            .get("r").asLong());
      }
      troupe.assign(new EntityId("Item", "once3"), "s", LongNode.valueOf(9)).join();
      assertEquals(42, troupe.turnMetrics().activations(), "a passivated entity comes back");
      // Remembered (remembered-once-used-entities): used again, it is an ordinary actor now and
      // outlives three once-used periods (without the memory it would go after one).
      Thread.sleep(1_500);
      assertEquals(2, troupe.turnMetrics().activeEntities(), "once3 stays, used again");
      assertEquals(40, troupe.turnMetrics().passivations());
      assertEquals(2, troupe.get(new EntityId("Item", "once3")).join().state().size());
      assertEquals(2, troupe.get(hot).join().state().size());
    }
  }

  @Test
  void passivationUnderASmallActorLimitLosesNothing() throws InterruptedException {
    try (Troupe troupe = Troupe.open(settings("troupe.entity.max-actors = 4",
        "troupe.entity.passivate-after-idle-millis = 50"))) {
      List<CompletableFuture<TurnOutcome>> turns = new ArrayList<>();
      for (int round = 0; round < 5; round++) {
        for (int entity = 0; entity < 50; entity++) {
          turns.add(troupe.assign(new EntityId("Item", "i" + entity), "r" + round,
              LongNode.valueOf(round)));
        }
      }
      CompletableFuture.allOf(turns.toArray(CompletableFuture[]::new)).join();
      for (int entity = 0; entity < 50; entity++) {
        EntityView view = troupe.get(new EntityId("Item", "i" + entity)).join();
        assertEquals(5, view.state().size(), view.toString());
      }
      assertTrue(troupe.turnMetrics().activeEntities() <= 8, "actors stay bounded");
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (troupe.turnMetrics().activeEntities() > 0 && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertEquals(0, troupe.turnMetrics().activeEntities(), "idle entities are passivated");
      // A passivated entity comes back with its state.
      assertEquals(0, troupe.get(new EntityId("Item", "i7")).join().state().get("r0").asLong());
      troupe.assign(new EntityId("Item", "i7"), "r5", LongNode.valueOf(5)).join();
      assertEquals(6, troupe.get(new EntityId("Item", "i7")).join().state().size());
      // Rounds one after another: the entities still active from the last round are told
      // directly (DirectRoutes) while activating the others passivates them: nothing is lost.
      for (int round = 0; round < 5; round++) {
        List<CompletableFuture<TurnOutcome>> again = new ArrayList<>();
        for (int entity = 0; entity < 50; entity++) {
          again.add(troupe.assign(new EntityId("Item", "i" + (entity * 7 + round) % 50),
              "s" + round, LongNode.valueOf(round)));
        }
        CompletableFuture.allOf(again.toArray(CompletableFuture[]::new)).join();
      }
      for (int entity = 0; entity < 50; entity++) {
        EntityView view = troupe.get(new EntityId("Item", "i" + entity)).join();
        assertEquals(entity == 7 ? 11 : 10, view.state().size(), view.toString());
      }
    }
  }

  @Test
  void typesAndStateSurviveAReopen() {
    EntityId alice = new EntityId("Account", "alice");
    long version;
    try (Troupe troupe = Troupe.open(settings())) {
      troupe.defineType(SpecParser.parse("Account", """
          {"keys": {"balance": {"kind": "register", "default": 0}},
           "actions": {"deposit": {"params": {"amount": "int"}, "pre": ["amount > 0"],
                                   "effect": {"balance": "balance + amount"}}}}
          """.getBytes(StandardCharsets.UTF_8), false)).join();
      version = troupe.invoke(alice, "deposit", Json.parse("{\"amount\": 7}")).join().version();
    }
    try (Troupe troupe = Troupe.open(settings())) {
      assertTrue(troupe.type("Account").isPresent(), "the type definition is durable");
      TurnOutcome after = troupe.invoke(alice, "deposit", Json.parse("{\"amount\": 5}")).join();
      assertEquals(12, after.state().get("balance").asLong());
      assertTrue(after.version() > version, "versions keep growing across restarts");
      assertEquals(7, troupe.readAt(alice, version).join().state().get("balance").asLong());
      CompletionException refused = assertThrows(CompletionException.class,
          () -> troupe.invoke(alice, "deposit", Json.parse("{\"amount\": 0}")).join());
      assertEquals(ErrorCode.PRECONDITION_FAILED, ((TroupeException) refused.getCause()).code());
    }
  }

  @Test
  void aProjectionRendersOnlyTheKeysItNamesAndRefusesUndeclaredOnes() {
    try (Troupe troupe = Troupe.open(settings())) {
      troupe.defineType(SpecParser.parse("Branch", """
          keys:
            checking: {kind: register, default: 0, family: true}
            savings:  {kind: register, default: 0, family: true}
            name:     {kind: register}
          """.getBytes(StandardCharsets.UTF_8), true)).join();
      EntityId branch = new EntityId("Branch", "b1");
      troupe.patch(branch, Map.of("checking[c1]", LongNode.valueOf(10),
          "savings[c1]", LongNode.valueOf(20), "checking[c2]", LongNode.valueOf(30),
          "name", TextNode.valueOf("north"))).join();
      StateProjection accounts = new StateProjection(List.of("checking[c1]", "savings[c1]"));
      EntityView view = troupe.get(branch, accounts).join();
      assertEquals(Json.parse("{\"checking\":{\"c1\":10},\"savings\":{\"c1\":20}}"),
          view.state());
      assertEquals(troupe.get(branch).join().version(), view.version());
      assertEquals(view.state(), Json.parse(troupe.getRendered(branch, accounts).join().stateJson()));
      assertEquals(Json.parse("{}"), troupe.get(branch, StateProjection.NONE).join().state());
      StateProjection undeclared = new StateProjection(List.of("balance"));
      for (CompletableFuture<?> refused : List.of(troupe.get(branch, undeclared),
          troupe.getRendered(branch, undeclared))) {
        CompletionException failure = assertThrows(CompletionException.class, refused::join);
        assertEquals(ErrorCode.INVALID_REQUEST,
            ((TroupeException) failure.getCause()).code(), failure.toString());
      }
      CompletionException missing = assertThrows(CompletionException.class,
          () -> troupe.get(new EntityId("Branch", "b2"), accounts).join());
      assertEquals(ErrorCode.NOT_FOUND, ((TroupeException) missing.getCause()).code());
    }
  }

  @Test
  void coldReadsBeyondTheMaterializationQueueAreRefusedAsOverloaded() {
    try (Troupe troupe = Troupe.open(settings())) {
      List<CompletableFuture<TurnOutcome>> writes = new ArrayList<>();
      for (int i = 0; i < 300; i++) {
        writes.add(troupe.assign(new EntityId("Cold", "c" + i), "v", LongNode.valueOf(i)));
      }
      CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)).join();
    }
    // Reopened: nothing is cached, so every read materializes, on one thread with one queue slot.
    try (Troupe troupe = Troupe.open(settings("troupe.entity.materialization-threads = 1",
        "troupe.entity.materialization-queue-limit = 1"))) {
      List<CompletableFuture<EntityView>> reads = new ArrayList<>();
      for (int i = 0; i < 300; i++) {
        reads.add(troupe.get(new EntityId("Cold", "c" + i)));
      }
      int overloaded = 0;
      for (int i = 0; i < reads.size(); i++) {
        try {
          assertEquals(i, reads.get(i).join().state().get("v").asLong());
        } catch (CompletionException refused) {
          assertEquals(ErrorCode.OVERLOADED, ((TroupeException) refused.getCause()).code());
          overloaded++;
        }
      }
      assertTrue(overloaded > 0, "300 cold reads at once cannot all fit one thread and one slot");
    }
  }

  @Test
  void reservedTypesAreRefused() {
    try (Troupe troupe = Troupe.open(settings())) {
      CompletionException refused = assertThrows(CompletionException.class,
          () -> troupe.assign(new EntityId("$system", "types"), "x", TextNode.valueOf("y")).join());
      assertEquals(ErrorCode.INVALID_REQUEST, ((TroupeException) refused.getCause()).code());
    }
  }
}
