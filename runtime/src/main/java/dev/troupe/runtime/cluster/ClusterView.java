package dev.troupe.runtime.cluster;

import java.util.List;

/**
 * The cluster as one member sees it ({@code GET /v1/cluster}): every member with its status, node
 * id and roles, and the partitions its shard region holds.
 *
 * @param selfAddress the address of the member that answered
 * @param members the members, by address
 */
public record ClusterView(String selfAddress, List<MemberView> members) {
  public ClusterView {
    members = List.copyOf(members);
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
   */
  public record MemberView(String address, String status, boolean reachable, int nodeId,
      List<String> roles, List<Integer> partitions, boolean partitionsKnown) {
    public MemberView {
      roles = List.copyOf(roles);
      partitions = List.copyOf(partitions);
    }
  }
}
