package dev.troupe.model.spec;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import com.google.common.primitives.UnsignedLong;
import com.google.protobuf.ByteString;
import com.google.protobuf.Duration;
import com.google.protobuf.Timestamp;
import dev.cel.common.values.CelByteString;
import dev.cel.common.values.NullValue;
import dev.troupe.model.Json;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Conversion between JSON values (what clients send and registers hold) and the Java objects the
 * CEL runtime computes with. Both directions are deterministic: object fields and list elements
 * keep their order, so the same state and arguments always give the same expression results.
 */
final class CelValues {
  private static final BigInteger UNSIGNED_64_LIMIT = BigInteger.ONE.shiftLeft(64);

  private CelValues() {}

  /**
   * The CEL value of a JSON value: integers become {@code Long} (beyond the signed range, {@link
   * UnsignedLong} if they fit in 64 bits unsigned, else {@code Double}), other numbers {@code
   * Double}, strings {@code String}, booleans {@code Boolean}, null CEL's {@link NullValue} (CEL
   * cannot see Java nulls), arrays unmodifiable {@code List}s, objects unmodifiable
   * insertion-ordered {@code Map<String, Object>}s, binary nodes {@link ByteString}.
   */
  static Object fromJson(JsonNode node) {
    if (node == null || node.isNull() || node.isMissingNode()) {
      return NullValue.NULL_VALUE;
    }
    return switch (node.getNodeType()) {
      case BOOLEAN -> node.booleanValue();
      case NUMBER -> fromJsonNumber(node);
      case STRING -> node.textValue();
      case BINARY -> ByteString.copyFrom(binary(node));
      case ARRAY -> {
        List<Object> list = new ArrayList<>(node.size());
        for (JsonNode element : node) {
          list.add(fromJson(element));
        }
        yield Collections.unmodifiableList(list);
      }
      case OBJECT -> {
        Map<String, Object> map = new LinkedHashMap<>();
        node.fields()
            .forEachRemaining(field -> map.put(field.getKey(), fromJson(field.getValue())));
        yield Collections.unmodifiableMap(map);
      }
      case NULL, MISSING -> NullValue.NULL_VALUE;
      case POJO ->
          throw new IllegalArgumentException(
              "not a JSON value: "
                  + node.getClass().getName()
                  + " (only parsed JSON is supported)");
    };
  }

  private static Object fromJsonNumber(JsonNode node) {
    if (node.isIntegralNumber()) {
      if (node.canConvertToLong()) {
        return node.longValue();
      }
      BigInteger big = node.bigIntegerValue();
      if (big.signum() >= 0 && big.compareTo(UNSIGNED_64_LIMIT) < 0) {
        return UnsignedLong.valueOf(big);
      }
      // CEL has no wider integer; like most JSON readers, fall back to the nearest double.
      return big.doubleValue();
    }
    return node.doubleValue();
  }

  private static byte[] binary(JsonNode node) {
    try {
      return node.binaryValue();
    } catch (java.io.IOException e) {
      throw new IllegalStateException("a binary node always holds bytes", e);
    }
  }

  /** A CEL result that has no JSON form. */
  static final class NotJsonException extends Exception {
    private static final long serialVersionUID = 1L;

    NotJsonException(String message) {
      super(message, null, false, false);
    }
  }

  /**
   * The JSON value of a CEL result: {@code Long}/{@code Integer} become {@link LongNode}, finite
   * {@code Double}/{@code Float} {@link DoubleNode}, {@link UnsignedLong} a {@link LongNode} when
   * within the signed 64-bit range (the only integers Troupe's JSON reads back), strings text,
   * booleans booleans, CEL or protobuf null {@link NullNode}, bytes base64 text, timestamps
   * RFC 3339 text and durations text like {@code "1.5s"} (as in protobuf's JSON mapping), lists
   * (any {@link Collection}) arrays and maps objects (non-string map keys written as text, as
   * protobuf's JSON mapping does).
   *
   * @throws NotJsonException for a non-finite number, a uint beyond the signed 64-bit range, or a
   *     value with no JSON form (e.g. a type)
   */
  static JsonNode toJson(Object value) throws NotJsonException {
    return switch (value) {
      case null -> NullNode.getInstance();
      case NullValue ignored -> NullNode.getInstance();
      case com.google.protobuf.NullValue ignored -> NullNode.getInstance();
      case Long number -> LongNode.valueOf(number);
      case Integer number -> LongNode.valueOf(number);
      case Double number -> finite(number);
      case Float number -> finite(number.doubleValue());
      case UnsignedLong number -> {
        // Troupe's JSON holds 64-bit signed integers only (Json parses integers as longs), so a
        // larger value could be stored but never read back.
        if (number.compareTo(UnsignedLong.valueOf(Long.MAX_VALUE)) > 0) {
          throw new NotJsonException(
              "the uint " + number + " is beyond the 64-bit signed range of stored integers");
        }
        yield LongNode.valueOf(number.longValue());
      }
      case String text -> TextNode.valueOf(text);
      case Boolean bool -> BooleanNode.valueOf(bool);
      case ByteString bytes ->
          TextNode.valueOf(Base64.getEncoder().encodeToString(bytes.toByteArray()));
      case CelByteString bytes ->
          TextNode.valueOf(Base64.getEncoder().encodeToString(bytes.toByteArray()));
      case Timestamp timestamp ->
          TextNode.valueOf(
              Instant.ofEpochSecond(timestamp.getSeconds(), timestamp.getNanos()).toString());
      case Duration duration ->
          TextNode.valueOf(
              BigDecimal.valueOf(duration.getSeconds())
                      .add(BigDecimal.valueOf(duration.getNanos(), 9))
                      .stripTrailingZeros()
                      .toPlainString()
                  + "s");
      case Collection<?> collection -> {
        ArrayNode array = Json.NODES.arrayNode(collection.size());
        for (Object element : collection) {
          array.add(toJson(element));
        }
        yield array;
      }
      case Map<?, ?> map -> {
        ObjectNode object = Json.NODES.objectNode();
        for (Map.Entry<?, ?> entry : map.entrySet()) {
          object.set(mapKey(entry.getKey()), toJson(entry.getValue()));
        }
        yield object;
      }
      default -> throw new NotJsonException("a " + describe(value) + " has no JSON form");
    };
  }

  private static JsonNode finite(double number) throws NotJsonException {
    if (!Double.isFinite(number)) {
      throw new NotJsonException(number + " is not a finite number, which JSON cannot hold");
    }
    return DoubleNode.valueOf(number);
  }

  private static String mapKey(Object key) throws NotJsonException {
    return switch (key) {
      case String text -> text;
      case Long number -> number.toString();
      case Integer number -> number.toString();
      case UnsignedLong number -> number.toString();
      case Boolean bool -> bool.toString();
      case null, default ->
          throw new NotJsonException("a map key of type " + describe(key) + " has no JSON form");
    };
  }

  /** The CEL type name of a runtime value with its article, for messages: "an int", "a list". */
  static String describeWithArticle(Object value) {
    String name = describe(value);
    return ("aeiou".indexOf(name.charAt(0)) >= 0 ? "an " : "a ") + name;
  }

  /** The CEL type name of a runtime value, for messages. */
  static String describe(Object value) {
    return switch (value) {
      case null -> "null";
      case NullValue ignored -> "null";
      case com.google.protobuf.NullValue ignored -> "null";
      case Long ignored -> "int";
      case Integer ignored -> "int";
      case UnsignedLong ignored -> "uint";
      case Double ignored -> "double";
      case Float ignored -> "double";
      case String ignored -> "string";
      case Boolean ignored -> "bool";
      case ByteString ignored -> "bytes";
      case CelByteString ignored -> "bytes";
      case Timestamp ignored -> "timestamp";
      case Duration ignored -> "duration";
      case Collection<?> ignored -> "list";
      case Map<?, ?> ignored -> "map";
      default -> value.getClass().getSimpleName();
    };
  }
}
