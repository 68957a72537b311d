package dev.troupe.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.LongNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyKeys;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.value.DependencyTable;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.model.value.Value;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.Turn;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The dependencies workload of a {@link Simulation}: products with a price, carts whose items
 * replicate the price through a dependency their type declares ({@code item[p]} follows {@code
 * Product/{p}.price}), and stocks that a declared delete dependency ties to their product (a
 * foreign key). Clients change prices, add items (registering), remove them (deregistering),
 * delete products (cascading to the stock, deregistering the carts) and restock (registering the
 * stock again, refused while the product does not exist). Every request is a dynamic
 * transaction, so the forwards, the follower joins and the participants' second evaluations run
 * under the simulator's crashes, lost messages and reorderings.
 *
 * <p><b>Checked after the run</b>, on the durable states: every dependency a leader records its
 * follower records too, and the other way round (no registration or deregistration was half
 * applied); every cart item that follows a price equals it; a stock with a quantity follows an
 * existing product (no orphan stock); every product's price is its opening one or the value of a
 * price change that was not refused, and no refused price is anywhere.
 */
final class DependencyWorkload implements Workload {
  private static final long OPENING_PRICE = 100;

  static final String PRODUCT_SPEC = """
      type: Product
      %s
      keys:
        price: {kind: register}
      """;

  static final String CART_SPEC = """
      type: Cart
      %s
      keys:
        item: {kind: register, family: true}
      actions:
        add: {params: {p: string}, members: {item: "item[p]"}, pre: ["item == null"],
              effect: {item: "-1"}}
      dependencies:
        - {follower: "item[p]", kind: update, leader: {entity: "Product/{p}", key: price},
           function: replicate}
      """;

  static final String STOCK_SPEC = """
      type: Stock
      %s
      keys:
        available: {kind: register}
      dependencies:
        - {follower: available, kind: delete, leader: {entity: "Product/{id}", key: price}}
      """;

  private enum Kind { SET_PRICE, ADD_ITEM, REMOVE_ITEM, DELETE_PRODUCT, RESTOCK }

  private static final class Request extends ClientCall {
    final Kind kind;
    final int product;
    final int cart;
    final long price;

    Request(String id, long issuedMillis, Runnable next, Kind kind, int product, int cart,
        long price) {
      super(id, issuedMillis, next);
      this.kind = kind;
      this.product = product;
      this.cart = cart;
      this.price = price;
    }
  }

  private final Simulation simulation;
  private final Simulation.Options options;
  private final Scheduler scheduler;
  private final Map<String, CompiledType> types = new LinkedHashMap<>();
  private final List<Request> requests = new ArrayList<>();
  private long nextPrice = OPENING_PRICE + 1;

  DependencyWorkload(Simulation simulation) {
    this.simulation = simulation;
    this.options = simulation.options;
    this.scheduler = simulation.scheduler;
    for (String spec : List.of(PRODUCT_SPEC, CART_SPEC, STOCK_SPEC)) {
      CompiledType type = CompiledType.compile(SpecParser.parse(null,
          spec.formatted(options.admissionSpec()).getBytes(StandardCharsets.UTF_8), true));
      types.put(type.name(), type);
    }
  }

  private int products() {
    return Math.max(2, options.lists());
  }

  private int carts() {
    return Math.max(2, options.lists());
  }

  private static EntityId product(int product) {
    return new EntityId("Product", "p" + product);
  }

  private static EntityId cart(int cart) {
    return new EntityId("Cart", "c" + cart);
  }

  private static EntityId stock(int product) {
    return new EntityId("Stock", "p" + product);
  }

  private static Dependency stockDependency(int product) {
    return Dependency.fromJson(Json.parse(("{\"kind\":\"delete\",\"leader\":{\"entity\":\"%s\","
        + "\"key\":\"price\"},\"follower\":{\"entity\":\"%s\",\"key\":\"available\"}}")
        .formatted(product(product), stock(product))));
  }

  @Override
  public Map<String, CompiledType> types() {
    return types;
  }

  /** Products with their price and a stock tied to each (both ends' records written as is). */
  @Override
  public void preload() {
    for (int product = 0; product < products(); product++) {
      Dependency tie = stockDependency(product);
      simulation.cluster.preload(product(product), List.of(
          new Operation.Assign("price", LongNode.valueOf(OPENING_PRICE)),
          new Operation.RecordDependency(DependencyKeys.outgoing("price"), tie, null)));
      simulation.cluster.preload(stock(product), List.of(
          new Operation.Assign("available", LongNode.valueOf(10)),
          new Operation.RecordDependency(DependencyKeys.incoming("available"), tie, null)));
    }
  }

  @Override
  public Iterable<? extends ClientCall> calls() {
    return requests;
  }

  @Override
  public int serializationEdges() {
    return 0;
  }

  @Override
  public ClientCall issue(String client, int sequence, Runnable next) {
    var random = scheduler.random();
    int draw = random.nextInt(20);
    Kind kind = draw < 7 ? Kind.SET_PRICE : draw < 12 ? Kind.ADD_ITEM : draw < 16
        ? Kind.REMOVE_ITEM : draw < 18 ? Kind.DELETE_PRODUCT : Kind.RESTOCK;
    Request request = new Request("dependency-" + client + "-" + sequence, scheduler.nowMillis(),
        next, kind, random.nextInt(products()), random.nextInt(carts()),
        kind == Kind.SET_PRICE ? nextPrice++ : 0);
    requests.add(request);
    Map<EntityId, CoordinatorCore.Part> parts = new LinkedHashMap<>();
    String member = "item[p" + request.product + "]";
    switch (kind) {
      case SET_PRICE -> parts.put(product(request.product), part(new Turn.AssignKeys(
          Map.of("price", LongNode.valueOf(request.price)))));
      case ADD_ITEM -> parts.put(cart(request.cart), part(new Turn.InvokeAction("add",
          Json.NODES.objectNode().put("p", "p" + request.product))));
      case REMOVE_ITEM -> parts.put(cart(request.cart), part(new Turn.DeleteKey(member)));
      case DELETE_PRODUCT -> parts.put(product(request.product), part(new Turn.DeleteEntity()));
      case RESTOCK -> parts.put(stock(request.product), part(new Turn.AssignKeys(
          Map.of("available", LongNode.valueOf(10)))));
    }
    simulation.toNode(client, "dependency request " + request.id, node ->
        // Dynamic: a planned transaction that forwards gives up and the runtime (not modelled
        // here) runs it again dynamic.
        node.transact(request.id, parts, false, outcome -> simulation.toClient(client,
            "answer " + request.id, () -> request.decide(ClientCall.Outcome.of(outcome)))));
    return request;
  }

  private static CoordinatorCore.Part part(Turn turn) {
    return new CoordinatorCore.Part(List.of(turn), false);
  }

  @Override
  public String check() {
    Map<EntityId, EntityState> states = new LinkedHashMap<>();
    List<EntityId> entities = new ArrayList<>();
    for (int product = 0; product < products(); product++) {
      entities.add(product(product));
      entities.add(stock(product));
    }
    for (int cart = 0; cart < carts(); cart++) {
      entities.add(cart(cart));
    }
    // An entity whose final read answered corrupt_data (damage) is excluded: every check that
    // needs its state is skipped.
    Set<EntityId> unreadable = new HashSet<>();
    for (EntityId entity : entities) {
      EntityState state = simulation.cluster.finalState(entity);
      if (state == null) {
        unreadable.add(entity);
      } else {
        states.put(entity, state);
      }
    }
    // Both ends record every dependency.
    for (Map.Entry<EntityId, EntityState> entry : states.entrySet()) {
      for (Map.Entry<String, Value> value : entry.getValue().values().entrySet()) {
        if (!(value.getValue() instanceof DependencyTable table)) {
          continue;
        }
        boolean outgoing = DependencyKeys.isOutgoing(value.getKey());
        for (DependencyTable.Entry record : table.all()) {
          Dependency dependency = record.dependency();
          EntityId other = outgoing ? dependency.follower().entity()
              : dependency.leader().entity();
          String otherKey = outgoing ? DependencyKeys.incoming(dependency.follower().key())
              : DependencyKeys.outgoing(dependency.leader().key());
          if (unreadable.contains(other)) {
            continue;
          }
          EntityState otherState = states.get(other);
          if (otherState == null || !(otherState.get(otherKey) instanceof DependencyTable mirror)
              || mirror.get(dependency.id()) == null) {
            return entry.getKey() + " records dependency " + dependency.leader() + " -> "
                + dependency.follower() + " but " + other + " does not";
          }
        }
      }
    }
    Set<Long> refused = new HashSet<>();
    Set<Long> possible = new HashSet<>(List.of(OPENING_PRICE));
    for (Request request : requests) {
      if (request.kind == Kind.SET_PRICE) {
        (request.outcome() == ClientCall.Outcome.ABORTED ? refused : possible).add(request.price);
      }
    }
    for (int product = 0; product < products(); product++) {
      if (unreadable.contains(product(product))) {
        continue;
      }
      JsonNode price = value(states.get(product(product)), "price");
      if (price != null && !possible.contains(price.asLong())) {
        return product(product) + " has price " + price + ", which no price change left there";
      }
      if (unreadable.contains(stock(product))) {
        continue;
      }
      DependencyTable tie = table(states.get(stock(product)),
          DependencyKeys.incoming("available"));
      if (value(states.get(stock(product)), "available") != null
          && (price == null || tie.get(stockDependency(product).id()) == null)) {
        return stock(product) + " has a quantity but its product " + (price == null
            ? "does not exist" : "is not its leader") + " (an orphan stock)";
      }
    }
    for (int cart = 0; cart < carts(); cart++) {
      if (unreadable.contains(cart(cart))) {
        continue;
      }
      EntityState state = states.get(cart(cart));
      for (int product = 0; product < products(); product++) {
        String member = "item[p" + product + "]";
        JsonNode item = value(state, member);
        if (item != null && refused.contains(item.asLong())) {
          return cart(cart) + " holds refused price " + item;
        }
        if (table(state, DependencyKeys.incoming(member)).isEmpty()
            || unreadable.contains(product(product))) {
          continue;
        }
        JsonNode price = value(states.get(product(product)), "price");
        if (item == null || !item.equals(price)) {
          return cart(cart) + "'s " + member + " is " + item + " but it follows "
              + product(product) + ".price, which is " + price;
        }
      }
    }
    return null;
  }

  private static JsonNode value(EntityState state, String key) {
    return state.exists() && state.get(key) instanceof RegisterValue register
        ? register.value() : null;
  }

  private static DependencyTable table(EntityState state, String key) {
    return state.get(key) instanceof DependencyTable table ? table : DependencyTable.EMPTY;
  }
}
