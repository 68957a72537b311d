package dev.troupe.txn;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Operation;
import java.util.List;
import java.util.Map;

/**
 * A request for one turn of one entity. A turn is a transaction: it reads a snapshot of the entity,
 * evaluates, and commits the resulting operations atomically (or changes nothing).
 */
public sealed interface Turn {
  /** Atomic multi-key register assignment (PATCH, and PUT of one key). */
  record AssignKeys(Map<String, JsonNode> assignments) implements Turn {
    public AssignKeys {
      assignments = Map.copyOf(assignments);
    }
  }

  record DeleteKey(String key) implements Turn {}

  record IncrementKey(String key, long by) implements Turn {}

  record AddElement(String key, JsonNode element) implements Turn {}

  record RemoveElement(String key, JsonNode element) implements Turn {}

  record DeleteEntity() implements Turn {}

  /**
   * A {@code discard} type migration's turn (docs/ARCHITECTURE.md, "Type evolution"): deletes
   * every stored value the entity's type does not show ({@link
   * dev.troupe.model.spec.TypeEvolution#keysToDiscard}), as the entity holds it when the turn
   * runs. Writes nothing when there is nothing to discard; never fails for that.
   */
  record DiscardHiddenValues() implements Turn {}

  record InvokeAction(String action, JsonNode params) implements Turn {}

  /**
   * Registers a dependency; runs on its leader (which records it and forwards it to the
   * follower, {@link Forward.Registered}). Never a single-entity turn: it always runs in a
   * transaction, which the follower joins.
   */
  record RegisterDependency(dev.troupe.model.dependency.Dependency dependency) implements Turn {}

  /** Deregisters a dependency by its id; runs on its leader, like {@link RegisterDependency}. */
  record DeregisterDependency(String dependencyId, String leaderKey) implements Turn {}

  /**
   * Applies one entity's part of a transaction committed in another data centre (docs/
   * ARCHITECTURE.md, "Applying a remote transaction"). Evaluation writes, first, the entity's
   * replication marker for the origin ({@link
   * dev.troupe.model.causal.ReplicaApplication#markerKey}) set to {@code transactionTimestamp},
   * then the operations in their replicated forms ({@link ReplicatedOperations}: register writes
   * and deletions stamped with ({@code stampTimestamp}, {@code originDc}), increments counted under
   * {@code originDc}) and the rest as they are. When the marker
   * already holds {@code transactionTimestamp} or more the part was applied before and the turn
   * writes nothing, so applying it again (after a crash, a duplicate) changes nothing.
   *
   * <p>No type checks, preconditions or limits (the origin committed it: refusing it here would
   * make the data centres diverge) and no dependency forwards (the origin's transaction already
   * holds its followers' operations).
   *
   * @param originDc the data centre where the transaction committed
   * @param transactionTimestamp the timestamp of the transaction's first replication log entry at
   *     the origin (its decision, or its only part): the marker's value
   * @param stampTimestamp the commit timestamp of this entity's part at the origin: its register
   *     writes' and deletions' stamp
   * @param operations the part's operations as the origin committed them
   */
  record ApplyReplicated(int originDc, long transactionTimestamp, long stampTimestamp,
      List<Operation> operations) implements Turn {
    public ApplyReplicated {
      operations = List.copyOf(operations);
    }
  }

  /**
   * Delivers one causal message sent from this data centre (docs/ARCHITECTURE.md, "Causal
   * messages"): the receiving action invoked as {@link InvokeAction} would be, plus the receiver's
   * delivered marker {@code $delivered:<this DC>} ({@link dev.troupe.model.causal.Messages}) set to
   * {@code [messageTimestamp, messageIndex, outcome]}. When the marker already covers the message
   * it was delivered before and the turn writes nothing. When the action cannot run (a false
   * precondition, an unknown type or action, bad arguments, a limit, an action with sync calls)
   * the message is consumed: the marker alone is written, with the error code as its outcome. So
   * it never fails for the action's sake, and is applied exactly once.
   *
   * @param messageTimestamp the commit timestamp of the sender's part in the replication log
   * @param messageIndex the message's place among the messages of that timestamp, in log order
   * @param sender the sending entity
   * @param action the receiver's action
   * @param args its arguments
   */
  record DeliverMessage(long messageTimestamp, int messageIndex,
      dev.troupe.model.EntityId sender, String action, JsonNode args) implements Turn {}
}
