package dev.troupe.model.codec;

import dev.troupe.model.codec.CorruptFrameException.Damage;

/**
 * The binary frame every versioned record between processes or on disk shares (the wire's
 * messages, the replication log's entries and batches): {@code type id (1 byte), version (1
 * byte), length of the fields (4 bytes, big-endian), the fields, CRC32C (4 bytes, big-endian) of
 * everything before it}. A frame damaged in any one byte, cut or extended is refused, never read
 * as another record; a type or version this build does not know is refused as such. Each codec
 * keeps its own type ids and versions, and says which exception a damaged frame is ({@link
 * CorruptFrameException} for the wire and the replication codecs); this class only checks and
 * seals frames.
 */
public final class Frames {
  /** Type id, version and length. */
  public static final int HEADER_BYTES = 6;
  public static final int CHECKSUM_BYTES = 4;

  /** Makes the codec's own exception for a damaged frame. */
  @FunctionalInterface
  public interface Refusal {
    RuntimeException of(Damage damage, String message);
  }

  private Frames() {}

  /** A writer with the header of a frame of {@code typeId} at {@code version}; length to come. */
  public static BinaryWriter begin(byte typeId, byte version, int capacity) {
    return begin(new BinaryWriter(capacity), typeId, version);
  }

  /** {@link #begin(byte, byte, int)} into {@code out} (empty; e.g. {@link BinaryWriter#borrow}). */
  public static BinaryWriter begin(BinaryWriter out, byte typeId, byte version) {
    out.type(typeId);
    out.type(version);
    out.fixedInt(0); // the length, set by seal
    return out;
  }

  /** Sets the length and appends the checksum: the frame's bytes. */
  public static byte[] seal(BinaryWriter out) {
    out.fixedIntAt(2, out.length() - HEADER_BYTES);
    out.appendChecksum();
    return out.toByteArray();
  }

  /**
   * Checks a frame's length, checksum, type id and version; answers the type id.
   *
   * @param versions the newest version this build reads, by type id (index 0 unused)
   * @param what the kind of frame, for messages ("message", "replication")
   */
  public static byte check(byte[] bytes, byte[] versions, String what, Refusal refusal) {
    if (bytes == null || bytes.length < HEADER_BYTES + CHECKSUM_BYTES) {
      throw refusal.of(Damage.TOO_SHORT, what + " frame too short ("
          + (bytes == null ? "null" : bytes.length + " bytes") + ")");
    }
    int limit = fieldsEnd(bytes);
    long declared = BinaryReader.intAt(bytes, 2) & 0xFFFFFFFFL;
    if (declared != limit - HEADER_BYTES) {
      throw refusal.of(Damage.LENGTH_MISMATCH, what + " frame declares " + declared
          + " bytes of fields but carries " + (limit - HEADER_BYTES));
    }
    int stored = BinaryReader.intAt(bytes, limit);
    int computed = BinaryReader.checksum(bytes, limit);
    if (stored != computed) {
      throw refusal.of(Damage.CHECKSUM_MISMATCH, what + " frame checksum mismatch (stored "
          + Integer.toHexString(stored) + ", computed " + Integer.toHexString(computed) + ")");
    }
    byte typeId = bytes[0];
    if (typeId < 1 || typeId >= versions.length) {
      throw refusal.of(Damage.UNKNOWN_TYPE, "unknown " + what + " type id " + typeId
          + " (this build knows 1.." + (versions.length - 1) + "; from a newer node?)");
    }
    byte version = bytes[1];
    if (version < 1 || version > versions[typeId]) {
      throw refusal.of(Damage.NEWER_VERSION, what + " type " + typeId + " version " + version
          + ": this build reads up to version " + versions[typeId]);
    }
    return typeId;
  }

  /** Where a checked frame's fields end (its checksum starts). */
  public static int fieldsEnd(byte[] bytes) {
    return bytes.length - CHECKSUM_BYTES;
  }
}
