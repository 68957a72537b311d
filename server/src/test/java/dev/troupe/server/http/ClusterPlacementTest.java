package dev.troupe.server.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.Json;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The reader of {@code GET /v1/cluster} placements that the three-node test harness and the
 * cluster benchmarks wait with: what counts as settled, balanced, and agreed.
 */
class ClusterPlacementTest {
  private static final String SETTLED = """
      {"members": [
        {"nodeId": 1, "status": "up", "reachable": true, "partitionsKnown": true,
         "partitions": [0, 3]},
        {"nodeId": 2, "status": "up", "reachable": true, "partitionsKnown": true,
         "partitions": [1]},
        {"nodeId": 3, "status": "up", "reachable": true, "partitionsKnown": true,
         "partitions": [2]}]}
      """;

  @Test
  void aPlacementCountsOnlyWhenEveryMemberIsUpAndEveryPartitionHostedOnce() {
    String settled = SETTLED;
    assertEquals(Map.of(0, 1, 3, 1, 1, 2, 2, 3),
        ClusterPlacement.settled(Json.parse(settled), 3, 4));
    assertNull(ClusterPlacement.settled(Json.parse(settled), 2, 4), "a member too many");
    assertNull(ClusterPlacement.settled(Json.parse(settled), 3, 5), "a partition not hosted");
    assertNull(ClusterPlacement.settled(Json.parse(settled.replace("[1]", "[1, 0]")), 3, 4),
        "a partition hosted twice");
    assertNull(ClusterPlacement.settled(Json.parse(settled.replaceFirst("\"reachable\": true",
        "\"reachable\": false")), 3, 4), "an unreachable member");
  }

  @Test
  void aPlacementIsBalancedWhenEveryMemberHostsAndTheCountsDifferByOneAtMost() {
    assertTrue(ClusterPlacement.balanced(Map.of(0, 1, 1, 2, 2, 3, 3, 1), 3));
    assertFalse(ClusterPlacement.balanced(Map.of(0, 1, 1, 1, 2, 2, 3, 1), 2), "3 against 1");
    assertFalse(ClusterPlacement.balanced(Map.of(0, 1, 1, 2), 3), "a member hosts nothing");
  }

  @Test
  void everyMemberHostsWhenEachNodeHasAPartition() {
    assertTrue(ClusterPlacement.everyMemberHosts(Map.of(0, 1, 1, 1, 2, 2, 3, 3), 3));
    assertFalse(ClusterPlacement.everyMemberHosts(Map.of(0, 1, 1, 1, 2, 2, 3, 2), 3));
  }

  @Test
  void awaitAnswersOnceEveryMemberAgreesAndTimesOutQuotingTheLastAnswer() throws Exception {
    AtomicInteger asked = new AtomicInteger();
    byte[] settled = SETTLED.getBytes(StandardCharsets.UTF_8);
    // The first member answers 503 twice, then the settled view, as the others do.
    ClusterPlacement.Member first = () -> asked.incrementAndGet() <= 2
        ? new ClusterPlacement.Answer(503, "{}".getBytes(StandardCharsets.UTF_8))
        : new ClusterPlacement.Answer(200, settled);
    ClusterPlacement.Member other = () -> new ClusterPlacement.Answer(200, settled);
    assertEquals(Map.of(0, 1, 3, 1, 1, 2, 2, 3), ClusterPlacement.await(
        List.of(first, other, other), 4, placement -> true, Duration.ofSeconds(10),
        Duration.ofMillis(1)));
    assertEquals(3, asked.get());

    byte[] disagreeing = SETTLED.replace("[0, 3]", "[0]").replace("[2]", "[2, 3]")
        .getBytes(StandardCharsets.UTF_8);
    ClusterPlacement.PlacementTimeoutException timedOut = assertThrows(
        ClusterPlacement.PlacementTimeoutException.class, () -> ClusterPlacement.await(
            List.of(other, () -> new ClusterPlacement.Answer(200, disagreeing), other), 4,
            placement -> true, Duration.ofMillis(50), Duration.ofMillis(1)));
    assertTrue(timedOut.getMessage().contains("member 2 of 3: 200"), timedOut.getMessage());
  }
}
