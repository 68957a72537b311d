package dev.troupe.model.codec;

import com.fasterxml.jackson.databind.node.TextNode;
import dev.troupe.model.Json;
import java.nio.charset.StandardCharsets;

/**
 * JSON string values of printable ASCII (and DEL), written and read without Jackson: the same bytes Jackson
 * writes for them ({@link Json#writeBytes}: the characters as they are, a quote and a backslash
 * escaped as {@code \"} and {@code \\}), and the same {@link TextNode} Jackson reads from those
 * bytes. Most stored values are such strings (YCSB's fields, names, ids), and Jackson costs a
 * generator or a parser with its context per value: on the partition writer, which decodes a
 * cached state's ten values to apply a write and encodes them again at the next checkpoint round,
 * that was most of what it allocated (docs/BENCHMARKS.md, "Issue 20: allocation on the commit
 * path"). Anything else (other characters, other escapes, other JSON) is left to Jackson, so the
 * formats and what reads back are unchanged; {@code PrintableJsonStringsTest} compares both ways
 * with Jackson.
 *
 * <p>Stateless; thread-safe.
 */
final class PrintableJsonStrings {
  private static final byte QUOTE = '"';
  private static final byte BACKSLASH = '\\';
  /**
   * The last character handled here: DEL (0x7F), which JSON does not escape and Jackson writes as
   * it is: YCSB's generated values (characters 0x20 to 0x7F) hold one in about two values of 100
   * characters in three, all of which went to Jackson while this stopped at 0x7E.
   */
  private static final char LAST = 0x7F;

  private PrintableJsonStrings() {}

  /**
   * The length of {@code value}'s JSON encoding when every character is printable ASCII or DEL
   * (0x20 to 0x7F); -1 otherwise (then Jackson encodes it).
   */
  static int encodedLength(String value) {
    int length = value.length() + 2;
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < 0x20 || c > LAST) {
        return -1;
      }
      if (c == '"' || c == '\\') {
        length++;
      }
    }
    return length;
  }

  /**
   * Writes the encoding measured by {@link #encodedLength} (not -1) at {@code offset}; {@code
   * encodedLength} is that length. The characters are copied in one step (they are all below 0x80,
   * as measured, so their low bytes are the bytes: for a compact string, an array copy), then, if
   * some need a backslash, spread from the end towards the start in place, each byte moving right
   * by the backslashes before it (so no byte is overwritten before it moved). Why: the
   * character-by-character loop was 5.5 % of a 100,000-record load's CPU samples (ninth session's
   * profile), every value being written three times (journal record, replication entry,
   * checkpoint); copying and spreading took about a quarter of its time per 100-character YCSB
   * value.
   */
  @SuppressWarnings("deprecation") // getBytes(int, int, byte[], int): exactly the low bytes
  static void write(String value, byte[] buffer, int offset, int encodedLength) {
    int count = value.length();
    buffer[offset] = QUOTE;
    value.getBytes(0, count, buffer, offset + 1);
    int to = offset + encodedLength - 1;
    buffer[to--] = QUOTE;
    int from = offset + count;
    while (to > from) { // to == from once every backslash is placed: the rest is in place
      byte b = buffer[from--];
      buffer[to--] = b;
      if (b == QUOTE || b == BACKSLASH) {
        buffer[to--] = BACKSLASH;
      }
    }
  }

  /**
   * Whether {@code bytes[offset, offset + length)} is a string {@link #read} reads: the bytes
   * Jackson writes for the string they encode.
   */
  static boolean isPlain(byte[] bytes, int offset, int length) {
    return escapes(bytes, offset, length) >= 0;
  }

  /**
   * The escapes in {@code bytes[offset, offset + length)} when it is a quoted string of printable
   * ASCII or DEL whose only escapes are {@code \"} and {@code \\}; -1 for anything else.
   */
  static int escapes(byte[] bytes, int offset, int length) {
    int end = offset + length - 1;
    if (length < 2 || bytes[offset] != QUOTE || bytes[end] != QUOTE) {
      return -1;
    }
    int escapes = 0;
    for (int i = offset + 1; i < end; i++) {
      byte b = bytes[i];
      if (b < 0x20) {
        return -1; // also every byte of a multi-byte UTF-8 character (negative)
      }
      if (b == QUOTE) {
        return -1; // an unescaped quote inside: not one string
      }
      if (b == BACKSLASH) {
        i++;
        if (i >= end || (bytes[i] != QUOTE && bytes[i] != BACKSLASH)) {
          return -1;
        }
        escapes++;
      }
    }
    return escapes;
  }

  /**
   * The string {@code bytes[offset, offset + length)} encodes, when it is a quoted string of
   * printable ASCII or DEL whose only escapes are {@code \"} and {@code \\} (what {@link #write}
   * writes); null for anything else, which Jackson then reads (and rejects, if it is not JSON).
   */
  static TextNode read(byte[] bytes, int offset, int length) {
    int escapes = escapes(bytes, offset, length);
    if (escapes < 0) {
      return null;
    }
    int end = offset + length - 1;
    if (escapes == 0) {
      return Json.NODES.textNode(new String(bytes, offset + 1, length - 2,
          StandardCharsets.US_ASCII));
    }
    byte[] unescaped = new byte[length - 2 - escapes];
    int at = 0;
    for (int i = offset + 1; i < end; i++) {
      if (bytes[i] == BACKSLASH) {
        i++;
      }
      unescaped[at++] = bytes[i];
    }
    return Json.NODES.textNode(new String(unescaped, StandardCharsets.US_ASCII));
  }
}
