package dev.troupe.txn.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyFunction;
import dev.troupe.model.dependency.DependencyKind;
import dev.troupe.model.dependency.KeyReference;
import dev.troupe.model.value.CounterValue;
import dev.troupe.model.value.DependencyTable;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.model.value.SetValue;
import dev.troupe.model.value.Tag;
import dev.troupe.model.value.Value;
import dev.troupe.txn.Forward;
import dev.troupe.txn.Turn;
import dev.troupe.txn.entity.LockTable;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;

/**
 * Generators over everything a wire message carries: JSON of every kind, values of every CRDT
 * kind, states, turns, forwards, results, and every message type in an envelope.
 */
final class WireArbitraries {
  private WireArbitraries() {}

  static Arbitrary<String> text() {
    return Arbitraries.strings().withCharRange('a', 'z').withChars('é', '€', ' ', '"', '\\', '0')
        .ofMaxLength(8);
  }

  static Arbitrary<String> name() {
    return Arbitraries.strings().withCharRange('a', 'z').withChars('é', '-', '_', ':')
        .ofMinLength(1).ofMaxLength(6);
  }

  static Arbitrary<EntityId> entities() {
    return Combinators.combine(Arbitraries.of("Cart", "Product", "Account", "Émile"), name())
        .as(EntityId::new);
  }

  /** JSON as the codec reads it back (integers as longs), so round trips compare equal. */
  static Arbitrary<JsonNode> json() {
    Arbitrary<JsonNode> scalars = Arbitraries.oneOf(
        Arbitraries.longs().map(Json.NODES::numberNode),
        text().map(Json.NODES::textNode),
        Arbitraries.of(true, false).map(Json.NODES::booleanNode),
        Arbitraries.of(0.5, -2.25, 1e20).map(Json.NODES::numberNode),
        Arbitraries.just(Json.NODES.nullNode()));
    Arbitrary<JsonNode> arrays = scalars.list().ofMaxSize(3).map(items -> {
      ArrayNode array = Json.NODES.arrayNode();
      items.forEach(array::add);
      return array;
    });
    Arbitrary<JsonNode> objects = Arbitraries.maps(text(), scalars).ofMaxSize(3).map(fields -> {
      ObjectNode object = Json.NODES.objectNode();
      fields.forEach(object::set);
      return object;
    });
    return Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(5, scalars), net.jqwik.api.Tuple.of(1, arrays),
        net.jqwik.api.Tuple.of(1, objects));
  }

  static Arbitrary<Dependency> dependencies() {
    Arbitrary<KeyReference> keys = Combinators.combine(entities(), name()).as(KeyReference::new);
    Arbitrary<DependencyFunction> functions = Arbitraries.of(new DependencyFunction.Replicate(),
        new DependencyFunction.Sum(), new DependencyFunction.Count(),
        new DependencyFunction.Min(), new DependencyFunction.Max());
    return Combinators.combine(keys, keys, functions, Arbitraries.of(true, false))
        .filter((leader, follower, function, update) -> !leader.equals(follower))
        .as((leader, follower, function, update) -> update
            ? new Dependency(DependencyKind.UPDATE, leader, follower, function)
            : new Dependency(DependencyKind.DELETE, leader, follower, null));
  }

  static Arbitrary<Tag> tags() {
    return Combinators.combine(Arbitraries.integers().between(0, 300), Arbitraries.longs(),
        Arbitraries.integers().between(0, 1000)).as(Tag::new);
  }

  static Arbitrary<Value> values() {
    Arbitrary<Value> registers = Combinators.combine(json(), Arbitraries.longs(),
        Arbitraries.integers().between(0, 300)).as(RegisterValue::new);
    Arbitrary<Map<Integer, Long>> sums =
        Arbitraries.maps(Arbitraries.integers().between(0, 300), Arbitraries.longs())
            .ofMaxSize(3);
    Arbitrary<Value> counters = Combinators.combine(sums, sums).as(CounterValue::new);
    Arbitrary<Value> sets = Arbitraries.maps(json(), tags().set().ofMinSize(1).ofMaxSize(3))
        .ofMaxSize(3).map(elements -> {
          Map<String, SetValue.Element> byIdentity = new HashMap<>();
          elements.forEach((element, elementTags) -> byIdentity.put(Json.write(element),
              new SetValue.Element(element, elementTags)));
          return new SetValue(byIdentity);
        });
    Arbitrary<Value> tables = Combinators.combine(dependencies(), json().injectNull(0.3))
        .as((dependency, contribution) -> (Value) DependencyTable.EMPTY.with(dependency,
            contribution))
        .list().ofMinSize(1).ofMaxSize(3).map(list -> {
          DependencyTable table = DependencyTable.EMPTY;
          for (Value value : list) {
            for (DependencyTable.Entry entry : ((DependencyTable) value).all()) {
              table = table.with(entry.dependency(), entry.contribution());
            }
          }
          return table;
        });
    return Arbitraries.oneOf(registers, counters, sets, tables);
  }

  static Arbitrary<EntityState> states() {
    return Combinators.combine(Arbitraries.maps(name(), values()).ofMaxSize(4),
        Arbitraries.longs().greaterOrEqual(0), Arbitraries.of(true, false))
        .as(EntityState::new);
  }

  static Arbitrary<Turn> turns() {
    return Arbitraries.oneOf(
        Arbitraries.maps(name(), json()).ofMinSize(1).ofMaxSize(3).map(Turn.AssignKeys::new),
        name().map(Turn.DeleteKey::new),
        Combinators.combine(name(), Arbitraries.longs()).as(Turn.IncrementKey::new),
        Combinators.combine(name(), json()).as(Turn.AddElement::new),
        Combinators.combine(name(), json()).as(Turn.RemoveElement::new),
        Arbitraries.just(new Turn.DeleteEntity()),
        Arbitraries.just(new Turn.DiscardHiddenValues()),
        Combinators.combine(name(), json().injectNull(0.2)).as(Turn.InvokeAction::new),
        dependencies().map(Turn.RegisterDependency::new),
        Combinators.combine(name(), name()).as(Turn.DeregisterDependency::new),
        Combinators.combine(Arbitraries.integers().between(0, Integer.MAX_VALUE),
            Arbitraries.longs(), Arbitraries.longs(), replicatedOperations().list().ofMaxSize(4))
            .as(Turn.ApplyReplicated::new),
        // A batched application: several segments, in increasing transaction timestamps.
        Combinators.combine(Arbitraries.integers().between(0, Integer.MAX_VALUE),
            Arbitraries.longs().between(-1_000_000, 1_000_000),
            Combinators.combine(Arbitraries.longs().between(1, 1000), Arbitraries.longs(),
                replicatedOperations().list().ofMaxSize(3)).as((gap, stamp, operations) ->
                    new long[][] {{gap, stamp}}).list().ofMinSize(2).ofMaxSize(4),
            replicatedOperations().list().ofMaxSize(3))
            .as((origin, start, shapes, operations) -> {
              java.util.List<Turn.ApplyReplicated.Segment> segments = new java.util.ArrayList<>();
              long at = start;
              for (long[][] shape : shapes) {
                at += shape[0][0];
                segments.add(new Turn.ApplyReplicated.Segment(at, shape[0][1], operations));
              }
              return new Turn.ApplyReplicated(origin, segments);
            }),
        Combinators.combine(Arbitraries.longs(), Arbitraries.integers().between(0, 1000),
            name().map(id -> new dev.troupe.model.EntityId("S", id)), name(),
            json().injectNull(0.2)).as(Turn.DeliverMessage::new),
        Combinators.combine(Arbitraries.integers().between(-1, 300), Arbitraries.longs(),
            Arbitraries.integers().between(0, 1000),
            name().map(id -> new dev.troupe.model.EntityId("S", id)), name(),
            json().injectNull(0.2), name().injectNull(0.5)).as(Turn.DeliverMessage::new));
  }

  /** The operations a remote part carries (one of each shape the materializer applies). */
  static Arbitrary<dev.troupe.model.Operation> replicatedOperations() {
    Arbitrary<dev.troupe.model.value.Tag> tags = Combinators.combine(
        Arbitraries.integers().between(0, 300), Arbitraries.longs(),
        Arbitraries.integers().between(0, 9)).as(dev.troupe.model.value.Tag::new);
    return Arbitraries.oneOf(
        Combinators.combine(name(), json()).as(dev.troupe.model.Operation.Assign::new),
        Combinators.combine(name(), json(), Arbitraries.longs(),
            Arbitraries.integers().between(0, Integer.MAX_VALUE))
            .as(dev.troupe.model.Operation.AssignReplicated::new),
        name().map(dev.troupe.model.Operation.DeleteKey::new),
        Combinators.combine(name(), Arbitraries.longs()).as(dev.troupe.model.Operation.Increment::new),
        Combinators.combine(name(), json(), tags).as(dev.troupe.model.Operation.AddElement::new),
        Combinators.combine(name(), json(), tags.set().ofMaxSize(3))
            .as(dev.troupe.model.Operation.RemoveElement::new),
        Arbitraries.just(new dev.troupe.model.Operation.DeleteEntity()));
  }

  static Arbitrary<Forward> forwards() {
    return Arbitraries.oneOf(
        Combinators.combine(dependencies(), json().injectNull(0.3), json().injectNull(0.3))
            .as(Forward.LeaderChanged::new),
        dependencies().map(Forward.LeaderDeleted::new),
        dependencies().map(Forward.FollowerDeleted::new),
        Combinators.combine(dependencies(), json().injectNull(0.3)).as(Forward.Registered::new),
        dependencies().map(Forward.RegistrationRequested::new),
        dependencies().map(Forward.Deregistered::new),
        Combinators.combine(dependencies(), entities(), name(),
                Arbitraries.of(Forward.Direction.class), Arbitraries.integers().between(0, 64))
            .as((registered, entity, key, direction, depth) -> new Forward.Probe(registered,
                new KeyReference(entity, key), direction, depth)));
  }

  static Arbitrary<WireResult> results() {
    Arbitrary<Map<String, Integer>> depths =
        Arbitraries.maps(name(), Arbitraries.integers().between(0, 100)).ofMaxSize(2);
    Arbitrary<WireResult> done = Combinators.combine(Arbitraries.longs(), states(),
            Arbitraries.of(true, false), Arbitraries.longs(), forwards().list().ofMaxSize(3),
            depths, depths)
        .as(WireResult.Done::new);
    Arbitrary<WireResult> failed = Combinators.combine(Arbitraries.of(ErrorCode.class),
        name().injectNull(0.5), text()).as(WireResult.Failed::new);
    return Arbitraries.oneOf(done, failed);
  }

  static Arbitrary<TypeReference> types() {
    return Combinators.combine(name(), Arbitraries.longs().greaterOrEqual(0))
        .as(TypeReference::new);
  }

  static Arbitrary<WireMessage> messages() {
    Arbitrary<Long> ids = Arbitraries.longs();
    Arbitrary<Map<String, LockTable.Mode>> reserved =
        Arbitraries.maps(name(), Arbitraries.of(LockTable.Mode.class)).ofMaxSize(3);
    Arbitrary<WireMessage> prepare = Combinators.combine(ids, ids, entities(), types(),
            turns().list().ofMaxSize(4), Arbitraries.of(true, false),
            forwards().list().ofMaxSize(3), reserved)
        .flatAs((id, start, participant, type, turns, readsState, forwards, keys) ->
            Arbitraries.of(true, false).map(planned -> new WireMessage.Prepare(id, start,
                participant, type, turns, readsState, forwards, keys, planned)));
    return Arbitraries.oneOf(
        prepare,
        Combinators.combine(ids, entities(), rounds(), results()).as(WireMessage.Vote::new),
        Combinators.combine(ids, entities(), rounds(), forwards().list().ofMaxSize(4))
            .as(WireMessage.ForwardsChanged::new),
        Combinators.combine(ids, entities(), Arbitraries.of(true, false))
            .as(WireMessage.Decision::new),
        Combinators.combine(ids, entities(), results()).as(WireMessage.Acknowledgement::new),
        Combinators.combine(ids, ids, entities(), types(), turns().injectNull(0.2))
            .as(WireMessage.StepRequest::new),
        Combinators.combine(ids, entities(), results()).as(WireMessage.StepAnswer::new),
        Combinators.combine(ids, entities(), types(), turns(),
                Arbitraries.bytes().array(byte[].class).ofMaxSize(40).injectNull(0.5))
            .as(WireMessage.TurnRequest::new),
        Combinators.combine(ids, entities(), results()).as(WireMessage.TurnAnswer::new),
        Combinators.combine(ids, Arbitraries.integers().between(0, 63), entities())
            .as(WireMessage.DecisionQuery::new),
        Combinators.combine(ids, entities(), Arbitraries.of(WireMessage.DecisionState.class))
            .as(WireMessage.DecisionAnswer::new),
        Combinators.combine(ids, entities(), ids).as(WireMessage.ReadRequest::new),
        Combinators.combine(ids, entities(), results()).as(WireMessage.ReadAnswer::new),
        ids.map(WireMessage.NodeStatusQuery::new),
        Combinators.combine(ids,
                Arbitraries.integers().between(0, 4095).set().ofMaxSize(20)
                    .map(set -> set.stream().sorted().toList()),
                Arbitraries.longs().between(0, 1_000_000), Arbitraries.longs().greaterOrEqual(0),
                Arbitraries.longs(), Arbitraries.longs().greaterOrEqual(0),
                Arbitraries.strings().ofMaxLength(40).map(path -> "http://127.0.0.1:" + path)
                    .injectNull(0.3))
            .as(WireMessage.NodeStatusAnswer::new));
  }

  static Arbitrary<Integer> rounds() {
    return Arbitraries.integers().between(1, 40);
  }

  static Arbitrary<Envelope> envelopes() {
    Arbitrary<Envelope.Destination> destinations = Arbitraries.oneOf(
        entities().map(Envelope.Destination.ToEntity::new),
        Arbitraries.integers().between(0, 63).map(Envelope.Destination.ToNode::new));
    return Combinators.combine(Arbitraries.integers().between(0, 63), destinations, messages())
        .as(Envelope::new);
  }

  /** Every message type, for tests that must cover each. */
  static List<Class<? extends WireMessage>> messageTypes() {
    return List.of(WireMessage.Prepare.class, WireMessage.Vote.class,
        WireMessage.ForwardsChanged.class, WireMessage.Decision.class,
        WireMessage.Acknowledgement.class, WireMessage.StepRequest.class,
        WireMessage.StepAnswer.class, WireMessage.TurnRequest.class,
        WireMessage.TurnAnswer.class, WireMessage.DecisionQuery.class,
        WireMessage.DecisionAnswer.class, WireMessage.ReadRequest.class,
        WireMessage.ReadAnswer.class, WireMessage.NodeStatusQuery.class,
        WireMessage.NodeStatusAnswer.class);
  }
}
