package dev.troupe.txn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.LongNode;
import dev.troupe.model.Deletions;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.ModelMutations;
import dev.troupe.model.Operation;
import dev.troupe.model.causal.ReplicaApplication;
import dev.troupe.model.value.SetValue;
import dev.troupe.model.value.Tag;
import dev.troupe.model.value.Value;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import org.junit.jupiter.api.Test;

/**
 * Deletes converge across data centres (docs/ARCHITECTURE.md, "Deletes across data centres"): for
 * random concurrent histories of register writes and deletions, increments, additions, removals,
 * key deletions of every kind and entity deletions at three data centres, each delivered to every
 * other data centre in a causal order the run picks, every data centre ends with the same
 * materialized state: the same values, the same existence, the same tombstones.
 *
 * <p>Each origin makes its operations as the turn evaluator does, against its own state: a
 * deletion through {@link Deletions} (what the turn observed goes with it). A remote part is
 * applied as the entity turn applies one ({@link TurnEvaluator#replicaApplication}: the replication
 * marker, then each operation's {@link ReplicatedOperations#replicated} form) at a local commit
 * timestamp past the part's stamp, as the replication shell's clock makes it.
 */
class ConvergentDeletesProperties {
  private static final int DATA_CENTRES = 3;
  private static final List<JsonNode> ELEMENTS =
      List.of(Json.parse("1"), Json.parse("\"a\""), Json.parse("[2]"));

  sealed interface Step {}

  /** A data centre commits a turn of the given kind (see {@link #operations}). */
  record Write(int dataCentre, int kind, int choice) implements Step {}

  /** A data centre receives one part that is ready for it (pick-th among them, modulo). */
  record Deliver(int dataCentre, int pick) implements Step {}

  /** A committed part as it is replicated. */
  record Event(int id, int originDc, long stamp, List<Operation> operations, Set<Integer> follows) {}

  static final class Replica {
    final int dataCentre;
    EntityState state = EntityState.ABSENT;
    long clock;
    final Set<Integer> applied = new HashSet<>();

    Replica(int dataCentre) {
      this.dataCentre = dataCentre;
    }

    void applyRemote(Event event) {
      clock = Math.max(clock, event.stamp()) + 1;
      List<Operation> operations = TurnEvaluator.replicaApplication(state,
          new Turn.ApplyReplicated(event.originDc(), event.stamp(), event.stamp(),
              event.operations()));
      if (!operations.isEmpty()) {
        state = state.apply(operations, clock, dataCentre);
      }
      applied.add(event.id());
    }
  }

  @Provide
  Arbitrary<List<Step>> runs() {
    Arbitrary<Integer> dataCentre = Arbitraries.integers().between(1, DATA_CENTRES);
    Arbitrary<Step> write = Combinators.combine(dataCentre, Arbitraries.integers().between(0, 10),
        Arbitraries.integers().between(0, 5)).as(Write::new);
    Arbitrary<Step> deliver = Combinators.combine(dataCentre,
        Arbitraries.integers().between(0, 50)).as(Deliver::new);
    return Arbitraries.frequencyOf(Tuple.of(3, write), Tuple.of(2, deliver)).list().ofMaxSize(50);
  }

  @Provide
  Arbitrary<List<Integer>> picks() {
    return Arbitraries.integers().between(0, 50).list().ofMaxSize(80);
  }

  @Property(tries = 1000)
  void everyDataCentreEndsWithTheSameState(@ForAll("runs") List<Step> steps,
      @ForAll("picks") List<Integer> finalPicks) {
    List<Replica> replicas = run(steps, finalPicks);
    Map<String, Object> first = view(replicas.get(0).state);
    for (Replica replica : replicas) {
      assertEquals(first, view(replica.state), "data centre " + replica.dataCentre);
    }
  }

  /**
   * The example of the issue: DC 1 deletes a register at (10, 1) while DC 2 writes it at (9, 2).
   * Both end without the key; with the breakage that leaves no tombstone, DC 1 shows DC 2's older
   * write (what the simulator's convergence checker must catch).
   */
  @Test
  void aDeletionBeatsAnOlderConcurrentWriteEverywhere() {
    assertEquals(deletedVersusOlderWrite(true), deletedVersusOlderWrite(false));
    assertEquals(Map.of("exists", true), withoutStamps(deletedVersusOlderWrite(true)));
    ModelMutations.enable(ModelMutations.Mutation.DELETE_WITHOUT_TOMBSTONE);
    try {
      assertNotEquals(withoutStamps(deletedVersusOlderWrite(true)),
          withoutStamps(deletedVersusOlderWrite(false)));
    } finally {
      ModelMutations.clear();
    }
  }

  /** Runs the example; answers DC 1's state if {@code atDeleter}, else DC 2's. */
  private static Map<String, Object> deletedVersusOlderWrite(boolean atDeleter) {
    Replica one = new Replica(1);
    Replica two = new Replica(2);
    Event created = new Event(0, 1, 5, List.of(new Operation.Assign("r", Json.parse("0")),
        new Operation.Assign("other", Json.parse("0"))), Set.of());
    one.state = one.state.apply(created.operations(), 5, 1);
    one.applied.add(0);
    two.applyRemote(created);
    one.clock = 9;
    two.clock = 8;
    Event deleted = new Event(1, 1, 10, List.of(Deletions.ofKey(one.state, "r")),
        Set.of(0));
    one.state = one.state.apply(deleted.operations(), 10, 1);
    one.clock = 10;
    Event written = new Event(2, 2, 9, List.of(new Operation.Assign("r", Json.parse("2"))),
        Set.of(0));
    two.state = two.state.apply(written.operations(), 9, 2);
    one.applyRemote(written);
    two.applyRemote(deleted);
    return view((atDeleter ? one : two).state);
  }

  /** What clients see of the register "r" and of existence. */
  private static Map<String, Object> withoutStamps(Map<String, Object> view) {
    Map<String, Object> result = new TreeMap<>();
    view.forEach((key, value) -> {
      if (key.equals("r") || key.equals("exists")) {
        result.put(key, value);
      }
    });
    return result;
  }

  private static List<Replica> run(List<Step> steps, List<Integer> finalPicks) {
    List<Replica> replicas = new ArrayList<>();
    for (int dc = 1; dc <= DATA_CENTRES; dc++) {
      replicas.add(new Replica(dc));
    }
    List<Event> events = new ArrayList<>();
    for (Step step : steps) {
      switch (step) {
        case Write write -> {
          Replica origin = replicas.get(write.dataCentre() - 1);
          List<Operation> operations = operations(origin, write, events.size());
          if (operations.isEmpty()) {
            continue; // the evaluator refuses it (nothing to delete) or it writes nothing
          }
          origin.clock++;
          Event event = new Event(events.size(), origin.dataCentre, origin.clock, operations,
              Set.copyOf(origin.applied));
          events.add(event);
          origin.state = origin.state.apply(operations, origin.clock, origin.dataCentre);
          origin.applied.add(event.id());
        }
        case Deliver deliver ->
            deliverOne(replicas.get(deliver.dataCentre() - 1), events, deliver.pick());
      }
    }
    int next = 0;
    for (Replica replica : replicas) {
      while (replica.applied.size() < events.size()) {
        int pick = next < finalPicks.size() ? finalPicks.get(next++) : 0;
        deliverOne(replica, events, pick);
      }
    }
    return replicas;
  }

  private static void deliverOne(Replica replica, List<Event> events, int pick) {
    List<Event> ready = new ArrayList<>();
    for (Event event : events) {
      if (!replica.applied.contains(event.id()) && replica.applied.containsAll(event.follows())) {
        ready.add(event);
      }
    }
    if (!ready.isEmpty()) {
      replica.applyRemote(ready.get(pick % ready.size()));
    }
  }

  /**
   * The operations a turn at the origin makes against its own state, as the turn evaluator makes
   * them (deletions of absent keys and entities are refused: none).
   */
  private static List<Operation> operations(Replica origin, Write write, int eventId) {
    EntityState state = origin.state;
    JsonNode element = ELEMENTS.get(write.choice() % ELEMENTS.size());
    String register = write.choice() % 2 == 0 ? "r" : "q";
    return switch (write.kind()) {
      case 0, 1 -> List.of(new Operation.Assign(register, LongNode.valueOf(write.choice())));
      case 2 -> state.get(register) == null
          ? List.of()
          : List.of(Deletions.ofKey(state, register));
      case 3 -> List.of(new Operation.Increment("c", write.choice() - 2 == 0 ? 7
          : write.choice() - 2));
      case 4 -> state.get("c") == null ? List.of() : List.of(Deletions.ofKey(state, "c"));
      case 5 -> List.of(new Operation.AddElement("s", element,
          new Tag(origin.dataCentre, eventId, 0)));
      case 6 -> {
        Set<Tag> observed =
            state.get("s") instanceof SetValue set ? set.tagsOf(element) : Set.of();
        yield observed.isEmpty()
            ? List.of()
            : List.of(new Operation.RemoveElement("s", element, observed));
      }
      case 7 -> state.get("s") == null ? List.of() : List.of(Deletions.ofKey(state, "s"));
      case 8 -> state.exists() ? Deletions.ofEntity(state) : List.of();
      case 9 -> {
        if (!state.exists()) {
          yield List.of();
        }
        List<Operation> recreated = new ArrayList<>(Deletions.ofEntity(state));
        recreated.add(new Operation.Assign(register, LongNode.valueOf(100 + write.choice())));
        yield recreated;
      }
      default -> List.of(new Operation.Assign(register, LongNode.valueOf(write.choice())),
          new Operation.Increment("c", 1), Deletions.ofKey(state, "q"));
    };
  }

  /**
   * The whole materialized state but its version (each data centre's own commit timestamp):
   * values but replication markers, existence, key and entity tombstones, deleted counter sums, write counts. An empty set counts as absent (a limit: see
   * docs/ARCHITECTURE.md, "Deletes across data centres").
   */
  private static Map<String, Object> view(EntityState state) {
    Map<String, Object> view = new TreeMap<>();
    for (Map.Entry<String, Value> entry : state.values().entrySet()) {
      if ((entry.getValue() instanceof SetValue set && set.size() == 0)
          || ReplicaApplication.isMarkerKey(entry.getKey())) {
        continue; // markers: each data centre holds those of the others
      }
      view.put(entry.getKey(), entry.getValue());
    }
    view.put("exists", state.exists());
    state.tombstones().forEach((key, stamp) -> view.put("tombstone " + key, stamp));
    if (state.entityTombstone() != null) {
      view.put("entity tombstone", state.entityTombstone());
    }
    state.deletedCounters().forEach((key, deleted) -> view.put("deleted " + key, deleted));
    view.put("write counts", state.writeCounts());
    view.put("deleted write counts", state.deletedWriteCounts());
    return view;
  }
}
