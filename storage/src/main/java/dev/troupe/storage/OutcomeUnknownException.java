package dev.troupe.storage;

/**
 * The store cannot tell whether a commit took effect (for example the write failed after reaching
 * the write-ahead log). Reported to clients as unknown, never guessed.
 */
public final class OutcomeUnknownException extends RuntimeException {
  public OutcomeUnknownException(String message, Throwable cause) {
    super(message, cause);
  }
}
