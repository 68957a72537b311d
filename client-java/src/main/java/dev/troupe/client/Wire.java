package dev.troupe.client;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Function;

/** JSON plumbing shared by the calls and the records: one mapper, lenient readers. */
final class Wire {
  static final ObjectMapper MAPPER = new ObjectMapper();
  static final JsonNodeFactory NODES = JsonNodeFactory.instance;

  private Wire() {}

  /** Any value (a JsonNode, a Map, a String, a number, a record, null) as JSON. */
  static JsonNode tree(Object value) {
    if (value instanceof JsonNode node) {
      return node;
    }
    return value == null ? NODES.nullNode() : MAPPER.valueToTree(value);
  }

  static ObjectNode object(Object value) {
    JsonNode node = tree(value);
    if (!node.isObject()) {
      throw new IllegalArgumentException("a JSON object is needed, not " + node);
    }
    return (ObjectNode) node;
  }

  static byte[] bytes(JsonNode node) {
    try {
      return MAPPER.writeValueAsBytes(node);
    } catch (JsonProcessingException impossible) {
      throw new UncheckedIOException(impossible);
    }
  }

  /** An answer's body: missing when empty, the text itself when it is not JSON. */
  static JsonNode parse(byte[] body) {
    if (body == null || body.length == 0) {
      return MissingNode.getInstance();
    }
    try {
      return MAPPER.readTree(body);
    } catch (IOException notJson) {
      return TextNode.valueOf(new String(body, java.nio.charset.StandardCharsets.UTF_8));
    }
  }

  /** A field that must be there (an answer without it is of an unexpected shape). */
  static JsonNode required(JsonNode body, String field) {
    JsonNode value = body.get(field);
    if (value == null || value.isNull()) {
      throw new IllegalStateException("the answer has no \"" + field + "\"");
    }
    return value;
  }

  static String text(JsonNode body, String field) {
    return required(body, field).asText();
  }

  static long number(JsonNode body, String field) {
    JsonNode value = required(body, field);
    if (!value.canConvertToLong()) {
      throw new IllegalStateException("\"" + field + "\" is not a 64-bit integer: " + value);
    }
    return value.asLong();
  }

  static OptionalLong optionalNumber(JsonNode body, String field) {
    JsonNode value = body.get(field);
    return value == null || value.isNull() ? OptionalLong.empty() : OptionalLong.of(value.asLong());
  }

  /** An object field as an object (empty when absent or not an object). */
  static ObjectNode state(JsonNode body, String field) {
    JsonNode value = body.get(field);
    return value != null && value.isObject() ? (ObjectNode) value : NODES.objectNode();
  }

  static Optional<ObjectNode> optionalState(JsonNode body, String field) {
    JsonNode value = body.get(field);
    return value != null && value.isObject() ? Optional.of((ObjectNode) value) : Optional.empty();
  }

  static <T> List<T> list(JsonNode body, String field, Function<JsonNode, T> each) {
    List<T> items = new ArrayList<>();
    for (JsonNode item : body.path(field)) {
      items.add(each.apply(item));
    }
    return List.copyOf(items);
  }
}
