package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.MissingNode;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * A request the server refused, or one that got no answer: the one exception the client throws
 * (from the blocking client; the asynchronous client completes its futures with it).
 *
 * <p>Every refusal of the server is JSON, {@code {"error": CODE, "message": TEXT}} ({@code
 * reason} too with {@code aborted}), and each code of the server's closed set has exactly one
 * HTTP status and exactly one subclass here, so callers catch {@code
 * TroupeClientException.PreconditionFailed} rather than compare strings. Two subclasses stand for
 * no code: {@link ConnectionFailed} (no answer at all: refused, reset, timed out) and {@link
 * UnexpectedAnswer} (an answer outside the contract: not JSON, or a code this client does not
 * know).
 *
 * <p>{@link #retryable()} says whether the server did nothing and asks to be asked again later
 * (429 and the 503 codes), or, for {@code outcome_unknown}, that sending the same request again
 * with its idempotency key learns the outcome. The client has already retried what it may (see
 * {@link RetryPolicy}): a retryable exception means the retries were used up.
 */
public abstract sealed class TroupeClientException extends RuntimeException {
  private final Details details;

  /** What every refusal carries (package-private: built by the client only). */
  record Details(int status, String code, String message, String reason, JsonNode body,
      Duration retryAfter, Throwable cause) {}

  TroupeClientException(Details details) {
    super(describe(details), details.cause());
    this.details = details;
  }

  private static String describe(Details details) {
    StringBuilder text = new StringBuilder();
    text.append(details.status() == 0 ? "no answer" : Integer.toString(details.status()));
    if (details.code() != null) {
      text.append(' ').append(details.code());
    }
    if (details.reason() != null) {
      text.append(" (").append(details.reason()).append(')');
    }
    return text.append(": ").append(details.message()).toString();
  }

  /** The HTTP status of the answer (0 when no answer arrived). */
  public int status() {
    return details.status();
  }

  /**
   * The error code as the server sent it ({@code not_found}, ...), also for a code this client
   * does not know; empty when the answer carried none (or there was no answer).
   */
  public Optional<String> code() {
    return Optional.ofNullable(details.code());
  }

  /** The server's message (or, without an answer, what the transport said). */
  public String serverMessage() {
    return details.message();
  }

  /** Only with {@code aborted}: why, e.g. {@code precondition_failed}, {@code lock_conflict}. */
  public Optional<String> reason() {
    return Optional.ofNullable(details.reason());
  }

  /** The whole JSON error answer ({@code truncated} carries bounds); missing when there was none. */
  public JsonNode body() {
    return details.body();
  }

  /** The answer's {@code Retry-After}, when it had one. */
  public Optional<Duration> retryAfter() {
    return Optional.ofNullable(details.retryAfter());
  }

  /** The server did nothing, and a later attempt of the same request may succeed. */
  public boolean retryable() {
    return false;
  }

  /** No answer: the connection was refused, reset or timed out (after the client's retries). */
  public static final class ConnectionFailed extends TroupeClientException {
    ConnectionFailed(Details details) {
      super(details);
    }
  }

  /** An answer outside the contract: not JSON, or an error code this client does not know. */
  public static final class UnexpectedAnswer extends TroupeClientException {
    UnexpectedAnswer(Details details) {
      super(details);
    }
  }

  /** {@code 400 invalid_request}: The request is malformed or names something invalid; nothing changed. */
  public static final class InvalidRequest extends TroupeClientException {
    InvalidRequest(Details details) {
      super(details);
    }
  }

  /** {@code 401 unauthorized}: No valid bearer token (missing, malformed or unknown). */
  public static final class Unauthorized extends TroupeClientException {
    Unauthorized(Details details) {
      super(details);
    }
  }

  /** {@code 403 forbidden}: The token lacks the scope the route needs (read, write or admin). */
  public static final class Forbidden extends TroupeClientException {
    Forbidden(Details details) {
      super(details);
    }
  }

  /** {@code 405 method_not_allowed}: The resource does not accept the method. */
  public static final class MethodNotAllowed extends TroupeClientException {
    MethodNotAllowed(Details details) {
      super(details);
    }
  }

  /** {@code 408 request_timeout}: The request's headers or body did not arrive within the server's timeout. */
  public static final class RequestTimeout extends TroupeClientException {
    RequestTimeout(Details details) {
      super(details);
    }
  }

  /** {@code 414 uri_too_long}: The path and query exceed the server's limit. */
  public static final class UriTooLong extends TroupeClientException {
    UriTooLong(Details details) {
      super(details);
    }
  }

  /** {@code 431 headers_too_large}: A header, or all headers together, exceed the server's limits. */
  public static final class HeadersTooLarge extends TroupeClientException {
    HeadersTooLarge(Details details) {
      super(details);
    }
  }

  /** {@code 501 not_implemented}: The method or a transfer feature is not implemented by the server. */
  public static final class NotImplemented extends TroupeClientException {
    NotImplemented(Details details) {
      super(details);
    }
  }

  /** {@code 409 incompatible_type}: A type declaration would hide or reinterpret stored data and names no migration. */
  public static final class IncompatibleType extends TroupeClientException {
    IncompatibleType(Details details) {
      super(details);
    }
  }

  /** {@code 422 idempotency_key_reused}: An idempotency key was used before with a different request. */
  public static final class IdempotencyKeyReused extends TroupeClientException {
    IdempotencyKeyReused(Details details) {
      super(details);
    }
  }

  /** {@code 404 not_found}: No such entity, key, dependency or transaction. */
  public static final class NotFound extends TroupeClientException {
    NotFound(Details details) {
      super(details);
    }
  }

  /** {@code 404 unknown_type}: The type is not declared. */
  public static final class UnknownType extends TroupeClientException {
    UnknownType(Details details) {
      super(details);
    }
  }

  /** {@code 404 unknown_action}: The type declares no such action. */
  public static final class UnknownAction extends TroupeClientException {
    UnknownAction(Details details) {
      super(details);
    }
  }

  /** {@code 410 history_truncated}: The version asked for ({@code at=}) is older than the history the server keeps. */
  public static final class HistoryTruncated extends TroupeClientException {
    HistoryTruncated(Details details) {
      super(details);
    }
  }

  /** {@code 410 truncated}: A replication pull asked for entries the server's replication log no longer holds. */
  public static final class Truncated extends TroupeClientException {
    Truncated(Details details) {
      super(details);
    }
  }

  /** {@code 409 precondition_failed}: An action's precondition was false; nothing changed. */
  public static final class PreconditionFailed extends TroupeClientException {
    PreconditionFailed(Details details) {
      super(details);
    }
  }

  /** {@code 409 aborted}: A transaction aborted and changed nothing; {@link #reason()} says why (e.g. {@code precondition_failed}, {@code lock_conflict}). */
  public static final class Aborted extends TroupeClientException {
    Aborted(Details details) {
      super(details);
    }
  }

  /** {@code 409 conflict}: The request contradicts what is stored (a dependency already registered, a cycle), or a retry met its first attempt still running. */
  public static final class Conflict extends TroupeClientException {
    Conflict(Details details) {
      super(details);
    }
  }

  /** {@code 413 too_large}: The request or a value exceeds the server's size limits. */
  public static final class TooLarge extends TroupeClientException {
    TooLarge(Details details) {
      super(details);
    }
  }

  /** {@code 429 overloaded}: The server refused the request to protect itself; nothing was done. */
  public static final class Overloaded extends TroupeClientException {
    Overloaded(Details details) {
      super(details);
    }

    @Override
    public boolean retryable() {
      return true;
    }
  }

  /** {@code 503 unavailable}: The server could not serve the request now (also what a request that timed out inside the server gets, which may still complete). */
  public static final class Unavailable extends TroupeClientException {
    Unavailable(Details details) {
      super(details);
    }

    @Override
    public boolean retryable() {
      return true;
    }
  }

  /** {@code 503 not_yet_visible}: The causal token names writes of other data centres not yet visible in this one; nothing was done. */
  public static final class NotYetVisible extends TroupeClientException {
    NotYetVisible(Details details) {
      super(details);
    }

    @Override
    public boolean retryable() {
      return true;
    }
  }

  /** {@code 503 bootstrapping}: The data centre is still applying replication after its bootstrap; nothing was done. */
  public static final class Bootstrapping extends TroupeClientException {
    Bootstrapping(Details details) {
      super(details);
    }

    @Override
    public boolean retryable() {
      return true;
    }
  }

  /** {@code 421 not_home}: The entity's strong type has its home in another data centre; nothing was done. */
  public static final class NotHome extends TroupeClientException {
    NotHome(Details details) {
      super(details);
    }
  }

  /** {@code 503 not_owner}: The entity's partition is not written by this node (it moved or is moving); nothing was done. */
  public static final class NotOwner extends TroupeClientException {
    NotOwner(Details details) {
      super(details);
    }

    @Override
    public boolean retryable() {
      return true;
    }
  }

  /** {@code 500 corrupt_data}: Stored data the request needs failed its integrity check; retrying does not help. */
  public static final class CorruptData extends TroupeClientException {
    CorruptData(Details details) {
      super(details);
    }
  }

  /** {@code 500 outcome_unknown}: The server cannot tell whether the write took effect. The client retries it with the same idempotency key (and so learns the outcome); this is thrown only once the retries are used up, or for a request without a key. */
  public static final class OutcomeUnknown extends TroupeClientException {
    OutcomeUnknown(Details details) {
      super(details);
    }

    @Override
    public boolean retryable() {
      return true;
    }
  }

  private static final Map<String, Function<Details, TroupeClientException>> CONSTRUCTORS;
  private static final Map<String, Integer> STATUSES;

  static {
    Map<String, Function<Details, TroupeClientException>> constructors = new LinkedHashMap<>();
    constructors.put("invalid_request", InvalidRequest::new);
    constructors.put("unauthorized", Unauthorized::new);
    constructors.put("forbidden", Forbidden::new);
    constructors.put("method_not_allowed", MethodNotAllowed::new);
    constructors.put("request_timeout", RequestTimeout::new);
    constructors.put("uri_too_long", UriTooLong::new);
    constructors.put("headers_too_large", HeadersTooLarge::new);
    constructors.put("not_implemented", NotImplemented::new);
    constructors.put("incompatible_type", IncompatibleType::new);
    constructors.put("idempotency_key_reused", IdempotencyKeyReused::new);
    constructors.put("not_found", NotFound::new);
    constructors.put("unknown_type", UnknownType::new);
    constructors.put("unknown_action", UnknownAction::new);
    constructors.put("history_truncated", HistoryTruncated::new);
    constructors.put("truncated", Truncated::new);
    constructors.put("precondition_failed", PreconditionFailed::new);
    constructors.put("aborted", Aborted::new);
    constructors.put("conflict", Conflict::new);
    constructors.put("too_large", TooLarge::new);
    constructors.put("overloaded", Overloaded::new);
    constructors.put("unavailable", Unavailable::new);
    constructors.put("not_yet_visible", NotYetVisible::new);
    constructors.put("bootstrapping", Bootstrapping::new);
    constructors.put("not_home", NotHome::new);
    constructors.put("not_owner", NotOwner::new);
    constructors.put("corrupt_data", CorruptData::new);
    constructors.put("outcome_unknown", OutcomeUnknown::new);
    CONSTRUCTORS = Collections.unmodifiableMap(constructors);
    Map<String, Integer> statuses = new LinkedHashMap<>();
    statuses.put("invalid_request", 400);
    statuses.put("unauthorized", 401);
    statuses.put("forbidden", 403);
    statuses.put("method_not_allowed", 405);
    statuses.put("request_timeout", 408);
    statuses.put("uri_too_long", 414);
    statuses.put("headers_too_large", 431);
    statuses.put("not_implemented", 501);
    statuses.put("incompatible_type", 409);
    statuses.put("idempotency_key_reused", 422);
    statuses.put("not_found", 404);
    statuses.put("unknown_type", 404);
    statuses.put("unknown_action", 404);
    statuses.put("history_truncated", 410);
    statuses.put("truncated", 410);
    statuses.put("precondition_failed", 409);
    statuses.put("aborted", 409);
    statuses.put("conflict", 409);
    statuses.put("too_large", 413);
    statuses.put("overloaded", 429);
    statuses.put("unavailable", 503);
    statuses.put("not_yet_visible", 503);
    statuses.put("bootstrapping", 503);
    statuses.put("not_home", 421);
    statuses.put("not_owner", 503);
    statuses.put("corrupt_data", 500);
    statuses.put("outcome_unknown", 500);
    STATUSES = Collections.unmodifiableMap(statuses);
  }

  /**
   * The HTTP status of each error code of the server's closed set, in the server's order (the
   * tests check it against the server's {@code ErrorCode}).
   */
  public static Map<String, Integer> statusByCode() {
    return STATUSES;
  }

  /**
   * The exception for an error answer: its status, its parsed JSON body (null or not an object
   * when it was not JSON) and its {@code Retry-After} (null: none).
   */
  static TroupeClientException fromAnswer(int status, JsonNode body, Duration retryAfter) {
    if (body == null || !body.isObject() || !body.path("error").isTextual()) {
      String shown = body == null ? "an empty answer" : body.toString();
      if (shown.length() > 500) {
        shown = shown.substring(0, 500) + "...";
      }
      return new UnexpectedAnswer(new Details(status, null,
          "an error answer without a JSON error code: " + shown,
          null, body == null ? MissingNode.getInstance() : body, retryAfter, null));
    }
    String code = body.get("error").asText();
    String message = body.path("message").isTextual() ? body.get("message").asText() : code;
    String reason = body.path("reason").isTextual() ? body.get("reason").asText() : null;
    Details details = new Details(status, code, message, reason, body, retryAfter, null);
    return CONSTRUCTORS.getOrDefault(code, UnexpectedAnswer::new).apply(details);
  }

  /** The exception for a request that got no answer ({@code cause}: the transport's). */
  static ConnectionFailed connectionFailed(Throwable cause) {
    return new ConnectionFailed(new Details(0, null, cause.getClass().getSimpleName() + ": "
        + cause.getMessage(), null, MissingNode.getInstance(), null, cause));
  }
}
