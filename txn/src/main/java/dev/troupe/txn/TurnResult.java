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
   */
  record Done(long version, EntityState state, boolean wrote, long readVersion)
      implements TurnResult {
    public Done(long version, EntityState state, boolean wrote) {
      this(version, state, wrote, version);
    }
  }

  /** The turn changed nothing (or, for {@code outcome_unknown}, may have). */
  record Failed(TroupeException error) implements TurnResult {}
}
