package dev.troupe.storage;

import dev.troupe.model.EntityId;
import java.util.List;

/**
 * A coordinator's durable commit decision (two-phase commit, presumed abort: aborts are never
 * recorded). Kept until every participant has applied the commit. {@code idempotency}, when not
 * null, is the idempotency record of the request that ran the transaction: written with the
 * decision in one atomic write and kept after the decision is forgotten (not part of the
 * decision's own encoding).
 *
 * <p>{@code replicaApplication}: whether the transaction applies a remote data centre's
 * transaction (its parts start with a {@code $replicated:} marker, {@link
 * dev.troupe.model.causal.ReplicaApplication}). The store cannot see the parts when the decision is
 * persisted, so the coordinator says so here: only a decision of a local transaction writes a
 * {@code Decision} entry to the replication log ({@link ReplicationLog}); a remote one is already
 * in the log under its origin. Not part of the decision's persisted encoding: it only matters at
 * {@link Store#persistDecision}, and a decision read back at recovery is never persisted again (it
 * decodes as false).
 */
public record DecidedTransaction(long transactionId, List<EntityId> participants,
    IdempotencyRecord idempotency, boolean replicaApplication) {
  public DecidedTransaction {
    participants = List.copyOf(participants);
  }

  /** A decision of a local transaction (not a replica application). */
  public DecidedTransaction(long transactionId, List<EntityId> participants,
      IdempotencyRecord idempotency) {
    this(transactionId, participants, idempotency, false);
  }

  public DecidedTransaction(long transactionId, List<EntityId> participants) {
    this(transactionId, participants, null, false);
  }
}
