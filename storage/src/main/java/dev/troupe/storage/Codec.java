package dev.troupe.storage;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Operation;
import dev.troupe.model.SmallPersistentMap;
import dev.troupe.model.codec.BinaryReader;
import dev.troupe.model.codec.BinaryWriter;
import dev.troupe.model.codec.EncodedStates;
import dev.troupe.model.codec.ValueEncoding;
import dev.troupe.model.value.CounterValue;
import dev.troupe.model.value.DependencyTable;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.model.value.SetValue;
import dev.troupe.model.value.Value;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * The persisted binary formats: journal records ({@link TransactionRecord}), object checkpoints
 * ({@link EntityState}) and journal positions (meta entries).
 *
 * <p>Layout of every encoding: one byte record type, one byte format revision, the fields, then the
 * CRC32C (4 bytes, big-endian) of everything before it. Decoding checks type, format revision and checksum
 * before reading any field and throws {@link CorruptDataException} on any mismatch or structural
 * error, so a torn or bit-flipped value is reported, never applied. The fields' encodings
 * (operations, values, tags, dependencies, states; varints, fixed longs, JSON) are the model's
 * {@link ValueEncoding} over {@link BinaryWriter}/{@link BinaryReader}, shared with the messages
 * between cores; the bytes are pinned by {@code CodecFormatTest}. No Java serialization: the format
 * is ours and stable.
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
  static final byte PEER_LIST = 7;
  static final byte FORMAT_REVISION = 1;

  private static final int CHECKSUM_BYTES = 4;

  private Codec() {}

  // ---------------------------------------------------------------- transaction records

  public static byte[] encodeRecord(TransactionRecord record) {
    BinaryWriter out = borrowedWriter(TRANSACTION_RECORD);
    try {
      out.fixedLong(record.transactionId());
      out.fixedLong(record.commitTimestamp());
      out.varInt(record.originDc());
      out.varInt(record.writes().size());
      for (EntityWrite write : record.writes()) {
        ValueEncoding.writeEntity(out, write.entity());
        out.varInt(write.operations().size());
        for (Operation operation : write.operations()) {
          ValueEncoding.writeOperation(out, operation);
        }
      }
      return finish(out);
    } finally {
      out.release();
    }
  }

  public static TransactionRecord decodeRecord(byte[] bytes) {
    BinaryReader in = reader(bytes, TRANSACTION_RECORD, "transaction record");
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
          operations.add(ValueEncoding.readOperation(in));
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

  /**
   * What the partition's maintenance reads of a journal record: its commit timestamp and the
   * entities it writes, in the record's order (an entity written twice in one record is listed
   * twice).
   */
  public record RecordOutline(long commitTimestamp, List<EntityId> entities) {}

  /**
   * The commit timestamp and entities of an encoded record, checked as {@link #decodeRecord} checks
   * it (type, format revision, checksum, structure), without building its operations: their
   * values are skipped by their sizes ({@link ValueEncoding#skipOperation}).
   *
   * <p>Why: truncation, the recovery scan and the journal's last timestamp need no more of a
   * record, and decoding its values was most of the CPU a node spent after a load (issue 20: JFR
   * of the minute after 200,000 inserts, 72 % of the samples in {@code decodeRecord} under
   * truncation, its JSON values turned into strings and dropped).
   *
   * @throws CorruptDataException if the bytes are not an intact record
   */
  public static RecordOutline outlineRecord(byte[] bytes) {
    BinaryReader in = reader(bytes, TRANSACTION_RECORD, "transaction record");
    try {
      in.fixedLong(); // the transaction id
      long commitTimestamp = in.fixedLong();
      in.varInt(); // the origin data centre
      int writeCount = in.count();
      List<EntityId> entities = new ArrayList<>(writeCount);
      for (int w = 0; w < writeCount; w++) {
        entities.add(EntityId.fromBytes(in.bytes()));
        int operationCount = in.count();
        for (int o = 0; o < operationCount; o++) {
          ValueEncoding.skipOperation(in);
        }
      }
      in.end();
      return new RecordOutline(commitTimestamp, entities);
    } catch (CorruptDataException e) {
      throw e;
    } catch (RuntimeException e) {
      throw in.corrupt("malformed content: " + e.getMessage(), e);
    }
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
    BinaryWriter out = borrowedWriter(ENTITY_STATE);
    try {
      ValueEncoding.writeState(out, state);
      return finish(out);
    } finally {
      out.release();
    }
  }

  public static EntityState decodeState(byte[] bytes) {
    BinaryReader in = reader(bytes, ENTITY_STATE, "entity state");
    try {
      EntityState state = ValueEncoding.readState(in);
      in.end();
      return state;
    } catch (CorruptDataException e) {
      throw e;
    } catch (RuntimeException e) {
      throw in.corrupt("malformed content: " + e.getMessage(), e);
    }
  }

  /**
   * The outline of the state {@code bytes} encode ({@link EncodedStates#outline}: version,
   * existence, and what {@link #estimateWeight} needs, read without decoding), after verifying the
   * bytes as {@link #decodeState} does: a damaged encoding throws {@link CorruptDataException} as
   * decoding it would. Null when the state is not of the plain shape the outline reads (decode it
   * then). For bytes read from disk (a checkpoint loaded into the object cache): when the outline
   * is not null, the bytes are exactly what {@link #encodeState} writes for the state they decode
   * to, so they can be cached as they are.
   */
  static EncodedStates.Outline outlineState(byte[] bytes) {
    int limit = verified(bytes, ENTITY_STATE, "entity state");
    return EncodedStates.outline(bytes, 2, limit);
  }

  /** A state's encoding after a record applied in place, and the registers it replaced. */
  record AppliedInPlace(byte[] encoded, List<EncodedStates.Replaced> replaced) {}

  /**
   * {@link #encodeState} of the state {@code encodedState} decodes to after {@code operations}
   * committed at {@code commitTimestamp} in {@code originDc}, made from the encoding itself
   * without decoding it, for a record that only assigns existing registers of a plain state
   * ({@link EncodedStates#applyAssigns}); null for anything else (decode, apply and encode then).
   * The encoding must be this codec's own (the object cache's): its checksum is not checked.
   */
  static AppliedInPlace applyInPlace(byte[] encodedState, List<Operation> operations,
      long commitTimestamp, int originDc) {
    if (encodedState.length < 2 + CHECKSUM_BYTES || encodedState[0] != ENTITY_STATE
        || encodedState[1] != FORMAT_REVISION) {
      return null;
    }
    BinaryWriter out = borrowedWriter(ENTITY_STATE);
    try {
      List<EncodedStates.Replaced> replaced = EncodedStates.applyAssigns(encodedState, 2,
          encodedState.length - CHECKSUM_BYTES, operations, commitTimestamp, originDc, out);
      return replaced == null ? null : new AppliedInPlace(finish(out), replaced);
    } finally {
      out.release();
    }
  }

  /**
   * The JSON a schemaless type renders of the state {@code encodedState} encodes, made from the
   * encoding ({@link EncodedStates#renderSchemaless}); null when the state is not plain (render the
   * decoded state then). The encoding must be this codec's own (the object cache's).
   */
  static byte[] renderSchemaless(byte[] encodedState) {
    if (encodedState.length < 2 + CHECKSUM_BYTES || encodedState[0] != ENTITY_STATE
        || encodedState[1] != FORMAT_REVISION) {
      return null;
    }
    return EncodedStates.renderSchemaless(encodedState, 2, encodedState.length - CHECKSUM_BYTES);
  }

  // ---------------------------------------------------------------- two-phase commit state

  static byte[] encodePrepared(PreparedTransaction prepared) {
    BinaryWriter out = writer(PREPARED_TRANSACTION, 64);
    out.fixedLong(prepared.transactionId());
    out.bytes(prepared.entity().toBytes());
    out.varInt(prepared.operations().size());
    for (Operation operation : prepared.operations()) {
      ValueEncoding.writeOperation(out, operation);
    }
    out.bytes(prepared.redo());
    out.fixedLong(prepared.arrival());
    return finish(out);
  }

  static PreparedTransaction decodePrepared(byte[] bytes) {
    BinaryReader in = reader(bytes, PREPARED_TRANSACTION, "prepared transaction");
    try {
      long transactionId = in.fixedLong();
      EntityId entity = EntityId.fromBytes(in.bytes());
      int count = in.count();
      List<Operation> operations = new ArrayList<>(count);
      for (int i = 0; i < count; i++) {
        operations.add(ValueEncoding.readOperation(in));
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

  /**
   * What the replication log's decision entry needs of a prepared record ({@link
   * DiskReplicationLog#putDecision}).
   *
   * @param holdsOperations it holds operations to commit
   * @param needsRedo it holds turns to redo ({@link PreparedTransaction#needsRedo})
   */
  record PreparedOutline(boolean holdsOperations, boolean needsRedo) {}

  /**
   * A prepared record's {@link PreparedOutline}, read without decoding its entity or operations
   * (issue 20: decoding them was 2.5-3 % of the embedded SmallBank mix's and the marketplace's
   * samples): the type, format revision and checksum are verified as by {@link #decodePrepared},
   * and every field is passed over to the end, so a record {@link #decodePrepared} reads has the
   * same outline as the part it decodes ({@code CodecFormatTest}). The operations' contents are
   * not checked here (their JSON is decoded when the part commits).
   */
  static PreparedOutline outlinePrepared(byte[] bytes) {
    BinaryReader in = reader(bytes, PREPARED_TRANSACTION, "prepared transaction");
    try {
      in.fixedLong(); // the transaction id
      in.skipBytes(); // the entity
      int count = in.count();
      for (int i = 0; i < count; i++) {
        ValueEncoding.skipOperation(in);
      }
      int redoBytes = in.skipBytes();
      in.fixedLong(); // the arrival
      in.end();
      return new PreparedOutline(count > 0, redoBytes > 0);
    } catch (CorruptDataException e) {
      throw e;
    } catch (RuntimeException e) {
      throw in.corrupt("malformed content: " + e.getMessage(), e);
    }
  }

  static byte[] encodeDecided(DecidedTransaction decided) {
    BinaryWriter out = writer(DECIDED_TRANSACTION, 64);
    out.fixedLong(decided.transactionId());
    out.varInt(decided.participants().size());
    for (EntityId participant : decided.participants()) {
      out.bytes(participant.toBytes());
    }
    return finish(out);
  }

  static DecidedTransaction decodeDecided(byte[] bytes) {
    BinaryReader in = reader(bytes, DECIDED_TRANSACTION, "decided transaction");
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
   * u64, transactionId u64, answerStatus varint, answerBody}. Public: the same frame travels in a
   * turn request to the entity's node (the runtime's remote path), which writes it with the
   * turn's commit.
   */
  public static byte[] encodeIdempotency(IdempotencyRecord record) {
    BinaryWriter out = writer(IDEMPOTENCY_RECORD, 96 + record.answerBody().length);
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
    return finish(out);
  }

  /** @throws CorruptDataException when {@code bytes} are not an intact record of this format */
  public static IdempotencyRecord decodeIdempotency(byte[] bytes) {
    BinaryReader in = reader(bytes, IDEMPOTENCY_RECORD, "idempotency record");
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
    BinaryWriter out = writer(JOURNAL_POSITION, 16);
    out.fixedLong(position.sequence());
    out.fixedLong(position.timestamp());
    return finish(out);
  }

  static JournalPosition decodePosition(byte[] bytes) {
    BinaryReader in = reader(bytes, JOURNAL_POSITION, "journal position");
    JournalPosition position = new JournalPosition(in.fixedLong(), in.fixedLong());
    in.end();
    return position;
  }

  // ---------------------------------------------------------------- peers added at runtime (meta)

  /** {@code count, (name, url)*}: the peers added at runtime, in the order given. */
  static byte[] encodePeers(List<ReplicationPeer> peers) {
    BinaryWriter out = writer(PEER_LIST, 16 + 64 * peers.size());
    out.varInt(peers.size());
    for (ReplicationPeer peer : peers) {
      out.string(peer.name());
      out.string(peer.url());
    }
    return finish(out);
  }

  static List<ReplicationPeer> decodePeers(byte[] bytes) {
    BinaryReader in = reader(bytes, PEER_LIST, "replication peers");
    try {
      int count = in.count();
      List<ReplicationPeer> peers = new ArrayList<>(count);
      for (int i = 0; i < count; i++) {
        peers.add(new ReplicationPeer(in.string(), in.string()));
      }
      in.end();
      return List.copyOf(peers);
    } catch (CorruptDataException e) {
      throw e;
    } catch (RuntimeException e) {
      throw in.corrupt("malformed content: " + e.getMessage(), e);
    }
  }

  // ---------------------------------------------------------------- size estimate

  /**
   * A cheap estimate of the memory a state holds, for the cache's weigher and the actors' budget,
   * calibrated on the heap ({@code bench cached-size}: ten 100-letter fields, 2,288 bytes held,
   * 2,248 estimated), without encoding (the cache re-weighs on every commit).
   */
  static int estimateWeight(EntityState state) {
    boolean small = state.values() instanceof SmallPersistentMap;
    long weight = 64;
    for (Map.Entry<String, Value> entry : state.values().entrySet()) {
      weight += estimateEntryWeight(entry.getKey(), entry.getValue(), small);
    }
    return (int) Math.min(Integer.MAX_VALUE, weight);
  }

  /**
   * {@link #estimateWeight} of the state an outline describes, without decoding it: the outline's
   * states have at most {@link SmallPersistentMap#MAX_SIZE} values (a small map when decoded), all
   * registers, whose values are strings of printable ASCII (Latin-1: a byte a character) or
   * integers, booleans and null (no container). The same sum as {@link #estimateEntryWeight}'s
   * over those entries: {@code CodecProperties} compares both on random states.
   */
  static int estimateWeight(EncodedStates.Outline outline) {
    long weight = 64
        + outline.valueCount() * (16L + 32L)
        + outline.keyCharacters()
        + outline.textValues() * 56L + outline.textCharacters()
        + outline.otherValues() * 24L;
    return (int) Math.min(Integer.MAX_VALUE, weight);
  }

  /**
   * The estimated weight of one key and its value in a state whose values are a {@link
   * SmallPersistentMap} ({@code small}) or a {@code LargePersistentMap}; 0 for a key without a
   * value.
   */
  static long estimateEntryWeight(String key, Value value, boolean small) {
    if (value == null) {
      return 0;
    }
    // A small map's slot is two references; a large map's trie leaf, its slot and its share of the
    // inner nodes 34.6 bytes (measured on 5,000 maps of 200 keys; pcollections' hash tree, before
    // issue 20's third session, took 94.4). Decoded key names are shared
    // (ValueEncoding.keyName); a key's share is its length.
    long weight = (small ? 16 : 40) + key.length();
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
      // The node, the string and its array: one byte a character when all are Latin-1 (the
      // JVM's compact strings), else two.
      String text = node.textValue();
      return 56 + (isLatin1(text) ? 1L : 2L) * text.length();
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

  private static boolean isLatin1(String text) {
    for (int i = 0; i < text.length(); i++) {
      if (text.charAt(i) > 0xFF) {
        return false;
      }
    }
    return true;
  }

  // ---------------------------------------------------------------- framing

  /** A writer that has written the record type and format revision. */
  /**
   * The thread's scratch writer ({@link BinaryWriter#borrow}; release it), for the encodings of
   * the commit path (records, checkpoints), which are copied out at once.
   */
  private static BinaryWriter borrowedWriter(byte recordType) {
    BinaryWriter out = BinaryWriter.borrow();
    out.type(recordType);
    out.type(FORMAT_REVISION);
    return out;
  }

  private static BinaryWriter writer(byte recordType, int initialCapacity) {
    BinaryWriter out = new BinaryWriter(initialCapacity);
    out.type(recordType);
    out.type(FORMAT_REVISION);
    return out;
  }

  /** Appends the checksum. */
  private static byte[] finish(BinaryWriter out) {
    out.appendChecksum();
    return out.toByteArray();
  }

  /**
   * A reader of the fields after verifying type, format revision and checksum; every overrun is
   * corruption.
   */
  private static BinaryReader reader(byte[] bytes, byte expectedType, String what) {
    int limit = verified(bytes, expectedType, what);
    return new BinaryReader(bytes, 2, limit, (position, message, cause) ->
        new CorruptDataException(what + " at byte " + position + ": " + message, cause));
  }

  /**
   * Verifies an encoding's length, checksum, type and format revision as {@link #reader} does;
   * answers where its fields end (the checksum's offset).
   */
  private static int verified(byte[] bytes, byte expectedType, String what) {
    if (bytes == null || bytes.length < 2 + CHECKSUM_BYTES) {
      throw new CorruptDataException(
          what + ": too short (" + (bytes == null ? "null" : bytes.length + " bytes") + ")");
    }
    int limit = bytes.length - CHECKSUM_BYTES;
    int stored = BinaryReader.intAt(bytes, limit);
    int computed = BinaryReader.checksum(bytes, limit);
    if (stored != computed) {
      throw new CorruptDataException(
          what + ": checksum mismatch (stored " + Integer.toHexString(stored) + ", computed "
              + Integer.toHexString(computed) + ")");
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
    return limit;
  }
}
