package dev.troupe.server.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.Json;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code troupe peer add|remove|list}: a running data centre's peers, changed without a restart
 * ({@code /v1/replication/peers}; docs/OPERATIONS.md, "Adding a data centre"). Adding and removing
 * need an {@code admin} token on a server with authentication, listing a {@code read} one. Exit
 * codes as the other client commands: 0 done, 1 refused (the server's error printed), 2 the
 * server unreachable.
 */
@Command(name = "peer", mixinStandardHelpOptions = true,
    description = {"Add, remove or list a running data centre's peers (no restart needed).",
        "The change is recorded in the server's store and survives a restart; the"
            + " configured peers (--peer) win over recorded ones of the same name."},
    subcommands = {PeerCommand.Add.class, PeerCommand.Remove.class, PeerCommand.List.class})
final class PeerCommand {
  private static final String PEERS_PATH = "/v1/replication/peers";

  private PeerCommand() {}

  @Command(name = "add", mixinStandardHelpOptions = true,
      description = {"Add the peer NAME at URL (its REST server), or change a peer's URL.",
          "Do it on every running DC for the new one, and start the new DC with --peer for each"
              + " of them (docs/OPERATIONS.md)."})
  static final class Add implements Callable<Integer> {
    @Mixin ClientCommands.Server server;

    @Parameters(index = "0", paramLabel = "NAME=URL",
        description = "The peer's data centre name and base URL, e.g. paris=http://10.0.0.2:8080")
    String peer;

    @Override
    public Integer call() {
      int equals = peer.indexOf('=');
      if (equals <= 0 || equals == peer.length() - 1) {
        System.err.println("troupe: expected NAME=URL, e.g. paris=http://10.0.0.2:8080, was '"
            + peer + "'");
        return 1;
      }
      ObjectNode body = Json.NODES.objectNode();
      body.put("name", peer.substring(0, equals).trim());
      body.put("url", peer.substring(equals + 1).trim());
      return server.send("POST", PEERS_PATH, body.toString(), "application/json");
    }
  }

  @Command(name = "remove", mixinStandardHelpOptions = true,
      description = {"Remove the peer NAME: no longer pulled, served, or waited for by truncation.",
          "Remove a DC once it stopped taking writes and every DC applied what it wrote."})
  static final class Remove implements Callable<Integer> {
    @Mixin ClientCommands.Server server;

    @Parameters(index = "0", paramLabel = "NAME", description = "The peer's data centre name.")
    String name;

    @Override
    public Integer call() {
      return server.send("DELETE",
          PEERS_PATH + "/" + URLEncoder.encode(name, StandardCharsets.UTF_8), null, null);
    }
  }

  @Command(name = "list", mixinStandardHelpOptions = true,
      description = "List the peers: name, URL, and whether configured or added at runtime.")
  static final class List implements Callable<Integer> {
    @Mixin ClientCommands.Server server;

    @Option(names = "--json", description = "Print the list as the server answers it (JSON).")
    boolean json;

    @Override
    public Integer call() {
      return server.show(PEERS_PATH, json, List::render);
    }

    static String render(JsonNode answer) {
      StringBuilder out = new StringBuilder();
      out.append("data centre ").append(answer.path("dataCentre").asText()).append('\n');
      if (answer.path("peers").isEmpty()) {
        return out.append("no peers\n").toString();
      }
      for (JsonNode peer : answer.path("peers")) {
        out.append(String.format("%-24s %-40s %s%n", peer.path("name").asText(),
            peer.path("url").asText(), peer.path("configured").asBoolean() ? "configured"
                : "added at runtime"));
      }
      return out.toString();
    }
  }
}
