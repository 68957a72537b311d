package dev.troupe.storage;

import dev.troupe.model.EntityId;
import java.util.List;

/**
 * A coordinator's durable commit decision (two-phase commit, presumed abort: aborts are never
 * recorded). Kept until every participant has applied the commit. {@code idempotency}, when not
 * null, is the idempotency record of the request that ran the transaction: written with the
 * decision in one atomic write and kept after the decision is forgotten (not part of the
 * decision's own encoding).
 */
public record DecidedTransaction(long transactionId, List<EntityId> participants,
    IdempotencyRecord idempotency) {
  public DecidedTransaction {
    participants = List.copyOf(participants);
  }

  public DecidedTransaction(long transactionId, List<EntityId> participants) {
    this(transactionId, participants, null);
  }
}
