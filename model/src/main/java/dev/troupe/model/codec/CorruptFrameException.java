package dev.troupe.model.codec;

/**
 * Bytes that are not a framed record this build can read ({@link Frames}: a wire message, a
 * replication log entry or batch, a bootstrap image record): damaged on the way or on disk
 * (checksum, length), of a type or version it does not know, or with fields that do not parse.
 * Never decoded into a different record. An environmental failure, not a bug; what the reader does
 * with it is its protocol's: a node drops a damaged message and the sender's resend repairs the
 * loss, a puller drops a batch and pulls again from its received bound, a log entry that fails is
 * reported by the store.
 */
public final class CorruptFrameException extends RuntimeException {
  /** What is wrong with the bytes. */
  public enum Damage {
    /** Fewer bytes than the smallest frame. */
    TOO_SHORT,
    /** The frame's length field disagrees with the bytes (truncated or extended). */
    LENGTH_MISMATCH,
    /** The CRC32C does not match the bytes. */
    CHECKSUM_MISMATCH,
    /** A type id this build does not know, or not the one the caller expects. */
    UNKNOWN_TYPE,
    /** A version newer than this build reads (written by a newer node). */
    NEWER_VERSION,
    /** The checksum matched but the fields do not parse or break the batch's contract. */
    MALFORMED
  }

  private final Damage damage;

  public CorruptFrameException(Damage damage, String message) {
    this(damage, message, null);
  }

  public CorruptFrameException(Damage damage, String message, Throwable cause) {
    super(message, cause, false, false);
    this.damage = damage;
  }

  public Damage damage() {
    return damage;
  }
}
