package dev.troupe.runtime.cluster;

import dev.troupe.txn.wire.WireMessage;
import java.lang.management.ManagementFactory;
import java.util.List;

/**
 * One member's own numbers, as it reports them ({@code troupe status}, {@code GET /v1/cluster}):
 * only the member itself knows what it hosts and holds, so another member asks it with a {@link
 * WireMessage.NodeStatusQuery} ({@link NodeStatusQueries}) rather than guess.
 *
 * @param nodeId the member's node id
 * @param hostedPartitions the storage partitions it hosts (acquired, registry running), ascending
 * @param activeEntities its entity actors in memory
 * @param heapUsedBytes its JVM heap in use
 * @param heapMaxBytes its JVM's maximum heap
 * @param cacheBytes its object cache's estimated weight
 * @param httpUrl the base URL of its REST API ({@code http://host:port}), or null while its HTTP
 *     server is not bound (or it runs a build that does not report it)
 */
public record NodeStatus(int nodeId, List<Integer> hostedPartitions, long activeEntities,
    long heapUsedBytes, long heapMaxBytes, long cacheBytes, String httpUrl) {
  public NodeStatus {
    hostedPartitions = List.copyOf(hostedPartitions);
  }

  public NodeStatus(int nodeId, List<Integer> hostedPartitions, long activeEntities,
      long heapUsedBytes, long heapMaxBytes, long cacheBytes) {
    this(nodeId, hostedPartitions, activeEntities, heapUsedBytes, heapMaxBytes, cacheBytes, null);
  }

  /** This process's numbers now: the heap from the JVM, the rest as given. */
  static NodeStatus ofThisProcess(int nodeId, List<Integer> hostedPartitions,
      long activeEntities, long cacheBytes, String httpUrl) {
    return new NodeStatus(nodeId, hostedPartitions, activeEntities,
        ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed(),
        Runtime.getRuntime().maxMemory(), cacheBytes, httpUrl);
  }

  /** The answer to query {@code queryId} that carries these numbers. */
  WireMessage.NodeStatusAnswer toWire(long queryId) {
    return new WireMessage.NodeStatusAnswer(queryId, hostedPartitions, activeEntities,
        heapUsedBytes, heapMaxBytes, cacheBytes, httpUrl);
  }

  /** The numbers an answer from node {@code nodeId} carries. */
  static NodeStatus fromWire(int nodeId, WireMessage.NodeStatusAnswer answer) {
    return new NodeStatus(nodeId, answer.hostedPartitions(), answer.activeEntities(),
        answer.heapUsedBytes(), answer.heapMaxBytes(), answer.cacheBytes(), answer.httpUrl());
  }
}
