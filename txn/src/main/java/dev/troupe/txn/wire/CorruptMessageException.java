package dev.troupe.txn.wire;

/**
 * A message's bytes are not a message this build can read: damaged on the way (checksum, length),
 * of a type or a version it does not know, or with fields that do not parse. The receiver drops
 * it and the sender's resend (every protocol message is resent until answered) repairs the loss;
 * it is never decoded into a different message.
 */
public final class CorruptMessageException extends RuntimeException {
  /** What is wrong with the bytes. */
  public enum Damage {
    /** Fewer bytes than the smallest frame. */
    TOO_SHORT,
    /** The frame's length field disagrees with the bytes received (truncated or extended). */
    LENGTH_MISMATCH,
    /** The CRC32C does not match the bytes. */
    CHECKSUM_MISMATCH,
    /** A message type id this build does not know. */
    UNKNOWN_TYPE,
    /** A message version newer than this build reads (a newer node sent it). */
    NEWER_VERSION,
    /** The checksum matched but the fields do not parse (a bug or a forged frame). */
    MALFORMED
  }

  private final Damage damage;

  public CorruptMessageException(Damage damage, String message) {
    this(damage, message, null);
  }

  public CorruptMessageException(Damage damage, String message, Throwable cause) {
    super(message, cause, false, false);
    this.damage = damage;
  }

  public Damage damage() {
    return damage;
  }
}
