package dev.troupe.txn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.LongNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyKeys;
import dev.troupe.model.dependency.KeyReference;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.value.DependencyTable;
import dev.troupe.model.value.RegisterValue;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Dependency resolution as a pure function: what a part forwards (fan-out, fan-in, cascades,
 * deregistration) and how a follower applies what it receives, without actors or storage.
 */
class DependencyEvaluatorTest {
  private static final TurnLimits LIMITS = new TurnLimits(1000, 1000, 4, 10, 10, 10, 100, 3);
  private static final CompiledType SCHEMALESS = CompiledType.schemaless("Thing");
  private static final EntityId PRODUCT = EntityId.parse("Product/p");

  private static Dependency dependency(String kind, String function, String leader,
      String follower) {
    String[] l = leader.split("\\.");
    String[] f = follower.split("\\.");
    return Dependency.fromJson(Json.parse(("{\"kind\":\"%s\",\"leader\":{\"entity\":\"%s\","
        + "\"key\":\"%s\"},\"follower\":{\"entity\":\"%s\",\"key\":\"%s\"}%s}").formatted(kind,
        l[0], l[1], f[0], f[1], function == null ? "" : ",\"function\":\"" + function + "\"")));
  }

  private static Dependency update(String function, String leader, String follower) {
    return dependency("update", function, leader, follower);
  }

  /** A state with register values and recorded dependencies. */
  private static final class StateBuilder {
    private final List<Operation> operations = new ArrayList<>();

    StateBuilder value(String key, long value) {
      operations.add(new Operation.Assign(key, LongNode.valueOf(value)));
      return this;
    }

    StateBuilder leads(Dependency dependency) {
      operations.add(new Operation.RecordDependency(
          DependencyKeys.outgoing(dependency.leader().key()), dependency, null));
      return this;
    }

    StateBuilder follows(Dependency dependency, long contribution) {
      operations.add(new Operation.RecordDependency(
          DependencyKeys.incoming(dependency.follower().key()), dependency,
          LongNode.valueOf(contribution)));
      return this;
    }

    EntityState build() {
      return EntityState.ABSENT.apply(operations, 1, 0);
    }
  }

  private static StateBuilder state() {
    return new StateBuilder();
  }

  private static DependencyEvaluator.Evaluation evaluate(String entity, EntityState before,
      List<Turn> turns, List<Forward> incoming) {
    return DependencyEvaluator.evaluate(EntityId.parse(entity), SCHEMALESS, before, turns,
        incoming, 99, 0, LIMITS);
  }

  private static long value(EntityState state, String key) {
    return ((RegisterValue) state.get(key)).value().asLong();
  }

  private static DependencyTable table(EntityState state, String key) {
    return (DependencyTable) state.get(key);
  }

  @Test
  void aLeaderChangeFansOutToEveryUpdateFollowerButNotToDeleteFollowers() {
    Dependency cart1 = update("replicate", "Product/p.price", "Cart/c1.item");
    Dependency cart2 = update("replicate", "Product/p.price", "Cart/c2.item");
    Dependency stock = dependency("delete", null, "Product/p.price", "Stock/p.available");
    EntityState product = state().value("price", 10).leads(cart1).leads(cart2).leads(stock)
        .build();
    DependencyEvaluator.Evaluation evaluated = evaluate("Product/p", product,
        List.of(new Turn.AssignKeys(Map.of("price", LongNode.valueOf(12)))), List.of());
    assertNull(evaluated.error());
    assertEquals(2, evaluated.forwards().size(), evaluated.forwards().toString());
    for (Forward forward : evaluated.forwards()) {
      Forward.LeaderChanged changed = assertInstanceOf(Forward.LeaderChanged.class, forward);
      assertEquals(10, changed.oldValue().asLong());
      assertEquals(12, changed.newValue().asLong());
    }
    // Writing the same value again forwards nothing.
    assertTrue(evaluate("Product/p", product,
        List.of(new Turn.AssignKeys(Map.of("price", LongNode.valueOf(10)))), List.of())
        .forwards().isEmpty());
  }

  @Test
  void aFollowerWithSeveralLeadersAggregatesExactly() {
    Dependency first = update("sum", "Order/o1.total", "Seller/s.revenue");
    Dependency second = update("sum", "Order/o2.total", "Seller/s.revenue");
    EntityState seller = state().value("revenue", 30).follows(first, 10).follows(second, 20)
        .build();
    DependencyEvaluator.Evaluation evaluated = evaluate("Seller/s", seller, List.of(), List.of(
        new Forward.LeaderChanged(first, LongNode.valueOf(10), LongNode.valueOf(15)),
        new Forward.LeaderDeleted(second)));
    assertNull(evaluated.error());
    assertEquals(15, value(evaluated.after(), "revenue"));
    assertEquals(15, table(evaluated.after(), DependencyKeys.incoming("revenue"))
        .get(first.id()).contribution().asLong(), "the contribution is recorded");
    assertNull(table(evaluated.after(), DependencyKeys.incoming("revenue")).get(second.id()));
  }

  @Test
  void minAndMaxRecomputeWhenTheExtremeLeaves() {
    Dependency low = update("min", "Order/o1.total", "Seller/s.smallest");
    Dependency high = update("min", "Order/o2.total", "Seller/s.smallest");
    EntityState seller = state().value("smallest", 5).follows(low, 5).follows(high, 9).build();
    DependencyEvaluator.Evaluation evaluated = evaluate("Seller/s", seller, List.of(), List.of(
        new Forward.LeaderChanged(low, LongNode.valueOf(5), LongNode.valueOf(12))));
    assertEquals(9, value(evaluated.after(), "smallest"));
  }

  @Test
  void aDeleteCascadeDeletesTheFollowerAndTellsItsOtherLeadersAndFollowers() {
    Dependency fromProduct = dependency("delete", null, "Product/p.price", "Stock/p.available");
    Dependency fromWarehouse =
        update("replicate", "Warehouse/w.open", "Stock/p.available");
    Dependency toReservation =
        dependency("delete", null, "Stock/p.available", "Reservation/r.units");
    EntityState stock = state().value("available", 4).follows(fromProduct, 0)
        .follows(fromWarehouse, 1).leads(toReservation).build();
    DependencyEvaluator.Evaluation evaluated = evaluate("Stock/p", stock, List.of(),
        List.of(new Forward.LeaderDeleted(fromProduct)));
    assertNull(evaluated.error());
    assertNull(evaluated.after().get("available"));
    assertNull(evaluated.after().get(DependencyKeys.incoming("available")));
    assertNull(evaluated.after().get(DependencyKeys.outgoing("available")));
    assertEquals(List.of(new Forward.LeaderDeleted(toReservation),
        new Forward.FollowerDeleted(fromWarehouse)), evaluated.forwards(),
        "the cascade goes on, the other leader forgets, the deleting leader is not told");
  }

  @Test
  void deletingAFollowerForgetsItsDependenciesAndTellsTheLeader() {
    Dependency item = update("replicate", "Product/p.price", "Cart/c.item");
    EntityState cart = state().value("item", 10).follows(item, 10).build();
    DependencyEvaluator.Evaluation evaluated =
        evaluate("Cart/c", cart, List.of(new Turn.DeleteKey("item")), List.of());
    assertEquals(List.of(new Forward.FollowerDeleted(item)), evaluated.forwards());
    assertFalse(DependencyEvaluator.hasDependencies(evaluated.after()));
    // ... and the leader, receiving it, forgets the dependency without forwarding anything back.
    EntityState product = state().value("price", 10).leads(item).build();
    DependencyEvaluator.Evaluation leader = evaluate("Product/p", product, List.of(),
        evaluated.forwards());
    assertTrue(leader.forwards().isEmpty(), leader.forwards().toString());
    assertFalse(DependencyEvaluator.hasDependencies(leader.after()));
  }

  @Test
  void aFollowerDeletedInTheSameTransactionIgnoresALeaderChange() {
    Dependency item = update("replicate", "Product/p.price", "Cart/c.item");
    EntityState cart = state().value("item", 10).follows(item, 10).build();
    DependencyEvaluator.Evaluation evaluated = evaluate("Cart/c", cart,
        List.of(new Turn.DeleteKey("item")),
        List.of(new Forward.LeaderChanged(item, LongNode.valueOf(10), LongNode.valueOf(11))));
    assertNull(evaluated.after().get("item"), "the deletion wins");
  }

  @Test
  void registrationRecordsAtTheLeaderAndTheFollowerTakesTheLeaderValue() {
    Dependency item = update("replicate", "Product/p.price", "Cart/c.item");
    EntityState product = state().value("price", 7).build();
    DependencyEvaluator.Evaluation leader = evaluate("Product/p", product,
        List.of(new Turn.RegisterDependency(item)), List.of());
    assertNull(leader.error());
    assertEquals(List.of(new Forward.Registered(item, LongNode.valueOf(7))), leader.forwards());
    assertNotNull(table(leader.after(), DependencyKeys.outgoing("price")).get(item.id()));

    EntityState cart = state().value("other", 1).build();
    DependencyEvaluator.Evaluation follower = evaluate("Cart/c", cart, List.of(),
        leader.forwards());
    assertNull(follower.error());
    assertEquals(7, value(follower.after(), "item"));
  }

  @Test
  void registrationOfALeaderWithoutValueOrOfADuplicateIsRefused() {
    Dependency item = update("replicate", "Product/p.price", "Cart/c.item");
    assertEquals(ErrorCode.NOT_FOUND, evaluate("Product/p", state().value("name", 1).build(),
        List.of(new Turn.RegisterDependency(item)), List.of()).error().code());
    assertEquals(ErrorCode.CONFLICT, evaluate("Product/p",
        state().value("price", 1).leads(item).build(),
        List.of(new Turn.RegisterDependency(item)), List.of()).error().code());
  }

  @Test
  void theRegistrationWalkRefusesCyclesAndLongChains() {
    // Registering C.v -> A.v while A.v -> B.v -> C.v exist: the walk down from A reaches C.
    Dependency closing = update("replicate", "C/c.v", "A/a.v");
    Dependency existing = update("replicate", "B/b.v", "C/c.v");
    EntityState b = state().value("v", 1).leads(existing).build();
    DependencyEvaluator.Evaluation atB = evaluate("B/b", b, List.of(), List.of(
        new Forward.Probe(closing, new KeyReference(EntityId.parse("B/b"), "v"),
            Forward.Direction.DOWNSTREAM, 1)));
    assertEquals(ErrorCode.CONFLICT, atB.error().code(),
        "the walk would step onto the new dependency's leader: " + atB.error().getMessage());
    // A probe that reaches the leader (sent before that check existed, or on another path) too.
    DependencyEvaluator.Evaluation atC = evaluate("C/c", state().value("v", 1).build(), List.of(),
        List.of(new Forward.Probe(closing, new KeyReference(EntityId.parse("C/c"), "v"),
            Forward.Direction.DOWNSTREAM, 2)));
    assertEquals(ErrorCode.CONFLICT, atC.error().code(), atC.error().getMessage());
    // A walk that steps elsewhere goes on.
    Dependency elsewhere = update("replicate", "B/b.v", "D/d.v");
    DependencyEvaluator.Evaluation onwards = evaluate("B/b",
        state().value("v", 1).leads(elsewhere).build(), List.of(), List.of(new Forward.Probe(
            closing, new KeyReference(EntityId.parse("B/b"), "v"), Forward.Direction.DOWNSTREAM,
            1)));
    Forward.Probe next = assertInstanceOf(Forward.Probe.class, onwards.forwards().get(0));
    assertEquals(new KeyReference(EntityId.parse("D/d"), "v"), next.at());
    assertEquals(2, next.depth());

    // A delete dependency may close a cycle: the walk just stops there.
    Dependency closingDelete = dependency("delete", null, "C/c.v", "A/a.v");
    DependencyEvaluator.Evaluation deleteWalk = evaluate("C/c", state().value("v", 1).build(),
        List.of(), List.of(new Forward.Probe(closingDelete,
            new KeyReference(EntityId.parse("C/c"), "v"), Forward.Direction.DOWNSTREAM, 2)));
    assertNull(deleteWalk.error());
    assertTrue(deleteWalk.forwards().isEmpty());

    // The limit is 3 in a row: a walk at depth 3 below the new dependency is too long.
    Dependency further = update("replicate", "D/d.v", "E/e.v");
    DependencyEvaluator.Evaluation tooDeep = evaluate("D/d",
        state().value("v", 1).leads(further).build(), List.of(), List.of(new Forward.Probe(
            closing, new KeyReference(EntityId.parse("D/d"), "v"), Forward.Direction.DOWNSTREAM,
            2)));
    assertEquals(ErrorCode.TOO_LARGE, tooDeep.error().code(), tooDeep.error().getMessage());
  }

  @Test
  void customFunctionsSeeOldNewAndCurrentValues() {
    Dependency doubled = update("cel:current + (new_value - old_value) * 2", "Order/o.total",
        "Seller/s.score");
    EntityState seller = state().value("score", 100).follows(doubled, 3).build();
    DependencyEvaluator.Evaluation evaluated = evaluate("Seller/s", seller, List.of(), List.of(
        new Forward.LeaderChanged(doubled, LongNode.valueOf(3), LongNode.valueOf(5))));
    assertNull(evaluated.error());
    assertEquals(104, value(evaluated.after(), "score"));
    JsonNode text = Json.parse("\"x\"");
    DependencyEvaluator.Evaluation failing = evaluate("Seller/s", seller, List.of(), List.of(
        new Forward.LeaderChanged(doubled, LongNode.valueOf(3), text)));
    assertEquals(ErrorCode.INVALID_REQUEST, failing.error().code(), "a failed function aborts");
  }

  @Test
  void clientsCannotTouchHiddenKeysAndSingleTurnsOnDependenciesNeedATransaction() {
    EntityState plain = state().value("price", 1).build();
    assertEquals(ErrorCode.INVALID_REQUEST, evaluate("Product/p", plain, List.of(
        new Turn.AssignKeys(Map.of("$out:price", LongNode.valueOf(1)))), List.of()).error().code());
    Dependency item = update("replicate", "Product/p.price", "Cart/c.item");
    EntityState leading = state().value("price", 1).value("name", 2).leads(item).build();
    List<Operation> priceWrite = List.of(new Operation.Assign("price", LongNode.valueOf(2)));
    List<Operation> nameWrite = List.of(new Operation.Assign("name", LongNode.valueOf(3)));
    Turn turn = new Turn.AssignKeys(Map.of("x", LongNode.valueOf(0)));
    assertTrue(DependencyEvaluator.needsTransaction(PRODUCT, SCHEMALESS, leading, turn, priceWrite));
    assertFalse(DependencyEvaluator.needsTransaction(PRODUCT, SCHEMALESS, leading, turn, nameWrite),
        "keys without dependencies stay single-entity turns");
    assertTrue(DependencyEvaluator.needsTransaction(PRODUCT, SCHEMALESS, leading, turn,
        List.of(new Operation.DeleteEntity())));
  }

}
