package dev.troupe.model.causal;

import dev.troupe.model.Operation;
import java.util.List;

/**
 * How a remote transaction's application is told apart from a local commit, and made idempotent.
 * Applying a remote transaction's part to an entity writes, first among its operations, an
 * assignment of the hidden marker key {@code $replicated:<originDc>} to the transaction's position
 * (the timestamp of its first log entry at the origin). A part whose entity already holds a marker
 * at or above that position was applied before and is skipped, so a re-application after a crash
 * applies nothing twice. The store never ships a commit that starts with a marker as a local
 * transaction: it is the origin's, already in the replication log under the origin's id.
 */
public final class ReplicaApplication {
  /** The hidden key prefix of markers; followed by the origin DC id in decimal. */
  public static final String MARKER_PREFIX = "$replicated:";

  private ReplicaApplication() {}

  public static String markerKey(int originDc) {
    return MARKER_PREFIX + originDc;
  }

  public static boolean isMarkerKey(String key) {
    return key.startsWith(MARKER_PREFIX);
  }

  /** Whether these operations (one entity's commit) are a replica application. */
  public static boolean isReplicaApplication(List<Operation> operations) {
    return !operations.isEmpty()
        && operations.get(0) instanceof Operation.Assign assign
        && isMarkerKey(assign.key());
  }
}
