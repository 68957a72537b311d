package dev.troupe.client;

import java.time.Duration;
import java.util.Objects;

/**
 * Bounds on the client's retries of one request; both bounds hold (whichever is reached first).
 *
 * <p>What is retried: a read, and a write sent with an idempotency key (the server runs it at most
 * once and replays its first answer), after no answer, {@code 429}, a {@code 503}, or {@code 500
 * outcome_unknown} (keyed writes only), and a keyed write's {@code 409 conflict} on a retry (its
 * first attempt still runs). An interactive step, {@code begin} and {@code abort} are sent again
 * only when the server said it did nothing ({@code 429}, a {@code 503} other than {@code
 * unavailable}) or no connection was made. A {@code Retry-After} is honoured as sent.
 *
 * @param maxAttempts attempts per request, the first included (1: never retry)
 * @param maxTotal time from the first attempt after which no retry starts (a longer {@code
 *     Retry-After} gives up at once)
 * @param initialBackoff wait before the first retry when the server names none; doubles per retry
 * @param maxBackoff cap on the doubling wait (a server's {@code Retry-After} is honoured as it is,
 *     within {@code maxTotal})
 */
public record RetryPolicy(int maxAttempts, Duration maxTotal, Duration initialBackoff,
    Duration maxBackoff) {
  /** Default of {@link #maxAttempts}: 6. */
  public static final int DEFAULT_MAX_ATTEMPTS = 6;
  /** Default of {@link #maxTotal}: 30 s. */
  public static final Duration DEFAULT_MAX_TOTAL = Duration.ofSeconds(30);
  /** Default of {@link #initialBackoff}: 50 ms. */
  public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofMillis(50);
  /** Default of {@link #maxBackoff}: 2 s. */
  public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofSeconds(2);

  /** The defaults: 6 attempts within 30 s, waits from 50 ms doubling up to 2 s. */
  public static final RetryPolicy DEFAULT = new RetryPolicy(DEFAULT_MAX_ATTEMPTS,
      DEFAULT_MAX_TOTAL, DEFAULT_INITIAL_BACKOFF, DEFAULT_MAX_BACKOFF);

  /**
   * No retries at all: every request is sent once, and writes carry no idempotency key (it would
   * serve no retry, and costs the server the record of the answer).
   */
  public static final RetryPolicy NONE = DEFAULT.withMaxAttempts(1);

  /** Checks the bounds: at least one attempt, no negative duration. */
  public RetryPolicy {
    if (maxAttempts < 1) {
      throw new IllegalArgumentException("maxAttempts must be at least 1: " + maxAttempts);
    }
    for (Duration bound : new Duration[] {maxTotal, initialBackoff, maxBackoff}) {
      Objects.requireNonNull(bound, "a retry bound");
      if (bound.isNegative()) {
        throw new IllegalArgumentException("a retry bound must not be negative: " + bound);
      }
    }
  }

  /** This policy with another {@link #maxAttempts}. */
  public RetryPolicy withMaxAttempts(int attempts) {
    return new RetryPolicy(attempts, maxTotal, initialBackoff, maxBackoff);
  }

  /** This policy with another {@link #maxTotal}. */
  public RetryPolicy withMaxTotal(Duration total) {
    return new RetryPolicy(maxAttempts, total, initialBackoff, maxBackoff);
  }

  /** This policy with other {@link #initialBackoff} and {@link #maxBackoff}. */
  public RetryPolicy withBackoff(Duration initial, Duration max) {
    return new RetryPolicy(maxAttempts, maxTotal, initial, max);
  }
}
