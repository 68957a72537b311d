package dev.troupe.storage;

import dev.troupe.model.EntityId;
import java.util.List;

/**
 * A coordinator's durable commit decision (two-phase commit, presumed abort: aborts are never
 * recorded). Kept until every participant has applied the commit.
 */
public record DecidedTransaction(long transactionId, List<EntityId> participants) {
  public DecidedTransaction {
    participants = List.copyOf(participants);
  }
}
