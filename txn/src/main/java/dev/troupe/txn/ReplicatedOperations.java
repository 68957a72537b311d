package dev.troupe.txn;

import dev.troupe.model.Operation;

/**
 * How an operation of a remote transaction is applied in this data centre (docs/ARCHITECTURE.md,
 * "Applying a remote transaction" and "Deletes across data centres"): the operations that are
 * stamped at apply time with the record's commit timestamp and data centre (register writes,
 * register deletions, entity deletions) become their replicated forms, which carry the stamp they
 * had at the origin, so that last writer wins, deletions included, decides the same in every data
 * centre; an increment, counted under the data centre it is applied in, becomes one counted under
 * its origin, so that every data centre holds the same per-data-centre sums (what a counter's
 * deletion observes and subtracts). Every other operation is already self-contained (an addition
 * with its tag, a removal or an observed deletion of a counter or set with what it observed) and
 * is applied as it is.
 *
 * <p>Stateless and pure.
 */
public final class ReplicatedOperations {
  private ReplicatedOperations() {}

  /**
   * The form in which this data centre applies {@code operation} of a remote part.
   *
   * @param stampTimestamp the commit timestamp of the operation's journal record at the origin
   * @param originDc the data centre where it committed
   */
  public static Operation replicated(Operation operation, long stampTimestamp, int originDc) {
    return switch (operation) {
      case Operation.Assign assign ->
          new Operation.AssignReplicated(assign.key(), assign.value(), stampTimestamp, originDc);
      case Operation.Increment increment ->
          new Operation.IncrementReplicated(increment.key(), increment.by(), originDc);
      case Operation.DeleteKey delete ->
          new Operation.DeleteKeyReplicated(delete.key(), stampTimestamp, originDc);
      case Operation.DeleteEntity delete ->
          new Operation.DeleteEntityReplicated(stampTimestamp, originDc, delete.observedWrites());
      default -> operation;
    };
  }
}
