package dev.troupe.txn;

import dev.troupe.model.EntityState;
import dev.troupe.model.TroupeException;

/** The answer to one turn, given to the client only once everything it depends on is durable. */
public sealed interface TurnResult {
  /**
   * The turn committed (or changed nothing, {@code wrote == false}).
   *
   * @param version commit timestamp of the entity's latest durable write after this turn
   * @param state the entity's state right after this turn (register timestamps inside are
   *     provisional: render it, do not persist it)
   * @param readVersion the version of the state the turn read: for a write, the entity's version
   *     just before its commit (commits of one entity are serial); otherwise {@code version}
   * @param forwarding in a transaction part's yes vote, what it forwards to other participants
   *     to keep declared dependencies; otherwise none
   */
  record Done(long version, EntityState state, boolean wrote, long readVersion,
      DependencyEvaluator.Forwarding forwarding) implements TurnResult {
    public Done(long version, EntityState state, boolean wrote) {
      this(version, state, wrote, version);
    }

    public Done(long version, EntityState state, boolean wrote, long readVersion) {
      this(version, state, wrote, readVersion, DependencyEvaluator.Forwarding.NONE);
    }
  }

  /** The turn changed nothing (or, for {@code outcome_unknown}, may have). */
  record Failed(TroupeException error) implements TurnResult {}
}
