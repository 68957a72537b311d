package dev.troupe.server.http;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityLocator;
import dev.troupe.runtime.Troupe;
import dev.troupe.runtime.cluster.ClusterNode;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;

/**
 * On a cluster member, every answer of an entity route ({@code /v1/entities/{type}/{id}...})
 * whose entity this member does not host carries {@value #FORWARDED}{@code : true}: the request
 * took a hop to the member that does (docs/ARCHITECTURE.md, "Clients that reach the owner"). A
 * partition-aware client that sent it here by its placement table learns that the table is stale
 * (the partition moved) and reads {@code GET /v1/cluster} again; a client that sends requests
 * anywhere learns which of them cost a hop. The check is what the node's router itself asks
 * (is the entity's partition hosted here), one hash and one array read, so every answer can carry
 * it. Absent on a single node and on answers of entities hosted here.
 */
final class PlacementHeader {
  /** The header's name. */
  static final String FORWARDED = "Troupe-Forwarded";
  private static final RawHeader FORWARDED_TRUE = RawHeader.create(FORWARDED, "true");

  private PlacementHeader() {}

  /** {@code response}, with {@value #FORWARDED} when {@code entity} is not hosted here. */
  static HttpResponse mark(Troupe troupe, EntityId entity, HttpResponse response) {
    ClusterNode cluster = troupe.cluster().orElse(null);
    if (cluster == null) {
      return response;
    }
    int partition = EntityLocator.partitionOf(entity, cluster.hosted().partitions());
    return cluster.hosted().hosts(partition) ? response : response.addHeader(FORWARDED_TRUE);
  }
}
