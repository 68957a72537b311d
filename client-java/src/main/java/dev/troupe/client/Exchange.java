package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.MissingNode;
import java.time.Duration;

/**
 * The attempts of one call: after each attempt's answer (or failure) it says what to do next,
 * finish with a result, fail with a typed exception, or wait and send the same request again.
 *
 * <p>Pure: no I/O, no clock, no randomness. The idempotency key (one per keyed call, kept across
 * every attempt so that the server runs the write at most once) and the times come from the
 * caller, so both faces of the client ({@link TroupeClient} blocking, {@link AsyncTroupeClient}
 * with futures) run the same decisions and cannot drift apart.
 *
 * <p>Invariants: at most {@link RetryPolicy#maxAttempts()} attempts; no retry starts after the
 * policy's {@link RetryPolicy#maxTotal()} from the first attempt (a wait that would end later
 * fails at once); a request that is not safe to repeat ({@link Safety#ONCE}) is sent again only
 * when it surely did nothing.
 *
 * <p>Concurrency: one exchange belongs to one call; its attempts are sequential.
 */
final class Exchange<T> {
  /** What to do after an attempt. */
  sealed interface Next<T> {}

  /** The call succeeded. */
  record Done<T>(T result) implements Next<T> {}

  /** The call failed for good. */
  record Fail<T>(TroupeClientException error) implements Next<T> {}

  /** Wait, then send the same request (same idempotency key) again. */
  record Retry<T>(Duration delay) implements Next<T> {}

  private final Call<T> call;
  private final RetryPolicy policy;
  private final String idempotencyKey;
  private final long deadlineNanos;
  private Duration backoff;
  private int attempts;

  /**
   * @param idempotencyKey the key every attempt carries (used only when the call is {@link
   *     Safety#KEYED} and the policy allows a retry)
   * @param startNanos the time of the first attempt, on the clock later times are given on
   */
  Exchange(Call<T> call, RetryPolicy policy, String idempotencyKey, long startNanos) {
    this.call = call;
    this.policy = policy;
    // A key only serves a retry: without one (maxAttempts 1) it would only cost the server the
    // record of the answer.
    this.idempotencyKey = call.safety() == Safety.KEYED && policy.maxAttempts() > 1
        ? idempotencyKey : null;
    this.deadlineNanos = startNanos + policy.maxTotal().toNanos();
    this.backoff = policy.initialBackoff();
  }

  Call<T> call() {
    return call;
  }

  /** The key every attempt carries; null when the call takes none. */
  String idempotencyKey() {
    return idempotencyKey;
  }

  /**
   * An attempt was answered.
   *
   * @param body the parsed JSON body (missing when empty; a text node when it was not JSON)
   * @param replayed the answer said {@code Idempotent-Replayed: true}
   * @param retryAfter the answer's {@code Retry-After} (null: none)
   */
  Next<T> answered(int status, JsonNode body, boolean replayed, Duration retryAfter,
      long nowNanos) {
    attempts++;
    if (status >= 200 && status < 300) {
      try {
        return new Done<>(call.reader().read(body == null ? MissingNode.getInstance() : body,
            replayed));
      } catch (RuntimeException unreadable) {
        String shown = String.valueOf(body);
        return new Fail<>(new TroupeClientException.UnexpectedAnswer(
            new TroupeClientException.Details(status, null, "an answer of an unexpected shape ("
                + unreadable + "): " + (shown.length() > 500 ? shown.substring(0, 500) : shown),
                null, body == null ? MissingNode.getInstance() : body, null, unreadable)));
      }
    }
    TroupeClientException error = TroupeClientException.fromAnswer(status, body, retryAfter);
    return decide(error, retries(error), retryAfter == null ? backoff : retryAfter, nowNanos);
  }

  /**
   * An attempt got no answer.
   *
   * @param neverSent the connection was never made (refused, or its connect timed out): the
   *     server saw nothing
   */
  Next<T> failed(Throwable failure, boolean neverSent, long nowNanos) {
    attempts++;
    TroupeClientException error = TroupeClientException.connectionFailed(failure);
    return decide(error, neverSent || call.safety() != Safety.ONCE, backoff, nowNanos);
  }

  private Next<T> decide(TroupeClientException error, boolean retry, Duration wait,
      long nowNanos) {
    if (!retry || attempts >= policy.maxAttempts()
        || nowNanos + wait.toNanos() > deadlineNanos) {
      return new Fail<>(error);
    }
    Duration doubled = backoff.multipliedBy(2);
    backoff = doubled.compareTo(policy.maxBackoff()) > 0 ? policy.maxBackoff() : doubled;
    return new Retry<>(wait);
  }

  private boolean retries(TroupeClientException error) {
    return switch (error) {
      // Only a keyed write learns its outcome by asking again.
      case TroupeClientException.OutcomeUnknown unknown -> call.safety() == Safety.KEYED;
      // With a key, a retry meets 409 conflict while the first attempt still runs (or may still
      // commit): asked again later it is replayed. A first attempt's conflict is the request's.
      case TroupeClientException.Conflict conflict ->
          call.safety() == Safety.KEYED && attempts > 1;
      // Also the answer to a request that outlived the server's request timeout, which may still
      // complete: only a request that is safe to repeat goes again.
      case TroupeClientException.Unavailable unavailable -> call.safety() != Safety.ONCE;
      default -> error.retryable();
    };
  }
}
