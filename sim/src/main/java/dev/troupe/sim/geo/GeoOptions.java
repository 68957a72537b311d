package dev.troupe.sim.geo;

import java.util.Set;

/**
 * What a run of several simulated data centres does. Every duration is simulated milliseconds.
 *
 * @param dataCentres how many DCs (2 to 5), named dc0, dc1, ...
 * @param entities objects of the workload (each a register, a counter, a set and a write log)
 * @param clientsPerDataCentre clients starting at each DC (they move between DCs)
 * @param durationMillis how long clients issue requests
 * @param faultFreeShare the final share of the duration without faults
 * @param crashMeanMillis mean time between DC crashes while faults last (0: none)
 * @param partitionMeanMillis mean time between partitions while faults last (0: none): two DCs
 *     cut from each other, or one DC from all others
 * @param linkLoss chance a message between DCs is lost while faults last
 * @param linkDuplication chance a message between DCs arrives twice while faults last
 * @param maxClockSkewMillis each DC's physical clock is off by up to this much (either way)
 * @param pullIntervalMillis how often a DC pulls from each peer
 * @param pullBatchMaxEntries most entries one pull answers
 * @param maxApplyingTransactions most remote transactions a DC applies at once
 * @param appliedRecordIntervalMillis how often a DC records its applied vector durably
 * @param truncateIntervalMillis how often a DC truncates its log below its truncation bound
 * @param tokenWaitMaxMillis how long a DC keeps a client whose causal token it does not cover yet
 * @param quiescenceMaxMillis after the load, how long replication may take to converge
 * @param mutations deliberate breakages switched on (names of the replication core's and the
 *     model's mutations)
 */
public record GeoOptions(int dataCentres, int entities, int clientsPerDataCentre,
    long durationMillis, double faultFreeShare, long crashMeanMillis, long partitionMeanMillis,
    double linkLoss, double linkDuplication, long maxClockSkewMillis, long pullIntervalMillis,
    int pullBatchMaxEntries, int maxApplyingTransactions, long appliedRecordIntervalMillis,
    long truncateIntervalMillis, long tokenWaitMaxMillis, long quiescenceMaxMillis,
    Set<String> mutations) {
  public static final GeoOptions DEFAULTS = new GeoOptions(3, 6, 2, 1000, 0.3, 300, 200, 0.05,
      0.05, 40, 10, 16, 8, 25, 50, 300, 20_000, Set.of());

  public GeoOptions {
    if (dataCentres < 2 || dataCentres > 5) {
      throw new IllegalArgumentException("2 to 5 data centres");
    }
    if (entities < 2 || clientsPerDataCentre < 1 || durationMillis < 1) {
      throw new IllegalArgumentException("at least 2 entities, 1 client per DC, 1 ms");
    }
    mutations = Set.copyOf(mutations);
  }

  public GeoOptions withDataCentres(int count) {
    return new GeoOptions(count, entities, clientsPerDataCentre, durationMillis, faultFreeShare,
        crashMeanMillis, partitionMeanMillis, linkLoss, linkDuplication, maxClockSkewMillis,
        pullIntervalMillis, pullBatchMaxEntries, maxApplyingTransactions,
        appliedRecordIntervalMillis, truncateIntervalMillis, tokenWaitMaxMillis,
        quiescenceMaxMillis, mutations);
  }

  public GeoOptions withMutations(Set<String> breakages) {
    return new GeoOptions(dataCentres, entities, clientsPerDataCentre, durationMillis,
        faultFreeShare, crashMeanMillis, partitionMeanMillis, linkLoss, linkDuplication,
        maxClockSkewMillis, pullIntervalMillis, pullBatchMaxEntries, maxApplyingTransactions,
        appliedRecordIntervalMillis, truncateIntervalMillis, tokenWaitMaxMillis,
        quiescenceMaxMillis, breakages);
  }

  /** Few objects, several clients per DC, every DC on one physical clock: equal timestamps. */
  public GeoOptions withContention(int objects, int clients) {
    return new GeoOptions(dataCentres, objects, clients, durationMillis, faultFreeShare,
        crashMeanMillis, partitionMeanMillis, linkLoss, linkDuplication, 0, pullIntervalMillis,
        pullBatchMaxEntries, maxApplyingTransactions, appliedRecordIntervalMillis,
        truncateIntervalMillis, tokenWaitMaxMillis, quiescenceMaxMillis, mutations);
  }

  public GeoOptions withMaxApplyingTransactions(int count) {
    return new GeoOptions(dataCentres, entities, clientsPerDataCentre, durationMillis,
        faultFreeShare, crashMeanMillis, partitionMeanMillis, linkLoss, linkDuplication,
        maxClockSkewMillis, pullIntervalMillis, pullBatchMaxEntries, count,
        appliedRecordIntervalMillis, truncateIntervalMillis, tokenWaitMaxMillis,
        quiescenceMaxMillis, mutations);
  }

  public GeoOptions withDurationMillis(long duration) {
    return new GeoOptions(dataCentres, entities, clientsPerDataCentre, duration, faultFreeShare,
        crashMeanMillis, partitionMeanMillis, linkLoss, linkDuplication, maxClockSkewMillis,
        pullIntervalMillis, pullBatchMaxEntries, maxApplyingTransactions,
        appliedRecordIntervalMillis, truncateIntervalMillis, tokenWaitMaxMillis,
        quiescenceMaxMillis, mutations);
  }
}
