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

  /**
   * The hidden key prefix of installed markers, followed by a DC id in decimal
   * (docs/ARCHITECTURE.md, "Bootstrapping a new data centre"): on a DC that installed this entity's
   * state from the bootstrap image of DC {@code d}, {@code $installed:<d>} holds the entity's
   * version at {@code d} when its state was read there, so the commit timestamp of the last
   * journal record of {@code d} that the installed state contains. A part of {@code d}'s own
   * transactions whose stamp (its journal record's commit timestamp at {@code d}) is at or below it
   * is already in the state and is skipped. Remote origins of {@code d} need no such marker: the
   * installed state carries their {@code $replicated} markers.
   */
  public static final String INSTALLED_PREFIX = "$installed:";

  private ReplicaApplication() {}

  public static String installedKey(int sourceDc) {
    return INSTALLED_PREFIX + sourceDc;
  }

  public static String markerKey(int originDc) {
    return MARKER_PREFIX + originDc;
  }

  public static boolean isMarkerKey(String key) {
    // The first character first: almost no key starts with '$', and this is asked of every
    // register written and every part logged (issue 20: the full prefix comparison was about 1.5 %
    // of the embedded SmallBank mix's samples).
    return !key.isEmpty() && key.charAt(0) == '$' && key.startsWith(MARKER_PREFIX);
  }

  /** Whether these operations (one entity's commit) are a replica application. */
  public static boolean isReplicaApplication(List<Operation> operations) {
    return !operations.isEmpty()
        && operations.get(0) instanceof Operation.Assign assign
        && isMarkerKey(assign.key());
  }
}
