package dev.troupe.model;

/**
 * The closed set of error codes a client can see, each with its HTTP status. Adding a code is an API
 * change: clients switch on these strings.
 */
public enum ErrorCode {
  INVALID_REQUEST("invalid_request", 400),
  NOT_FOUND("not_found", 404),
  UNKNOWN_TYPE("unknown_type", 404),
  UNKNOWN_ACTION("unknown_action", 404),
  HISTORY_TRUNCATED("history_truncated", 410),
  PRECONDITION_FAILED("precondition_failed", 409),
  /**
   * A multi-entity transaction aborted and changed nothing; the exception's reason says why
   * ({@code TransactionAbort}): a failed precondition, a lock conflict, a timeout.
   */
  ABORTED("aborted", 409),
  /**
   * The request contradicts what is stored: a dependency that is already registered, or one that
   * would close a cycle of update dependencies.
   */
  CONFLICT("conflict", 409),
  TOO_LARGE("too_large", 413),
  OVERLOADED("overloaded", 429),
  UNAVAILABLE("unavailable", 503),
  /**
   * Stored data the request needs failed its integrity check (a checksum): the server will not
   * answer from it, not even "not found", and will not write on top of it. Retrying does not help;
   * an operator must check and repair the store (docs/OPERATIONS.md).
   */
  CORRUPT_DATA("corrupt_data", 500),
  /** The server cannot tell whether a write took effect; reported, never guessed. */
  OUTCOME_UNKNOWN("outcome_unknown", 500);

  private final String wireName;
  private final int httpStatus;

  ErrorCode(String wireName, int httpStatus) {
    this.wireName = wireName;
    this.httpStatus = httpStatus;
  }

  public String wireName() {
    return wireName;
  }

  public int httpStatus() {
    return httpStatus;
  }
}
