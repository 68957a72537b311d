package dev.troupe.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Operation.AddElement;
import dev.troupe.model.Operation.Assign;
import dev.troupe.model.Operation.Increment;
import dev.troupe.model.Operation.RemoveElement;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.value.CounterValue;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.model.value.SetValue;
import dev.troupe.model.value.Tag;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * The CRDT laws replication relies on (DESIGN.md, "Data model"): operations generated concurrently
 * against the same state commute, sets are add-wins, counters add up, registers keep the last
 * write.
 */
class CrdtProperties {
  private static final CompiledType TYPE =
      CompiledType.compile(
          SpecParser.parse(
              "Crdt",
              "{\"keys\": {\"count\": {\"kind\": \"counter\"}, \"members\": {\"kind\": \"set\"}}}"
                  .getBytes(StandardCharsets.UTF_8),
              false));

  /** A small domain, so that adds and removes of the same element are frequent. */
  private static final List<JsonNode> ELEMENTS =
      List.of(
          Json.parse("0"),
          Json.parse("1"),
          Json.parse("\"a\""),
          Json.parse("\"b\""),
          Json.parse("{\"k\": [1, null]}"));

  /** What a concurrent turn does; turned into an operation against the shared base state. */
  sealed interface Intent {
    int dataCentre();
  }

  record IncrementIntent(long by, int dataCentre) implements Intent {}

  record AddIntent(int element, int dataCentre) implements Intent {}

  record RemoveIntent(int element, int dataCentre) implements Intent {}

  @Provide
  Arbitrary<List<Intent>> intents() {
    Arbitrary<Integer> dataCentre = Arbitraries.integers().between(0, 2);
    Arbitrary<Integer> element = Arbitraries.integers().between(0, ELEMENTS.size() - 1);
    Arbitrary<Intent> increment =
        Combinators.combine(Arbitraries.longs().between(-1_000_000, 1_000_000), dataCentre)
            .as(IncrementIntent::new);
    Arbitrary<Intent> add = Combinators.combine(element, dataCentre).as(AddIntent::new);
    Arbitrary<Intent> remove = Combinators.combine(element, dataCentre).as(RemoveIntent::new);
    return Arbitraries.oneOf(increment, add, remove).list().ofMaxSize(25);
  }

  @Provide
  Arbitrary<List<Integer>> baseElements() {
    return Arbitraries.integers().between(0, ELEMENTS.size() - 1).list().ofMaxSize(8);
  }

  /** The shared base: each listed element added by its own earlier transaction. */
  private static EntityState base(List<Integer> elements) {
    EntityState state = EntityState.ABSENT;
    for (int i = 0; i < elements.size(); i++) {
      Tag tag = new Tag(0, i + 1, 0);
      state =
          state.apply(
              List.of(new AddElement("members", ELEMENTS.get(elements.get(i)), tag)),
              state.version() + 1,
              0);
    }
    return state;
  }

  /** One single-operation record per intent, each with a unique tag and its origin. */
  private record Record(Operation operation, int dataCentre) {}

  private static List<Record> concurrentRecords(EntityState base, List<Intent> intents) {
    SetValue baseSet = base.get("members") instanceof SetValue set ? set : SetValue.EMPTY;
    List<Record> records = new ArrayList<>();
    for (int i = 0; i < intents.size(); i++) {
      long transaction = 1_000 + i;
      Operation operation =
          switch (intents.get(i)) {
            case IncrementIntent increment -> new Increment("count", increment.by());
            case AddIntent add ->
                new AddElement(
                    "members",
                    ELEMENTS.get(add.element()),
                    new Tag(add.dataCentre(), transaction, 0));
            case RemoveIntent remove ->
                new RemoveElement(
                    "members",
                    ELEMENTS.get(remove.element()),
                    baseSet.tagsOf(ELEMENTS.get(remove.element())));
          };
      records.add(new Record(operation, intents.get(i).dataCentre()));
    }
    return records;
  }

  private static EntityState applyAll(EntityState state, List<Record> records) {
    for (Record record : records) {
      state = state.apply(List.of(record.operation()), state.version() + 1, record.dataCentre());
    }
    return state;
  }

  @Property
  void concurrentOperationsCommute(
      @ForAll("baseElements") List<Integer> baseElements,
      @ForAll("intents") List<Intent> intents,
      @ForAll Random random) {
    EntityState base = base(baseElements);
    List<Record> records = concurrentRecords(base, intents);
    List<Record> permuted = new ArrayList<>(records);
    Collections.shuffle(permuted, random);

    EntityState inOrder = applyAll(base, records);
    EntityState inAnotherOrder = applyAll(base, permuted);

    assertEquals(inOrder.values(), inAnotherOrder.values());
    assertEquals(TYPE.render(inOrder), TYPE.render(inAnotherOrder));
  }

  @Property
  void setsConvergeToTheAddWinsModel(
      @ForAll("baseElements") List<Integer> baseElements,
      @ForAll("intents") List<Intent> intents,
      @ForAll Random random) {
    EntityState base = base(baseElements);
    List<Record> records = concurrentRecords(base, intents);
    Collections.shuffle(records, random);
    EntityState result = applyAll(base, records);

    // Present at the end: added concurrently, or present before and removed by nobody.
    TreeMap<String, JsonNode> expected = new TreeMap<>();
    for (int i = 0; i < ELEMENTS.size(); i++) {
      int element = i;
      boolean addedConcurrently =
          intents.stream()
              .anyMatch(intent -> intent instanceof AddIntent add && add.element() == element);
      boolean removed =
          intents.stream()
              .anyMatch(
                  intent -> intent instanceof RemoveIntent remove && remove.element() == element);
      if (addedConcurrently || (baseElements.contains(element) && !removed)) {
        expected.put(Json.write(ELEMENTS.get(i)), ELEMENTS.get(i));
      }
    }
    JsonNode expectedArray = Json.NODES.arrayNode().addAll(expected.values());
    assertEquals(expectedArray, TYPE.renderValue("members", result));
  }

  @Property
  void anAddConcurrentWithARemoveWins(
      @ForAll @IntRange(min = 0, max = 4) int elementIndex,
      @ForAll @IntRange(min = 1, max = 3) int earlierAdds,
      @ForAll boolean removeFirst) {
    JsonNode element = ELEMENTS.get(elementIndex);
    EntityState base = base(Collections.nCopies(earlierAdds, elementIndex));
    SetValue baseSet = (SetValue) base.get("members");
    assertEquals(earlierAdds, baseSet.tagsOf(element).size());

    Record remove = new Record(new RemoveElement("members", element, baseSet.tagsOf(element)), 1);
    Record add = new Record(new AddElement("members", element, new Tag(2, 99, 0)), 2);
    EntityState result = applyAll(base, removeFirst ? List.of(remove, add) : List.of(add, remove));

    assertTrue(((SetValue) result.get("members")).contains(element));
    assertEquals(
        Json.NODES.arrayNode().add(element), TYPE.renderValue("members", result));
    // Without the concurrent add, the remove takes the element out.
    assertEquals(
        Json.NODES.arrayNode(), TYPE.renderValue("members", applyAll(base, List.of(remove))));
  }

  @Property
  void aCounterIsTheSumOfItsIncrements(
      @ForAll @Size(max = 40) List<@IntRange(min = -1_000_000, max = 1_000_000) Integer> increments,
      @ForAll Random random) {
    EntityState state = EntityState.ABSENT;
    long sum = 0;
    for (int by : increments) {
      state =
          state.apply(
              List.of(new Increment("count", by)), state.version() + 1, random.nextInt(3));
      sum += by;
    }
    assertEquals(Json.NODES.numberNode(sum), TYPE.renderValue("count", state));
    if (!increments.isEmpty()) {
      assertEquals(sum, ((CounterValue) state.get("count")).total());
    }
  }

  @Property
  void aRegisterKeepsTheLastWriteByCommitTimestamp(
      @ForAll @Size(min = 1, max = 20) List<@IntRange(min = 1, max = 1_000) Integer> gaps,
      @ForAll Random random) {
    CompiledType schemaless = CompiledType.schemaless("Profile");
    EntityState state = EntityState.ABSENT;
    long timestamp = 0;
    List<RegisterValue> writes = new ArrayList<>();
    for (int i = 0; i < gaps.size(); i++) {
      timestamp += gaps.get(i);
      int dataCentre = random.nextInt(3);
      JsonNode value = Json.parse("{\"write\": " + i + "}");
      // Other keys in the same records must not disturb the register.
      state =
          state.apply(
              List.of(new Assign("name", value), new Increment("other", 1)), timestamp, dataCentre);
      writes.add(new RegisterValue(value, timestamp, dataCentre));
    }
    RegisterValue last = writes.get(writes.size() - 1);
    assertEquals(last.value(), schemaless.renderValue("name", state));
    assertEquals(last, state.get("name"));
    for (RegisterValue earlier : writes.subList(0, writes.size() - 1)) {
      assertTrue(last.supersedes(earlier), "the last write supersedes every earlier one");
    }
  }
}
