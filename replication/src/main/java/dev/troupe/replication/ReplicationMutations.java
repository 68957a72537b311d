package dev.troupe.replication;

/**
 * Deliberate breakages of the replication cores, which only the deterministic simulator passes
 * to a core (through its constructor), to show that its checkers catch a core that is wrong.
 * Production constructs every core without one, so it behaves exactly as if this did not exist.
 * Modelled on {@code txn}'s {@code Mutations}.
 */
public final class ReplicationMutations {
  private ReplicationMutations() {}

  /** One breakage. */
  public enum Mutation {
    /**
     * The receiver applies a remote transaction without waiting for its dependencies (its
     * dependency vector is ignored): a transaction can become visible before one it saw at its
     * origin, so causal visibility breaks.
     */
    APPLY_BEFORE_DEPENDENCIES,
    /**
     * The log is truncated below the applied vector alone, ignoring the stable vector: entries
     * another DC has not yet received are gone, so forwarding them to it (or its catch-up after a
     * partition through this DC) loses them.
     */
    TRUNCATE_BEFORE_STABLE,
    /**
     * The receiver applies the parts of a multi-entity transaction one by one as single-entity
     * transactions, as they arrive: a reader can see some of its writes and not others, so
     * atomic visibility breaks.
     */
    SPLIT_MULTI_ENTITY_TRANSACTIONS,
    /**
     * The receiver applies several transactions of one origin at once (on different entities),
     * as the first design did: they can become visible out of their origin's order, so a reader
     * sees a later transaction of a session and not an earlier one (the simulator's seed 9).
     */
    PIPELINE_WITHIN_ORIGIN,
    /**
     * The receiver applies a batched application as one application per entity, in flight
     * together, instead of one atomic application: a reader can see a later transaction of the
     * run on one entity and not an earlier one on another, so the visible set of an origin is no
     * longer a prefix of its log (and a multi-entity transaction of the run is no longer atomic).
     */
    SPLIT_BATCH_BY_ENTITY
  }
}
