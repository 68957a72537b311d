package dev.troupe.model.codec;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Json;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * Reads the fields {@link BinaryWriter} writes, from {@code position} up to {@code limit} (the
 * caller verified the framing and checksum first). Every overrun, oversized count or bad JSON is
 * reported through the caller's {@link Failure}, so each format throws its own typed exception
 * ({@code storage}'s {@code CorruptDataException}, the wire's {@code CorruptFrameException}) and
 * a damaged value is reported, never applied. Counts are bounded by the bytes left, so damage
 * cannot make a reader allocate much.
 *
 * <p>Not thread-safe: one reader per decoding.
 */
public final class BinaryReader {
  /** Makes the exception a format throws for damage found at a byte offset. */
  @FunctionalInterface
  public interface Failure {
    RuntimeException at(int position, String message, Throwable cause);
  }

  private final byte[] buffer;
  private final int limit;
  private final Failure failure;
  private int position;

  /**
   * @param position the first byte to read
   * @param limit the end of the fields (exclusive; the checksum, if any, starts here)
   */
  public BinaryReader(byte[] bytes, int position, int limit, Failure failure) {
    this.buffer = bytes;
    this.position = position;
    this.limit = limit;
    this.failure = failure;
  }

  /** The int stored big-endian in the 4 bytes at {@code offset} (a checksum, a length). */
  public static int intAt(byte[] bytes, int offset) {
    return ((bytes[offset] & 0xFF) << 24)
        | ((bytes[offset + 1] & 0xFF) << 16)
        | ((bytes[offset + 2] & 0xFF) << 8)
        | (bytes[offset + 3] & 0xFF);
  }

  /** The CRC32C of {@code bytes[0, length)}. */
  public static int checksum(byte[] bytes, int length) {
    CRC32C crc = new CRC32C();
    crc.update(bytes, 0, length);
    return (int) crc.getValue();
  }

  public int position() {
    return position;
  }

  /** The exception for damage at the current position. */
  public RuntimeException corrupt(String message, Throwable cause) {
    return failure.at(position, message, cause);
  }

  private void need(int count) {
    if (count < 0 || position + count > limit) {
      throw corrupt("truncated field (" + count + " bytes needed)", null);
    }
  }

  public byte type() {
    need(1);
    return buffer[position++];
  }

  /** The next byte, without reading it (a type byte that decides how to read what follows). */
  public byte peekType() {
    need(1);
    return buffer[position];
  }

  /** A byte that must be 0 or 1. */
  public boolean flag() {
    byte value = type();
    if (value != 0 && value != 1) {
      throw corrupt("bad flag " + value, null);
    }
    return value == 1;
  }

  public long fixedLong() {
    need(8);
    long value = 0;
    for (int i = 0; i < 8; i++) {
      value = (value << 8) | (buffer[position++] & 0xFF);
    }
    return value;
  }

  public int fixedInt() {
    need(4);
    int value = intAt(buffer, position);
    position += 4;
    return value;
  }

  public long varLong() {
    long value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      need(1);
      byte b = buffer[position++];
      value |= (long) (b & 0x7F) << shift;
      if ((b & 0x80) == 0) {
        return value;
      }
    }
    throw corrupt("varint too long", null);
  }

  public int varInt() {
    long value = varLong();
    if ((value >>> 32) != 0) {
      throw corrupt("varint out of int range", null);
    }
    return (int) value;
  }

  /** A count of following items; bounded by the bytes left, so corruption cannot allocate big. */
  public int count() {
    int value = varInt();
    if (value < 0 || value > limit - position) {
      throw corrupt("count " + value + " exceeds the remaining bytes", null);
    }
    return value;
  }

  public long signedVarLong() {
    long raw = varLong();
    return (raw >>> 1) ^ -(raw & 1);
  }

  public byte[] bytes() {
    int size = varInt();
    need(size);
    byte[] value = Arrays.copyOfRange(buffer, position, position + size);
    position += size;
    return value;
  }

  /** Passes over a field written by {@link BinaryWriter#bytes} (or a string, or JSON); its size. */
  public int skipBytes() {
    int size = varInt();
    need(size);
    position += size;
    return size;
  }

  public String string() {
    return new String(bytes(), StandardCharsets.UTF_8);
  }

  /**
   * A JSON value written by {@link BinaryWriter#json}. An integer of at most 18 digits, a boolean,
   * null and a string of printable ASCII ({@link PrintableJsonStrings}) are read here, into the
   * very nodes Jackson would make of them with {@link Json#MAPPER} (a {@code LongNode} for an
   * integer; checked by {@code BinaryJsonTest} and {@code PrintableJsonStringsTest}); anything
   * else, damage included, goes to Jackson.
   */
  public JsonNode json() {
    int size = varInt();
    need(size);
    // A string of printable ASCII (most stored values), a number, a boolean or null is read in
    // place; anything else by Jackson.
    JsonNode plain = size > 0 && buffer[position] == '"'
        ? PrintableJsonStrings.read(buffer, position, size)
        : plainJson(position, size);
    if (plain != null) {
      position += size;
      return plain;
    }
    byte[] value = Arrays.copyOfRange(buffer, position, position + size);
    position += size;
    return parse(value);
  }

  /**
   * The integer, boolean or null of {@code size} bytes at {@code start}, when they are one; else
   * null.
   */
  private JsonNode plainJson(int start, int size) {
    if (size == 0) {
      return null;
    }
    byte first = buffer[start];
    if (first == '-' || (first >= '0' && first <= '9')) {
      int digits = start + (first == '-' ? 1 : 0);
      int count = start + size - digits;
      if (count < 1 || count > 18 || (buffer[digits] == '0' && count > 1)) {
        return null;
      }
      long value = 0;
      for (int i = digits; i < start + size; i++) {
        byte b = buffer[i];
        if (b < '0' || b > '9') {
          return null;
        }
        value = value * 10 + (b - '0');
      }
      return Json.NODES.numberNode(first == '-' ? -value : value);
    }
    if (matches(start, size, TRUE)) {
      return Json.NODES.booleanNode(true);
    }
    if (matches(start, size, FALSE)) {
      return Json.NODES.booleanNode(false);
    }
    if (matches(start, size, NULL)) {
      return Json.NODES.nullNode();
    }
    return null;
  }

  private static final byte[] TRUE = "true".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] FALSE = "false".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] NULL = "null".getBytes(StandardCharsets.US_ASCII);

  private boolean matches(int start, int size, byte[] literal) {
    return size == literal.length
        && Arrays.equals(buffer, start, start + size, literal, 0, literal.length);
  }

  /** A JSON value written by {@link BinaryWriter#optionalJson}; null when absent. */
  public JsonNode optionalJson() {
    return flag() ? json() : null;
  }

  /**
   * Parses JSON as stored, without {@code Json.parse}'s checks on client input: a value written
   * by an earlier version must still read.
   */
  public JsonNode parse(byte[] bytes) {
    try {
      JsonNode node = Json.MAPPER.readTree(bytes);
      if (node == null || node.isMissingNode()) {
        throw corrupt("empty JSON value", null);
      }
      return node;
    } catch (IOException e) {
      throw corrupt("bad JSON value: " + e.getMessage(), e);
    }
  }

  /** Every field was read: nothing may follow. */
  public void end() {
    if (position != limit) {
      throw corrupt((limit - position) + " unexpected trailing bytes", null);
    }
  }
}
