package dev.troupe.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.Turn;
import dev.troupe.txn.check.ListAppendChecker;
import dev.troupe.txn.check.RecordedTransaction;
import dev.troupe.txn.check.SerializabilityChecker;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The list-append workload of a {@link Simulation} (the workload of Jepsen's Elle): each list is
 * one member of the {@code items} key family of an entity ({@link #MEMBERS} lists per entity), a
 * register holding a JSON array; an {@code append} action adds one unique element to it and a
 * {@code read} action (no effect) reads it. Under {@code keys} admission each action locks only
 * its member, so transactions over disjoint lists of one entity run concurrently and commit in
 * either order: the data-derived checks below then judge key-level locking itself, where a lock
 * released too early lets two transactions interleave inside one entity. Clients run
 * transactions over one to three lists, each list either read or appended to once or twice, as
 * multi-entity transactions (planned or dynamic, as the run says), and single appends as
 * single-entity turns.
 *
 * <p><b>Checked after the run</b> by {@link ListAppendChecker}, against the lists' durable
 * contents: no append applied twice or lost once acknowledged, no aborted append visible, no
 * transaction in part, every read a prefix of its list, no read of another transaction's
 * intermediate state (G1b), and no cycle in the serialization graph whose version order is read off
 * the lists themselves, not taken from versions the node reports.
 *
 * <p><b>PSAC</b> transactions are checked in full, graph included: appends do not commute (two
 * appends in either order leave different lists), so the gate admits an append beside actions in
 * progress only where the order cannot differ, and a read there reads the whole state, which the
 * gate admits only when every outcome of the actions in progress is the same and holds back
 * writers until it is decided (a read lock). The {@code read} action is not used under PSAC: its
 * precondition holds in every outcome, so the gate admits it beside in-flight appends and it
 * answers a state without them, which can show half of a transaction (an open finding of issue
 * 16, see docs/ARCHITECTURE.md).
 */
final class ListAppendWorkload implements Workload {
  static final String LIST_SPEC = """
      type: AppendList
      %s
      keys:
        items: {kind: register, family: true}
      actions:
        append: {params: {list: string, element: string}, members: {items: "items[list]"},
                 effect: {items: "(items == null ? [] : items) + [element]"}}
        read:   {params: {list: string}, members: {items: "items[list]"},
                 pre: ["items == null || size(items) >= 0"]}
      """;

  /** Lists (members of the {@code items} family) per entity. */
  static final List<String> MEMBERS = List.of("a", "b");

  /** One request: its operations and, once committed, what its reads returned. */
  private static final class ListTransaction extends ClientCall {
    final List<ListAppendChecker.Operation> planned;
    final Map<String, List<String>> observed = new LinkedHashMap<>();

    ListTransaction(String id, long issuedMillis, Runnable next,
        List<ListAppendChecker.Operation> planned) {
      super(id, issuedMillis, next);
      this.planned = planned;
    }
  }

  private final Simulation simulation;
  private final Simulation.Options options;
  private final Scheduler scheduler;
  private final CompiledType listType;
  private final List<ListTransaction> transactions = new ArrayList<>();
  private int serializationEdges;

  ListAppendWorkload(Simulation simulation) {
    this.simulation = simulation;
    this.options = simulation.options;
    this.scheduler = simulation.scheduler;
    this.listType = CompiledType.compile(SpecParser.parse("AppendList",
        LIST_SPEC.formatted(options.admissionSpec()).getBytes(StandardCharsets.UTF_8), true));
  }

  @Override
  public Map<String, CompiledType> types() {
    return Map.of("AppendList", listType);
  }

  @Override
  public void preload() {
    // Lists start empty (the register's default): nothing to write.
  }

  @Override
  public Iterable<? extends ClientCall> calls() {
    return transactions;
  }

  @Override
  public int serializationEdges() {
    return serializationEdges;
  }

  @Override
  public ClientCall issue(String client, int sequence, Runnable next) {
    var random = scheduler.random();
    String id = "list-" + client + "-" + sequence;
    TransactionShape shape = TransactionShape.draw(random, allLists());
    List<String> chosen = shape.chosen();
    boolean single = shape.single();
    int width = shape.width();
    List<ListAppendChecker.Operation> operations = new ArrayList<>();
    for (int index = 0; index < width; index++) {
      String list = chosen.get(index);
      if (!single && random.nextBoolean()) {
        operations.add(new ListAppendChecker.Operation.Read(list, List.of()));
        continue;
      }
      int appends = single ? 1 : 1 + random.nextInt(2);
      for (int element = 0; element < appends; element++) {
        operations.add(new ListAppendChecker.Operation.Append(list,
            client.substring("client-".length()) + "." + sequence + "." + index + "." + element));
      }
    }
    ListTransaction transaction =
        new ListTransaction(id, scheduler.nowMillis(), next, operations);
    transactions.add(transaction);
    simulation.toNode(client, "list transaction " + id, node -> {
      if (single) {
        ListAppendChecker.Operation.Append append =
            (ListAppendChecker.Operation.Append) operations.get(0);
        node.turn(id, entity(append.list()), appendTurn(append.list(), append.element()),
            result -> answer(client, transaction, ClientCall.Outcome.of(result)));
        return;
      }
      node.transact(id, parts(operations), options.planned(), outcome -> {
        if (outcome instanceof CoordinatorCore.Outcome.Committed committed) {
          // Only the lists it read: under keys admission the state's other members were not
          // locked by this transaction.
          for (ListAppendChecker.Operation operation : operations) {
            if (operation instanceof ListAppendChecker.Operation.Read read) {
              transaction.observed.put(read.list(),
                  items(committed.results().get(entity(read.list())).state(), read.list()));
            }
          }
        }
        answer(client, transaction, ClientCall.Outcome.of(outcome));
      });
    });
    return transaction;
  }

  private void answer(String client, ListTransaction transaction, ClientCall.Outcome outcome) {
    simulation.toClient(client, "answer " + transaction.id, () -> transaction.decide(outcome));
  }

  /**
   * Per entity: the reads and appends of its lists, in order. Under {@code keys} admission a read
   * is the {@code read} action, which locks its member only; otherwise the part reads the whole
   * state: under {@code psac} a read-only action is admitted beside in-flight appends (its
   * precondition holds whatever they do) and returns a state they may still change, so only a
   * whole-state read, which waits for them, observes a serializable list.
   */
  private Map<EntityId, CoordinatorCore.Part> parts(
      List<ListAppendChecker.Operation> operations) {
    boolean memberReads = options.admission().equals("keys");
    Map<EntityId, List<Turn>> turns = new LinkedHashMap<>();
    Map<EntityId, Boolean> readsState = new LinkedHashMap<>();
    for (ListAppendChecker.Operation operation : operations) {
      EntityId entity = entity(operation.list());
      List<Turn> entityTurns = turns.computeIfAbsent(entity, ignored -> new ArrayList<>());
      switch (operation) {
        case ListAppendChecker.Operation.Append append ->
            entityTurns.add(appendTurn(append.list(), append.element()));
        case ListAppendChecker.Operation.Read read when memberReads -> {
          ObjectNode params = Json.NODES.objectNode();
          params.put("list", member(read.list()));
          entityTurns.add(new Turn.InvokeAction("read", params));
        }
        case ListAppendChecker.Operation.Read read -> readsState.put(entity, true);
      }
    }
    Map<EntityId, CoordinatorCore.Part> parts = new LinkedHashMap<>();
    turns.forEach((entity, list) -> parts.put(entity,
        new CoordinatorCore.Part(list, readsState.getOrDefault(entity, false))));
    return parts;
  }

  private static Turn appendTurn(String list, String element) {
    ObjectNode params = Json.NODES.objectNode();
    params.put("list", member(list));
    params.put("element", element);
    return new Turn.InvokeAction("append", params);
  }

  @Override
  public String check() {
    Map<String, List<String>> lists = new LinkedHashMap<>();
    for (String list : allLists()) {
      EntityState state = simulation.cluster.finalState(entity(list));
      if (state != null) {
        lists.put(list, items(state, list));
      }
    }
    // A list whose final read answered corrupt_data (damage) is judged by what its successful
    // reads returned instead: the longest of them stands in for its final contents, so every read
    // must still be a prefix of it and hold no aborted or unknown element, and the appends in it
    // keep their place in the version order. Appends beyond it are dropped from the history: where
    // they went cannot be read.
    for (String name : allLists()) {
      if (!lists.containsKey(name)) {
        List<String> longest = List.of();
        for (ListTransaction transaction : transactions) {
          List<String> read = transaction.outcome() == ClientCall.Outcome.COMMITTED
              ? transaction.observed.get(name) : null;
          if (read != null && read.size() > longest.size()) {
            longest = read;
          }
        }
        lists.put(name, longest);
      }
    }
    java.util.Set<String> unreadable = new java.util.HashSet<>();
    for (EntityId entity : simulation.cluster.unreadableAtEnd()) {
      if (entity.type().equals("AppendList")) {
        for (String member : MEMBERS) {
          unreadable.add(entity.id() + "." + member);
        }
      }
    }
    List<ListAppendChecker.Transaction> history = new ArrayList<>();
    for (ListTransaction transaction : transactions) {
      RecordedTransaction.Outcome outcome = transaction.outcome().recorded();
      List<ListAppendChecker.Operation> operations = new ArrayList<>();
      for (ListAppendChecker.Operation operation : transaction.planned) {
        if (operation instanceof ListAppendChecker.Operation.Read read) {
          // What a read returned is known only when the client heard that it committed.
          if (outcome == RecordedTransaction.Outcome.COMMITTED) {
            operations.add(new ListAppendChecker.Operation.Read(read.list(),
                transaction.observed.get(read.list())));
          }
        } else if (operation instanceof ListAppendChecker.Operation.Append append
            && unreadable.contains(append.list())
            && !lists.get(append.list()).contains(append.element())) {
          continue; // beyond what any read of the unreadable list showed
        } else {
          operations.add(operation);
        }
      }
      history.add(new ListAppendChecker.Transaction(transaction.id, outcome, operations));
    }
    return switch (ListAppendChecker.check(history, lists)) {
      case SerializabilityChecker.Serializable serializable -> {
        serializationEdges = serializable.edges();
        yield null;
      }
      case SerializabilityChecker.Violation violation -> "list-append: " + violation.kind()
          + ": " + violation.explanation();
    };
  }

  /** The elements of one list in its entity's state. */
  private static List<String> items(EntityState state, String list) {
    List<String> items = new ArrayList<>();
    if (state.get("items[" + member(list) + "]") instanceof RegisterValue register) {
      for (JsonNode element : register.value()) {
        items.add(element.asText());
      }
    }
    return items;
  }

  /** Every list, named {@code entity.member}: {@code lists} entities of {@link #MEMBERS}. */
  private List<String> allLists() {
    List<String> names = new ArrayList<>();
    for (int entity = 0; entity < options.lists(); entity++) {
      for (String member : MEMBERS) {
        names.add("l" + entity + "." + member);
      }
    }
    return names;
  }

  private static EntityId entity(String list) {
    return new EntityId("AppendList", list.substring(0, list.indexOf('.')));
  }

  private static String member(String list) {
    return list.substring(list.indexOf('.') + 1);
  }
}
