package dev.troupe.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.value.CounterValue;
import dev.troupe.model.value.SetValue;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.Turn;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The counters-and-sets workload of a {@link Simulation}: each tally entity has a {@code total}
 * counter and an {@code applied} set (an observed-remove set, with tags), and every change moves
 * both at once: {@code add} increments the counter and adds the request's id, {@code revoke}
 * decrements it and removes an id an earlier acknowledged add put there. Some adds are
 * transactions over two tallies (the same id on both). So the counter and set kinds, their
 * operations (increments, tagged adds, removes by observed tags), their checkpoints and their
 * materialization go through crashes and recovery.
 *
 * <p><b>Checked after the run</b>: each tally's counter equals the sum of the amounts of the ids
 * in its set (a change is never half applied); an acknowledged add is present unless revoked, a
 * refused one nowhere; an acknowledged revoke removed its id, a refused one did not; a two-tally
 * add is on both or neither; no id appears where it was never added. With one node this checks
 * the kinds' operations and their recovery; convergence between replicas waits for replication.
 */
final class CounterSetWorkload implements Workload {
  static final String TALLY_SPEC = """
      type: Tally
      %s
      keys:
        total:   {kind: counter}
        applied: {kind: set}
      actions:
        add:    {params: {amount: int, id: string}, pre: ["amount > 0", "!(id in applied)"],
                 effect: {total: "total + amount", applied: "applied + [id]"}}
        revoke: {params: {amount: int, id: string}, pre: ["id in applied"],
                 effect: {total: "total - amount", applied: "applied.filter(x, x != id)"}}
      """;

  private enum Kind { ADD, PAIR_ADD, REVOKE }

  /** One request; {@code second} is the other tally of a two-tally add, else -1. */
  private static final class Change extends ClientCall {
    final Kind kind;
    final int tally;
    final int second;
    final long amount;
    /** A revoke: the add it revokes. */
    final Change revoked;

    Change(String id, long issuedMillis, Runnable next, Kind kind, int tally, int second,
        long amount, Change revoked) {
      super(id, issuedMillis, next);
      this.kind = kind;
      this.tally = tally;
      this.second = second;
      this.amount = amount;
      this.revoked = revoked;
    }

    /** The id the change puts into (or takes out of) the sets. */
    String element() {
      return revoked == null ? id : revoked.id;
    }
  }

  private final Simulation simulation;
  private final Simulation.Options options;
  private final Scheduler scheduler;
  private final CompiledType tallyType;
  private final List<Change> changes = new ArrayList<>();
  /** Acknowledged single adds not yet chosen for a revoke. */
  private final List<Change> revocable = new ArrayList<>();

  CounterSetWorkload(Simulation simulation) {
    this.simulation = simulation;
    this.options = simulation.options;
    this.scheduler = simulation.scheduler;
    this.tallyType = CompiledType.compile(SpecParser.parse("Tally",
        TALLY_SPEC.formatted(options.admissionSpec()).getBytes(StandardCharsets.UTF_8), true));
  }

  @Override
  public Map<String, CompiledType> types() {
    return Map.of("Tally", tallyType);
  }

  @Override
  public void preload() {
    // Tallies start at their defaults (0 and the empty set): nothing to write.
  }

  @Override
  public Iterable<? extends ClientCall> calls() {
    return changes;
  }

  @Override
  public int serializationEdges() {
    return 0;
  }

  @Override
  public ClientCall issue(String client, int sequence, Runnable next) {
    var random = scheduler.random();
    String id = "tally-" + client + "-" + sequence;
    int draw = random.nextInt(10);
    Change change;
    if (draw < 5 && !revocable.isEmpty()) {
      Change add = revocable.remove(random.nextInt(revocable.size()));
      change = new Change(id, scheduler.nowMillis(), next, Kind.REVOKE, add.tally, -1,
          add.amount, add);
    } else {
      int tally = random.nextInt(options.lists());
      int second = options.lists() > 1 && draw >= 7
          ? (tally + 1 + random.nextInt(options.lists() - 1)) % options.lists() : -1;
      change = new Change(id, scheduler.nowMillis(), next, second < 0 ? Kind.ADD : Kind.PAIR_ADD,
          tally, second, 1 + random.nextInt(50), null);
    }
    changes.add(change);
    Change issued = change;
    simulation.toNode(client, "tally change " + id, node -> {
      Turn turn = action(issued.kind == Kind.REVOKE ? "revoke" : "add", issued);
      if (issued.kind != Kind.PAIR_ADD) {
        node.turn(id, tally(issued.tally), turn, result -> answer(client, issued,
            ClientCall.Outcome.of(result)));
        return;
      }
      Map<EntityId, CoordinatorCore.Part> parts = new LinkedHashMap<>();
      parts.put(tally(issued.tally), new CoordinatorCore.Part(List.of(turn), false));
      parts.put(tally(issued.second), new CoordinatorCore.Part(List.of(turn), false));
      node.transact(id, parts, options.planned(), outcome -> answer(client, issued,
          ClientCall.Outcome.of(outcome)));
    });
    return change;
  }

  private void answer(String client, Change change, ClientCall.Outcome outcome) {
    simulation.toClient(client, "answer " + change.id, () -> {
      if (change.decide(outcome) && outcome == ClientCall.Outcome.COMMITTED
          && change.kind == Kind.ADD) {
        revocable.add(change);
      }
    });
  }

  private static Turn action(String action, Change change) {
    ObjectNode params = Json.NODES.objectNode();
    params.put("amount", change.amount);
    params.put("id", change.element());
    return new Turn.InvokeAction(action, params);
  }

  @Override
  public String check() {
    Map<String, Long> amountOf = new HashMap<>();
    Map<String, Set<Integer>> addedTo = new HashMap<>();
    Map<String, Change> revokeOf = new HashMap<>();
    for (Change change : changes) {
      if (change.kind == Kind.REVOKE) {
        revokeOf.put(change.element(), change);
        continue;
      }
      amountOf.put(change.id, change.amount);
      Set<Integer> tallies = new HashSet<>(List.of(change.tally));
      if (change.second >= 0) {
        tallies.add(change.second);
      }
      addedTo.put(change.id, tallies);
    }
    // Null: the tally's final read answered corrupt_data (damage); it is excluded.
    List<Set<String>> sets = new ArrayList<>();
    for (int tally = 0; tally < options.lists(); tally++) {
      EntityState state = simulation.cluster.finalState(tally(tally));
      if (state == null) {
        sets.add(null);
        continue;
      }
      Set<String> applied = elements(state);
      sets.add(applied);
      long expected = 0;
      for (String element : applied) {
        Long amount = amountOf.get(element);
        if (amount == null || !addedTo.get(element).contains(tally)) {
          return "tally " + tally + " holds " + element + ", which was never added to it";
        }
        expected += amount;
      }
      long total = state.get("total") instanceof CounterValue counter ? counter.total() : 0;
      if (total != expected) {
        return "tally " + tally + " counts " + total + " but its set " + applied + " sums to "
            + expected + " (a change applied in part)";
      }
    }
    for (Change change : changes) {
      if (change.kind == Kind.REVOKE) {
        if (sets.get(change.tally) == null) {
          continue;
        }
        boolean present = sets.get(change.tally).contains(change.element());
        if (change.outcome() == ClientCall.Outcome.COMMITTED && present) {
          return "acknowledged revoke " + change.id + " left " + change.element() + " in place";
        }
        if (change.outcome() == ClientCall.Outcome.ABORTED && !present) {
          return "refused revoke " + change.id + " removed " + change.element();
        }
        continue;
      }
      Change revoke = revokeOf.get(change.id);
      boolean mayBeRevoked = revoke != null && revoke.outcome() != ClientCall.Outcome.ABORTED;
      Set<String> first = sets.get(change.tally);
      Set<String> second = change.second >= 0 ? sets.get(change.second) : null;
      if (change.kind == Kind.PAIR_ADD && first != null && second != null
          && first.contains(change.id) != second.contains(change.id)) {
        return "two-tally add " + change.id + " is on one tally only";
      }
      // Each readable tally it went to must agree with its outcome.
      for (Set<String> set : java.util.Arrays.asList(first, second)) {
        if (set == null) {
          continue;
        }
        if (change.outcome() == ClientCall.Outcome.COMMITTED && !set.contains(change.id)
            && !mayBeRevoked) {
          return "acknowledged add " + change.id + " was lost";
        }
        if (change.outcome() == ClientCall.Outcome.ABORTED && set.contains(change.id)) {
          return "refused add " + change.id + " took effect";
        }
      }
    }
    return null;
  }

  private static Set<String> elements(EntityState state) {
    Set<String> elements = new HashSet<>();
    if (state.get("applied") instanceof SetValue set) {
      for (JsonNode element : set.toJson()) {
        elements.add(element.asText());
      }
    }
    return elements;
  }

  private static EntityId tally(int tally) {
    return new EntityId("Tally", "t" + tally);
  }
}
