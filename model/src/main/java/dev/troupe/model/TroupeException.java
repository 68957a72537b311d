package dev.troupe.model;

/**
 * A failure the caller can act on, with a code from the closed set {@link ErrorCode}. Thrown (or
 * carried in a failed future) by the engine API; the REST layer turns it into
 * {@code {"error": code, "message": text}}. Never carries partial effects: whoever throws it has
 * changed nothing.
 */
public class TroupeException extends RuntimeException {
  private final ErrorCode code;

  public TroupeException(ErrorCode code, String message) {
    super(message, null, false, false);
    this.code = code;
  }

  public ErrorCode code() {
    return code;
  }

  public static TroupeException invalid(String message) {
    return new TroupeException(ErrorCode.INVALID_REQUEST, message);
  }
}
