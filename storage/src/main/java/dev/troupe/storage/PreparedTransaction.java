package dev.troupe.storage;

import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import java.util.List;
import java.util.Objects;

/**
 * A participant's durable promise in two-phase commit: the operations one entity will commit if
 * the transaction's decision is commit. Not part of the entity's state and not visible to reads
 * until the commit record that resolves it is written; kept in the {@code transactions} column
 * family, outside the journal, so truncation never touches it.
 */
public record PreparedTransaction(long transactionId, EntityId entity, List<Operation> operations) {
  public PreparedTransaction {
    Objects.requireNonNull(entity, "entity");
    operations = List.copyOf(operations);
  }
}
