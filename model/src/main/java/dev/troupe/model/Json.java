package dev.troupe.model;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;

/**
 * The one JSON configuration of Troupe. Integers always parse as 64-bit longs so that the same value
 * has the same node type (and so the same identity in sets) whether it came from a client, a CEL
 * result or the journal.
 */
public final class Json {
  public static final ObjectMapper MAPPER =
      JsonMapper.builder()
          .enable(DeserializationFeature.USE_LONG_FOR_INTS)
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          .build();

  public static final JsonNodeFactory NODES = JsonNodeFactory.instance;

  private Json() {}

  /**
   * Parses JSON text; malformed text is the client's mistake, reported as invalid_request. So is a
   * number Troupe's values cannot hold: one beyond a double's range (JSON has no infinity; {@code
   * 1e400} would otherwise read as one and be written back as the text "Infinity") and an integer
   * beyond 64 bits signed (what CEL and counters compute with; it would read back as a different
   * number).
   */
  public static JsonNode parse(String text) {
    try {
      JsonNode node = MAPPER.readTree(text);
      if (node == null || node.isMissingNode()) {
        throw TroupeException.invalid("request body is empty; expected JSON");
      }
      return checkNumbers(node);
    } catch (JsonProcessingException e) {
      throw TroupeException.invalid("malformed JSON: " + e.getOriginalMessage());
    }
  }

  /** Parses JSON bytes, like {@link #parse(String)}. */
  public static JsonNode parse(byte[] bytes) {
    try {
      JsonNode node = MAPPER.readTree(bytes);
      if (node == null || node.isMissingNode()) {
        throw TroupeException.invalid("request body is empty; expected JSON");
      }
      return checkNumbers(node);
    } catch (JsonProcessingException e) {
      throw TroupeException.invalid("malformed JSON: " + e.getOriginalMessage());
    } catch (java.io.IOException e) {
      throw TroupeException.invalid("unreadable JSON: " + e.getMessage());
    }
  }

  /** Refuses a number no value can hold anywhere in {@code node} (see {@link #parse(String)}). */
  private static JsonNode checkNumbers(JsonNode node) {
    if (node.isContainerNode()) {
      for (JsonNode child : node) {
        checkNumbers(child);
      }
    } else if (node.isNumber()) {
      if (node.isIntegralNumber() ? !node.canConvertToLong() : !Double.isFinite(node.doubleValue())) {
        throw TroupeException.invalid("the number " + node.asText() + " is out of range: numbers"
            + " must be finite doubles or integers within 64 bits signed");
      }
    }
    return node;
  }

  /** Compact text; also the identity of a set element. */
  public static String write(JsonNode node) {
    try {
      return MAPPER.writeValueAsString(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a JsonNode always serializes", e);
    }
  }

  public static byte[] writeBytes(Object value) {
    try {
      return MAPPER.writeValueAsBytes(value);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot serialize " + value.getClass(), e);
    }
  }
}
