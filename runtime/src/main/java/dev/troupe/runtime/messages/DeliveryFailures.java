package dev.troupe.runtime.messages;

import dev.troupe.model.ErrorCode;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.TroupeException;
import dev.troupe.model.causal.Messages;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * What a failed receiving turn means for its message (docs/ARCHITECTURE.md, "Causal messages").
 * A single-entity delivery consumes a failing action inside its own turn; an action with sync
 * calls runs as a transaction, which fails as a whole, and this sorts its failure: the message was
 * delivered before (the transaction found the marker), the action can never run (the message is
 * consumed with the error's code, as a single turn would), or the turn did not run this time (it is
 * tried again, backing off).
 */
final class DeliveryFailures {
  private DeliveryFailures() {}

  /** What to do with a message whose receiving turn failed. */
  sealed interface Verdict {
    /** The marker showed it delivered before: nothing to do. */
    record AlreadyDelivered() implements Verdict {}

    /** The action cannot run: consume the message with this outcome (an error code). */
    record Consume(String outcome) implements Verdict {}

    /** The turn did not run (contention, no answer, overload): try again later. */
    record Retry() implements Verdict {}
  }

  static Verdict classify(Throwable failure) {
    Throwable cause = failure;
    while ((cause instanceof CompletionException || cause instanceof ExecutionException)
        && cause.getCause() != null) {
      cause = cause.getCause();
    }
    if (!(cause instanceof TroupeException error)) {
      return new Verdict.Retry();
    }
    return switch (error.code()) {
      case CONFLICT -> Messages.ALREADY_DELIVERED.equals(error.reason())
          ? new Verdict.AlreadyDelivered() : new Verdict.Consume(error.code().wireName());
      // The action's own verdict: it would be the same at every attempt.
      case PRECONDITION_FAILED, INVALID_REQUEST, NOT_FOUND, UNKNOWN_TYPE, UNKNOWN_ACTION,
          TOO_LARGE, NOT_HOME, INCOMPATIBLE_TYPE -> new Verdict.Consume(error.code().wireName());
      case ABORTED -> switch (error.reason() == null ? "" : error.reason()) {
        // A transaction's participant refused on its state: as a single turn would.
        case TransactionAbort.PRECONDITION_FAILED -> new Verdict.Consume(
            ErrorCode.PRECONDITION_FAILED.wireName());
        case TransactionAbort.TOO_LARGE -> new Verdict.Consume(ErrorCode.TOO_LARGE.wireName());
        case TransactionAbort.EVALUATION_FAILED -> new Verdict.Consume(
            ErrorCode.INVALID_REQUEST.wireName());
        // Lock conflicts, timeouts, an unavailable participant, replans: contention.
        default -> new Verdict.Retry();
      };
      // Overloaded, unavailable, no answer in time (the marker decides at the next attempt).
      default -> new Verdict.Retry();
    };
  }
}
