package dev.troupe.replication;

import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import dev.troupe.model.causal.DependencyVector;
import java.util.List;

/**
 * One transaction of another DC, as this DC applies it: the entries of the origin's replication
 * log that make it up, regrouped. A single-entity transaction is the parts of one journal record
 * (one timestamp, one transaction id) with no decision; a multi-entity one is a decision and a
 * part of every participant it names, applied atomically as one local transaction.
 *
 * @param transactionTimestamp the timestamp of its first log entry (its decision, or its parts):
 *     its place among the origin's transactions, and the value of the {@code $replicated:<origin>}
 *     marker its application writes
 * @param dependencies the merge of its entries' dependency vectors
 * @param parts one per entity, in log order
 */
public record RemoteTransaction(int originDc, long transactionTimestamp, long transactionId,
    DependencyVector dependencies, List<Part> parts) {
  public RemoteTransaction {
    parts = List.copyOf(parts);
  }

  /**
   * One entity's share.
   *
   * @param stampTimestamp the commit timestamp of the part's journal record at the origin: the
   *     last-writer-wins stamp of its register writes
   */
  public record Part(EntityId entity, long stampTimestamp, List<Operation> operations) {
    public Part {
      operations = List.copyOf(operations);
    }
  }

  /** Whether it touches several entities (applied with {@code transact}, alone in its origin). */
  public boolean isMultiEntity() {
    return parts.size() > 1;
  }

  /** The largest timestamp among its entries (its last part's). */
  public long lastTimestamp() {
    long last = transactionTimestamp;
    for (Part part : parts) {
      last = Math.max(last, part.stampTimestamp());
    }
    return last;
  }
}
