package dev.troupe.runtime;

import dev.troupe.storage.PartitionOwnership;
import dev.troupe.storage.Store;

/** What the engine tells its cluster membership of its store (kept out of {@link Troupe}). */
final class ClusterMembers {
  private ClusterMembers() {}

  /**
   * The coordinator epoch to carry in this member's roles: the store's ({@link
   * Store#coordinatorEpoch}) on a shared store, else 0 (no role: nobody ends its coordinators).
   */
  static long coordinatorEpoch(Store store, PartitionOwnership ownership) {
    return ownership == PartitionOwnership.ACQUIRED ? store.coordinatorEpoch() : 0;
  }
}
