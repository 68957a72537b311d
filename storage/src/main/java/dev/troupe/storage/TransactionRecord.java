package dev.troupe.storage;

import java.util.List;

/**
 * One journal record: a committed transaction's writes, with the commit timestamp and origin data
 * centre every write is applied with. Records are immutable once in the journal; an entity's state at
 * any timestamp is the replay of its records in commit-timestamp order (antidote-cache.txt §2.2).
 */
public record TransactionRecord(
    long transactionId, long commitTimestamp, int originDc, List<EntityWrite> writes) {
  public TransactionRecord {
    writes = List.copyOf(writes);
  }
}
