package dev.troupe.model;

/**
 * A failure the caller can act on, with a code from the closed set {@link ErrorCode}. Thrown (or
 * carried in a failed future) by the engine API; the REST layer turns it into
 * {@code {"error": code, "message": text}}. Never carries partial effects: whoever throws it has
 * changed nothing.
 */
public class TroupeException extends RuntimeException {
  private final ErrorCode code;
  private final String reason;

  public TroupeException(ErrorCode code, String message) {
    this(code, null, message);
  }

  /**
   * @param reason a machine-readable refinement of the code, from a closed set per code (e.g. the
   *     abort reasons in {@code TransactionAbort}); {@code null} for none
   */
  public TroupeException(ErrorCode code, String reason, String message) {
    super(message, null, false, false);
    this.code = code;
    this.reason = reason;
  }

  public ErrorCode code() {
    return code;
  }

  /** The machine-readable reason, or {@code null}; REST answers carry it as {@code "reason"}. */
  public String reason() {
    return reason;
  }

  public static TroupeException invalid(String message) {
    return new TroupeException(ErrorCode.INVALID_REQUEST, message);
  }
}
