package dev.troupe.storage;

/**
 * What the storage engine knows about its own soundness, for readiness probes and /metrics.
 *
 * @param failure why the store accepts no more commits (a failed write, a failed maintenance step,
 *     damage met by the writer), or null while it accepts them; a failed store stays failed until
 *     it is reopened
 * @param corruptionsDetected reads that met data failing its checksum since the store opened
 * @param lastCorruption what the most recent of them met (the entity or column and RocksDB's
 *     message), or null if none
 */
public record StoreHealth(String failure, long corruptionsDetected, String lastCorruption) {
  public static final StoreHealth SOUND = new StoreHealth(null, 0, null);

  /** Whether the store accepts commits. */
  public boolean accepting() {
    return failure == null;
  }

  /** Whether no damage has been met since the store opened. */
  public boolean intact() {
    return corruptionsDetected == 0;
  }
}
