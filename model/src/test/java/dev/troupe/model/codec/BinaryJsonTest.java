package dev.troupe.model.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Json;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link BinaryWriter#json} writes integers, booleans, null and plain ASCII strings itself: its
 * bytes must be exactly what Jackson writes (stored journals and replication logs hold them, and
 * checksums cover them), for every kind of value, plain or not. {@link BinaryReader#json} reads
 * such values itself: it must make the very nodes Jackson makes of any bytes, and report what
 * Jackson refuses.
 */
class BinaryJsonTest {
  private static final String ALPHABET = "aZ09 ~!#/\"\\\u0000\u001f\u007f\u00e9\u20ac\ud83d\ude00";

  @Test
  void jsonValuesAreJacksonsBytes() {
    List<JsonNode> values = new ArrayList<>(List.of(
        Json.NODES.numberNode(0), Json.NODES.numberNode(-1), Json.NODES.numberNode(Long.MIN_VALUE),
        Json.NODES.numberNode(Long.MAX_VALUE), Json.NODES.numberNode(Integer.MIN_VALUE),
        Json.NODES.numberNode((short) -7), Json.NODES.numberNode(1.5),
        Json.NODES.numberNode(new java.math.BigDecimal("1e400")),
        Json.NODES.numberNode(new java.math.BigInteger("123456789012345678901234567890")),
        Json.NODES.booleanNode(true), Json.NODES.booleanNode(false), Json.NODES.nullNode(),
        Json.NODES.textNode(""), Json.parse("{\"a\":[1,\"x\"]}"), Json.parse("[]")));
    SplittableRandom random = new SplittableRandom(7);
    for (int i = 0; i < 2_000; i++) {
      values.add(Json.NODES.numberNode(random.nextLong() >> random.nextInt(64)));
      StringBuilder text = new StringBuilder();
      for (int length = random.nextInt(12); length > 0; length--) {
        text.append(random.nextInt(4) == 0
            ? ALPHABET.charAt(random.nextInt(ALPHABET.length()))
            : (char) (0x20 + random.nextInt(0x5F)));
      }
      values.add(Json.NODES.textNode(text.toString()));
    }
    for (JsonNode value : values) {
      BinaryWriter fast = new BinaryWriter(4);
      fast.json(value);
      BinaryWriter jackson = new BinaryWriter(4);
      jackson.bytes(Json.writeBytes(value));
      assertArrayEquals(jackson.toByteArray(), fast.toByteArray(), value.toString());
      assertReadsAsJackson(fast.toByteArray());
    }
  }

  @Test
  void jsonFieldsReadAsJacksonReadsThem() {
    List<String> texts = new ArrayList<>(List.of("0", "-0", "7", "-7", "01", "-01", "00", "-",
        "999999999999999999", "-999999999999999999", "1000000000000000000",
        "9223372036854775807", "-9223372036854775808", "99999999999999999999", "1.5", "1e3",
        "true", "false", "null", "tru", "nulls", "\"\"", "\"a\"", "\"a\\\"b\"", "\"", "\"a",
        "\"\u00e9\"", "[1]", "{}", " 1", "1 ", "+1"));
    SplittableRandom random = new SplittableRandom(11);
    for (int i = 0; i < 2_000; i++) {
      StringBuilder text = new StringBuilder();
      String pick = random.nextBoolean() ? "0123456789-" : "\"ab\\ 1-e.";
      for (int length = 1 + random.nextInt(20); length > 0; length--) {
        text.append(pick.charAt(random.nextInt(pick.length())));
      }
      texts.add(text.toString());
    }
    for (String text : texts) {
      BinaryWriter out = new BinaryWriter(4);
      out.bytes(text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
      assertReadsAsJackson(out.toByteArray());
    }
  }

  /** Reading {@code field} (a varint length and JSON bytes) gives Jackson's node, or fails too. */
  private static void assertReadsAsJackson(byte[] field) {
    BinaryReader lengthReader = reader(field);
    byte[] text = lengthReader.bytes();
    JsonNode expected;
    try {
      expected = Json.MAPPER.readTree(text);
    } catch (Exception | Error refused) {
      expected = null;
    }
    if (expected == null || expected.isMissingNode()) {
      assertThrows(IllegalStateException.class, () -> reader(field).json(),
          new String(text, java.nio.charset.StandardCharsets.UTF_8));
      return;
    }
    JsonNode read = reader(field).json();
    assertEquals(expected, read, new String(text, java.nio.charset.StandardCharsets.UTF_8));
    assertEquals(expected.getClass(), read.getClass(),
        new String(text, java.nio.charset.StandardCharsets.UTF_8));
  }

  private static BinaryReader reader(byte[] bytes) {
    return new BinaryReader(bytes, 0, bytes.length,
        (position, message, cause) -> new IllegalStateException(message, cause));
  }
}
