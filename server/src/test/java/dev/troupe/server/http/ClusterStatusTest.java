package dev.troupe.server.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.runtime.cluster.ClusterView;
import dev.troupe.runtime.cluster.NodeStatus;
import dev.troupe.server.OpenApiDocument;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code GET /v1/cluster}'s body as documented (the OpenAPI document's ClusterView schema), with a
 * member whose numbers are known and one whose are not (null), and what {@code troupe status}
 * prints of it is checked in {@code StatusCommandClusterTest}; the real thing from three processes
 * in ClusterTest.
 */
class ClusterStatusTest {
  static ClusterView view() {
    ClusterView.MemberView answered = new ClusterView.MemberView("pekko://troupe@127.0.0.1:2551",
        "up", true, 1, List.of("dc-default", "troupe-node-1"), List.of(0, 2), true, null);
    ClusterView.MemberView silent = new ClusterView.MemberView("pekko://troupe@127.0.0.1:2552",
        "up", false, 2, List.of("troupe-node-2"), List.of(), false, null);
    return new ClusterView("pekko://troupe@127.0.0.1:2551", 4, List.of(answered, silent))
        .withNodeStatuses(Map.of(1, new NodeStatus(1, List.of(0, 2), 17, 50_000_000L,
            335_544_320L, 1_048_576L, "http://127.0.0.1:8081")));
  }

  @Test
  void theBodyIsTheDocumentedClusterView() {
    JsonNode body = ClusterStatus.render(view());
    assertEquals(List.of(), OpenApiDocument.load()
        .validate("/components/schemas/ClusterView", body.toString()));
    assertEquals(4, body.path("partitionCount").asInt());
    JsonNode first = body.path("members").get(0).path("node");
    assertEquals("[0,2]", first.path("hostedPartitions").toString());
    assertEquals(17, first.path("activeEntities").asLong());
    assertEquals(335_544_320L, first.path("heapMaxBytes").asLong());
    assertEquals("http://127.0.0.1:8081", first.path("httpUrl").asText());
    assertTrue(body.path("members").get(1).path("node").isNull(), body.toString());
  }

  /** A member that has not bound its HTTP server yet (or runs an older build) reports no URL. */
  @Test
  void aMemberWithoutAnHttpUrlIsDocumentedToo() {
    ClusterView.MemberView member = new ClusterView.MemberView("pekko://troupe@127.0.0.1:2551",
        "up", true, 1, List.of("troupe-node-1"), List.of(0), true, null);
    JsonNode body = ClusterStatus.render(new ClusterView("pekko://troupe@127.0.0.1:2551", 1,
        List.of(member)).withNodeStatuses(Map.of(1, new NodeStatus(1, List.of(0), 0, 1L, 2L, 0L))));
    assertEquals(List.of(), OpenApiDocument.load()
        .validate("/components/schemas/ClusterView", body.toString()));
    assertTrue(body.path("members").get(0).path("node").path("httpUrl").isNull(), body.toString());
  }
}
