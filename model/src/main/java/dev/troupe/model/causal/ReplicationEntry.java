package dev.troupe.model.causal;

import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import java.util.List;

/**
 * One entry of a DC's replication log: what is shipped to other DCs, in the order of its key
 * {@code (originDc, timestamp, transactionId, index)}.
 *
 * <ul>
 *   <li>A {@link Part} is one entity's committed operations in one transaction, with the commit
 *       timestamp of its journal record at the origin (the registers' last-writer-wins stamp).
 *   <li>A {@link Decision} precedes the parts of a multi-entity transaction: it names every
 *       participant, and its timestamp is below every part's, so a receiver reading in timestamp
 *       order knows which parts to wait for before applying the transaction atomically. A part
 *       with no decision before it is a single-entity transaction of its own.
 * </ul>
 *
 * <p>{@code dependencies} is the origin's <i>applying vector</i> when the entry was written: for
 * every other DC, the timestamp up to which that DC's transactions had started to become visible at
 * the origin. A receiver applies the transaction only once its own applied vector covers it (the
 * origin's own entry is implied by the log's order). Per transaction, never per key.
 */
public sealed interface ReplicationEntry {
  int originDc();

  long timestamp();

  long transactionId();

  /** The entry's place among the entries of one transaction with the same timestamp. */
  int index();

  DependencyVector dependencies();

  record Part(int originDc, long timestamp, long transactionId, int index, EntityId entity,
      List<Operation> operations, DependencyVector dependencies) implements ReplicationEntry {
    public Part {
      operations = List.copyOf(operations);
    }
  }

  record Decision(int originDc, long timestamp, long transactionId, int index,
      List<EntityId> participants, DependencyVector dependencies) implements ReplicationEntry {
    public Decision {
      participants = List.copyOf(participants);
    }
  }
}
