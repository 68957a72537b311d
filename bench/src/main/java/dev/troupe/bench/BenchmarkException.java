package dev.troupe.bench;

/** A benchmark could not produce figures: an operation failed, or a setup step did. */
final class BenchmarkException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  BenchmarkException(String message) {
    super(message);
  }

  BenchmarkException(String message, Throwable cause) {
    super(message, cause);
  }
}
