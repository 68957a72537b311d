package dev.troupe.model.spec;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.model.value.KeyKind;
import java.util.Objects;
import java.util.TreeMap;

/**
 * The declaration of one key of a declared type: its CRDT kind and the value it has while the
 * entity holds no value for it.
 *
 * <p>The default is normalized at construction, so that equal declarations are equal records and
 * {@link #toJson()} is canonical: integers become 64-bit ({@link LongNode}), a missing default
 * becomes the kind's default ({@code null} for a register, {@code 0} for a counter, {@code []} for
 * a set), and a set default is de-duplicated and ordered by the elements' JSON text, the order in
 * which sets are rendered.
 *
 * <p>Meaning of the default per kind: a register or set shows its default until first written. A
 * counter's value is always its default plus the sum of all increments ever applied: counters are
 * changed only by increments (so concurrent changes from several data centres add up), and an
 * offset is the only reading of a non-zero default that stays consistent with that.
 *
 * @param kind the CRDT kind; never null
 * @param defaultValue the normalized default; a counter's is an integer, a set's an array. Null on
 *     construction means the kind's default. The accessor returns a copy, so the record stays
 *     immutable.
 * @param family whether the declaration is a key family: it stands for any number of member keys
 *     {@code name[member]} (e.g. {@code checking[c17]}), each of this kind with this default, so
 *     that one entity can hold many small accounts, cart items or counters that are locked one by
 *     one under key-level admission. Actions reach a member through a binding ({@link
 *     ActionSpec#members()}); key operations name it directly.
 * @throws TroupeException with {@code INVALID_REQUEST} if the default does not suit the kind (the
 *     message names no path; the caller knows the key's name and adds it)
 */
public record KeySpec(KeyKind kind, JsonNode defaultValue, boolean family) {
  public KeySpec {
    Objects.requireNonNull(kind, "kind");
    defaultValue = normalizeDefault(kind, defaultValue);
  }

  /** A plain key (not a family). */
  public KeySpec(KeyKind kind, JsonNode defaultValue) {
    this(kind, defaultValue, false);
  }

  /** A key of this kind with the kind's default. */
  public static KeySpec of(KeyKind kind) {
    return new KeySpec(kind, null);
  }

  /** A copy of the normalized default: callers may not change the declaration through it. */
  @Override
  public JsonNode defaultValue() {
    return defaultValue.deepCopy();
  }

  /**
   * The canonical JSON form: {@code {"kind": ..., "default": ...}}, plus {@code "family": true}
   * for a family (absent otherwise, so definitions stored before families existed read the same).
   */
  public JsonNode toJson() {
    ObjectNode node = Json.NODES.objectNode();
    node.put("kind", kind.wireName());
    node.set("default", defaultValue.deepCopy());
    if (family) {
      node.put("family", true);
    }
    return node;
  }

  private static JsonNode normalizeDefault(KeyKind kind, JsonNode given) {
    return switch (kind) {
      case REGISTER ->
          given == null || given.isMissingNode() ? NullNode.getInstance() : canonical(given);
      case COUNTER -> {
        if (given == null || given.isMissingNode()) {
          yield LongNode.valueOf(0);
        }
        if (!given.isIntegralNumber() || !given.canConvertToLong()) {
          throw TroupeException.invalid(
              "the default of a counter must be a 64-bit integer, got " + Json.write(given));
        }
        yield LongNode.valueOf(given.longValue());
      }
      case SET -> {
        if (given == null || given.isMissingNode()) {
          yield Json.NODES.arrayNode();
        }
        if (!given.isArray()) {
          throw TroupeException.invalid(
              "the default of a set must be an array, got " + Json.write(given));
        }
        // Keyed by JSON text: the identity of a set element, and the order sets render in.
        TreeMap<String, JsonNode> elements = new TreeMap<>();
        for (JsonNode element : given) {
          JsonNode normalized = canonical(element);
          elements.put(Json.write(normalized), normalized);
        }
        ArrayNode array = Json.NODES.arrayNode();
        elements.values().forEach(array::add);
        yield array;
      }
      case DEPENDENCIES -> throw TroupeException.invalid(
          "keys of kind dependencies are Troupe's own and cannot be declared");
    };
  }

  /**
   * Re-reads the value through {@link Json#MAPPER}, which makes every integer a 64-bit
   * {@link LongNode} whatever node type the caller built: values compare and identify as set
   * elements by their JSON text, so two spellings of one number must not exist.
   */
  static JsonNode canonical(JsonNode value) {
    return Json.parse(Json.write(value));
  }
}
