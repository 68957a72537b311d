package dev.troupe.model;

/**
 * The closed set of error codes a client can see, each with its HTTP status. Adding a code is an API
 * change: clients switch on these strings.
 */
public enum ErrorCode {
  INVALID_REQUEST("invalid_request", 400),
  /** No valid bearer token: missing, malformed or unknown (answered with WWW-Authenticate). */
  UNAUTHORIZED("unauthorized", 401),
  /** A valid token without the scope the route needs (read, write or admin). */
  FORBIDDEN("forbidden", 403),
  /** The method is not one the resource accepts (answered with an Allow header). */
  METHOD_NOT_ALLOWED("method_not_allowed", 405),
  /** The request (its headers or its body) did not arrive within its timeout. */
  REQUEST_TIMEOUT("request_timeout", 408),
  /** The request target (path and query) exceeds the server's limit. */
  URI_TOO_LONG("uri_too_long", 414),
  /** A header, or all headers together, exceed the server's limits. */
  HEADERS_TOO_LARGE("headers_too_large", 431),
  /** The HTTP method or a transfer feature is not implemented by the server at all. */
  NOT_IMPLEMENTED("not_implemented", 501),
  /**
   * A type declaration would hide or reinterpret stored data (a key's kind changed, a key with
   * data removed, a declaration over schemaless entities) and names no migration.
   */
  INCOMPATIBLE_TYPE("incompatible_type", 409),
  /**
   * An Idempotency-Key was used before with a different request (method, path or body): the
   * first request's answer cannot stand for this one.
   */
  IDEMPOTENCY_KEY_REUSED("idempotency_key_reused", 422),
  NOT_FOUND("not_found", 404),
  UNKNOWN_TYPE("unknown_type", 404),
  UNKNOWN_ACTION("unknown_action", 404),
  HISTORY_TRUNCATED("history_truncated", 410),
  /**
   * A replication pull (another data centre's) asked for entries of an origin after a timestamp
   * below what this DC's replication log has truncated of that origin: answering would leave a
   * silent gap. The answer names the bound ({@code
   * dev.troupe.model.causal.ReplicationLogTruncatedException}); the puller takes the origin from
   * another peer, or the new DC needs a bootstrap (docs/OPERATIONS.md).
   */
  TRUNCATED("truncated", 410),
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
   * The request carried a causal token (Troupe-Causal-Token) naming writes of other data centres
   * that have not become visible in this one within the token wait; nothing was done. Retry after
   * Retry-After, or send the request to the data centre that issued the token.
   */
  NOT_YET_VISIBLE("not_yet_visible", 503),
  /**
   * This data centre was added to a running set and is still applying the replication logs' tails
   * after the bootstrap image it installed (docs/ARCHITECTURE.md, "Bootstrapping a new data
   * centre"): until then it could show part of another data centre's multi-entity transaction, so
   * it serves no client request. Nothing was done; retry after Retry-After, or elsewhere.
   */
  BOOTSTRAPPING("bootstrapping", 503),
  /**
   * The request writes an entity of a strong type whose home is another data centre: only the
   * home runs its writes (docs/ARCHITECTURE.md, "Strong types with a home DC"). Nothing was done.
   * A server with the home as a peer forwards such a request there; the engine ({@code Troupe})
   * answers this, and a server answers it for a request already forwarded once.
   */
  NOT_HOME("not_home", 421),
  /**
   * The entity's partition is not written by this node (docs/ARCHITECTURE.md, "Partition ownership
   * and fencing"): in a data centre of several nodes the partition moved to another node, is
   * moving, or this node's owner epoch was fenced by a newer owner. Nothing was done, and nothing
   * of a refused commit was written. Retry after Retry-After: the request is routed to the
   * partition's new owner once the hand-off completes.
   */
  NOT_OWNER("not_owner", 503),
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
