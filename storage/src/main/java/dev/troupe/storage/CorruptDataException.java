package dev.troupe.storage;

/**
 * Persisted bytes failed their integrity checks (record type, format revision, CRC32C checksum or
 * structure). Never recovered from silently: applying a corrupt record would corrupt every state
 * built on it, so the read or recovery that met it fails instead.
 */
public final class CorruptDataException extends RuntimeException {
  public CorruptDataException(String message) {
    super(message);
  }

  public CorruptDataException(String message, Throwable cause) {
    super(message, cause);
  }
}
