package dev.troupe.model.causal;

import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;

/**
 * {@link ErrorCode#TRUNCATED}: a read of the replication log of {@code originDc} after a
 * timestamp below {@code truncatedThrough}, the highest timestamp of an entry of that origin the
 * log has truncated. Entries after the asked timestamp may be gone, so the read is refused rather
 * than answered with a silent gap (a puller that applied such an answer would skip transactions
 * of the origin for ever). Entries after {@code truncatedThrough} are all still held: a read
 * after it (at {@link #lowestHeldTimestamp()} or later) is answered.
 */
public final class ReplicationLogTruncatedException extends TroupeException {
  private final int originDc;
  private final long truncatedThrough;

  public ReplicationLogTruncatedException(int originDc, long afterTimestamp,
      long truncatedThrough) {
    super(ErrorCode.TRUNCATED, "the replication log of data centre " + originDc
        + " is truncated through timestamp " + truncatedThrough + ", above the asked " + afterTimestamp
        + ": entries after " + afterTimestamp + " may be gone (pull them from another peer, or"
        + " bootstrap this data centre from a snapshot)");
    this.originDc = originDc;
    this.truncatedThrough = truncatedThrough;
  }

  /** The origin whose entries were asked for. */
  public int originDc() {
    return originDc;
  }

  /** The highest timestamp of a truncated entry of the origin. */
  public long truncatedThrough() {
    return truncatedThrough;
  }

  /** The lowest timestamp a held entry of the origin can have: reads after it are answered. */
  public long lowestHeldTimestamp() {
    return truncatedThrough + 1;
  }
}
