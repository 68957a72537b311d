package dev.troupe.storage;

/**
 * A {@link KeyValueDisk} operation failed for an environmental reason (I/O error, full disk, a disk
 * that crashed under its user). Checked, like RocksDB's exception it replaces inside the engine, so
 * that every write path decides explicitly what a failure means: a failed commit write fails the
 * store and its commits' outcomes are unknown.
 */
public class DiskException extends Exception {
  public DiskException(String message) {
    super(message);
  }

  public DiskException(String message, Throwable cause) {
    super(message, cause);
  }
}
