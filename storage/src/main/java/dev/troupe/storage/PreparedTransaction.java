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
 *
 * <p>A part admitted by PSAC cannot know its operations when it prepares: its effects meet the
 * state left by the parts that arrived before it, in arrival order. It keeps instead an opaque
 * {@code redo} (its turns, encoded by the transaction layer) and its {@code arrival} rank among the
 * entity's parts, and recovery re-evaluates it in that order.
 */
public record PreparedTransaction(long transactionId, EntityId entity, List<Operation> operations,
    byte[] redo, long arrival) {
  public PreparedTransaction {
    Objects.requireNonNull(entity, "entity");
    operations = List.copyOf(operations);
    redo = redo == null ? new byte[0] : redo.clone();
  }

  /** A part whose operations were computed when it prepared (locking admission). */
  public PreparedTransaction(long transactionId, EntityId entity, List<Operation> operations) {
    this(transactionId, entity, operations, null, 0);
  }

  /** Whether its operations must be computed when it is applied (see {@code redo}). */
  public boolean needsRedo() {
    return redo.length > 0;
  }

  @Override
  public byte[] redo() {
    return redo.clone();
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof PreparedTransaction that && transactionId == that.transactionId
        && arrival == that.arrival && entity.equals(that.entity)
        && operations.equals(that.operations) && java.util.Arrays.equals(redo, that.redo);
  }

  @Override
  public int hashCode() {
    return Objects.hash(transactionId, entity, operations, arrival, java.util.Arrays.hashCode(redo));
  }
}
