package dev.troupe.model.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Json;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link BinaryWriter#json} and {@link BinaryReader#json} write and read JSON strings of printable
 * ASCII themselves (ValueEncoding's formats are unchanged): the bytes are Jackson's to the byte,
 * and what reads back is what Jackson reads, for every printable character, random strings full of
 * quotes and backslashes, strings Jackson must still handle (other characters and escapes), and
 * damaged values, which are still refused.
 */
class PrintableJsonStringsTest {

  /** The field as the writer encodes it (length and JSON), and as Jackson would. */
  private static void assertSameAsJackson(JsonNode value) {
    BinaryWriter ours = new BinaryWriter(16);
    ours.json(value);
    BinaryWriter jackson = new BinaryWriter(16);
    jackson.bytes(Json.writeBytes(value));
    assertArrayEquals(jackson.toByteArray(), ours.toByteArray(), () -> "bytes of " + value);
    byte[] field = ours.toByteArray();
    JsonNode read = reader(field).json();
    assertEquals(value, read, () -> "read back " + value);
    assertEquals(value.getNodeType(), read.getNodeType());
  }

  private static BinaryReader reader(byte[] bytes) {
    return new BinaryReader(bytes, 0, bytes.length,
        (position, message, cause) -> new IllegalArgumentException(message, cause));
  }

  @Test
  void everyPrintableCharacterAndDelIsWrittenAndReadAsJacksonDoes() {
    for (char c = 0x20; c <= 0x7F; c++) {
      assertSameAsJackson(Json.NODES.textNode(String.valueOf(c)));
      assertSameAsJackson(Json.NODES.textNode("a" + c + "b" + c + c));
    }
    assertSameAsJackson(Json.NODES.textNode(""));
    assertSameAsJackson(Json.NODES.textNode("\\\"\\\\\""));
  }

  @Test
  void randomPrintableStringsFullOfQuotesAndBackslashesRoundTripAsJacksonDoes() {
    Random random = new Random(20);
    for (int i = 0; i < 2000; i++) {
      char[] chars = new char[random.nextInt(300)];
      for (int j = 0; j < chars.length; j++) {
        int pick = random.nextInt(10);
        chars[j] = pick == 0 ? '"' : pick == 1 ? '\\' : (char) (0x20 + random.nextInt(0x60));
      }
      assertSameAsJackson(Json.NODES.textNode(new String(chars)));
    }
  }

  @Test
  void stringsAreCopiedAndSpreadAtAnyOffsetWithAndWithoutEscapes() {
    Random random = new Random(21);
    for (int i = 0; i < 1000; i++) {
      boolean escapes = i % 2 == 0;
      char[] chars = new char[i % 50 == 0 ? 4000 + random.nextInt(1000) : random.nextInt(300)];
      for (int j = 0; j < chars.length; j++) {
        char c;
        do {
          c = (char) (0x20 + random.nextInt(0x60));
        } while (!escapes && (c == '"' || c == '\\'));
        chars[j] = c;
      }
      JsonNode value = Json.NODES.textNode(new String(chars));
      assertSameAsJackson(value);
      // Two values in one writer: the second lands at an offset, after the first.
      BinaryWriter ours = new BinaryWriter(4);
      ours.json(value);
      ours.json(value);
      BinaryWriter jackson = new BinaryWriter(4);
      jackson.bytes(Json.writeBytes(value));
      jackson.bytes(Json.writeBytes(value));
      assertArrayEquals(jackson.toByteArray(), ours.toByteArray(), () -> "bytes of " + value);
    }
  }

  @Test
  void everythingElseIsLeftToJackson() {
    List<JsonNode> values = new ArrayList<>();
    for (char c = 0; c < 0x20; c++) {
      values.add(Json.NODES.textNode("x" + c + "y"));
    }
    for (String text : List.of("\u0080", "caf\u00e9", "\u20ac 10", "\ud83d\ude00", "a\u2028b")) {
      values.add(Json.NODES.textNode(text));
    }
    values.add(Json.parse("12"));
    values.add(Json.parse("1.5"));
    values.add(Json.parse("true"));
    values.add(Json.parse("null"));
    values.add(Json.parse("{\"a\":\"b\",\"c\":[1,\"d\"]}"));
    values.add(Json.parse("[\"\\\"\"]"));
    for (JsonNode value : values) {
      assertSameAsJackson(value);
    }
  }

  @Test
  void otherEscapesAndSpacingAreReadByJackson() {
    for (String json : List.of("\"\\/\"", "\"a\\nb\"", "\"\\u0041\"", " \"x\"", "\"x\" ",
        "\"\\t\\\\\"")) {
      byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
      assertNull(PrintableJsonStrings.read(bytes, 0, bytes.length), json);
      BinaryWriter field = new BinaryWriter(16);
      field.bytes(bytes);
      assertEquals(Json.parse(json), reader(field.toByteArray()).json(), json);
    }
  }

  @Test
  void damagedValuesAreStillRefused() {
    for (String json : List.of("\"abc", "abc\"", "\"a\"b\"", "\"a\\\"", "\"", "\"a\"\"")) {
      byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
      assertNull(PrintableJsonStrings.read(bytes, 0, bytes.length), json);
      BinaryWriter field = new BinaryWriter(16);
      field.bytes(bytes);
      assertThrows(IllegalArgumentException.class, () -> reader(field.toByteArray()).json(), json);
    }
    // A field longer than what is left is refused before anything is read.
    byte[] truncated = Arrays.copyOf(fieldOf("\"abcdef\""), 5);
    assertThrows(IllegalArgumentException.class, () -> reader(truncated).json());
  }

  @Test
  void aBorrowedWriterIsReusedAndAnEncodingWithinAnEncodingGetsItsOwn() {
    BinaryWriter first = BinaryWriter.borrow();
    first.string("outer");
    BinaryWriter nested = BinaryWriter.borrow();
    nested.string("inner");
    assertNotNull(nested);
    assertArrayEquals(fieldOfString("inner"), nested.toByteArray());
    nested.release();
    assertArrayEquals(fieldOfString("outer"), first.toByteArray());
    first.release();
    BinaryWriter again = BinaryWriter.borrow();
    assertEquals(0, again.length(), "a borrowed writer starts empty");
    assertSame(first, again, "the thread's writer is reused once released");
    again.release();
  }

  private static byte[] fieldOf(String json) {
    BinaryWriter field = new BinaryWriter(16);
    field.bytes(json.getBytes(StandardCharsets.UTF_8));
    return field.toByteArray();
  }

  private static byte[] fieldOfString(String text) {
    BinaryWriter field = new BinaryWriter(16);
    field.string(text);
    return field.toByteArray();
  }
}
