package dev.troupe.model.causal;

import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.value.Tag;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;

/** Random replication entries, dependency vectors and batches for the codec's properties. */
final class ReplicationArbitraries {
  private ReplicationArbitraries() {}

  static Arbitrary<Integer> dataCentres() {
    return Arbitraries.oneOf(Arbitraries.of(1, 2, 3),
        Arbitraries.integers().between(1, Integer.MAX_VALUE));
  }

  static Arbitrary<Long> timestamps() {
    return Arbitraries.oneOf(Arbitraries.longs().between(1, 1000),
        Arbitraries.longs().between(1, Long.MAX_VALUE));
  }

  static Arbitrary<DependencyVector> vectors() {
    return Arbitraries.maps(dataCentres(), timestamps()).ofMaxSize(4)
        .map(DependencyVector::of);
  }

  static Arbitrary<EntityId> entities() {
    return Combinators.combine(Arbitraries.of("Cart", "Product", "Ünïcode"),
        Arbitraries.strings().alpha().numeric().ofMinLength(1).ofMaxLength(8))
        .as(EntityId::new);
  }

  static Arbitrary<Operation> operations() {
    Arbitrary<String> keys = Arbitraries.of("name", "count", "tags", "$replicated:7");
    Arbitrary<Tag> tags = Combinators.combine(dataCentres(), Arbitraries.longs(),
        Arbitraries.integers().between(0, 100)).as(Tag::new);
    Arbitrary<String> json = Arbitraries.of("1", "\"text\"", "{\"a\":[1,2.5,null,true]}", "null");
    return Arbitraries.oneOf(
        Combinators.combine(keys, json).as((k, v) -> new Operation.Assign(k, Json.parse(v))),
        keys.map(Operation.DeleteKey::new),
        Combinators.combine(keys, Arbitraries.longs()).as(Operation.Increment::new),
        Combinators.combine(keys, json, tags)
            .as((k, v, t) -> new Operation.AddElement(k, Json.parse(v), t)),
        Combinators.combine(keys, json, tags)
            .as((k, v, t) -> new Operation.RemoveElement(k, Json.parse(v), Set.of(t))),
        Arbitraries.just(new Operation.DeleteEntity()),
        // Convergent deletes (docs/ARCHITECTURE.md, "Deletes across data centres").
        Combinators.combine(keys, timestamps(), dataCentres())
            .as(Operation.DeleteKeyReplicated::new),
        Combinators.combine(keys, Arbitraries.longs(), dataCentres())
            .as(Operation.IncrementReplicated::new),
        Combinators.combine(keys, dataCentres(), Arbitraries.longs())
            .as((k, dc, sum) -> new Operation.DeleteCounter(k, new dev.troupe.model.value
                .CounterValue(java.util.Map.of(dc, sum), java.util.Map.of(dc ^ 1, 3L)))),
        Combinators.combine(keys, tags.set().ofMaxSize(3)).as(Operation.DeleteSet::new),
        Combinators.combine(timestamps(), dataCentres())
            .as((timestamp, dc) -> new Operation.DeleteEntityReplicated(timestamp, dc,
                java.util.Map.of(dc, 4L))),
        Combinators.combine(timestamps(), dataCentres())
            .as((timestamp, dc) -> new Operation.DeleteEntityReplicated(timestamp, dc, null)),
        dataCentres().map(dc -> new Operation.DeleteEntity(java.util.Map.of(dc, 2L, dc ^ 1, 7L))));
  }

  static Arbitrary<ReplicationEntry> entries(int originDc) {
    Arbitrary<ReplicationEntry> parts = Combinators.combine(timestamps(), Arbitraries.longs(),
        Arbitraries.integers().between(0, 1000), entities(), operations().list().ofMaxSize(4),
        vectors()).as((timestamp, transactionId, index, entity, operations, dependencies) ->
            new ReplicationEntry.Part(originDc, timestamp, transactionId, index, entity,
                operations, dependencies));
    Arbitrary<ReplicationEntry> decisions = Combinators.combine(timestamps(), Arbitraries.longs(),
        Arbitraries.integers().between(0, 1000), entities().list().ofMinSize(1).ofMaxSize(4),
        vectors()).as((timestamp, transactionId, index, participants, dependencies) ->
            new ReplicationEntry.Decision(originDc, timestamp, transactionId, index,
                participants, dependencies));
    return Arbitraries.oneOf(parts, decisions);
  }

  static Arbitrary<ReplicationEntry> entries() {
    return dataCentres().flatMap(ReplicationArbitraries::entries);
  }

  static Arbitrary<ReplicationBatch> batches() {
    return dataCentres().flatMap(origin -> Combinators.combine(
        entries(origin).list().ofMaxSize(5), Arbitraries.longs().between(0, 1000))
        .as((entries, extra) -> {
          List<ReplicationEntry> sorted = new ArrayList<>(entries);
          sorted.sort(Comparator.comparingLong(ReplicationEntry::timestamp));
          long max = sorted.isEmpty() ? 0 : sorted.getLast().timestamp();
          long upTo = max > Long.MAX_VALUE - extra ? Long.MAX_VALUE : max + extra;
          return new ReplicationBatch(origin, sorted, upTo);
        }));
  }
}
