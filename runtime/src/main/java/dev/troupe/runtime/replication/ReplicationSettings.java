package dev.troupe.runtime.replication;

import com.typesafe.config.Config;
import dev.troupe.model.causal.DataCentreIds;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;

/**
 * The {@code troupe.dc} and {@code troupe.replication} settings (runtime's reference.conf
 * documents each one and its unit), parsed once. Immutable.
 *
 * @param dataCentreName this DC's name ({@code troupe.dc.name}); empty: no DC, nothing replicates
 * @param peerNames the other DCs this one replicates with ({@code troupe.dc.peers}); their URLs
 *     are the server's business, not the engine's
 * @param maxApplyingTransactions most applications of remote transactions in flight at once in
 *     this DC, across origins (one per origin at a time, whatever it holds)
 * @param pullBatchMaxEntries most replication log entries one pull asks for (and one serve gives)
 * @param forwardAfterMillis how long an origin's direct link may leave the origin's received entry
 *     where it is before the origin's entries are pulled from another peer (transitive forwarding)
 * @param appliedRecordIntervalMillis how often the applied vector is recorded durably (what a
 *     restart re-applies from; re-applying is idempotent, so this bounds redone work only)
 * @param truncateIntervalMillis how often the replication log is truncated below the stable and
 *     applied vectors
 * @param tokenWaitMaxMillis the longest a request carrying a causal token waits for the token to
 *     become visible here before it is answered {@code not_yet_visible}
 * @param retryDelayMillis how long after a failed application (the engine refused it: overloaded,
 *     unavailable, a lock conflict that exhausted its retries) the transaction is applied again
 * @param tickIntervalMillis how often the shell feeds the receiver core the time (forwarding,
 *     retries, the applied vector's record and truncation are decided on ticks)
 * @param maxTransactionsPerApplication most consecutive ready transactions of one origin applied
 *     together, atomically, as one local transaction (batched application; 1: one by one)
 * @param maxEntitiesPerApplication most entities one such application touches (a transaction
 *     that alone touches more is still applied, alone); 1 (the default) keeps causal visibility
 *     for readers of single entities (reference.conf says why)
 */
public record ReplicationSettings(
    String dataCentreName,
    List<String> peerNames,
    int maxApplyingTransactions,
    int pullBatchMaxEntries,
    long forwardAfterMillis,
    long appliedRecordIntervalMillis,
    long truncateIntervalMillis,
    long tokenWaitMaxMillis,
    long retryDelayMillis,
    long tickIntervalMillis,
    int maxTransactionsPerApplication,
    int maxEntitiesPerApplication) {

  public ReplicationSettings {
    peerNames = List.copyOf(peerNames);
    if (!dataCentreName.isEmpty() && !DataCentreIds.isValidName(dataCentreName)) {
      throw new IllegalArgumentException("troupe.dc.name must be 1-63 letters, digits, '-', '_'"
          + " or '.', was '" + dataCentreName + "'");
    }
    LinkedHashSet<Integer> ids = new LinkedHashSet<>();
    if (!dataCentreName.isEmpty()) {
      ids.add(DataCentreIds.of(dataCentreName));
    }
    for (String peer : peerNames) {
      if (!DataCentreIds.isValidName(peer)) {
        throw new IllegalArgumentException("troupe.dc.peers: invalid data centre name '" + peer
            + "'");
      }
      if (dataCentreName.isEmpty()) {
        throw new IllegalArgumentException("troupe.dc.peers needs troupe.dc.name");
      }
      if (!ids.add(DataCentreIds.of(peer))) {
        // Two names with one id (or a name twice, or this DC's own) would mix two DCs' logs.
        throw new IllegalArgumentException("troupe.dc.peers: '" + peer + "' repeats a data"
            + " centre's name or id (this DC is '" + dataCentreName + "')");
      }
    }
  }

  /** Parses {@code troupe.dc} and {@code troupe.replication} of the {@code troupe} section. */
  public static ReplicationSettings fromConfig(Config troupe) {
    Config dc = troupe.getConfig("dc");
    Config replication = troupe.getConfig("replication");
    return new ReplicationSettings(
        dc.getString("name").trim(),
        new ArrayList<>(dc.getStringList("peers")),
        positive(replication, "max-applying-transactions"),
        positive(replication, "pull-batch-max-entries"),
        positiveLong(replication, "forward-after-millis"),
        positiveLong(replication, "applied-record-interval-millis"),
        positiveLong(replication, "truncate-interval-millis"),
        positiveLong(replication, "token-wait-max-millis"),
        positiveLong(replication, "retry-delay-millis"),
        positiveLong(replication, "tick-interval-millis"),
        positive(replication, "max-transactions-per-application"),
        positive(replication, "max-entities-per-application"));
  }

  /** Whether this node is a named DC (replication runs only then). */
  public boolean enabled() {
    return !dataCentreName.isEmpty();
  }

  /** This DC's id ({@link DataCentreIds#of}); {@link DataCentreIds#UNNAMED} without a name. */
  public int dataCentreId() {
    return enabled() ? DataCentreIds.of(dataCentreName) : DataCentreIds.UNNAMED;
  }

  /** The peers' ids, in the order of {@link #peerNames}. */
  public List<Integer> peerIds() {
    return peerNames.stream().map(DataCentreIds::of).toList();
  }

  /** Every configured DC's id, this one's first: the DCs the stable vector is taken over. */
  public List<Integer> allDataCentreIds() {
    List<Integer> all = new ArrayList<>();
    all.add(dataCentreId());
    all.addAll(peerIds());
    return List.copyOf(all);
  }

  /** These settings for another DC name and peers (tests run several DCs in one JVM). */
  public ReplicationSettings withDataCentre(String name, List<String> peers) {
    return new ReplicationSettings(name, peers, maxApplyingTransactions, pullBatchMaxEntries,
        forwardAfterMillis, appliedRecordIntervalMillis, truncateIntervalMillis,
        tokenWaitMaxMillis, retryDelayMillis, tickIntervalMillis, maxTransactionsPerApplication,
        maxEntitiesPerApplication);
  }

  private static int positive(Config config, String path) {
    int value = config.getInt(path);
    if (value <= 0) {
      throw new IllegalArgumentException(path + " must be positive, was " + value);
    }
    return value;
  }

  private static long positiveLong(Config config, String path) {
    long value = config.getLong(path);
    if (value <= 0) {
      throw new IllegalArgumentException(path + " must be positive, was " + value);
    }
    return value;
  }
}
