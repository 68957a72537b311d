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
   * Applies one entity's parts of one or more consecutive transactions committed in another data
   * centre (docs/ARCHITECTURE.md, "Applying a remote transaction" and "Batched application"): one
   * {@link Segment} per transaction, in the origin's order. Evaluation skips every segment whose
   * {@code transactionTimestamp} is at or below the entity's replication marker for the origin
   * ({@link dev.troupe.model.causal.ReplicaApplication#markerKey}): it was applied before. If any
   * segment remains it writes, first, the marker set to the last remaining segment's {@code
   * transactionTimestamp}, then each remaining segment's operations in order, in their
   * replicated forms ({@link ReplicatedOperations}: register writes and deletions stamped with that
   * segment's ({@code stampTimestamp}, {@code originDc}), increments counted under {@code
   * originDc}) and the rest as they are; else it writes nothing. So applying it
   * again (after a crash, a duplicate, or with the transactions grouped differently) applies no
   * segment twice.
   *
   * <p>No type checks, preconditions or limits (the origin committed it: refusing it here would
   * make the data centres diverge) and no dependency forwards (the origin's transaction already
   * holds its followers' operations).
   *
   * @param originDc the data centre where the transactions committed
   * @param segments at least one, with strictly increasing transaction timestamps
   */
  record ApplyReplicated(int originDc, List<Segment> segments) implements Turn {
    public ApplyReplicated {
      segments = List.copyOf(segments);
      dev.troupe.model.Invariants.check(!segments.isEmpty(),
          "a replica application of DC %s with no segment", originDc);
      for (int i = 1; i < segments.size(); i++) {
        dev.troupe.model.Invariants.check(
            segments.get(i - 1).transactionTimestamp() < segments.get(i).transactionTimestamp(),
            "the segments of a replica application of DC %s are not in the origin's order",
            originDc);
      }
    }

    /** The application of one transaction's part (a single segment). */
    public ApplyReplicated(int originDc, long transactionTimestamp, long stampTimestamp,
        List<Operation> operations) {
      this(originDc, List.of(new Segment(transactionTimestamp, stampTimestamp, operations)));
    }

    /**
     * One transaction's part on the entity.
     *
     * @param transactionTimestamp the timestamp of the transaction's first replication log entry
     *     at the origin (its decision, or its only part): its place in the origin's order, and
     *     the marker's value once applied
     * @param stampTimestamp the commit timestamp of this entity's part at the origin: its register
     *     writes' stamp
     * @param operations the part's operations as the origin committed them
     */
    public record Segment(long transactionTimestamp, long stampTimestamp,
        List<Operation> operations) {
      public Segment {
        operations = List.copyOf(operations);
      }
    }

    /** The operations of every segment, in order (what the application may write). */
    public List<Operation> operations() {
      List<Operation> all = new java.util.ArrayList<>();
      for (Segment segment : segments) {
        all.addAll(segment.operations());
      }
      return all;
    }

    /** The last segment's transaction timestamp. */
    public long lastTransactionTimestamp() {
      return segments.get(segments.size() - 1).transactionTimestamp();
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
   * <p>The marker is per origin: a message of another data centre's log (to a receiver of a
   * strong type homed here, delivered here once its sender's transaction is applied here) writes
   * {@code $delivered:<origin>}, so deliveries from several origins never share a marker.
   *
   * @param originDc the data centre whose replication log holds the message, or {@link
   *     #LOCAL_ORIGIN} for the data centre running the turn (turns encoded before the field)
   * @param messageTimestamp the commit timestamp of the sender's part in the replication log
   * @param messageIndex the message's place among the messages of that timestamp, in log order
   * @param sender the sending entity
   * @param action the receiver's action
   * <p>An action with {@code sync} calls runs as the REST invocation of it does: a transaction
   * with the entities it calls, the marker written in it (atomic with every effect). There a
   * failure rejects the turn (and the transaction) rather than consuming the message, and a
   * marker that already covers the message rejects it with {@code conflict}, reason {@link
   * dev.troupe.model.causal.Messages#ALREADY_DELIVERED} (the calls must not run again); the
   * delivery shell then consumes the message with a turn of its own ({@code consumedOutcome}).
   *
   * @param args its arguments
   * @param consumedOutcome null to deliver the message; else the error code (wire name) it is
   *     consumed with: the marker alone is written with it, the action does not run
   */
  record DeliverMessage(int originDc, long messageTimestamp, int messageIndex,
      dev.troupe.model.EntityId sender, String action, JsonNode args, String consumedOutcome)
      implements Turn {
    /** The origin of a message of the log of the data centre that runs the turn. */
    public static final int LOCAL_ORIGIN = -1;

    /** A message of the local log ({@link #LOCAL_ORIGIN}), delivered. */
    public DeliverMessage(long messageTimestamp, int messageIndex,
        dev.troupe.model.EntityId sender, String action, JsonNode args) {
      this(LOCAL_ORIGIN, messageTimestamp, messageIndex, sender, action, args, null);
    }

    /** A message of {@code originDc}'s log, delivered. */
    public DeliverMessage(int originDc, long messageTimestamp, int messageIndex,
        dev.troupe.model.EntityId sender, String action, JsonNode args) {
      this(originDc, messageTimestamp, messageIndex, sender, action, args, null);
    }

    /** The same message, consumed with {@code outcome} (an error code's wire name). */
    public DeliverMessage consumed(String outcome) {
      return new DeliverMessage(originDc, messageTimestamp, messageIndex, sender, action, args,
          outcome);
    }

    /** The origin whose marker the turn checks and writes, {@code localDc} for a local one. */
    public int markerOrigin(int localDc) {
      return originDc == LOCAL_ORIGIN ? localDc : originDc;
    }
  }
}
