package dev.troupe.sim;

/**
 * One client request of a simulated workload, as the client knows it: pending until its answer
 * arrives or the client's timeout fires, whichever comes first; the other is then ignored. Deciding
 * it lets the client issue its next request.
 */
class ClientCall {
  /** How a request ended, as far as its client knows. */
  enum Outcome {
    PENDING, COMMITTED, ABORTED, UNKNOWN;

    /** A refusal is an abort, unless the node itself could not tell ({@code outcome_unknown}). */
    static Outcome ofFailure(dev.troupe.model.ErrorCode code) {
      return code == dev.troupe.model.ErrorCode.OUTCOME_UNKNOWN ? UNKNOWN : ABORTED;
    }

    /** A single turn's answer as its client sees it. */
    static Outcome of(dev.troupe.txn.TurnResult result) {
      return switch (result) {
        case dev.troupe.txn.TurnResult.Done done -> COMMITTED;
        case dev.troupe.txn.TurnResult.Failed failed -> ofFailure(failed.error().code());
      };
    }

    /** A transaction's answer as its client sees it. */
    static Outcome of(dev.troupe.txn.coordinator.CoordinatorCore.Outcome outcome) {
      return switch (outcome) {
        case dev.troupe.txn.coordinator.CoordinatorCore.Outcome.Committed committed -> COMMITTED;
        case dev.troupe.txn.coordinator.CoordinatorCore.Outcome.Failed failed ->
            ofFailure(failed.error().code());
      };
    }

    /** The outcome a history checker records: a request still pending is unknown. */
    dev.troupe.txn.check.RecordedTransaction.Outcome recorded() {
      return switch (this) {
        case COMMITTED -> dev.troupe.txn.check.RecordedTransaction.Outcome.COMMITTED;
        case ABORTED -> dev.troupe.txn.check.RecordedTransaction.Outcome.ABORTED;
        case UNKNOWN, PENDING -> dev.troupe.txn.check.RecordedTransaction.Outcome.UNKNOWN;
      };
    }
  }

  final String id;
  final long issuedMillis;
  private Outcome outcome = Outcome.PENDING;
  private final Runnable next;

  /** {@code next} runs once the request is decided: the client's next request. */
  ClientCall(String id, long issuedMillis, Runnable next) {
    this.id = id;
    this.issuedMillis = issuedMillis;
    this.next = next;
  }

  Outcome outcome() {
    return outcome;
  }

  boolean isPending() {
    return outcome == Outcome.PENDING;
  }

  /** Decides the request, unless it was decided already; returns whether this call decided it. */
  boolean decide(Outcome decided) {
    if (outcome != Outcome.PENDING) {
      return false;
    }
    outcome = decided;
    next.run();
    return true;
  }
}
