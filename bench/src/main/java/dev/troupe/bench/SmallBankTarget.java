package dev.troupe.bench;

/**
 * A system that runs SmallBank transactions (Troupe under one admission policy and scheduling
 * mode, or PostgreSQL). Thread-safe: every worker of a run calls {@link #execute} concurrently.
 */
interface SmallBankTarget {
  /** How one transaction ended. */
  enum Outcome {
    /** It took effect (a Balance read counts as committed). */
    COMMITTED,
    /** Its own logic refused it (a payer short of money): it changed nothing, by design. */
    REJECTED,
    /** The system gave up on it (conflicts beyond the retry limit): it changed nothing. */
    ABORTED
  }

  /** Runs one transaction to its end; throws when the system failed (the run is broken). */
  Outcome execute(SmallBankWorkload.Transaction transaction) throws Exception;
}
