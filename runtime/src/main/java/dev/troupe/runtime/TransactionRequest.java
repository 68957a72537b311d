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
 * @param mode planned or dynamic scheduling (see {@link Mode})
 */
public record TransactionRequest(List<Operation> operations, List<EntityId> reads, Mode mode) {

  /**
   * How the transaction is scheduled. {@code PLANNED}: the sequencer gives it a position in one
   * global order before it runs; its lock requests (or PSAC admissions) then wait and never die,
   * so it is never retried for a conflict. {@code DYNAMIC}: it takes its locks with wait-die and
   * is retried when it dies. {@code AUTO}: planned (a static transaction declares every entity up
   * front, and its keys follow from the types).
   */
  public enum Mode {
    AUTO,
    PLANNED,
    DYNAMIC
  }

  public TransactionRequest(List<Operation> operations, List<EntityId> reads) {
    this(operations, reads, Mode.AUTO);
  }

  public TransactionRequest {
    Objects.requireNonNull(mode, "mode");
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
