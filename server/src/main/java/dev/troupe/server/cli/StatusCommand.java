package dev.troupe.server.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.Json;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code troupe status}: a data centre's replication as {@code GET /v1/replication/status} reports
 * it, as a table: this DC, then per peer its link (up or down, pulls, failures, the last failure)
 * and its lag (transactions received and not yet applied, and how far behind its applied entry
 * is). On a cluster member ({@code GET /v1/cluster} answers) the cluster follows, a line per node:
 * its id, address, status, reachability, the partitions it hosts (count and list), its active
 * entities and its memory (heap used and maximum, object cache), each member's numbers as that
 * member reported them ({@code ?} when it did not answer in time).
 */
@Command(name = "status", mixinStandardHelpOptions = true,
    description = {"Show a data centre's replication (its peers, their links and lags) and, on a"
        + " cluster member, the cluster's nodes: their partitions, entities and memory.",
        "Reads GET /v1/replication/status and GET /v1/cluster (a read token on a server with"
            + " authentication)."})
final class StatusCommand implements Callable<Integer> {
  @Mixin ClientCommands.Server server;

  @Option(names = "--json", description = "Print the status as the server answers it (JSON;"
      + " on a cluster member {\"replication\": ..., \"cluster\": ...}).")
  boolean json;

  @Override
  public Integer call() {
    return server.reaching(() -> {
      HttpResponse<String> replication = server.get("/v1/replication/status");
      HttpResponse<String> cluster = server.get("/v1/cluster");
      // 404 from /v1/cluster: not a cluster member (a single node, a DC): as before.
      boolean member = cluster.statusCode() == 200;
      if (replication.statusCode() != 200 && !member) {
        System.err.println("HTTP " + replication.statusCode() + ": "
            + ClientCommands.Server.pretty(replication.body()));
        return 1;
      }
      if (!member && cluster.statusCode() != 404) {
        System.err.println("HTTP " + cluster.statusCode() + " from /v1/cluster: "
            + ClientCommands.Server.pretty(cluster.body()));
        return 1;
      }
      JsonNode replicationStatus =
          replication.statusCode() == 200 ? Json.parse(replication.body()) : null;
      JsonNode clusterView = member ? Json.parse(cluster.body()) : null;
      if (json) {
        if (!member) {
          System.out.println(ClientCommands.Server.pretty(replication.body()));
        } else {
          ObjectNode both = Json.NODES.objectNode();
          both.set("replication", replicationStatus);
          both.set("cluster", clusterView);
          System.out.println(ClientCommands.Server.pretty(both.toString()));
        }
        return 0;
      }
      if (replicationStatus != null) {
        System.out.print(render(replicationStatus));
      } else {
        System.out.println("replication: none here (HTTP " + replication.statusCode() + ")");
      }
      if (clusterView != null) {
        System.out.print(renderCluster(clusterView));
      }
      return 0;
    });
  }

  /**
   * The cluster as text: a line with the members and the partitions they host between them, then
   * a line per node.
   */
  static String renderCluster(JsonNode view) {
    int partitionCount = view.path("partitionCount").asInt();
    java.util.Set<Integer> hostedSomewhere = new java.util.TreeSet<>();
    int answered = 0;
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"NODE", "ADDRESS", "STATUS", "REACHABLE", "PARTITIONS", "HOSTED",
        "ENTITIES", "HEAP_USED", "HEAP_MAX", "CACHE"});
    for (JsonNode member : view.path("members")) {
      JsonNode node = member.path("node");
      boolean known = node.isObject();
      List<String> hosted = new ArrayList<>();
      if (known) {
        answered++;
        for (JsonNode partition : node.path("hostedPartitions")) {
          hosted.add(partition.asText());
          hostedSomewhere.add(partition.asInt());
        }
      }
      int nodeId = member.path("nodeId").asInt(-1);
      rows.add(new String[] {nodeId < 0 ? "-" : Integer.toString(nodeId),
          member.path("address").asText(), member.path("status").asText(),
          member.path("reachable").asBoolean() ? "yes" : "no",
          known ? Integer.toString(hosted.size()) : "?",
          known ? (hosted.isEmpty() ? "-" : String.join(",", hosted)) : "?",
          known ? Long.toString(node.path("activeEntities").asLong()) : "?",
          known ? mebibytes(node.path("heapUsedBytes").asLong()) : "?",
          known ? mebibytes(node.path("heapMaxBytes").asLong()) : "?",
          known ? mebibytes(node.path("cacheBytes").asLong()) : "?"});
    }
    StringBuilder out = new StringBuilder();
    out.append("cluster: ").append(rows.size() - 1).append(" members (").append(answered)
        .append(" answered), ").append(hostedSomewhere.size()).append(" of ")
        .append(partitionCount).append(" partitions hosted; seen from ")
        .append(view.path("self").asText()).append('\n');
    table(out, rows);
    return out.toString();
  }

  /** Bytes in MiB, or in KiB below one MiB (a small cache would read 0.0MiB). */
  private static String mebibytes(long bytes) {
    return bytes < 1024 * 1024
        ? String.format(java.util.Locale.ROOT, "%.1fKiB", bytes / 1024.0)
        : String.format(java.util.Locale.ROOT, "%.1fMiB", bytes / (1024.0 * 1024.0));
  }

  /** The status as text: a line for this DC, a table of peers. */
  static String render(JsonNode status) {
    StringBuilder out = new StringBuilder();
    out.append("data centre ").append(status.path("dataCentre").asText())
        .append(" (id ").append(status.path("dataCentreId").asLong()).append("): ")
        .append(status.path("pendingRemoteTransactions").asLong())
        .append(" remote transactions pending, ")
        .append(status.path("applyingTransactions").asLong()).append(" applying; stable vector ")
        .append(status.path("stableVectorAgeMillis").asLong()).append(" ms old; ")
        .append(status.path("logEntries").asLong()).append(" log entries\n");
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"PEER", "URL", "LINK", "LAG_TX", "LAG_MS", "PULLS", "ENTRIES",
        "FAILURES", "LAST_FAILURE"});
    for (JsonNode peer : status.path("peers")) {
      JsonNode link = peer.path("link");
      rows.add(new String[] {peer.path("name").asText(), peer.path("url").asText(""),
          link.path("lastFailureTruncated").asBoolean() && !link.path("up").asBoolean()
              ? "truncated"
              : link.path("up").asBoolean() ? "up"
              : link.path("lastSuccessMillis").asLong() == 0 && link.path("failures").asLong() == 0
                  ? "starting" : "down",
          Long.toString(peer.path("lagTransactions").asLong()),
          Long.toString(peer.path("lagMillis").asLong()),
          Long.toString(link.path("pulls").asLong()),
          Long.toString(link.path("entries").asLong()),
          Long.toString(link.path("failures").asLong()),
          link.path("lastFailure").asText("")});
    }
    if (rows.size() == 1) {
      out.append("no peers\n");
      return out.toString();
    }
    table(out, rows);
    return out.toString();
  }

  /** {@code rows} (a header first) as left-aligned columns. */
  private static void table(StringBuilder out, List<String[]> rows) {
    int[] widths = new int[rows.getFirst().length];
    for (String[] row : rows) {
      for (int i = 0; i < row.length; i++) {
        widths[i] = Math.max(widths[i], row[i].length());
      }
    }
    for (String[] row : rows) {
      StringBuilder line = new StringBuilder();
      for (int i = 0; i < row.length; i++) {
        line.append(i == row.length - 1 ? row[i] : String.format("%-" + widths[i] + "s  ", row[i]));
      }
      out.append(line.toString().stripTrailing()).append('\n');
    }
  }
}
