package dev.troupe.model.codec;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Operation;
import dev.troupe.model.SmallPersistentMap;
import dev.troupe.model.dependency.DependencyKeys;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * Work done on an entity state held in {@link ValueEncoding#writeState}'s bytes without decoding
 * it (issue 20, write path: docs/design/performance.md). The object cache holds small states so
 * encoded; decoding one (ten values, a map, a state) and encoding it again cost the partition
 * writer about as much as the rest of a YCSB update's commit, and a read of it decoding, building a
 * JSON tree and writing it through Jackson most of a read's own CPU. Two operations, each for the
 * plain shape most records have and answering null for anything else (the caller then decodes as
 * before, so what it sees never depends on which way was taken), and an {@link #outline} of a
 * state read from disk (whether it is in the encoder's own form, and what the object cache weighs):
 *
 * <ul>
 *   <li>{@link #applyAssigns}: the state after a record that only assigns existing registers,
 *       written as {@link ValueEncoding#writeState} would write the decoded state after {@link
 *       dev.troupe.model.EntityState#apply}: the same bytes ({@code EncodedStatesTest} compares
 *       both on random states and records).
 *   <li>{@link #renderSchemaless}: the JSON a schemaless type renders of the state ({@code
 *       CompiledType.render}, then {@code Json.writeBytes}): the same bytes, for a state of
 *       registers whose values the codec reads without Jackson (integers, booleans, null, strings
 *       of printable ASCII: {@link PrintableJsonStrings}), which are stored exactly as Jackson
 *       writes their nodes.
 * </ul>
 *
 * <p>The plain shape: keys of ASCII in ascending order (so the encoding's order is the rendering's
 * and the decoded map's), values of kind register, no key or entity tombstones, no deleted
 * counters or write counts, and the write counts entry last. Anything else, damage included,
 * answers null: the bytes are the object cache's own, and decoding them reports damage as before.
 *
 * <p>Stateless; thread-safe.
 */
public final class EncodedStates {
  /** Offsets of one entry's parts in the encoding. */
  private static final int KEY_START = 0;
  private static final int KEY_END = 1;
  private static final int VALUE_START = 2;
  private static final int END = 3;
  private static final int FIELDS = 4;
  /**
   * The most entries of a state handled here: the object cache holds states of at most 16 keys
   * encoded ({@code CachedState.heldEncoded}); a longer one answers null.
   */
  private static final int MAX_ENTRIES = 32;

  private EncodedStates() {}

  /**
   * Each thread's layout, reused: a layout is read and used within one call, which calls nothing
   * that reads another.
   */
  private static final ThreadLocal<Layout> LAYOUTS = ThreadLocal.withInitial(Layout::new);

  /** Where the parts of a plain state's encoding are (one thread's, reused). */
  private static final class Layout {
    /** The offset of the exists flag (the version's 8 bytes are before it). */
    int existsAt;
    /** The offset of the first entry. */
    int entriesStart;
    /** The values' entries: {@code FIELDS} offsets each. */
    final int[] entries = new int[MAX_ENTRIES * FIELDS];
    int valueCount;
    /** The write counts' entry (key, kind, map), or -1 when there is none. */
    int writeCountsStart = -1;
    int writeCountsEnd;
  }

  /**
   * Reads the layout of the state encoded in {@code bytes[start, limit)}; null when it is not of
   * the plain shape or not well formed.
   */
  private static Layout layout(byte[] bytes, int start, int limit) {
    Cursor in = new Cursor(bytes, start, limit);
    Layout layout = LAYOUTS.get();
    layout.valueCount = 0;
    layout.writeCountsStart = -1;
    if (!in.skip(8)) {
      return null;
    }
    layout.existsAt = in.position;
    int exists = in.next();
    long count = in.varLong();
    if ((exists != 0 && exists != 1) || count < 0 || count > MAX_ENTRIES) {
      return null;
    }
    layout.entriesStart = in.position;
    int previousKeyStart = -1;
    int previousKeyEnd = -1;
    for (int i = 0; i < count; i++) {
      int entryStart = in.position;
      long keyLength = in.varLong();
      int keyStart = in.position;
      if (keyLength < 0 || !in.skip(keyLength)) {
        return null;
      }
      int keyEnd = in.position;
      int kind = in.next();
      if (kind == ValueEncoding.WRITE_COUNTS_KIND) {
        // Written after every value (and tombstone), under the empty key; only nothing may follow.
        if (keyEnd != keyStart || i != count - 1 || !skipCounterMap(in)) {
          return null;
        }
        layout.writeCountsStart = entryStart;
        layout.writeCountsEnd = in.position;
        break;
      }
      if (!plainRegisterEntry(bytes, kind, keyStart, keyEnd, previousKeyStart, previousKeyEnd)) {
        return null;
      }
      int valueStart = in.position;
      long jsonLength = in.varLong();
      if (jsonLength < 0 || !in.skip(jsonLength) || !in.skip(8) || in.varLong() < 0) {
        return null;
      }
      int at = layout.valueCount++ * FIELDS;
      layout.entries[at + KEY_START] = keyStart;
      layout.entries[at + KEY_END] = keyEnd;
      layout.entries[at + VALUE_START] = valueStart;
      layout.entries[at + END] = in.position;
      previousKeyStart = keyStart;
      previousKeyEnd = keyEnd;
    }
    return in.position == limit && in.ok ? layout : null;
  }

  /**
   * Whether an entry of kind {@code kind} under the key {@code bytes[keyStart, keyEnd)} keeps the
   * plain shape: a register under an ASCII key after the previous key ({@code previousKeyStart}
   * -1: none) in ascending order.
   */
  private static boolean plainRegisterEntry(byte[] bytes, int kind, int keyStart, int keyEnd,
      int previousKeyStart, int previousKeyEnd) {
    return kind == ValueEncoding.REGISTER_KIND && ascii(bytes, keyStart, keyEnd)
        && (previousKeyStart < 0
            || Arrays.compareUnsigned(bytes, previousKeyStart, previousKeyEnd,
                bytes, keyStart, keyEnd) < 0);
  }

  private static boolean skipCounterMap(Cursor in) {
    long size = in.varLong();
    if (size < 0 || size > in.limit - in.position) {
      return false;
    }
    for (long i = 0; i < size; i++) {
      if (in.varLong() < 0 || in.varLong() < 0) {
        return false;
      }
    }
    return in.ok;
  }

  private static boolean ascii(byte[] bytes, int from, int to) {
    for (int i = from; i < to; i++) {
      if (bytes[i] < 0) {
        return false;
      }
    }
    return true;
  }

  // ------------------------------------------------------------------------------ applyAssigns

  /**
   * The registers a record's assignments replaced, in the order of {@link #applyAssigns}'s
   * operations' distinct keys: each as its {@code (value, timestamp, originDc)} was encoded, for
   * the caller's weight estimates.
   */
  public record Replaced(String key, JsonNode value) {}

  /**
   * Writes to {@code out} the fields of the state encoded in {@code bytes[start, limit)} after a
   * record of {@code operations} committed at {@code commitTimestamp} in {@code originDc}, exactly
   * as {@link ValueEncoding#writeState} writes that state decoded and applied; answers the
   * registers replaced (one per distinct key, the last assignment of a key winning), or null, with
   * {@code out} partly written, when the record or the state is not of the simple kind: every
   * operation a local {@link Operation.Assign} of an existing register of a plain state (no key
   * starting with {@code $}: markers, dependency and hidden keys) stamped before {@code
   * commitTimestamp}, the state's version before it, and the write counts present.
   */
  public static List<Replaced> applyAssigns(byte[] bytes, int start, int limit,
      List<Operation> operations, long commitTimestamp, int originDc, BinaryWriter out) {
    if (operations.isEmpty() || limit - start < 9) {
      return null;
    }
    long version = fixedLongAt(bytes, start);
    if (version >= commitTimestamp) {
      return null;
    }
    Layout layout = layout(bytes, start, limit);
    if (layout == null || layout.writeCountsStart < 0) {
      return null;
    }
    // Per entry, the index of the last operation assigning it (-1: none).
    int[] assignedBy = new int[layout.valueCount];
    Arrays.fill(assignedBy, -1);
    int distinct = 0;
    for (int o = 0; o < operations.size(); o++) {
      if (!(operations.get(o) instanceof Operation.Assign assign)
          || assign.key().isEmpty() || assign.key().charAt(0) == '$') {
        return null;
      }
      int entry = find(bytes, layout, assign.key());
      if (entry < 0) {
        return null; // a new key: the decoded way places it
      }
      int valueStart = layout.entries[entry * FIELDS + VALUE_START];
      Cursor register = new Cursor(bytes, valueStart, limit);
      long jsonLength = register.varLong();
      register.skip(jsonLength);
      if (!register.ok || fixedLongAt(bytes, register.position) >= commitTimestamp) {
        return null; // a register stamped at or after the record: merging decides, decode
      }
      if (assignedBy[entry] < 0) {
        distinct++;
      }
      assignedBy[entry] = o;
    }
    Replaced[] replaced = new Replaced[distinct];
    int next = 0;
    // The version, the exists flag (a write makes the entity exist), the count (no key added).
    out.fixedLong(commitTimestamp);
    out.flag(true);
    out.raw(bytes, layout.existsAt + 1, layout.entriesStart);
    int copiedUpTo = layout.entriesStart;
    for (int entry = 0; entry < layout.valueCount; entry++) {
      int operation = assignedBy[entry];
      if (operation < 0) {
        continue;
      }
      int at = entry * FIELDS;
      // The key's length and name as they were, then the register written anew.
      out.raw(bytes, copiedUpTo, layout.entries[at + KEY_END]);
      out.type(ValueEncoding.REGISTER_KIND);
      Operation.Assign assign = (Operation.Assign) operations.get(operation);
      out.json(assign.value());
      out.fixedLong(commitTimestamp);
      out.varInt(originDc);
      copiedUpTo = layout.entries[at + END];
      replaced[next++] = new Replaced(assign.key(),
          registerValue(bytes, layout.entries[at + VALUE_START], limit));
    }
    out.raw(bytes, copiedUpTo, layout.writeCountsStart);
    // The write counts: every assignment is a write of originDc (EntityState.apply's wrote()).
    Cursor counts = new Cursor(bytes, layout.writeCountsStart, layout.writeCountsEnd);
    counts.skip(counts.varLong()); // the empty key
    counts.next(); // the kind
    int size = (int) counts.varLong();
    int[] dataCentres = new int[size + 1];
    long[] writes = new long[size + 1];
    int entries = 0;
    boolean added = false;
    for (int i = 0; i < size; i++) {
      long dataCentre = counts.varLong();
      long raw = counts.varLong();
      long count = (raw >>> 1) ^ -(raw & 1);
      if (dataCentre < 0 || dataCentre > Integer.MAX_VALUE
          || (entries > 0 && dataCentre <= dataCentres[entries - 1])) {
        return null; // not a map the encoder wrote (in data centre order)
      }
      if (!added && originDc < dataCentre) {
        dataCentres[entries] = originDc;
        writes[entries++] = operations.size();
        added = true;
      }
      dataCentres[entries] = (int) dataCentre;
      writes[entries] = count;
      if (dataCentre == originDc) {
        writes[entries] += operations.size();
        added = true;
      }
      entries++;
    }
    if (!counts.ok || counts.position != layout.writeCountsEnd || originDc < 0) {
      return null;
    }
    if (!added) {
      dataCentres[entries] = originDc;
      writes[entries++] = operations.size();
    }
    out.varInt(0); // the empty key
    out.type(ValueEncoding.WRITE_COUNTS_KIND);
    out.varInt(entries);
    for (int i = 0; i < entries; i++) {
      out.varInt(dataCentres[i]);
      out.signedVarLong(writes[i]);
    }
    return List.of(replaced);
  }

  /** The index of the value entry named {@code key}, or -1. */
  private static int find(byte[] bytes, Layout layout, String key) {
    int length = key.length();
    for (int entry = 0; entry < layout.valueCount; entry++) {
      int keyStart = layout.entries[entry * FIELDS + KEY_START];
      int keyEnd = layout.entries[entry * FIELDS + KEY_END];
      if (keyEnd - keyStart != length) {
        continue;
      }
      int i = 0;
      while (i < length && bytes[keyStart + i] == key.charAt(i)) {
        i++;
      }
      if (i == length) {
        return entry;
      }
    }
    return -1;
  }

  /** The JSON value of the register encoded at {@code valueStart} (after its kind byte). */
  private static JsonNode registerValue(byte[] bytes, int valueStart, int limit) {
    return new BinaryReader(bytes, valueStart, limit,
        (position, message, cause) -> new IllegalStateException(message, cause)).json();
  }

  // -------------------------------------------------------------------------- renderSchemaless

  /**
   * The JSON a schemaless type renders of the state encoded in {@code bytes[start, limit)}: an
   * object of its keys in ascending order, hidden keys ({@code $...}) left out, each register's
   * value; byte for byte {@code Json.writeBytes(type.render(state))}. Null when the state is not
   * plain or a value is not one the codec reads without Jackson. Whether the entity exists is the
   * caller's concern, as for the rendering.
   */
  public static byte[] renderSchemaless(byte[] bytes, int start, int limit) {
    Layout layout = layout(bytes, start, limit);
    if (layout == null) {
      return null;
    }
    // Measure first: the answer is allocated once, at its size.
    int size = 2;
    int rendered = 0;
    for (int entry = 0; entry < layout.valueCount; entry++) {
      int at = entry * FIELDS;
      int keyStart = layout.entries[at + KEY_START];
      int keyEnd = layout.entries[at + KEY_END];
      if (keyEnd > keyStart && bytes[keyStart] == '$') {
        continue; // hidden
      }
      int keyLength = quotedLength(bytes, keyStart, keyEnd);
      Cursor value = new Cursor(bytes, layout.entries[at + VALUE_START], limit);
      int jsonLength = (int) value.varLong();
      if (keyLength < 0 || !plainJson(bytes, value.position, jsonLength)) {
        return null;
      }
      size += (rendered++ > 0 ? 1 : 0) + keyLength + 1 + jsonLength;
    }
    byte[] json = new byte[size];
    int at = 0;
    json[at++] = '{';
    rendered = 0;
    for (int entry = 0; entry < layout.valueCount; entry++) {
      int offsets = entry * FIELDS;
      int keyStart = layout.entries[offsets + KEY_START];
      int keyEnd = layout.entries[offsets + KEY_END];
      if (keyEnd > keyStart && bytes[keyStart] == '$') {
        continue;
      }
      if (rendered++ > 0) {
        json[at++] = ',';
      }
      json[at++] = '"';
      for (int i = keyStart; i < keyEnd; i++) {
        byte b = bytes[i];
        if (b == '"' || b == '\\') {
          json[at++] = '\\';
        }
        json[at++] = b;
      }
      json[at++] = '"';
      json[at++] = ':';
      Cursor value = new Cursor(bytes, layout.entries[offsets + VALUE_START], limit);
      int jsonLength = (int) value.varLong();
      System.arraycopy(bytes, value.position, json, at, jsonLength);
      at += jsonLength;
    }
    json[at++] = '}';
    return at == size ? json : null;
  }

  /**
   * The length of a key's JSON string (quotes and escapes included) when Jackson writes it as this
   * does: every byte printable ASCII or DEL, only a quote and a backslash escaped; -1 otherwise.
   */
  private static int quotedLength(byte[] bytes, int from, int to) {
    int length = to - from + 2;
    for (int i = from; i < to; i++) {
      byte b = bytes[i];
      if (b < 0x20) {
        return -1;
      }
      if (b == '"' || b == '\\') {
        length++;
      }
    }
    return length;
  }

  /**
   * Whether the stored JSON at {@code bytes[start, start + length)} is a value the codec reads
   * without Jackson and so exactly the bytes Jackson writes for what it reads: a string {@link
   * PrintableJsonStrings} reads, an integer of at most 18 digits in its shortest form, a boolean,
   * null.
   */
  private static boolean plainJson(byte[] bytes, int start, int length) {
    if (length <= 0 || start + length > bytes.length) {
      return false;
    }
    byte first = bytes[start];
    if (first == '"') {
      return PrintableJsonStrings.isPlain(bytes, start, length);
    }
    if (first == '-' || (first >= '0' && first <= '9')) {
      int digits = start + (first == '-' ? 1 : 0);
      int count = start + length - digits;
      if (count < 1 || count > 18 || (bytes[digits] == '0' && (count > 1 || first == '-'))) {
        return false;
      }
      for (int i = digits; i < start + length; i++) {
        if (bytes[i] < '0' || bytes[i] > '9') {
          return false;
        }
      }
      return true;
    }
    return literal(bytes, start, length, "true") || literal(bytes, start, length, "false")
        || literal(bytes, start, length, "null");
  }

  private static boolean literal(byte[] bytes, int start, int length, String text) {
    if (length != text.length()) {
      return false;
    }
    for (int i = 0; i < length; i++) {
      if (bytes[start + i] != text.charAt(i)) {
        return false;
      }
    }
    return true;
  }

  // ----------------------------------------------------------------------------------- outline

  /**
   * What the object cache needs of a state encoded on disk, read in one pass without building
   * objects: its version and existence, its number of values, and the sums its weight estimate
   * is made of ({@code Codec.estimateWeight}): the keys' characters, the string values (count and
   * characters, each character one byte) and the other values (integers, booleans, null).
   * {@code holdsDependencyKeys}: a key names a dependency record ({@link
   * DependencyKeys#isDependencyKey}).
   */
  public record Outline(long version, boolean exists, int valueCount, long keyCharacters,
      int textValues, long textCharacters, int otherValues, boolean holdsDependencyKeys) {}

  /**
   * The outline of the state encoded in {@code bytes[start, limit)} when it is plain and in the
   * canonical form {@link ValueEncoding#writeState} writes, so that decoding it and encoding the
   * state again gives exactly these bytes; null for anything else, when the caller decodes. Why:
   * the object cache loaded a checkpoint by decoding it, encoding the state again into the very
   * same bytes and walking it to weigh it, about a quarter of the server's CPU under YCSB C over a
   * cache smaller than the data (issue 20, docs/BENCHMARKS.md, "a cache miss served from its
   * checkpoint's bytes").
   *
   * <p>Handled: at most {@link SmallPersistentMap#MAX_SIZE} values, all registers, under ASCII
   * keys in ascending order (the decoded small map's order, so the order writing follows), each
   * value JSON that {@link BinaryReader#json} reads without Jackson and {@link BinaryWriter#json}
   * writes back byte for byte ({@link #plainJson}: printable strings, shortest integers of at most
   * 18 digits, booleans, null); then at most a non-empty write counts entry, in data centre order
   * (as {@code writeCounterMap} writes it) without repeats. Every varint in its shortest form (the
   * only one the writer writes). No tombstones, deleted counters or deleted write counts.
   */
  public static Outline outline(byte[] bytes, int start, int limit) {
    Cursor in = new Cursor(bytes, start, limit);
    if (!in.skip(8)) {
      return null;
    }
    long version = fixedLongAt(bytes, start);
    int exists = in.next();
    long count = in.canonicalVarLong();
    if ((exists != 0 && exists != 1) || count < 0 || count > SmallPersistentMap.MAX_SIZE + 1) {
      return null;
    }
    int valueCount = 0;
    long keyCharacters = 0;
    int textValues = 0;
    long textCharacters = 0;
    int otherValues = 0;
    boolean holdsDependencyKeys = false;
    int previousKeyStart = -1;
    int previousKeyEnd = -1;
    for (int i = 0; i < count; i++) {
      long keyLength = in.canonicalVarLong();
      int keyStart = in.position;
      if (keyLength < 0 || !in.skip(keyLength)) {
        return null;
      }
      int keyEnd = in.position;
      int kind = in.next();
      if (kind == ValueEncoding.WRITE_COUNTS_KIND) {
        // Written after every value under the empty key; only nothing may follow.
        if (keyEnd != keyStart || i != count - 1 || !canonicalCounterMap(in)) {
          return null;
        }
        break;
      }
      if (!plainRegisterEntry(bytes, kind, keyStart, keyEnd, previousKeyStart, previousKeyEnd)) {
        return null;
      }
      long jsonLength = in.canonicalVarLong();
      int jsonStart = in.position;
      if (jsonLength <= 0 || !in.skip(jsonLength)) {
        return null;
      }
      // A string's escapes are counted once: they tell both whether it is plain and its length.
      boolean text = bytes[jsonStart] == '"';
      int escapes = text ? PrintableJsonStrings.escapes(bytes, jsonStart, (int) jsonLength) : 0;
      if (escapes < 0 || (!text && !plainJson(bytes, jsonStart, (int) jsonLength))
          || !in.skip(8)) {
        return null;
      }
      // The register's data centre: an int's 32 bits (BinaryWriter.varInt).
      long originDc = in.canonicalVarLong();
      if (!in.ok || Long.compareUnsigned(originDc, 0xFFFFFFFFL) > 0) {
        return null;
      }
      valueCount++;
      keyCharacters += keyEnd - keyStart;
      if (text) {
        textValues++;
        textCharacters += jsonLength - 2 - escapes;
      } else {
        otherValues++;
      }
      if (keyEnd > keyStart && bytes[keyStart] == '$' && DependencyKeys.isDependencyKey(
          new String(bytes, keyStart, keyEnd - keyStart, StandardCharsets.US_ASCII))) {
        holdsDependencyKeys = true;
      }
      previousKeyStart = keyStart;
      previousKeyEnd = keyEnd;
    }
    if (!in.ok || in.position != limit || valueCount > SmallPersistentMap.MAX_SIZE) {
      return null;
    }
    return new Outline(version, exists == 1, valueCount, keyCharacters, textValues,
        textCharacters, otherValues, holdsDependencyKeys);
  }

  /**
   * Skips a counter map of data centres in ascending order without repeats (what {@code
   * ValueEncoding.writeCounterMap} writes), not empty; false for anything else.
   */
  private static boolean canonicalCounterMap(Cursor in) {
    long size = in.canonicalVarLong();
    if (size < 1 || size > in.limit - in.position) {
      return false;
    }
    long previous = -1;
    for (long i = 0; i < size; i++) {
      long dataCentre = in.canonicalVarLong();
      // Written as an int's 32 bits and ordered as ints: a negative one would sort first.
      if (!in.ok || dataCentre <= previous || dataCentre > Integer.MAX_VALUE) {
        return false;
      }
      in.canonicalVarLong(); // the count: any 64 bits (zigzag)
      if (!in.ok) {
        return false;
      }
      previous = dataCentre;
    }
    return in.ok;
  }

  private static long fixedLongAt(byte[] bytes, int offset) {
    long value = 0;
    for (int i = 0; i < 8; i++) {
      value = (value << 8) | (bytes[offset + i] & 0xFF);
    }
    return value;
  }

  /** A position in an encoding that records an overrun instead of throwing. */
  private static final class Cursor {
    final byte[] bytes;
    final int limit;
    int position;
    boolean ok = true;

    Cursor(byte[] bytes, int position, int limit) {
      this.bytes = bytes;
      this.position = position;
      this.limit = limit;
    }

    int next() {
      if (position >= limit) {
        ok = false;
        return -1;
      }
      return bytes[position++] & 0xFF;
    }

    boolean skip(long count) {
      if (count < 0 || count > limit - position) {
        ok = false;
        return false;
      }
      position += (int) count;
      return true;
    }

    /**
     * An unsigned LEB128 varint in its shortest form, as the writer writes it; -1 (and not ok)
     * when overrun, longer than 64 bits or not in its shortest form (a trailing zero group, or a
     * tenth byte beyond the 64th bit), which decoding and writing again would change.
     */
    long canonicalVarLong() {
      int from = position;
      long value = varLong();
      int length = position - from;
      if (!ok) {
        return -1;
      }
      if ((length > 1 && bytes[position - 1] == 0) || (length == 10 && bytes[position - 1] != 1)) {
        ok = false;
        return -1;
      }
      return value;
    }

    /** An unsigned LEB128 varint; -1 (and not ok) when overrun or longer than 64 bits. */
    long varLong() {
      long value = 0;
      for (int shift = 0; shift < 64; shift += 7) {
        if (position >= limit) {
          ok = false;
          return -1;
        }
        byte b = bytes[position++];
        value |= (long) (b & 0x7F) << shift;
        if ((b & 0x80) == 0) {
          return value;
        }
      }
      ok = false;
      return -1;
    }
  }
}
