package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityLocator;
import dev.troupe.model.Json;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The partition-aware client's placement table: what it reads from {@code GET /v1/cluster}'s body
 * (the schema ClusterStatusTest checks against the OpenAPI document) and when it reads it again.
 * Decides where every owner-aware request of {@code bench cluster} goes.
 */
class OwnerPlacementTest {
  private static final String ONE = "http://127.0.0.1:9001";
  private static final String TWO = "http://127.0.0.1:9002";

  /** A {@code GET /v1/cluster} body: per member (status, URL or null, hosted partitions). */
  static JsonNode cluster(int partitions, Object... members) {
    ObjectNode body = Json.NODES.objectNode();
    body.put("self", "pekko://troupe@127.0.0.1:2551");
    body.put("partitionCount", partitions);
    ArrayNode list = body.putArray("members");
    for (int i = 0; i < members.length; i += 3) {
      ObjectNode member = list.addObject();
      member.put("status", (String) members[i]);
      ObjectNode node = member.putObject("node");
      node.put("httpUrl", (String) members[i + 1]);
      ArrayNode hosted = node.putArray("hostedPartitions");
      for (int partition : (int[]) members[i + 2]) {
        hosted.add(partition);
      }
    }
    return body;
  }

  /** An entity of {@code partition} among {@code partitions} (by the documented hash). */
  static EntityId entityOf(int partition, int partitions) {
    for (int i = 0; ; i++) {
      EntityId entity = new EntityId("usertable", "user" + i);
      if (EntityLocator.partitionOf(entity, partitions) == partition) {
        return entity;
      }
    }
  }

  @Test
  void eachPartitionGoesToTheUpMemberThatReportsHostingIt() {
    OwnerPlacement.Table table = OwnerPlacement.Table.of(cluster(4,
        "up", ONE, new int[] {0, 2},
        "up", TWO, new int[] {1, 2},
        "leaving", "http://127.0.0.1:9003", new int[] {3},
        "up", null, new int[] {3}));
    assertEquals(ONE, table.urlOf(entityOf(0, 4)));
    assertEquals(TWO, table.urlOf(entityOf(1, 4)));
    // claimed twice while it moves: the first claim (a hop at worst)
    assertEquals(ONE, table.urlOf(entityOf(2, 4)));
    // only a leaving member or one without a URL has it: unknown, the client's member routes it
    assertNull(table.urlOf(entityOf(3, 4)));
    assertEquals(3, table.known());
  }

  @Test
  void aMemberThatDidNotReportHasNoPartitions() {
    ObjectNode body = (ObjectNode) cluster(2, "up", ONE, new int[] {0, 1});
    ((ObjectNode) body.path("members").get(0)).putNull("node");
    OwnerPlacement.Table table = OwnerPlacement.Table.of(body);
    assertEquals(0, table.known());
  }

  @Test
  void theTableIsReadOnceThenAgainWhenAnAnswerSaysItMovedAtMostOncePerInterval()
      throws Exception {
    AtomicLong now = new AtomicLong(1_000);
    List<String> asked = new ArrayList<>();
    JsonNode[] answer = {cluster(2, "up", ONE, new int[] {0, 1})};
    OwnerPlacement placement = new OwnerPlacement(List.of(ONE, TWO), url -> {
      asked.add(url);
      return answer[0];
    }, now::get, 100);
    EntityId first = entityOf(0, 2);
    assertEquals(ONE, placement.urlOf(first));
    assertEquals(ONE, placement.urlOf(entityOf(1, 2)));
    assertEquals(List.of(ONE), asked, "read once, not per request");

    answer[0] = cluster(2, "up", ONE, new int[] {1}, "up", TWO, new int[] {0});
    now.addAndGet(50);
    placement.placementMoved(); // within the interval: not read again
    assertEquals(ONE, placement.urlOf(first));
    assertEquals(1, placement.reads());

    now.addAndGet(50);
    placement.placementMoved();
    assertEquals(TWO, placement.urlOf(first), "partition 0 moved to the second member");
    assertEquals(2, placement.reads());
    assertEquals(2, placement.staleSignals());
  }

  @Test
  void anUnreachableMemberIsSkippedAndNoAnswerLeavesRoutingToTheClientsMember() {
    AtomicLong now = new AtomicLong();
    Map<String, JsonNode> answers = new java.util.HashMap<>();
    List<String> asked = new ArrayList<>();
    OwnerPlacement placement = new OwnerPlacement(List.of(ONE, TWO), url -> {
      asked.add(url);
      JsonNode body = answers.get(url);
      if (body == null) {
        throw new IOException("connection refused");
      }
      return body;
    }, now::get, 100);
    EntityId entity = entityOf(1, 3);
    assertNull(placement.urlOf(entity), "nobody answered: no table");
    assertEquals(List.of(ONE, TWO), asked);
    assertNull(placement.urlOf(entity));
    assertEquals(2, asked.size(), "an unreachable cluster is not asked again within the interval");

    answers.put(TWO, cluster(3, "up", TWO, new int[] {0, 1, 2}));
    now.addAndGet(100);
    assertEquals(TWO, placement.urlOf(entity));
    assertEquals(List.of(ONE, TWO, ONE, TWO), asked);
  }
}
