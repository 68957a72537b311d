package dev.troupe.model.causal;

import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import dev.troupe.model.codec.BinaryReader;
import dev.troupe.model.codec.CorruptFrameException;
import dev.troupe.model.codec.Frames;
import dev.troupe.model.codec.BinaryWriter;
import dev.troupe.model.codec.ValueEncoding;
import dev.troupe.model.codec.CorruptFrameException.Damage;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;

/**
 * The binary form of replication log entries (what the store keeps in its {@code replication}
 * column family) and of {@link ReplicationBatch}es (what a pull answers between DCs). Shares the
 * model's field encodings ({@link ValueEncoding}: operations and entity ids) with the journal and
 * the messages between cores; no Java serialization.
 *
 * <p><b>Frame.</b> {@code type id (1 byte), version (1 byte), length (4 bytes, big-endian: the
 * bytes of the fields), the fields, CRC32C (4 bytes, big-endian) of everything before it}. Type
 * ids: 1 a {@link ReplicationEntry.Part}, 2 a {@link ReplicationEntry.Decision}, 3 a batch.
 * Decoding checks the length, then the checksum, then the type id and version before it reads a
 * field, so a frame flipped in any one byte, cut short or extended is refused with a {@link
 * CorruptFrameException}, never decoded into a different entry.
 *
 * <p><b>Fields.</b> An entry: origin DC (varint), timestamp (8 bytes), transaction id (8 bytes),
 * index (varint), then a part's entity and operations (varint count, each {@link
 * ValueEncoding#writeOperation}) or a decision's participants (varint count, each an entity id),
 * then its dependency vector. A dependency vector: varint count, then per entry in increasing DC
 * order (varint DC id, varint timestamp); a decoder refuses any other order or a 0 timestamp, so
 * equal vectors have equal bytes. A batch: origin DC (varint), up-to timestamp (8 bytes), varint
 * count, then per entry its type id (1 byte) and its fields (one checksum covers the batch). A
 * batch whose entry is of another origin or above the up-to timestamp is refused as malformed.
 *
 * <p><b>Versions.</b> Each type has its own version ({@link #VERSIONS}); a change of fields takes a
 * new version and a reader for the old one (stored logs and mixed-version DCs read these bytes).
 * The fixed byte vectors of {@code ReplicationCodecTest} fail on any change that forgets this.
 *
 * <p>Thread-safe (stateless).
 */
public final class ReplicationCodec {
  static final byte PART = 1;
  static final byte DECISION = 2;
  static final byte BATCH = 3;

  /** The version this build writes (and the newest it reads) of each type id, by index. */
  static final byte[] VERSIONS = {0, 1, 1, 1};


  private ReplicationCodec() {}

  // ---------------------------------------------------------------- entries

  public static byte[] encodeEntry(ReplicationEntry entry) {
    // The thread's scratch writer: the partition writer encodes an entry per committed part, and
    // a fresh writer grew from 64 bytes through five copies for a 1 KB record.
    byte typeId = entryType(entry);
    BinaryWriter out = Frames.begin(BinaryWriter.borrow(), typeId, VERSIONS[typeId]);
    try {
      writeEntryFields(out, entry);
      return finish(out);
    } finally {
      out.release();
    }
  }

  /**
   * @throws CorruptFrameException for anything that is not an entry this build reads
   */
  public static ReplicationEntry decodeEntry(byte[] bytes) {
    byte typeId = checkFrame(bytes);
    if (typeId != PART && typeId != DECISION) {
      throw new CorruptFrameException(Damage.UNKNOWN_TYPE,
          "replication type id " + typeId + " where an entry was expected");
    }
    BinaryReader in = reader(bytes, typeId);
    try {
      ReplicationEntry entry = readEntryFields(in, typeId);
      in.end();
      return entry;
    } catch (CorruptFrameException e) {
      throw e;
    } catch (RuntimeException e) {
      throw in.corrupt("malformed content: " + e.getMessage(), e);
    }
  }

  // ---------------------------------------------------------------- batches

  public static byte[] encodeBatch(ReplicationBatch batch) {
    BinaryWriter out = begin(BATCH, 64 + 64 * batch.entries().size());
    out.varInt(batch.originDc());
    out.fixedLong(batch.upToTimestamp());
    out.varInt(batch.entries().size());
    for (ReplicationEntry entry : batch.entries()) {
      out.type(entryType(entry));
      writeEntryFields(out, entry);
    }
    return finish(out);
  }

  /**
   * @throws CorruptFrameException for anything that is not a batch this build reads, or
   *     a batch that breaks its contract (an entry of another origin or above its up-to timestamp)
   */
  public static ReplicationBatch decodeBatch(byte[] bytes) {
    byte typeId = checkFrame(bytes);
    if (typeId != BATCH) {
      throw new CorruptFrameException(Damage.UNKNOWN_TYPE,
          "replication type id " + typeId + " where a batch was expected");
    }
    BinaryReader in = reader(bytes, typeId);
    try {
      int originDc = in.varInt();
      long upToTimestamp = in.fixedLong();
      int count = in.count();
      List<ReplicationEntry> entries = new ArrayList<>(count);
      for (int i = 0; i < count; i++) {
        byte entryType = in.type();
        if (entryType != PART && entryType != DECISION) {
          throw in.corrupt("unknown entry type " + entryType + " in a batch", null);
        }
        ReplicationEntry entry = readEntryFields(in, entryType);
        if (entry.originDc() != originDc || entry.timestamp() > upToTimestamp) {
          throw in.corrupt("entry of DC " + entry.originDc() + " at " + entry.timestamp()
              + " in a batch of DC " + originDc + " up to " + upToTimestamp, null);
        }
        entries.add(entry);
      }
      in.end();
      return new ReplicationBatch(originDc, entries, upToTimestamp);
    } catch (CorruptFrameException e) {
      throw e;
    } catch (RuntimeException e) {
      throw in.corrupt("malformed content: " + e.getMessage(), e);
    }
  }

  // ---------------------------------------------------------------- dependency vectors

  /** Appends {@code vector}: varint count, then (varint DC id, varint timestamp) by DC id. */
  public static void writeDependencies(BinaryWriter out, DependencyVector vector) {
    out.varInt(vector.entries().size());
    vector.entries().forEach((dc, timestamp) -> {
      out.varInt(dc);
      out.varLong(timestamp);
    });
  }

  /** Reads what {@link #writeDependencies} wrote; refuses a non-canonical form. */
  public static DependencyVector readDependencies(BinaryReader in) {
    int count = in.count();
    TreeMap<Integer, Long> entries = new TreeMap<>();
    long previous = -1;
    for (int i = 0; i < count; i++) {
      int dc = in.varInt();
      long timestamp = in.varLong();
      if ((dc & 0xFFFFFFFFL) <= previous) {
        throw in.corrupt("dependency vector entries out of order at DC " + dc, null);
      }
      if (timestamp == 0) {
        throw in.corrupt("dependency vector entry of DC " + dc + " is 0", null);
      }
      previous = dc & 0xFFFFFFFFL;
      entries.put(dc, timestamp);
    }
    return new DependencyVector(entries);
  }

  // ---------------------------------------------------------------- fields

  static byte entryType(ReplicationEntry entry) {
    return switch (entry) {
      case ReplicationEntry.Part ignored -> PART;
      case ReplicationEntry.Decision ignored -> DECISION;
    };
  }

  private static void writeEntryFields(BinaryWriter out, ReplicationEntry entry) {
    out.varInt(entry.originDc());
    out.fixedLong(entry.timestamp());
    out.fixedLong(entry.transactionId());
    out.varInt(entry.index());
    switch (entry) {
      case ReplicationEntry.Part part -> {
        ValueEncoding.writeEntity(out, part.entity());
        out.varInt(part.operations().size());
        for (Operation operation : part.operations()) {
          ValueEncoding.writeOperation(out, operation);
        }
      }
      case ReplicationEntry.Decision decision -> {
        out.varInt(decision.participants().size());
        for (EntityId participant : decision.participants()) {
          ValueEncoding.writeEntity(out, participant);
        }
      }
    }
    writeDependencies(out, entry.dependencies());
  }

  private static ReplicationEntry readEntryFields(BinaryReader in, byte typeId) {
    int originDc = in.varInt();
    long timestamp = in.fixedLong();
    long transactionId = in.fixedLong();
    int index = in.varInt();
    if (typeId == PART) {
      EntityId entity = ValueEncoding.readEntity(in);
      int count = in.count();
      List<Operation> operations = new ArrayList<>(count);
      for (int i = 0; i < count; i++) {
        operations.add(ValueEncoding.readOperation(in));
      }
      DependencyVector dependencies = readDependencies(in);
      return new ReplicationEntry.Part(originDc, timestamp, transactionId, index, entity,
          operations, dependencies);
    }
    int count = in.count();
    List<EntityId> participants = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      participants.add(ValueEncoding.readEntity(in));
    }
    DependencyVector dependencies = readDependencies(in);
    return new ReplicationEntry.Decision(originDc, timestamp, transactionId, index, participants,
        dependencies);
  }

  // ---------------------------------------------------------------- framing

  private static BinaryWriter begin(byte typeId, int capacity) {
    return Frames.begin(typeId, VERSIONS[typeId], capacity);
  }

  private static byte[] finish(BinaryWriter out) {
    return Frames.seal(out);
  }

  /** Checks length, checksum, type id and version; answers the type id. */
  private static byte checkFrame(byte[] bytes) {
    return Frames.check(bytes, VERSIONS, "replication", CorruptFrameException::new);
  }

  private static BinaryReader reader(byte[] bytes, byte typeId) {
    return new BinaryReader(bytes, Frames.HEADER_BYTES, Frames.fieldsEnd(bytes),
        (position, message, cause) -> new CorruptFrameException(Damage.MALFORMED,
            "replication type " + typeId + " at byte " + position + ": " + message, cause));
  }
}
