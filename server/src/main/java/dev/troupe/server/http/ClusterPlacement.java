package dev.troupe.server.http;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.Json;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Predicate;

/**
 * The placement the members of a cluster report in {@code GET /v1/cluster} (what {@link
 * ClusterStatus} renders), read back by a client: which member hosts each partition, and a wait
 * until the members asked agree on it. The one reader of it for whoever starts a data centre of
 * processes and waits for it to settle (the three-node test harness, the cluster benchmarks), so
 * that a change of the view's format changes one reader, next to its writer.
 */
public final class ClusterPlacement {
  private ClusterPlacement() {}

  /** One member's answer to {@code GET /v1/cluster}. */
  public record Answer(int status, byte[] body) {}

  /** How to ask one member for its view. */
  @FunctionalInterface
  public interface Member {
    /** {@code GET /v1/cluster} of this member; an IOException while it does not listen yet. */
    Answer clusterView() throws IOException, InterruptedException;
  }

  /**
   * Partition -> node id, if {@code view} lists exactly {@code members} members, every one up,
   * reachable and with known partitions, and each of the {@code partitions} partitions hosted by
   * exactly one of them; else null (not settled yet).
   */
  public static Map<Integer, Integer> settled(JsonNode view, int members, int partitions) {
    JsonNode listed = view.path("members");
    if (listed.size() != members) {
      return null;
    }
    Map<Integer, Integer> placement = new TreeMap<>();
    for (JsonNode member : listed) {
      if (!member.path("status").asText().equals("up") || !member.path("reachable").asBoolean()
          || !member.path("partitionsKnown").asBoolean()) {
        return null;
      }
      for (JsonNode partition : member.path("partitions")) {
        if (placement.put(partition.asInt(), member.path("nodeId").asInt()) != null) {
          return null;
        }
      }
    }
    return placement.size() == partitions ? placement : null;
  }

  /** Whether every one of {@code members} nodes hosts some partition of {@code placement}. */
  public static boolean everyMemberHosts(Map<Integer, Integer> placement, int members) {
    return placement.values().stream().distinct().count() == members;
  }

  /**
   * Whether every one of {@code members} nodes hosts some partition and their counts differ by
   * one at most (sharding done rebalancing).
   */
  public static boolean balanced(Map<Integer, Integer> placement, int members) {
    Map<Integer, Integer> counts = new TreeMap<>();
    placement.values().forEach(node -> counts.merge(node, 1, Integer::sum));
    return counts.size() == members
        && counts.values().stream().mapToInt(Integer::intValue).max().getAsInt()
            - counts.values().stream().mapToInt(Integer::intValue).min().getAsInt() <= 1;
  }

  /**
   * Asks {@code members} in turn every {@code poll} until each one's view is {@link #settled}
   * (with exactly these members, {@code partitions} partitions), all views agree and {@code
   * accepted} holds of the placement; answers partition -> node id.
   *
   * @throws PlacementTimeoutException if that does not happen within {@code timeout} (its message
   *     quotes the last answer)
   */
  public static Map<Integer, Integer> await(List<? extends Member> members, int partitions,
      Predicate<Map<Integer, Integer>> accepted, Duration timeout, Duration poll)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    String last = "";
    while (System.nanoTime() < deadline) {
      Map<Integer, Integer> agreed = null;
      boolean settled = true;
      for (int i = 0; i < members.size() && settled; i++) {
        String who = "member " + (i + 1) + " of " + members.size();
        Answer answer;
        try {
          answer = members.get(i).clusterView();
        } catch (IOException notListening) {
          last = who + ": " + notListening;
          settled = false;
          break;
        }
        last = who + ": " + answer.status() + " "
            + new String(answer.body(), java.nio.charset.StandardCharsets.UTF_8);
        Map<Integer, Integer> placement = answer.status() == 200
            ? settled(Json.parse(answer.body()), members.size(), partitions) : null;
        if (placement == null || (agreed != null && !agreed.equals(placement))) {
          settled = false;
        }
        agreed = placement;
      }
      if (settled && agreed != null && accepted.test(agreed)) {
        return agreed;
      }
      Thread.sleep(poll.toMillis());
    }
    throw new PlacementTimeoutException("the cluster did not settle within "
        + timeout.toMillis() + " ms; last answer: " + last);
  }

  /** The members did not agree on a placement in time. */
  public static final class PlacementTimeoutException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    PlacementTimeoutException(String message) {
      super(message);
    }
  }
}
