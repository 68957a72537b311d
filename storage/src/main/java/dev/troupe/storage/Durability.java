package dev.troupe.storage;

/** When a commit is acknowledged. */
public enum Durability {
  /** After the journal write is synced to disk (fsync of the write-ahead log). The default. */
  SYNC,
  /**
   * After the write reaches the storage engine's memory; the write-ahead log is synced every {@code
   * asyncFlushIntervalMillis}. A crash may lose the last interval of acknowledged commits.
   */
  ASYNC
}
