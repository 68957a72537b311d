package dev.troupe.storage.systemofrecord;

/**
 * Something the system-of-record exporter cannot put in its tables without losing or bending it
 * (a register value of another JSON type than its column, a key whose column changed type, a name
 * PostgreSQL cannot hold): the exporter stops with this message rather than skip it silently.
 */
public final class UnmappableException extends Exception {
  public UnmappableException(String message) {
    super(message);
  }
}
