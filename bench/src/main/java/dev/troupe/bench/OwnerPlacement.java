package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityLocator;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * A partition-aware client's placement table (docs/ARCHITECTURE.md, "Clients that reach the
 * owner"): which member's REST API serves each partition, read from {@code GET /v1/cluster}, so
 * that a request goes straight to the member that hosts its entity and takes no hop between
 * members. An entity's partition is the documented stable function {@link
 * EntityLocator#partitionOf(EntityId, int)} of its type, id and the cluster's partition count.
 *
 * <p><b>Refresh.</b> The table is read once at the start and again whenever an answer says that
 * it is stale ({@link #placementMoved}: an answer that took a hop, {@code Troupe-Forwarded: true},
 * or a {@code 503 not_owner}), at most once per {@code minimumRefreshIntervalNanos}, by the one
 * client thread that saw it first (the others go on with the table they have; a request sent to a
 * former owner is only forwarded, never wrong). A partition no member reports (moving, or its
 * member silent) has no URL: its requests go to the client's own member, which routes them.
 *
 * <p>Thread-safe: one per cluster, shared by every client thread.
 */
final class OwnerPlacement {
  /** Reads {@code GET /v1/cluster} from the member at a base URL. */
  interface ClusterReader {
    JsonNode read(String baseUrl) throws IOException;
  }

  /**
   * One reading of the placement.
   *
   * @param partitionCount the store's partitions ({@code partitionCount})
   * @param urlOfPartition by partition, the base URL of the member hosting it, or null
   */
  record Table(int partitionCount, List<String> urlOfPartition) {
    Table {
      urlOfPartition = java.util.Collections.unmodifiableList(new ArrayList<>(urlOfPartition));
    }

    /**
     * The table {@code GET /v1/cluster}'s body describes: each member's own report (its {@code
     * node}: the partitions it hosts and its {@code httpUrl}). A member with no report or no URL
     * contributes nothing; a partition two members claim (one still releasing it while the other
     * acquired it) keeps the first, which at worst costs a hop.
     */
    static Table of(JsonNode cluster) {
      int partitions = cluster.path("partitionCount").asInt(0);
      if (partitions < 1) {
        throw new IllegalArgumentException("GET /v1/cluster has no partitionCount: " + cluster);
      }
      String[] urls = new String[partitions];
      for (JsonNode member : cluster.path("members")) {
        JsonNode node = member.path("node");
        String url = node.path("httpUrl").isTextual() ? node.path("httpUrl").asText() : null;
        if (url == null || !"up".equals(member.path("status").asText())) {
          continue;
        }
        for (JsonNode partition : node.path("hostedPartitions")) {
          int p = partition.asInt(-1);
          if (p >= 0 && p < partitions && urls[p] == null) {
            urls[p] = url;
          }
        }
      }
      return new Table(partitions, Arrays.asList(urls));
    }

    /** The member serving {@code entity}, or null if none is known. */
    String urlOf(EntityId entity) {
      return urlOfPartition.get(EntityLocator.partitionOf(entity, partitionCount));
    }

    /** Partitions with a known member. */
    int known() {
      return (int) urlOfPartition.stream().filter(java.util.Objects::nonNull).count();
    }
  }

  private final List<String> memberUrls;
  private final ClusterReader reader;
  private final LongSupplier nanoClock;
  private final long minimumRefreshIntervalNanos;
  private final ReentrantLock refreshing = new ReentrantLock();
  private final AtomicLong lastReadNanos = new AtomicLong();
  private final LongAdder reads = new LongAdder();
  private final LongAdder staleSignals = new LongAdder();
  private volatile Table table;

  /**
   * @param memberUrls the members' base URLs, asked in turn until one answers
   */
  OwnerPlacement(List<String> memberUrls, ClusterReader reader, LongSupplier nanoClock,
      long minimumRefreshIntervalNanos) {
    if (memberUrls.isEmpty()) {
      throw new IllegalArgumentException("no member to read the placement from");
    }
    this.memberUrls = List.copyOf(memberUrls);
    this.reader = reader;
    this.nanoClock = nanoClock;
    this.minimumRefreshIntervalNanos = minimumRefreshIntervalNanos;
  }

  /** The member serving {@code entity}, or null (no table yet, or its partition unknown). */
  String urlOf(EntityId entity) {
    Table current = table;
    if (current == null) {
      refresh();
      current = table;
    }
    return current == null ? null : current.urlOf(entity);
  }

  /**
   * An answer said the table is stale (a hop was taken, or {@code not_owner}): read it again
   * unless it was read within the minimum interval or another thread is reading it.
   */
  void placementMoved() {
    staleSignals.increment();
    refresh();
  }

  /**
   * Reads the table now if it was never read or not within the minimum interval (also when the
   * last read failed, so an unreachable cluster is not asked in a loop); true if it did.
   */
  private boolean refresh() {
    long now = nanoClock.getAsLong();
    boolean due = reads.sum() == 0 || now - lastReadNanos.get() >= minimumRefreshIntervalNanos;
    if (!due || !refreshing.tryLock()) {
      return false;
    }
    try {
      if (reads.sum() > 0 && now - lastReadNanos.get() < minimumRefreshIntervalNanos) {
        return false; // another thread read it while this one waited for the lock
      }
      lastReadNanos.set(now);
      reads.increment();
      for (String url : memberUrls) {
        try {
          table = Table.of(reader.read(url));
          return true;
        } catch (IOException | RuntimeException unreadable) {
          // the next member answers instead; with none, the requests go to the client's member
        }
      }
      return false;
    } finally {
      refreshing.unlock();
    }
  }

  /** The table now (null before the first successful read). */
  Table table() {
    return table;
  }

  /** How often the table was read (successfully or not). */
  long reads() {
    return reads.sum();
  }

  /** Answers that said the table was stale. */
  long staleSignals() {
    return staleSignals.sum();
  }
}
