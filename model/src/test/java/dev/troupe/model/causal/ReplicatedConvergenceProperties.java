package dev.troupe.model.causal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.LongNode;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.ModelMutations;
import dev.troupe.model.Operation;
import dev.troupe.model.value.CounterValue;
import dev.troupe.model.value.RegisterValue;
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
import org.junit.jupiter.api.Test;

/**
 * Convergence of the materializer across data centres (docs/ARCHITECTURE.md, "Applying a remote
 * transaction"): every data centre applies its own writes as local operations and the others' as
 * they are replicated (register writes as {@link Operation.AssignReplicated} with their origin's
 * stamp), each in its own causally valid order; once every write reached every data centre, all
 * hold the same values. Stamps come from per-data-centre clocks that advance past every stamp
 * received (as the replication shell's clock does), so concurrent writes in different data centres
 * often share a timestamp: the data centre id breaks the tie.
 */
class ReplicatedConvergenceProperties {
  private static final int DATA_CENTRES = 3;
  private static final List<JsonNode> ELEMENTS =
      List.of(Json.parse("1"), Json.parse("\"a\""), Json.parse("[2]"));

  /** One step of a run: a data centre writes, or receives one write that is ready for it. */
  sealed interface Step {}

  record Write(int dataCentre, int kind, int choice) implements Step {}

  record Deliver(int dataCentre, int pick) implements Step {}

  /** A write as it is replicated: its operation at its origin and what it causally follows. */
  record Event(int id, int originDc, long stamp, Operation operation, Set<Integer> follows) {}

  /** One data centre: its state, its clock, the writes it applied. */
  static final class Replica {
    final int dataCentre;
    EntityState state = EntityState.ABSENT;
    long clock;
    final Set<Integer> applied = new HashSet<>();

    Replica(int dataCentre) {
      this.dataCentre = dataCentre;
    }

    void applyLocal(Event event) {
      state = state.apply(List.of(event.operation()), event.stamp(), dataCentre);
      applied.add(event.id());
    }

    /** A remote write: the clock first advances past its stamp, as the shell's does. */
    void applyRemote(Event event) {
      clock = Math.max(clock, event.stamp()) + 1;
      Operation replicated = event.operation() instanceof Operation.Assign assign
          ? new Operation.AssignReplicated(assign.key(), assign.value(), event.stamp(),
              event.originDc())
          : event.operation();
      state = state.apply(List.of(replicated), clock, dataCentre);
      applied.add(event.id());
    }
  }

  @Provide
  Arbitrary<List<Step>> runs() {
    Arbitrary<Integer> dataCentre = Arbitraries.integers().between(1, DATA_CENTRES);
    Arbitrary<Step> write = Combinators.combine(dataCentre, Arbitraries.integers().between(0, 3),
        Arbitraries.integers().between(0, 5)).as(Write::new);
    Arbitrary<Step> deliver = Combinators.combine(dataCentre,
        Arbitraries.integers().between(0, 50)).as(Deliver::new);
    return Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(3, write), net.jqwik.api.Tuple.of(2, deliver))
        .list().ofMaxSize(40);
  }

  @Property(tries = 300)
  void everyCausalOrderConverges(@ForAll("runs") List<Step> steps,
      @ForAll("picks") List<Integer> finalPicks) {
    List<Replica> replicas = run(steps, finalPicks);
    Map<String, Object> first = view(replicas.get(0).state);
    for (Replica replica : replicas) {
      assertEquals(first, view(replica.state), "data centre " + replica.dataCentre);
    }
  }

  @Provide
  Arbitrary<List<Integer>> picks() {
    return Arbitraries.integers().between(0, 50).list().ofMaxSize(60);
  }

  /**
   * Two data centres write the same register concurrently with the same timestamp: both keep the
   * write of the larger data centre id, whichever arrived last. With the breakage that resolves
   * equal timestamps by arrival, they keep different values (what the simulator must catch).
   */
  @Test
  void equalTimestampsAreResolvedByDataCentreNotByArrival() {
    RegisterValue low = tie(1, "low");
    RegisterValue high = tie(2, "high");
    assertEquals(converged(low, high), converged(high, low));
    assertEquals("high", converged(low, high).value().asText());
    ModelMutations.enable(ModelMutations.Mutation.REGISTER_MERGE_WITHOUT_TIE_BREAK);
    try {
      assertNotEquals(converged(low, high), converged(high, low));
    } finally {
      ModelMutations.clear();
    }
  }

  /** A local Assign merges too: a stamp ahead of this data centre's clock keeps its write. */
  @Test
  void aLocalAssignDoesNotOverwriteAWriteWithALaterStamp() {
    EntityState state = EntityState.ABSENT.apply(List.of(new Operation.AssignReplicated("r",
        Json.parse("\"remote\""), 500, 7)), 10, 1);
    EntityState after = state.apply(List.of(new Operation.Assign("r", Json.parse("\"local\""))),
        20, 1);
    assertEquals("remote", after.get("r").toJson().asText());
    EntityState later = after.apply(List.of(new Operation.Assign("r", Json.parse("\"local\""))),
        501, 1);
    assertEquals(new RegisterValue(Json.parse("\"local\""), 501, 1), later.get("r"));
  }

  /** Writes of one key in one record share its stamp: the last of them is the value. */
  @Test
  void theLastWriteOfOneRecordWins() {
    EntityState local = EntityState.ABSENT.apply(List.of(
        new Operation.Assign("r", Json.parse("1")), new Operation.Assign("r", Json.parse("2"))),
        10, 1);
    assertEquals(2, local.get("r").toJson().asLong());
    EntityState remote = EntityState.ABSENT.apply(List.of(
        new Operation.AssignReplicated("r", Json.parse("1"), 5, 7),
        new Operation.AssignReplicated("r", Json.parse("2"), 5, 7)), 10, 1);
    assertEquals(2, remote.get("r").toJson().asLong());
  }

  /** A deletion keeps the replication markers (and nothing else): the entity does not exist. */
  @Test
  void aDeletionKeepsTheReplicationMarkers() {
    String marker = ReplicaApplication.markerKey(7);
    EntityState state = EntityState.ABSENT.apply(List.of(
        new Operation.Assign(marker, LongNode.valueOf(100)),
        new Operation.Assign("r", Json.parse("1"))), 10, 1);
    EntityState deleted = state.apply(List.of(new Operation.DeleteEntity()), 11, 1);
    assertEquals(false, deleted.exists());
    assertEquals(Map.of(marker, state.get(marker)), deleted.values());
    EntityState plain = EntityState.ABSENT.apply(List.of(new Operation.Assign("r",
        Json.parse("1"))), 10, 1).apply(List.of(new Operation.DeleteEntity()), 11, 1);
    assertEquals(Map.of(), plain.values());
  }

  private static RegisterValue tie(int dataCentre, String value) {
    return new RegisterValue(Json.parse("\"" + value + "\""), 100, dataCentre);
  }

  private static RegisterValue converged(RegisterValue first, RegisterValue second) {
    EntityState state = EntityState.ABSENT;
    long commit = 200;
    for (RegisterValue write : List.of(first, second)) {
      state = state.apply(List.of(new Operation.AssignReplicated("r", write.value(),
          write.timestamp(), write.originDc())), commit++, 3);
    }
    return (RegisterValue) state.get("r");
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
          origin.clock++;
          Event event = new Event(events.size(), origin.dataCentre, origin.clock,
              operation(origin, write, events.size()), Set.copyOf(origin.applied));
          events.add(event);
          origin.applyLocal(event);
        }
        case Deliver deliver -> deliverOne(replicas.get(deliver.dataCentre() - 1), events,
            deliver.pick());
      }
    }
    // Then everything reaches everyone, in an order the picks choose among the ready writes.
    int next = 0;
    for (Replica replica : replicas) {
      while (replica.applied.size() < events.size()) {
        int pick = next < finalPicks.size() ? finalPicks.get(next++) : 0;
        deliverOne(replica, events, pick);
      }
    }
    return replicas;
  }

  /** Delivers the pick-th (modulo) write this replica lacks whose causal past it holds. */
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

  /** The operation a turn at the origin would make, against its own state. */
  private static Operation operation(Replica origin, Write write, int eventId) {
    JsonNode element = ELEMENTS.get(write.choice() % ELEMENTS.size());
    return switch (write.kind()) {
      case 0 -> new Operation.Assign("r", LongNode.valueOf(write.choice()));
      case 1 -> new Operation.Increment("c", write.choice() - 2);
      case 2 -> new Operation.AddElement("s", element, new Tag(origin.dataCentre, eventId, 0));
      default -> new Operation.RemoveElement("s", element,
          origin.state.get("s") instanceof SetValue set ? set.tagsOf(element) : Set.of());
    };
  }

  /**
   * What clients see, plus the register's stamp: counters by total (each data centre counts a
   * remote increment under its own entry), sets and registers as they are.
   */
  private static Map<String, Object> view(EntityState state) {
    Map<String, Object> view = new TreeMap<>();
    for (Map.Entry<String, Value> entry : state.values().entrySet()) {
      Value value = entry.getValue();
      view.put(entry.getKey(), value instanceof CounterValue counter ? counter.total() : value);
    }
    return view;
  }
}
