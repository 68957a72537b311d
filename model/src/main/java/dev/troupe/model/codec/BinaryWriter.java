package dev.troupe.model.codec;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Json;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * Appends the primitive fields of Troupe's binary formats to a growable array: the journal's
 * records ({@code storage}'s {@code Codec}) and the messages between cores ({@code txn}'s wire
 * codec) share these encodings, so a value has one byte form wherever it travels.
 *
 * <p>Encodings (stable: stored journals depend on them): lengths and counts are unsigned LEB128
 * varints, timestamps and ids fixed 8 bytes big-endian, counter amounts zig-zag varints, strings
 * UTF-8 with a varint length, JSON values Jackson's compact JSON bytes ({@link Json}) with a
 * varint length. {@link #appendChecksum} adds the CRC32C (4 bytes, big-endian) of everything
 * written so far.
 *
 * <p>Not thread-safe: one writer per encoding.
 */
public final class BinaryWriter {
  private byte[] buffer;
  private int length;

  public BinaryWriter(int initialCapacity) {
    buffer = new byte[Math.max(16, initialCapacity)];
  }

  private void ensure(int extra) {
    if (length + extra > buffer.length) {
      buffer = Arrays.copyOf(buffer, Math.max(buffer.length * 2, length + extra));
    }
  }

  /** The number of bytes written so far. */
  public int length() {
    return length;
  }

  /** One raw byte (a record type, a format revision, a flag, a tag of a sealed variant). */
  public void type(byte value) {
    ensure(1);
    buffer[length++] = value;
  }

  public void flag(boolean value) {
    type(value ? (byte) 1 : (byte) 0);
  }

  public void fixedLong(long value) {
    ensure(8);
    for (int shift = 56; shift >= 0; shift -= 8) {
      buffer[length++] = (byte) (value >>> shift);
    }
  }

  public void fixedInt(int value) {
    ensure(4);
    for (int shift = 24; shift >= 0; shift -= 8) {
      buffer[length++] = (byte) (value >>> shift);
    }
  }

  /** Overwrites 4 bytes at {@code offset} (a length field reserved before the body). */
  public void fixedIntAt(int offset, int value) {
    for (int i = 0; i < 4; i++) {
      buffer[offset + i] = (byte) (value >>> (24 - 8 * i));
    }
  }

  /** Unsigned LEB128 of the int's 32 bits (negative ints take 5 bytes and round-trip). */
  public void varInt(int value) {
    varLong(value & 0xFFFFFFFFL);
  }

  public void varLong(long value) {
    ensure(10);
    while ((value & ~0x7FL) != 0) {
      buffer[length++] = (byte) ((value & 0x7F) | 0x80);
      value >>>= 7;
    }
    buffer[length++] = (byte) value;
  }

  public void signedVarLong(long value) {
    varLong((value << 1) ^ (value >> 63));
  }

  public void bytes(byte[] value) {
    varInt(value.length);
    ensure(value.length);
    System.arraycopy(value, 0, buffer, length, value.length);
    length += value.length;
  }

  public void string(String value) {
    bytes(value.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * A JSON value: its compact JSON bytes with a varint length. Integers, booleans, null and strings
   * of printable ASCII without quotes or backslashes are written here, byte for byte what Jackson
   * writes for them (checked by {@code BinaryWriterTest} against it); any other value goes through
   * Jackson. Why: a journal record, a prepared record and a replication entry each write their
   * operations' values, and Jackson's generator set-up per value took 3.4 % of the embedded
   * SmallBank mix's CPU samples (issue 20), nearly all for numbers.
   */
  public void json(JsonNode value) {
    if (value.isInt() || value.isLong() || value.isShort()) {
      ascii(Long.toString(value.longValue()), false);
    } else if (value.isBoolean()) {
      ascii(value.booleanValue() ? "true" : "false", false);
    } else if (value.isNull()) {
      ascii("null", false);
    } else if (value.isTextual() && isPlainAscii(value.textValue())) {
      ascii(value.textValue(), true);
    } else {
      bytes(Json.writeBytes(value));
    }
  }

  /** True when JSON writes every character of {@code text} as itself, one byte each. */
  private static boolean isPlainAscii(String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < 0x20 || c > 0x7E || c == '"' || c == '\\') {
        return false;
      }
    }
    return true;
  }

  /** {@code text} (printable ASCII), in quotes if {@code quoted}, with a varint length. */
  private void ascii(String text, boolean quoted) {
    int size = text.length() + (quoted ? 2 : 0);
    varInt(size);
    ensure(size);
    if (quoted) {
      buffer[length++] = '"';
    }
    for (int i = 0; i < text.length(); i++) {
      buffer[length++] = (byte) text.charAt(i);
    }
    if (quoted) {
      buffer[length++] = '"';
    }
  }

  /** A JSON value that may be absent: a presence byte, then the value. */
  public void optionalJson(JsonNode value) {
    flag(value != null);
    if (value != null) {
      json(value);
    }
  }

  /** Appends the CRC32C of everything written so far. */
  public void appendChecksum() {
    CRC32C crc = new CRC32C();
    crc.update(buffer, 0, length);
    fixedInt((int) crc.getValue());
  }

  /** A copy of the bytes written. */
  public byte[] toByteArray() {
    return Arrays.copyOf(buffer, length);
  }
}
