package dev.troupe.server.http;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.runtime.Troupe;
import dev.troupe.runtime.cluster.ClusterNode;
import dev.troupe.runtime.cluster.ClusterView;
import dev.troupe.runtime.cluster.NodeStatus;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.http.javadsl.model.HttpResponse;

/**
 * {@code GET /v1/cluster}: the cluster as this node sees it (its members, their status, node id
 * and roles, the partitions each one hosts, and each one's own numbers: partitions hosted, active
 * entities, heap and cache, asked of the member itself, null when it did not answer in time); 404
 * {@code not_found} on a node that is not a cluster member. Every member answers with its own
 * view; once the membership has converged they agree.
 */
final class ClusterStatus {
  private ClusterStatus() {}

  static CompletionStage<HttpResponse> answer(Troupe troupe) {
    ClusterNode cluster = troupe.cluster().orElseThrow(() -> new TroupeException(
        ErrorCode.NOT_FOUND, "this node is not a cluster member (troupe.cluster.enabled is off)"));
    return cluster.view().thenApply(view -> RequestSupport.json(200, render(view)));
  }

  static ObjectNode render(ClusterView view) {
    ObjectNode body = Json.NODES.objectNode();
    body.put("self", view.selfAddress());
    body.put("partitionCount", view.partitionCount());
    ArrayNode members = body.putArray("members");
    for (ClusterView.MemberView member : view.members()) {
      ObjectNode node = members.addObject();
      node.put("address", member.address());
      node.put("status", member.status());
      node.put("reachable", member.reachable());
      node.put("nodeId", member.nodeId());
      ArrayNode roles = node.putArray("roles");
      member.roles().forEach(roles::add);
      ArrayNode partitions = node.putArray("partitions");
      member.partitions().forEach(partitions::add);
      node.put("partitionsKnown", member.partitionsKnown());
      NodeStatus status = member.node();
      if (status == null) {
        node.putNull("node");
      } else {
        ObjectNode own = node.putObject("node");
        ArrayNode hosted = own.putArray("hostedPartitions");
        status.hostedPartitions().forEach(hosted::add);
        own.put("activeEntities", status.activeEntities());
        own.put("heapUsedBytes", status.heapUsedBytes());
        own.put("heapMaxBytes", status.heapMaxBytes());
        own.put("cacheBytes", status.cacheBytes());
        own.put("httpUrl", status.httpUrl());
      }
    }
    return body;
  }
}
