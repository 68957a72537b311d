package dev.troupe.model;

/**
 * The closed set of reasons a transaction aborts, sent to clients as {@code "reason"} with error
 * {@link ErrorCode#ABORTED} (HTTP 409). Adding one is an API change. Whatever the reason, an aborted
 * transaction changed nothing.
 */
public final class TransactionAbort {
  private TransactionAbort() {}

  /** An operation's precondition (or a rejected operation) failed on one entity. */
  public static final String PRECONDITION_FAILED = "precondition_failed";

  /**
   * Wait-die killed it on a lock held or awaited by an older transaction, and its retries ran out.
   */
  public static final String LOCK_CONFLICT = "lock_conflict";

  /** Not every participant voted within the prepare timeout. */
  public static final String TIMEOUT = "timeout";

  /** A participant was overloaded or its storage refused the prepared record. */
  public static final String PARTICIPANT_UNAVAILABLE = "participant_unavailable";

  /**
   * A value the transaction would write is past a limit of {@code troupe.limits} (bytes, nesting,
   * string length, keys of an entity, elements of a set), or a CEL evaluation in it tried to build
   * more than an evaluation may. A single turn refused for the same reason answers {@code
   * too_large} (413).
   */
  public static final String TOO_LARGE = "too_large";

  /**
   * An action's effect, a dependency's function or an increment could not be computed on the
   * state it met: a CEL error (division by zero, a type error, no such map key), an overflow of a
   * 64-bit integer, or a result JSON cannot carry (a non-finite number). A single turn refused for
   * the same reason answers {@code invalid_request} (400).
   */
  public static final String EVALUATION_FAILED = "evaluation_failed";

  /** The coordinator decided abort; the participant's acknowledgement of that decision. */
  public static final String DECIDED = "decided";

  /**
   * Internal, never shown to clients: a single-entity turn touches a key that leads or follows a
   * declared dependency, so it changed nothing and the runtime runs it again as a transaction
   * (which the dependencies' other entities join).
   */
  public static final String NEEDS_TRANSACTION = "needs_transaction";

  /**
   * Internal, never shown to clients: a planned transaction's forwards reached beyond what its
   * reconnaissance planned (planned ordering needs every participant up front); it changed
   * nothing, and the runtime plans it again from fresher states or runs it as a dynamic one.
   */
  public static final String DEPENDENCIES_INVOLVED = "dependencies_involved";

  /**
   * An interactive transaction its client aborted ({@code POST /v1/transactions/{txId}/abort}):
   * never an answer's reason (the client asked for it), only what the metrics and the recent
   * transactions ({@code GET /v1/transactions/recent}) say of it.
   */
  public static final String INTERACTIVE_ABORTED = "interactive_aborted";
}
