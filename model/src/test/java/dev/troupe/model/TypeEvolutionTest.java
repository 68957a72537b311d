package dev.troupe.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.spec.TypeEvolution;
import dev.troupe.model.spec.TypeEvolution.StoredKey;
import dev.troupe.model.spec.TypeEvolution.StoredKeys;
import dev.troupe.model.spec.TypeEvolution.Verdict;
import dev.troupe.model.spec.TypeSpec;
import dev.troupe.model.value.CounterValue;
import dev.troupe.model.value.KeyKind;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.model.value.SetValue;
import dev.troupe.model.value.Tag;
import dev.troupe.model.value.Value;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The rules of type evolution: which redeclarations hide stored values, and what discard drops. */
class TypeEvolutionTest {
  private static final String ACCOUNT = """
      {"keys": {"balance": {"kind": "register", "default": 0},
                "visits": {"kind": "counter"},
                "tags": {"kind": "set"},
                "checking": {"kind": "register", "family": true}},
       "actions": {"touch": {"effect": {"balance": "balance + 1"}}}}""";

  private static TypeSpec spec(String json) {
    return SpecParser.fromJson("Account", Json.parse(json));
  }

  /** The summary of one entity holding {@code values}. */
  private static StoredKeys stored(Map<String, Value> values) {
    return new StoredKeys.Builder().add(new EntityState(values, 1, true)).build(true);
  }

  private static Value register(Object value) {
    return new RegisterValue(Json.MAPPER.valueToTree(value), 1, 0);
  }

  private static Value counter(long value) {
    return CounterValue.ZERO.increment(value, 0);
  }

  private static Value set(String element) {
    return SetValue.EMPTY.add(Json.NODES.textNode(element), new Tag(0, 1, 0));
  }

  private static final Map<String, Value> FULL = Map.of(
      "balance", register(5), "visits", counter(3), "tags", set("a"),
      "checking[c1]", register(10));

  static Stream<Arguments> table() {
    return Stream.of(
        // compatible: nothing shown today is hidden
        Arguments.of("same declaration", ACCOUNT, FULL, List.of()),
        Arguments.of("a key added", ACCOUNT.replace("\"tags\"",
            "\"extra\": {\"kind\": \"counter\", \"default\": 7}, \"tags\""), FULL, List.of()),
        Arguments.of("an action added and a default changed", ACCOUNT
            .replace("\"default\": 0", "\"default\": 42")
            .replace("\"touch\"", "\"other\": {\"effect\": {\"balance\": \"1\"}}, \"touch\""),
            FULL, List.of()),
        Arguments.of("admission changed", ACCOUNT.replace("{\"keys\"",
            "{\"admission\": \"keys\", \"keys\""), FULL, List.of()),
        Arguments.of("kind changed of a key nobody wrote",
            ACCOUNT.replace("\"visits\": {\"kind\": \"counter\"}",
                "\"visits\": {\"kind\": \"set\"}"),
            Map.of("balance", register(1)), List.of()),
        Arguments.of("key removed that nobody wrote",
            ACCOUNT.replace("\"tags\": {\"kind\": \"set\"},", ""),
            Map.of("balance", register(1)), List.of()),
        Arguments.of("to schemaless", "{\"schemaless\": true}", FULL, List.of()),
        // incompatible: each names the keys
        Arguments.of("kind changed", ACCOUNT.replace("\"visits\": {\"kind\": \"counter\"}",
            "\"visits\": {\"kind\": \"register\"}"), FULL,
            List.of(new StoredKey("visits", false))),
        Arguments.of("key removed", ACCOUNT.replace("\"tags\": {\"kind\": \"set\"},", ""),
            FULL, List.of(new StoredKey("tags", false))),
        Arguments.of("family to plain key", ACCOUNT.replace(
            "\"checking\": {\"kind\": \"register\", \"family\": true}",
            "\"checking\": {\"kind\": \"register\"}"), FULL,
            List.of(new StoredKey("checking", true))),
        Arguments.of("plain key to family", ACCOUNT.replace(
            "\"balance\": {\"kind\": \"register\", \"default\": 0}",
            "\"balance\": {\"kind\": \"register\", \"family\": true}").replace(
            "\"touch\": {\"effect\": {\"balance\": \"balance + 1\"}}",
            "\"touch\": {\"effect\": {\"tags\": \"tags\"}}"), FULL,
            List.of(new StoredKey("balance", false))),
        Arguments.of("two keys at once", ACCOUNT.replace("\"visits\": {\"kind\": \"counter\"}",
            "\"visits\": {\"kind\": \"set\"}").replace("\"tags\": {\"kind\": \"set\"},", ""),
            FULL, List.of(new StoredKey("tags", false), new StoredKey("visits", false))));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("table")
  void redeclaringADeclaredType(String name, String proposed, Map<String, Value> values,
      List<StoredKey> expectedHidden) {
    Verdict verdict = TypeEvolution.check(spec(ACCOUNT), spec(proposed), stored(values));
    assertEquals(expectedHidden,
        verdict.hidden().stream().map(TypeEvolution.HiddenKey::key).toList());
    for (TypeEvolution.HiddenKey hidden : verdict.hidden()) {
      assertTrue(verdict.message("Account").contains("'" + hidden.key().name() + "'"),
          verdict.message("Account"));
    }
  }

  @Test
  void declaringOverSchemalessEntitiesHidesWhatTheDeclarationDoesNotShow() {
    TypeSpec declared = spec("{\"keys\": {\"name\": {\"kind\": \"register\"},"
        + " \"count\": {\"kind\": \"counter\"}}}");
    Verdict verdict = TypeEvolution.check(null, declared,
        stored(Map.of("name", register("x"), "count", register(3), "other", register(true))));
    assertEquals(List.of(new StoredKey("count", false), new StoredKey("other", false)),
        verdict.hidden().stream().map(TypeEvolution.HiddenKey::key).toList());
    assertTrue(verdict.message("Account").contains("key 'count' stores register values but is"
        + " declared of kind counter"), verdict.message("Account"));
    assertTrue(verdict.message("Account").contains("key 'other' stores register values but is"
        + " not declared"), verdict.message("Account"));
    // Declaring exactly what the entities hold is fine; no entities at all is fine.
    assertTrue(TypeEvolution.check(null, declared, stored(Map.of("name", register("x"))))
        .compatible());
    assertTrue(TypeEvolution.check(null, declared, StoredKeys.NONE).compatible());
  }

  @Test
  void valuesAlreadyHiddenByTheCurrentDeclarationDoNotBlockARedeclaration() {
    // A register under a key declared counter is hidden today; declaring the same again is fine.
    assertTrue(TypeEvolution.check(spec(ACCOUNT), spec(ACCOUNT),
        stored(Map.of("visits", register(4), "gone", register(1)))).compatible());
  }

  @Test
  void anIncompleteSummaryTakesChangedKeysToHoldValues() {
    StoredKeys partial = new StoredKeys(Map.of(), 100, false);
    TypeSpec removed = spec(ACCOUNT.replace("\"tags\": {\"kind\": \"set\"},", ""));
    assertEquals(List.of(new StoredKey("tags", false)),
        TypeEvolution.check(spec(ACCOUNT), removed, partial).hidden().stream()
            .map(TypeEvolution.HiddenKey::key).toList());
    TypeSpec added = spec(ACCOUNT.replace("\"tags\"", "\"extra\": {\"kind\": \"set\"}, \"tags\""));
    assertTrue(TypeEvolution.check(spec(ACCOUNT), added, partial).compatible());
    assertEquals(1, TypeEvolution.check(null, spec(ACCOUNT), partial).hidden().size());
  }

  @Test
  void discardDropsExactlyTheValuesTheDeclarationDoesNotShow() {
    Map<String, Value> values = new HashMap<>(FULL);
    values.put("visits", register(9)); // wrong kind
    values.put("gone", register(1)); // undeclared
    values.put("balance[x]", register(1)); // member of a plain key
    assertEquals(List.of("balance[x]", "gone", "visits"),
        TypeEvolution.keysToDiscard(spec(ACCOUNT), new EntityState(values, 1, true)));
    assertEquals(List.of(), TypeEvolution.keysToDiscard(TypeSpec.schemaless("Account"),
        new EntityState(values, 1, true)));
  }

  // ------------------------------------------------------------------ property

  private static final List<String> KEY_NAMES = List.of("a", "b", "c");

  /** A random declared type over keys a, b, c (each absent, or a plain key or family of a kind). */
  @Provide
  Arbitrary<TypeSpec> specs() {
    Arbitrary<String> declaration = Arbitraries.of(
        "", "{\"kind\": \"register\"}", "{\"kind\": \"counter\"}", "{\"kind\": \"set\"}",
        "{\"kind\": \"register\", \"family\": true}", "{\"kind\": \"counter\", \"family\": true}");
    return declaration.list().ofSize(KEY_NAMES.size()).map(chosen -> {
      StringBuilder keys = new StringBuilder("{\"keys\": {\"z\": {\"kind\": \"register\"}");
      for (int i = 0; i < KEY_NAMES.size(); i++) {
        if (!chosen.get(i).isEmpty()) {
          keys.append(", \"").append(KEY_NAMES.get(i)).append("\": ").append(chosen.get(i));
        }
      }
      return spec(keys.append("}}").toString());
    });
  }

  /** A random entity state over plain keys and members of a, b, c, of any kind. */
  @Provide
  Arbitrary<Map<String, Value>> states() {
    Arbitrary<String> key = Arbitraries.of("a", "b", "c", "a[m]", "b[m]", "c[n]");
    Arbitrary<Value> value = Arbitraries.of(register(1), counter(2), set("e"));
    return Arbitraries.maps(key, value).ofMaxSize(6);
  }

  /**
   * A compatible redeclaration renders every value the old declaration rendered from storage the
   * same way (defaults aside), and after discard the new declaration shows every stored value.
   */
  @Property(tries = 300)
  void compatibleRedeclarationsHideNothing(@ForAll("specs") TypeSpec before,
      @ForAll("specs") TypeSpec after, @ForAll("states") Map<String, Value> values) {
    EntityState state = new EntityState(values, 1, true);
    Verdict verdict = TypeEvolution.check(before, after,
        new StoredKeys.Builder().add(state).build(true));
    CompiledType old = CompiledType.compile(before);
    CompiledType next = CompiledType.compile(after);
    EntityState empty = new EntityState(Map.of(), 1, true);
    List<String> shownBefore = new ArrayList<>();
    for (String key : values.keySet()) {
      JsonNode rendered = old.renderValue(key, state);
      if (rendered != null && !rendered.equals(old.renderValue(key, empty))) {
        shownBefore.add(key);
      }
    }
    if (verdict.compatible()) {
      for (String key : shownBefore) {
        JsonNode now = next.renderValue(key, state);
        assertEquals(old.renderValue(key, state), now, "key " + key + " of " + values);
      }
    } else {
      // Each named key really was shown before and is not now.
      for (TypeEvolution.HiddenKey hidden : verdict.hidden()) {
        assertTrue(values.keySet().stream().anyMatch(key -> StoredKey.of(key).equals(hidden.key())
            && TypeEvolution.shows(before, hidden.key(), values.get(key).kind())
            && !TypeEvolution.shows(after, hidden.key(), values.get(key).kind())));
      }
    }
    EntityState discarded = state;
    List<String> dropped = TypeEvolution.keysToDiscard(after, state);
    Map<String, Value> kept = new HashMap<>(values);
    dropped.forEach(kept::remove);
    discarded = new EntityState(kept, 1, true);
    assertTrue(TypeEvolution.check(null, after,
        new StoredKeys.Builder().add(discarded).build(true)).compatible());
  }
}
