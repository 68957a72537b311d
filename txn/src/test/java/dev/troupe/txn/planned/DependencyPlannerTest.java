package dev.troupe.txn.planned;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.LongNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyKeys;
import dev.troupe.model.dependency.KeyReference;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.txn.Turn;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.entity.AccessSets;
import dev.troupe.txn.entity.LockTable;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** A planned transaction's reconnaissance: which followers and leaders its forwards reach. */
class DependencyPlannerTest {
  private static final CompiledType KEYS = CompiledType.compile(SpecParser.parse("Thing",
      ("{\"admission\": \"keys\", \"keys\": {\"price\": {\"kind\": \"register\"}, \"item\":"
          + " {\"kind\": \"register\"}, \"name\": {\"kind\": \"register\"}}}")
          .getBytes(StandardCharsets.UTF_8), false));
  private static final EntityId PRODUCT = EntityId.parse("Thing/product");
  private static final EntityId CART_1 = EntityId.parse("Thing/cart1");
  private static final EntityId CART_2 = EntityId.parse("Thing/cart2");
  private static final EntityId STOCK = EntityId.parse("Thing/stock");

  private final Map<EntityId, EntityState> cache = new HashMap<>();
  private final Map<KeyReference, List<Dependency>> pending = new HashMap<>();

  private static Dependency dependency(String kind, EntityId leader, EntityId follower,
      String followerKey) {
    return Dependency.fromJson(Json.parse(("{\"kind\":\"%s\",\"leader\":{\"entity\":\"%s\","
        + "\"key\":\"price\"},\"follower\":{\"entity\":\"%s\",\"key\":\"%s\"}%s}").formatted(kind,
        leader, follower, followerKey, kind.equals("update") ? ",\"function\":\"replicate\"" : "")));
  }

  /** Records {@code dependency} on both ends in the cache. */
  private void recorded(Dependency dependency) {
    cache.merge(dependency.leader().entity(), EntityState.ABSENT.apply(List.of(
        new Operation.Assign("price", LongNode.valueOf(1)),
        new Operation.RecordDependency(DependencyKeys.outgoing("price"), dependency, null)), 1, 0),
        (old, added) -> old.apply(List.of(new Operation.RecordDependency(
            DependencyKeys.outgoing("price"), dependency, null)), old.version() + 1, 0));
    EntityState follower = cache.getOrDefault(dependency.follower().entity(),
        EntityState.ABSENT.apply(List.of(new Operation.Assign("name", LongNode.valueOf(0))), 1, 0));
    cache.put(dependency.follower().entity(), follower.apply(List.of(new Operation.RecordDependency(
        DependencyKeys.incoming(dependency.follower().key()), dependency, null)),
        follower.version() + 1, 0));
  }

  private Optional<Map<EntityId, CoordinatorCore.Part>> plan(EntityId entity, Turn... turns) {
    Map<EntityId, CoordinatorCore.Part> parts = new LinkedHashMap<>();
    parts.put(entity, new CoordinatorCore.Part(List.of(turns), false));
    Map<EntityId, CompiledType> types = new HashMap<>();
    types.put(entity, KEYS);
    return DependencyPlanner.plan(parts, types, id -> Optional.ofNullable(cache.get(id)),
        leader -> pending.getOrDefault(leader, List.of()), 3);
  }

  @Test
  void aLeaderWriteReachesEveryUpdateFollowerButNoDeleteFollower() {
    recorded(dependency("update", PRODUCT, CART_1, "item"));
    recorded(dependency("update", PRODUCT, CART_2, "item"));
    recorded(dependency("delete", PRODUCT, STOCK, "item"));
    Map<EntityId, CoordinatorCore.Part> planned = plan(PRODUCT,
        new Turn.AssignKeys(Map.of("price", LongNode.valueOf(2)))).orElseThrow();
    assertEquals(java.util.Set.of(PRODUCT, CART_1, CART_2), planned.keySet());
    assertEquals(Map.of("item", LockTable.Mode.WRITE), planned.get(CART_1).reserved());
    // A write of another key reaches nobody.
    assertEquals(List.of(PRODUCT), List.copyOf(plan(PRODUCT,
        new Turn.AssignKeys(Map.of("name", LongNode.valueOf(2)))).orElseThrow().keySet()));
  }

  @Test
  void aDeletionCascadesAndItsFollowersOtherLeadersTakePartLockingTheirKey() {
    recorded(dependency("delete", PRODUCT, STOCK, "item"));
    EntityId warehouse = EntityId.parse("Thing/warehouse");
    recorded(dependency("update", warehouse, STOCK, "item"));
    Map<EntityId, CoordinatorCore.Part> planned =
        plan(PRODUCT, new Turn.DeleteKey("price")).orElseThrow();
    assertEquals(Map.of("item", LockTable.Mode.WRITE), planned.get(STOCK).reserved());
    assertTrue(planned.containsKey(warehouse), "the stock's other leader forgets it");
    assertEquals(Map.of("price", LockTable.Mode.WRITE), planned.get(warehouse).reserved(),
        "under its key's lock: a registration prepared there must commit first (seed 509)");
  }

  @Test
  void registrationsReachTheirFollowerAndThoseInProgressArePlannedFor() {
    Dependency item = dependency("update", PRODUCT, CART_1, "item");
    Map<EntityId, CoordinatorCore.Part> registering =
        plan(PRODUCT, new Turn.RegisterDependency(item)).orElseThrow();
    assertEquals(Map.of("item", LockTable.Mode.WRITE), registering.get(CART_1).reserved());
    // A price change planned while that registration is still in progress plans the cart too.
    pending.put(item.leader(), List.of(item));
    assertTrue(plan(PRODUCT, new Turn.AssignKeys(Map.of("price", LongNode.valueOf(2))))
        .orElseThrow().containsKey(CART_1));
  }

  @Test
  void aRegistrationWhoseWalkWouldLeaveItsEndsRunsDynamic() {
    // The product's price follows another key of its kind: the walk up would visit it.
    recorded(dependency("update", EntityId.parse("Thing/upstream"), PRODUCT, "price"));
    assertFalse(plan(PRODUCT, new Turn.RegisterDependency(
        dependency("update", PRODUCT, CART_1, "item"))).isPresent());
  }

  @Test
  void eachClientPartCarriesTheLocksWorkedOutForIt() {
    List<Turn> turns = List.of(new Turn.AssignKeys(Map.of("price", LongNode.valueOf(2))));
    Map<EntityId, CoordinatorCore.Part> parts = new LinkedHashMap<>();
    parts.put(PRODUCT, new CoordinatorCore.Part(turns, false));
    Map<EntityId, CompiledType> types = Map.of(PRODUCT, KEYS);
    recorded(dependency("update", PRODUCT, CART_1, "item"));
    Map<EntityId, CoordinatorCore.Part> planned = DependencyPlanner.plan(parts, types,
        id -> Optional.ofNullable(cache.get(id)), leader -> List.of(), 3).orElseThrow();
    AccessSets.KnownLocks known = planned.get(PRODUCT).knownLocks();
    assertTrue(known.appliesTo(KEYS, planned.get(PRODUCT).turns(), false));
    assertEquals(AccessSets.forTransaction(KEYS, turns, false), known.locks());
    assertEquals(null, planned.get(CART_1).knownLocks(), "a follower brought in has no turns");
  }
}
