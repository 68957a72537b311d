package dev.troupe.server.cli;

import com.fasterxml.jackson.databind.JsonNode;
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
 * is).
 */
@Command(name = "status", mixinStandardHelpOptions = true,
    description = {"Show a data centre's replication: its peers, their links and lags.",
        "Reads GET /v1/replication/status (a read token on a server with authentication)."})
final class StatusCommand implements Callable<Integer> {
  @Mixin ClientCommands.Server server;

  @Option(names = "--json", description = "Print the status as the server answers it (JSON).")
  boolean json;

  @Override
  public Integer call() {
    return server.show("/v1/replication/status", json, StatusCommand::render);
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
    return out.toString();
  }
}
