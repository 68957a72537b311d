package dev.troupe.txn;

/**
 * Deliberate breakages of the cores, which only the deterministic simulator's tests pass to a core
 * (through its constructor), to show that the simulator's checkers catch a core that is wrong
 * (issue 5). Production constructs every core without one, so it behaves exactly as if this did
 * not exist.
 */
public final class Mutations {
  private Mutations() {}

  /** One breakage. */
  public enum Mutation {
    /**
     * A participant releases its locks as soon as it votes yes, not when its commit is submitted:
     * another transaction can then read and overwrite what the first one is about to commit.
     */
    RELEASE_LOCKS_AT_VOTE,
    /**
     * A participant prepares a transaction whose abort it has already received (the abort
     * overtook the prepare): the part then holds the entity for a transaction that is over.
     */
    PREPARE_AFTER_ABORT,
    /**
     * A participant votes yes without the operations it must forward to keep declared
     * dependencies: its followers never hear of the change.
     */
    DROP_FORWARDS,
    /**
     * The coordinator sends its commit decision once and never again: a participant whose copy
     * was lost never acknowledges it, so the coordinator never answers its client (and, with
     * participants that learn the decision by asking, it never forgets the decision record).
     */
    COORDINATOR_SKIPS_DECISION_RESEND,
    /**
     * A participant applies a commit decision it receives a second time (a duplicate, or a
     * resend after its acknowledgement was lost) once more: its operations land twice.
     */
    APPLY_DUPLICATE_DECISION,
    /**
     * A participant whose part is in doubt (voted yes, no decision within the in-doubt interval)
     * commits it instead of asking the coordinator's node: an aborted transaction commits there.
     */
    PRESUME_COMMIT_IN_DOUBT,
    /**
     * Under {@code keys} admission, a participant whose part only reads releases its key locks as
     * soon as it votes yes, not when the decision arrives: the transaction stops being two-phase
     * (it may still be waiting for locks on other participants), so a writer can overwrite a key
     * it read before it commits. No value shows it (nothing it read is written twice): only a
     * check that derives reads from the data and runs disjoint keys of one entity concurrently
     * sees the anti-dependency cycle.
     */
    RELEASE_KEY_LOCK_EARLY
  }
}
