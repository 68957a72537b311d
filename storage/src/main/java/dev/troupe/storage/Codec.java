package dev.troupe.storage;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.Operation.AddElement;
import dev.troupe.model.Operation.Assign;
import dev.troupe.model.Operation.DeleteEntity;
import dev.troupe.model.Operation.DeleteKey;
import dev.troupe.model.Operation.Increment;
import dev.troupe.model.Operation.RemoveElement;
import dev.troupe.model.value.CounterValue;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.model.value.SetValue;
import dev.troupe.model.value.DependencyTable;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.Operation.RecordDependency;
import dev.troupe.model.Operation.ForgetDependency;
import dev.troupe.model.value.Tag;
import dev.troupe.model.value.Value;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.zip.CRC32C;

/**
 * The persisted binary formats: journal records ({@link TransactionRecord}), object checkpoints
 * ({@link EntityState}) and journal positions (meta entries).
 *
 * <p>Layout of every encoding: one byte record type, one byte format revision, the fields, then the
 * CRC32C (4 bytes, big-endian) of everything before it. Decoding checks type, format revision and checksum
 * before reading any field and throws {@link CorruptDataException} on any mismatch or structural
 * error, so a torn or bit-flipped value is reported, never applied. Lengths and counts are unsigned
 * varints, timestamps and ids fixed 8 bytes, counter amounts zig-zag varints; JSON values are
 * Jackson's compact JSON bytes ({@link Json}). No Java serialization: the format is ours and stable.
 *
 * <p>Set elements are stored by their identity (compact JSON text, see {@link SetValue}) and the
 * value is re-parsed from it, so a decoded set has the same map keys as the encoded one.
 *
 * <p>Thread-safe (stateless).
 */
public final class Codec {
  static final byte TRANSACTION_RECORD = 1;
  static final byte ENTITY_STATE = 2;
  static final byte JOURNAL_POSITION = 3;
  static final byte PREPARED_TRANSACTION = 4;
  static final byte DECIDED_TRANSACTION = 5;
  static final byte IDEMPOTENCY_RECORD = 6;
  static final byte FORMAT_REVISION = 1;

  private static final byte ASSIGN = 1;
  private static final byte DELETE_KEY = 2;
  private static final byte INCREMENT = 3;
  private static final byte ADD_ELEMENT = 4;
  private static final byte REMOVE_ELEMENT = 5;
  private static final byte DELETE_ENTITY = 6;
  private static final byte RECORD_DEPENDENCY = 7;
  private static final byte FORGET_DEPENDENCY = 8;

  private static final byte REGISTER = 1;
  private static final byte COUNTER = 2;
  private static final byte SET = 3;
  private static final byte DEPENDENCIES = 4;

  private static final int CHECKSUM_BYTES = 4;

  private Codec() {}

  // ---------------------------------------------------------------- transaction records

  public static byte[] encodeRecord(TransactionRecord record) {
    Writer out = new Writer(TRANSACTION_RECORD, 64);
    out.fixedLong(record.transactionId());
    out.fixedLong(record.commitTimestamp());
    out.varInt(record.originDc());
    out.varInt(record.writes().size());
    for (EntityWrite write : record.writes()) {
      out.bytes(write.entity().toBytes());
      out.varInt(write.operations().size());
      for (Operation operation : write.operations()) {
        writeOperation(out, operation);
      }
    }
    return out.finish();
  }

  public static TransactionRecord decodeRecord(byte[] bytes) {
    Reader in = new Reader(bytes, TRANSACTION_RECORD, "transaction record");
    try {
      long transactionId = in.fixedLong();
      long commitTimestamp = in.fixedLong();
      int originDc = in.varInt();
      int writeCount = in.count();
      List<EntityWrite> writes = new ArrayList<>(writeCount);
      for (int w = 0; w < writeCount; w++) {
        EntityId entity = EntityId.fromBytes(in.bytes());
        int operationCount = in.count();
        List<Operation> operations = new ArrayList<>(operationCount);
        for (int o = 0; o < operationCount; o++) {
          operations.add(readOperation(in));
        }
        writes.add(new EntityWrite(entity, operations));
      }
      in.end();
      return new TransactionRecord(transactionId, commitTimestamp, originDc, writes);
    } catch (CorruptDataException e) {
      throw e;
    } catch (RuntimeException e) {
      throw in.corrupt("malformed content: " + e.getMessage(), e);
    }
  }

  private static void writeOperation(Writer out, Operation operation) {
    switch (operation) {
      case Assign assign -> {
        out.type(ASSIGN);
        out.string(assign.key());
        out.json(assign.value());
      }
      case DeleteKey delete -> {
        out.type(DELETE_KEY);
        out.string(delete.key());
      }
      case Increment increment -> {
        out.type(INCREMENT);
        out.string(increment.key());
        out.signedVarLong(increment.by());
      }
      case AddElement add -> {
        out.type(ADD_ELEMENT);
        out.string(add.key());
        out.json(add.element());
        writeTag(out, add.tag());
      }
      case RemoveElement remove -> {
        out.type(REMOVE_ELEMENT);
        out.string(remove.key());
        out.json(remove.element());
        out.varInt(remove.observedTags().size());
        for (Tag tag : remove.observedTags()) {
          writeTag(out, tag);
        }
      }
      case DeleteEntity ignored -> out.type(DELETE_ENTITY);
      case RecordDependency record -> {
        out.type(RECORD_DEPENDENCY);
        out.string(record.key());
        writeDependency(out, record.dependency(), record.contribution());
      }
      case ForgetDependency forget -> {
        out.type(FORGET_DEPENDENCY);
        out.string(forget.key());
        out.string(forget.dependencyId());
      }
    }
  }

  /**
   * A dependency record: its format revision, its JSON form ({@link Dependency#toJson}) and the
   * follower's recorded contribution (a presence byte, then the JSON value).
   */
  private static void writeDependency(Writer out, Dependency dependency, JsonNode contribution) {
    out.varInt(Dependency.FORMAT_REVISION);
    out.json(dependency.toJson());
    if (contribution == null) {
      out.type((byte) 0);
    } else {
      out.type((byte) 1);
      out.json(contribution);
    }
  }

  private static DependencyTable.Entry readDependency(Reader in) {
    int revision = in.varInt();
    if (revision != Dependency.FORMAT_REVISION) {
      throw in.corrupt("unknown dependency record revision " + revision, null);
    }
    Dependency dependency = Dependency.fromJson(in.json());
    byte present = in.type();
    if (present != 0 && present != 1) {
      throw in.corrupt("bad contribution flag " + present, null);
    }
    return new DependencyTable.Entry(dependency, present == 1 ? in.json() : null);
  }

  private static Operation readOperation(Reader in) {
    byte type = in.type();
    return switch (type) {
      case ASSIGN -> new Assign(in.string(), in.json());
      case DELETE_KEY -> new DeleteKey(in.string());
      case INCREMENT -> new Increment(in.string(), in.signedVarLong());
      case ADD_ELEMENT -> new AddElement(in.string(), in.json(), readTag(in));
      case REMOVE_ELEMENT -> {
        String key = in.string();
        JsonNode element = in.json();
        int count = in.count();
        Set<Tag> tags = new HashSet<>();
        for (int i = 0; i < count; i++) {
          tags.add(readTag(in));
        }
        yield new RemoveElement(key, element, tags);
      }
      case DELETE_ENTITY -> new DeleteEntity();
      case RECORD_DEPENDENCY -> {
        String key = in.string();
        DependencyTable.Entry entry = readDependency(in);
        yield new RecordDependency(key, entry.dependency(), entry.contribution());
      }
      case FORGET_DEPENDENCY -> new ForgetDependency(in.string(), in.string());
      default -> throw in.corrupt("unknown operation type " + type, null);
    };
  }

  private static void writeTag(Writer out, Tag tag) {
    out.varInt(tag.originDc());
    out.fixedLong(tag.transactionId());
    out.varInt(tag.index());
  }

  private static Tag readTag(Reader in) {
    return new Tag(in.varInt(), in.fixedLong(), in.varInt());
  }

  /** Offset of the commit timestamp in an encoded record (after type, format revision, transaction id). */
  private static final int COMMIT_TIMESTAMP_OFFSET = 10;

  /**
   * Sets the commit timestamp of an encoded record in place and recomputes its checksum. Lets
   * callers encode a record before the partition writer assigns its timestamp, which keeps the
   * (comparatively costly) encoding off the single writer thread.
   */
  static byte[] withCommitTimestamp(byte[] encodedRecord, long commitTimestamp) {
    if (encodedRecord.length < COMMIT_TIMESTAMP_OFFSET + 8 + CHECKSUM_BYTES
        || encodedRecord[0] != TRANSACTION_RECORD
        || encodedRecord[1] != FORMAT_REVISION) {
      throw new IllegalArgumentException("not an encoded transaction record");
    }
    Keys.putLong(encodedRecord, COMMIT_TIMESTAMP_OFFSET, commitTimestamp);
    int limit = encodedRecord.length - CHECKSUM_BYTES;
    CRC32C crc = new CRC32C();
    crc.update(encodedRecord, 0, limit);
    int value = (int) crc.getValue();
    for (int i = 0; i < 4; i++) {
      encodedRecord[limit + i] = (byte) (value >>> (24 - 8 * i));
    }
    return encodedRecord;
  }

  // ---------------------------------------------------------------- entity states (checkpoints)

  public static byte[] encodeState(EntityState state) {
    Writer out = new Writer(ENTITY_STATE, 64);
    out.fixedLong(state.version());
    out.type(state.exists() ? (byte) 1 : (byte) 0);
    out.varInt(state.values().size());
    for (Map.Entry<String, Value> entry : state.values().entrySet()) {
      out.string(entry.getKey());
      switch (entry.getValue()) {
        case RegisterValue register -> {
          out.type(REGISTER);
          out.json(register.value());
          out.fixedLong(register.timestamp());
          out.varInt(register.originDc());
        }
        case CounterValue counter -> {
          out.type(COUNTER);
          writeCounterMap(out, counter.increments());
          writeCounterMap(out, counter.decrements());
        }
        case SetValue set -> {
          out.type(SET);
          out.varInt(set.elements().size());
          for (Map.Entry<String, SetValue.Element> element : set.elements().entrySet()) {
            out.string(element.getKey());
            out.varInt(element.getValue().tags().size());
            for (Tag tag : element.getValue().tags()) {
              writeTag(out, tag);
            }
          }
        }
        case DependencyTable table -> {
          out.type(DEPENDENCIES);
          out.varInt(table.size());
          for (DependencyTable.Entry record : table.all()) {
            writeDependency(out, record.dependency(), record.contribution());
          }
        }
      }
    }
    return out.finish();
  }

  public static EntityState decodeState(byte[] bytes) {
    Reader in = new Reader(bytes, ENTITY_STATE, "entity state");
    try {
      long version = in.fixedLong();
      byte existsFlag = in.type();
      if (existsFlag != 0 && existsFlag != 1) {
        throw in.corrupt("bad exists flag " + existsFlag, null);
      }
      int count = in.count();
      Map<String, Value> values = new HashMap<>();
      for (int i = 0; i < count; i++) {
        String key = in.string();
        byte kind = in.type();
        Value value =
            switch (kind) {
              case REGISTER -> new RegisterValue(in.json(), in.fixedLong(), in.varInt());
              case COUNTER -> new CounterValue(readCounterMap(in), readCounterMap(in));
              case SET -> {
                int elementCount = in.count();
                Map<String, SetValue.Element> elements = new HashMap<>();
                for (int e = 0; e < elementCount; e++) {
                  String identity = in.string();
                  int tagCount = in.count();
                  Set<Tag> tags = new HashSet<>();
                  for (int t = 0; t < tagCount; t++) {
                    tags.add(readTag(in));
                  }
                  elements.put(identity, new SetValue.Element(parseJson(in, identity), tags));
                }
                yield new SetValue(elements);
              }
              case DEPENDENCIES -> {
                int entryCount = in.count();
                DependencyTable table = DependencyTable.EMPTY;
                for (int e = 0; e < entryCount; e++) {
                  DependencyTable.Entry entry = readDependency(in);
                  table = table.with(entry.dependency(), entry.contribution());
                }
                yield table;
              }
              default -> throw in.corrupt("unknown value kind " + kind, null);
            };
        values.put(key, value);
      }
      in.end();
      return new EntityState(values, version, existsFlag == 1);
    } catch (CorruptDataException e) {
      throw e;
    } catch (RuntimeException e) {
      throw in.corrupt("malformed content: " + e.getMessage(), e);
    }
  }

  private static void writeCounterMap(Writer out, Map<Integer, Long> map) {
    out.varInt(map.size());
    for (Map.Entry<Integer, Long> entry : map.entrySet()) {
      out.varInt(entry.getKey());
      out.signedVarLong(entry.getValue());
    }
  }

  private static Map<Integer, Long> readCounterMap(Reader in) {
    int count = in.count();
    Map<Integer, Long> map = new HashMap<>();
    for (int i = 0; i < count; i++) {
      map.put(in.varInt(), in.signedVarLong());
    }
    return map;
  }

  // ---------------------------------------------------------------- two-phase commit state

  static byte[] encodePrepared(PreparedTransaction prepared) {
    Writer out = new Writer(PREPARED_TRANSACTION, 64);
    out.fixedLong(prepared.transactionId());
    out.bytes(prepared.entity().toBytes());
    out.varInt(prepared.operations().size());
    for (Operation operation : prepared.operations()) {
      writeOperation(out, operation);
    }
    out.bytes(prepared.redo());
    out.fixedLong(prepared.arrival());
    return out.finish();
  }

  static PreparedTransaction decodePrepared(byte[] bytes) {
    Reader in = new Reader(bytes, PREPARED_TRANSACTION, "prepared transaction");
    try {
      long transactionId = in.fixedLong();
      EntityId entity = EntityId.fromBytes(in.bytes());
      int count = in.count();
      List<Operation> operations = new ArrayList<>(count);
      for (int i = 0; i < count; i++) {
        operations.add(readOperation(in));
      }
      byte[] redo = in.bytes();
      long arrival = in.fixedLong();
      in.end();
      return new PreparedTransaction(transactionId, entity, operations, redo, arrival);
    } catch (CorruptDataException e) {
      throw e;
    } catch (RuntimeException e) {
      throw in.corrupt("malformed content: " + e.getMessage(), e);
    }
  }

  static byte[] encodeDecided(DecidedTransaction decided) {
    Writer out = new Writer(DECIDED_TRANSACTION, 64);
    out.fixedLong(decided.transactionId());
    out.varInt(decided.participants().size());
    for (EntityId participant : decided.participants()) {
      out.bytes(participant.toBytes());
    }
    return out.finish();
  }

  static DecidedTransaction decodeDecided(byte[] bytes) {
    Reader in = new Reader(bytes, DECIDED_TRANSACTION, "decided transaction");
    try {
      long transactionId = in.fixedLong();
      int count = in.count();
      List<EntityId> participants = new ArrayList<>(count);
      for (int i = 0; i < count; i++) {
        participants.add(EntityId.fromBytes(in.bytes()));
      }
      in.end();
      return new DecidedTransaction(transactionId, participants);
    } catch (CorruptDataException e) {
      throw e;
    } catch (RuntimeException e) {
      throw in.corrupt("malformed content: " + e.getMessage(), e);
    }
  }

  // ---------------------------------------------------------------- idempotency records

  /**
   * {@code qualifiedKey, fingerprint, recordedAtMillis u64, hasEntity byte, [entity], commitTimestamp
   * u64, transactionId u64, answerStatus varint, answerBody}.
   */
  static byte[] encodeIdempotency(IdempotencyRecord record) {
    Writer out = new Writer(IDEMPOTENCY_RECORD, 96 + record.answerBody().length);
    out.string(record.qualifiedKey());
    out.bytes(record.fingerprint());
    out.fixedLong(record.recordedAtMillis());
    out.type(record.entity() == null ? (byte) 0 : (byte) 1);
    if (record.entity() != null) {
      out.bytes(record.entity().toBytes());
    }
    out.fixedLong(record.commitTimestamp());
    out.fixedLong(record.transactionId());
    out.varInt(record.answerStatus());
    out.bytes(record.answerBody());
    return out.finish();
  }

  static IdempotencyRecord decodeIdempotency(byte[] bytes) {
    Reader in = new Reader(bytes, IDEMPOTENCY_RECORD, "idempotency record");
    try {
      String qualifiedKey = in.string();
      byte[] fingerprint = in.bytes();
      if (qualifiedKey.isEmpty() || fingerprint.length != IdempotencyRecord.FINGERPRINT_BYTES) {
        throw in.corrupt("empty key or a fingerprint of " + fingerprint.length + " bytes", null);
      }
      long recordedAtMillis = in.fixedLong();
      EntityId entity = in.type() == 0 ? null : EntityId.fromBytes(in.bytes());
      long commitTimestamp = in.fixedLong();
      long transactionId = in.fixedLong();
      int answerStatus = in.varInt();
      byte[] answerBody = in.bytes();
      in.end();
      return new IdempotencyRecord(qualifiedKey, fingerprint, recordedAtMillis, entity,
          commitTimestamp, transactionId, answerStatus, answerBody);
    } catch (CorruptDataException e) {
      throw e;
    } catch (RuntimeException e) {
      throw in.corrupt("malformed content: " + e.getMessage(), e);
    }
  }

  // ---------------------------------------------------------------- journal positions (meta)

  static byte[] encodePosition(JournalPosition position) {
    Writer out = new Writer(JOURNAL_POSITION, 16);
    out.fixedLong(position.sequence());
    out.fixedLong(position.timestamp());
    return out.finish();
  }

  static JournalPosition decodePosition(byte[] bytes) {
    Reader in = new Reader(bytes, JOURNAL_POSITION, "journal position");
    JournalPosition position = new JournalPosition(in.fixedLong(), in.fixedLong());
    in.end();
    return position;
  }

  // ---------------------------------------------------------------- size estimate

  /**
   * A cheap estimate of the memory a state holds, for the cache's weigher: proportional to the
   * encoded size without encoding (the cache re-weighs on every commit).
   */
  static int estimateWeight(EntityState state) {
    long weight = 64;
    for (Map.Entry<String, Value> entry : state.values().entrySet()) {
      weight += estimateEntryWeight(entry.getKey(), entry.getValue());
    }
    return (int) Math.min(Integer.MAX_VALUE, weight);
  }

  /** The estimated weight of one key and its value; 0 for a key without a value. */
  static long estimateEntryWeight(String key, Value value) {
    if (value == null) {
      return 0;
    }
    long weight = 48 + 2L * key.length();
    switch (value) {
      case RegisterValue register -> weight += 32 + estimateJson(register.value(), 0);
      case CounterValue counter ->
          weight += 32 + 40L * (counter.increments().size() + counter.decrements().size());
      case SetValue set -> {
        for (Map.Entry<String, SetValue.Element> element : set.elements().entrySet()) {
          weight += 64 + 4L * element.getKey().length() + 48L * element.getValue().tags().size();
        }
      }
      // A fixed estimate per record (two key references, a function, an id, a map node): a
      // follower of thousands of leaders is re-weighed on every change, so this must not walk it.
      case DependencyTable table -> weight += 480L * table.size();
    }
    return weight;
  }

  private static long estimateJson(JsonNode node, int depth) {
    if (node == null) {
      return 16;
    }
    if (node.isTextual()) {
      return 40 + 2L * node.textValue().length();
    }
    if (node.isContainerNode() && depth < 32) {
      long sum = 32;
      Iterator<Map.Entry<String, JsonNode>> fields = node.fields();
      if (node.isObject()) {
        while (fields.hasNext()) {
          Map.Entry<String, JsonNode> field = fields.next();
          sum += 32 + 2L * field.getKey().length() + estimateJson(field.getValue(), depth + 1);
        }
      } else {
        for (JsonNode child : node) {
          sum += 8 + estimateJson(child, depth + 1);
        }
      }
      return sum;
    }
    return 24;
  }

  // ---------------------------------------------------------------- primitives

  private static JsonNode parseJson(Reader in, String text) {
    return in.parse(text.getBytes(StandardCharsets.UTF_8));
  }

  /** Appends fields to a growable array; {@link #finish} adds the checksum. */
  private static final class Writer {
    private byte[] buffer;
    private int length;

    Writer(byte recordType, int initialCapacity) {
      buffer = new byte[Math.max(16, initialCapacity)];
      buffer[0] = recordType;
      buffer[1] = FORMAT_REVISION;
      length = 2;
    }

    private void ensure(int extra) {
      if (length + extra > buffer.length) {
        buffer = Arrays.copyOf(buffer, Math.max(buffer.length * 2, length + extra));
      }
    }

    void type(byte value) {
      ensure(1);
      buffer[length++] = value;
    }

    void fixedLong(long value) {
      ensure(8);
      for (int shift = 56; shift >= 0; shift -= 8) {
        buffer[length++] = (byte) (value >>> shift);
      }
    }

    void fixedInt(int value) {
      ensure(4);
      for (int shift = 24; shift >= 0; shift -= 8) {
        buffer[length++] = (byte) (value >>> shift);
      }
    }

    /** Unsigned LEB128 of the int's 32 bits (negative ints take 5 bytes and round-trip). */
    void varInt(int value) {
      varLong(value & 0xFFFFFFFFL);
    }

    void varLong(long value) {
      ensure(10);
      while ((value & ~0x7FL) != 0) {
        buffer[length++] = (byte) ((value & 0x7F) | 0x80);
        value >>>= 7;
      }
      buffer[length++] = (byte) value;
    }

    void signedVarLong(long value) {
      varLong((value << 1) ^ (value >> 63));
    }

    void bytes(byte[] value) {
      varInt(value.length);
      ensure(value.length);
      System.arraycopy(value, 0, buffer, length, value.length);
      length += value.length;
    }

    void string(String value) {
      bytes(value.getBytes(StandardCharsets.UTF_8));
    }

    void json(JsonNode value) {
      bytes(Json.writeBytes(value));
    }

    byte[] finish() {
      CRC32C crc = new CRC32C();
      crc.update(buffer, 0, length);
      fixedInt((int) crc.getValue());
      return Arrays.copyOf(buffer, length);
    }
  }

  /** Reads fields after verifying type, format revision and checksum; every overrun is corruption. */
  private static final class Reader {
    private final byte[] buffer;
    private final int limit;
    private final String what;
    private int position;

    Reader(byte[] bytes, byte expectedType, String what) {
      this.what = what;
      if (bytes == null || bytes.length < 2 + CHECKSUM_BYTES) {
        throw new CorruptDataException(
            what + ": too short (" + (bytes == null ? "null" : bytes.length + " bytes") + ")");
      }
      this.buffer = bytes;
      this.limit = bytes.length - CHECKSUM_BYTES;
      CRC32C crc = new CRC32C();
      crc.update(bytes, 0, limit);
      int stored =
          ((bytes[limit] & 0xFF) << 24)
              | ((bytes[limit + 1] & 0xFF) << 16)
              | ((bytes[limit + 2] & 0xFF) << 8)
              | (bytes[limit + 3] & 0xFF);
      if (stored != (int) crc.getValue()) {
        throw new CorruptDataException(
            what + ": checksum mismatch (stored " + Integer.toHexString(stored) + ", computed "
                + Long.toHexString(crc.getValue()) + ")");
      }
      if (bytes[0] != expectedType) {
        throw new CorruptDataException(
            what + ": record type " + bytes[0] + ", expected " + expectedType);
      }
      if (bytes[1] != FORMAT_REVISION) {
        throw new CorruptDataException(
            what + ": unsupported format revision " + bytes[1] + " (this build reads "
                + FORMAT_REVISION + ")");
      }
      position = 2;
    }

    CorruptDataException corrupt(String message, Throwable cause) {
      return new CorruptDataException(what + " at byte " + position + ": " + message, cause);
    }

    private void need(int count) {
      if (count < 0 || position + count > limit) {
        throw corrupt("truncated field (" + count + " bytes needed)", null);
      }
    }

    byte type() {
      need(1);
      return buffer[position++];
    }

    long fixedLong() {
      need(8);
      long value = 0;
      for (int i = 0; i < 8; i++) {
        value = (value << 8) | (buffer[position++] & 0xFF);
      }
      return value;
    }

    long varLong() {
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

    int varInt() {
      long value = varLong();
      if ((value >>> 32) != 0) {
        throw corrupt("varint out of int range", null);
      }
      return (int) value;
    }

    /** A count of following items; bounded by the bytes left, so corruption cannot allocate big. */
    int count() {
      int value = varInt();
      if (value < 0 || value > limit - position) {
        throw corrupt("count " + value + " exceeds the remaining bytes", null);
      }
      return value;
    }

    long signedVarLong() {
      long raw = varLong();
      return (raw >>> 1) ^ -(raw & 1);
    }

    byte[] bytes() {
      int size = varInt();
      need(size);
      byte[] value = Arrays.copyOfRange(buffer, position, position + size);
      position += size;
      return value;
    }

    String string() {
      return new String(bytes(), StandardCharsets.UTF_8);
    }

    JsonNode json() {
      return parse(bytes());
    }

    JsonNode parse(byte[] bytes) {
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

    void end() {
      if (position != limit) {
        throw corrupt((limit - position) + " unexpected trailing bytes", null);
      }
    }
  }
}
