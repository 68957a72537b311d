package dev.troupe.runtime;

import dev.troupe.model.EntityId;
import dev.troupe.txn.Turn;
import java.util.List;
import java.util.Objects;

/**
 * A static multi-entity transaction: operations on entities, applied all or nothing, and entities
 * whose whole state it reads. Actions' {@code sync} calls join the same transaction.
 *
 * @param operations in order; several on one entity apply in this order
 * @param reads entities whose state the answer reports as of the transaction
 */
public record TransactionRequest(List<Operation> operations, List<EntityId> reads) {
  public TransactionRequest {
    for (Operation operation : operations) {
      Objects.requireNonNull(operation.turn(), "a static transaction's operations need turns");
    }
    operations = List.copyOf(operations);
    reads = List.copyOf(reads);
  }

  /** One operation: a turn on one entity (null only for an interactive read). */
  public record Operation(EntityId entity, Turn turn) {
    public Operation {
      Objects.requireNonNull(entity, "entity");
    }
  }
}
