package dev.troupe.replication;

import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationEntry;
import dev.troupe.replication.DeliveryCore.Effect;
import java.util.ArrayList;
import java.util.List;

/**
 * The answer of a replication log to a {@link DeliveryCore} read in the property tests
 * ({@link DeliveryCoreProperties}, {@link DeliveryCoreOriginsProperties}), as the store's log
 * answers it: the entries after the read's timestamp up to {@code bound}, at most
 * {@code maxEntries}; a batch cut by the limit reaches up to its last entry, otherwise up to the
 * bound.
 */
final class LogReads {
  private LogReads() {}

  static ReplicationBatch answer(int originDc, List<ReplicationEntry> log, Effect.Read read,
      long bound) {
    List<ReplicationEntry> entries = new ArrayList<>();
    long upTo = bound;
    for (ReplicationEntry entry : log) {
      if (entry.timestamp() > read.afterTimestamp() && entry.timestamp() <= bound) {
        if (entries.size() >= read.maxEntries()) {
          upTo = entries.get(entries.size() - 1).timestamp();
          break;
        }
        entries.add(entry);
      }
    }
    return new ReplicationBatch(originDc, entries, Math.max(upTo, read.afterTimestamp()));
  }
}
