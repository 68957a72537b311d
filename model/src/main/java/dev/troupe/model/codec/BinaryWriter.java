package dev.troupe.model.codec;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.TextNode;
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
  /** A borrowed writer's buffer starts at this size. Bytes. */
  private static final int SCRATCH_INITIAL_BYTES = 2048;
  /** A borrowed writer's buffer grown past this is dropped on release, not kept. Bytes. */
  private static final int SCRATCH_KEPT_BYTES = 64 * 1024;
  private static final ThreadLocal<BinaryWriter> SCRATCH =
      ThreadLocal.withInitial(() -> new BinaryWriter(SCRATCH_INITIAL_BYTES, true));

  private byte[] buffer;
  private int length;
  /** Whether this is a thread's scratch writer ({@link #borrow}). */
  private final boolean scratch;
  private boolean borrowed;

  public BinaryWriter(int initialCapacity) {
    this(initialCapacity, false);
  }

  private BinaryWriter(int initialCapacity, boolean scratch) {
    buffer = new byte[Math.max(16, initialCapacity)];
    this.scratch = scratch;
  }

  /**
   * This thread's scratch writer, empty, for an encoding copied out at once ({@link
   * #toByteArray}) and then {@link #release released}: its buffer is reused, so the encoding
   * allocates its exact copy and nothing while it grows (a 1 KB state written into a fresh writer
   * copied its buffer five times). Borrowed again before its release (an encoding within an
   * encoding), a fresh writer instead.
   */
  public static BinaryWriter borrow() {
    BinaryWriter writer = SCRATCH.get();
    if (writer.borrowed) {
      return new BinaryWriter(256);
    }
    writer.borrowed = true;
    writer.length = 0;
    return writer;
  }

  /** Gives a {@link #borrow borrowed} writer back (a no-op for any other). */
  public void release() {
    if (scratch) {
      borrowed = false;
      if (buffer.length > SCRATCH_KEPT_BYTES) {
        buffer = new byte[SCRATCH_INITIAL_BYTES];
      }
    }
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

  /** {@code source[from, to)} as it is, with no length: bytes of an encoding copied unchanged. */
  public void raw(byte[] source, int from, int to) {
    ensure(to - from);
    System.arraycopy(source, from, buffer, length, to - from);
    length += to - from;
  }

  public void string(String value) {
    bytes(value.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * A JSON value: its compact JSON bytes with a varint length. Integers, booleans, null and strings
   * of printable ASCII ({@link PrintableJsonStrings}) are written here, byte for byte what Jackson
   * writes for them (checked against it by {@code BinaryJsonTest} and {@code
   * PrintableJsonStringsTest}); any other value goes through Jackson. Why: a journal record, a
   * prepared record and a replication entry each write their operations' values, and Jackson's
   * generator set-up per value took 3.4 % of the embedded SmallBank mix's CPU samples (issue 20,
   * numbers) and most of what the partition writers allocated under YCSB A (strings).
   */
  public void json(JsonNode value) {
    if (value.isInt() || value.isLong() || value.isShort()) {
      ascii(Long.toString(value.longValue()));
    } else if (value.isBoolean()) {
      ascii(value.booleanValue() ? "true" : "false");
    } else if (value.isNull()) {
      ascii("null");
    } else if (!(value instanceof TextNode text && printable(text.textValue()))) {
      bytes(Json.writeBytes(value));
    }
  }

  /**
   * The length of {@code value}'s compact JSON when this writer writes it without Jackson (an
   * integer, a boolean, null, a string of printable ASCII or DEL): what Jackson would write; -1
   * for any other value.
   */
  public static int plainJsonLength(JsonNode value) {
    if (value.isInt() || value.isLong() || value.isShort()) {
      return Long.toString(value.longValue()).length();
    } else if (value.isBoolean()) {
      return value.booleanValue() ? 4 : 5;
    } else if (value.isNull()) {
      return 4;
    } else if (value instanceof TextNode text) {
      return PrintableJsonStrings.encodedLength(text.textValue());
    }
    return -1;
  }

  /**
   * Writes {@code string} as Jackson would, in place (no generator, no intermediate array), when
   * it is printable ASCII ({@link PrintableJsonStrings}); whether it was.
   */
  private boolean printable(String string) {
    int encoded = PrintableJsonStrings.encodedLength(string);
    if (encoded < 0) {
      return false;
    }
    varInt(encoded);
    ensure(encoded);
    PrintableJsonStrings.write(string, buffer, length, encoded);
    length += encoded;
    return true;
  }

  /** {@code text} (printable ASCII that JSON writes as itself), with a varint length. */
  private void ascii(String text) {
    varInt(text.length());
    ensure(text.length());
    for (int i = 0; i < text.length(); i++) {
      buffer[length++] = (byte) text.charAt(i);
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
