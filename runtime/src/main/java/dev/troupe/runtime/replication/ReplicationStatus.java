package dev.troupe.runtime.replication;

import dev.troupe.model.causal.DependencyVector;
import java.util.List;

/**
 * A DC's replication as metrics and {@code troupe status} show it, taken at one moment.
 *
 * @param dataCentreId this DC's id
 * @param peers one entry per configured peer, in the configured order
 * @param pendingRemoteTransactions remote transactions received and not yet applied here (all
 *     origins)
 * @param applyingTransactions remote transactions being applied right now
 * @param stableVectorAgeMillis how far behind physical time the oldest entry of the stable vector
 *     is (what every DC has received): how long the replication log keeps entries at least
 * @param logEntries the replication log's entries (approximately; see {@code
 *     ReplicationLog#entryCount})
 */
public record ReplicationStatus(
    int dataCentreId,
    List<PeerStatus> peers,
    long pendingRemoteTransactions,
    long applyingTransactions,
    long stableVectorAgeMillis,
    DependencyVector receivedVector,
    DependencyVector appliedVector,
    DependencyVector stableVector,
    long logEntries) {

  public ReplicationStatus {
    peers = List.copyOf(peers);
  }

  /**
   * One peer's replication into this DC.
   *
   * @param name the peer's configured name
   * @param dataCentreId its id
   * @param pendingTransactions its transactions received here and not yet applied (the lag in
   *     transactions)
   * @param lagMillis how far behind physical time this DC's applied entry of the peer is: the
   *     peer's transactions younger than this may not be visible here yet (a heartbeat advances an
   *     idle peer's entry, so an idle healthy link stays near the pull interval)
   * @param receivedTimestamp the peer's entry of this DC's received vector
   * @param appliedTimestamp the peer's entry of this DC's applied vector
   */
  public record PeerStatus(String name, int dataCentreId, long pendingTransactions,
      long lagMillis, long receivedTimestamp, long appliedTimestamp) {}
}
