package dev.troupe.storage;

/**
 * A fenced batch was not applied because its partition has a newer owner epoch (see {@link
 * KeyValueDisk#acquirePartition}): another node took the partition over. Nothing of the batch was
 * written, so the commits in it are refused, not of unknown outcome; the partition is no longer
 * this node's to write.
 */
public final class FencedException extends DiskException {
  private final int partition;
  private final long epoch;
  private final long currentEpoch;

  public FencedException(int partition, long epoch, long currentEpoch) {
    super("partition " + partition + " was fenced: this writer holds owner epoch " + epoch
        + ", the partition is now at epoch " + currentEpoch + " (another node took it over)");
    this.partition = partition;
    this.epoch = epoch;
    this.currentEpoch = currentEpoch;
  }

  public int partition() {
    return partition;
  }

  /** The epoch the batch was fenced with. */
  public long epoch() {
    return epoch;
  }

  /** The partition's epoch when the batch was refused. */
  public long currentEpoch() {
    return currentEpoch;
  }
}
