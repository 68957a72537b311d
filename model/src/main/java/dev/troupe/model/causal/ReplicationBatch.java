package dev.troupe.model.causal;

import dev.troupe.model.Invariants;
import java.util.List;

/**
 * What one pull of an origin's replication log answers: entries of {@code originDc} in log order,
 * and {@code upToTimestamp}, the reader's new received bound for that origin. Contract: every entry
 * of {@code originDc} with a timestamp at most {@code upToTimestamp} is in this batch or was in an
 * earlier one, for the reader that asked from its own received bound ({@code after}); the batch
 * never splits one timestamp. An empty batch with a higher {@code upToTimestamp} is a
 * <i>heartbeat</i>: it tells an idle origin's readers that nothing new was committed up to then, so
 * their applied vector can advance without a transaction.
 *
 * @param originDc the DC whose log entries these are (not necessarily the DC that served them:
 *     a peer may forward another origin's entries)
 * @param entries in log order ({@code timestamp, transactionId, index}), every one of {@code
 *     originDc}, none above {@code upToTimestamp}
 */
public record ReplicationBatch(int originDc, List<ReplicationEntry> entries, long upToTimestamp) {
  public ReplicationBatch {
    entries = List.copyOf(entries);
    for (ReplicationEntry entry : entries) {
      Invariants.check(entry.originDc() == originDc,
          "entry of DC %s in a replication batch of DC %s", entry.originDc(), originDc);
      Invariants.check(entry.timestamp() <= upToTimestamp,
          "entry at %s in a replication batch up to %s", entry.timestamp(), upToTimestamp);
    }
  }
}
