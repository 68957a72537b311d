package dev.troupe.model;

/**
 * Production-time invariant checks. A violated invariant is a bug, never an environmental failure:
 * it throws {@link InvariantViolation}, which shells treat as fatal (the node stops rather than
 * acknowledging anything on top of a corrupt state). Never use {@code assert}: it is off in production.
 */
public final class Invariants {
  private Invariants() {}

  public static void check(boolean condition, String message) {
    if (!condition) {
      throw new InvariantViolation(message);
    }
  }

  public static void check(boolean condition, String format, Object... arguments) {
    if (!condition) {
      throw new InvariantViolation(String.format(format, arguments));
    }
  }

  /** Thrown when an invariant does not hold; a bug that must stop the node. */
  public static final class InvariantViolation extends RuntimeException {
    public InvariantViolation(String message) {
      super("invariant violated: " + message);
    }
  }
}
