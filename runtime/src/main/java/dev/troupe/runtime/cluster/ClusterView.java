package dev.troupe.runtime.cluster;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The cluster as one member sees it ({@code GET /v1/cluster}, {@code troupe status}): every
 * member with its status, node id and roles, the partitions its shard region holds, and its own
 * numbers ({@link NodeStatus}: partitions hosted, active entities, heap, cache).
 *
 * @param selfAddress the address of the member that answered
 * @param partitionCount the store's partitions ({@code troupe.storage.partitions}): what the
 *     members host between them once every partition is placed
 * @param members the members, by address
 */
public record ClusterView(String selfAddress, int partitionCount, List<MemberView> members) {
  public ClusterView {
    members = List.copyOf(members);
  }

  /**
   * This view with each member's own numbers from {@code byNodeId} (the members that answered a
   * node status query, by node id); a member absent from it, or without a node id, keeps its
   * numbers unknown.
   */
  public ClusterView withNodeStatuses(Map<Integer, NodeStatus> byNodeId) {
    List<MemberView> completed = new ArrayList<>(members.size());
    for (MemberView member : members) {
      NodeStatus status = member.nodeId() >= 0 ? byNodeId.get(member.nodeId()) : null;
      completed.add(new MemberView(member.address(), member.status(), member.reachable(),
          member.nodeId(), member.roles(), member.partitions(), member.partitionsKnown(),
          status));
    }
    return new ClusterView(selfAddress, partitionCount, completed);
  }

  /**
   * The partitions the members that answered say they host, counted once each (a partition two
   * members claim while it moves counts once); equal to the store's partition count once every
   * partition is placed and every member answered.
   */
  public int hostedPartitionCount() {
    return (int) members.stream()
        .filter(member -> member.node() != null)
        .flatMap(member -> member.node().hostedPartitions().stream())
        .distinct()
        .count();
  }

  /**
   * One member.
   *
   * @param address its Artery address ({@code pekko://troupe@host:port})
   * @param status Pekko's member status, lower case ({@code up}, {@code joining}, {@code
   *     leaving}, {@code exiting}, {@code down}, {@code removed}, {@code weaklyup})
   * @param reachable whether this member's failure detector reaches it
   * @param nodeId the node id its role carries, -1 if none
   * @param roles its roles
   * @param partitions the partitions its shard region holds, ascending
   * @param partitionsKnown false when its region did not answer in time (partitions then empty)
   * @param node the member's own numbers, from the member itself; null when unknown (it did not
   *     answer in time, is not up or reachable, or carries no node id)
   */
  public record MemberView(String address, String status, boolean reachable, int nodeId,
      List<String> roles, List<Integer> partitions, boolean partitionsKnown, NodeStatus node) {
    public MemberView {
      roles = List.copyOf(roles);
      partitions = List.copyOf(partitions);
    }
  }
}
