package dev.troupe.server.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.troupe.model.Json;
import org.junit.jupiter.api.Test;

/** What {@code troupe status} prints of a cluster ({@code GET /v1/cluster}'s body). */
class StatusCommandClusterTest {
  @Test
  void aLinePerNodeWithItsPartitionsEntitiesAndMemoryUnknownWhenItDidNotAnswer() {
    String view = """
        {"self": "pekko://troupe@127.0.0.1:2551", "partitionCount": 4, "members": [
          {"address": "pekko://troupe@127.0.0.1:2551", "status": "up", "reachable": true,
           "nodeId": 1, "roles": ["troupe-node-1"], "partitions": [0, 2],
           "partitionsKnown": true, "node": {"hostedPartitions": [0, 2], "activeEntities": 17,
           "heapUsedBytes": 52428800, "heapMaxBytes": 335544320, "cacheBytes": 46080}},
          {"address": "pekko://troupe@127.0.0.1:2552", "status": "up", "reachable": false,
           "nodeId": 2, "roles": ["troupe-node-2"], "partitions": [], "partitionsKnown": false,
           "node": null}]}
        """;
    assertEquals("""
        cluster: 2 members (1 answered), 2 of 4 partitions hosted; seen from \
        pekko://troupe@127.0.0.1:2551
        NODE  ADDRESS                        STATUS  REACHABLE  PARTITIONS  HOSTED  ENTITIES  \
        HEAP_USED  HEAP_MAX  CACHE
        1     pekko://troupe@127.0.0.1:2551  up      yes        2           0,2     17        \
        50.0MiB    320.0MiB  45.0KiB
        2     pekko://troupe@127.0.0.1:2552  up      no         ?           ?       ?         \
        ?          ?         ?
        """, StatusCommand.renderCluster(Json.parse(view)));
  }
}
