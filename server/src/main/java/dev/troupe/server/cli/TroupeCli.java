package dev.troupe.server.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code troupe} command line: the server and a small client for its REST API. */
@Command(
    name = "troupe",
    mixinStandardHelpOptions = true,
    version = "troupe 0.1.0",
    description = {
      "Troupe: a transactional, causally consistent database of actors.",
      "Every entity is an actor with a small key-value state; every turn is a transaction.",
      ""
    },
    subcommands = {
      ServeCommand.class,
      ServePostgresCommand.class,
      ServeBareCommand.class,
      ClusterCommand.class,
      StoreCommands.Check.class,
      StoreCommands.Repair.class,
      ClientCommands.Get.class,
      ClientCommands.Put.class,
      ClientCommands.Delete.class,
      ClientCommands.Act.class,
      ClientCommands.Types.class,
      StatusCommand.class,
      PeerCommand.class,
      TokenCommand.class,
      CommandLine.HelpCommand.class
    },
    footer = {
      "",
      "Examples:",
      "  troupe serve --data ./data --port 8080",
      "  troupe serve --dc lisbon --peer paris=http://10.0.0.2:8080 --replication-secret-file s",
      "  troupe serve --node-id 1 --cluster-port 7355 --seed-nodes 127.0.0.1:7355",
      "  troupe cluster --nodes 3   (a throwaway cluster on this machine)",
      "  troupe status      (a data centre's peers, links and lags)",
      "  troupe peer add tokyo=http://10.0.0.3:8080   (a DC joins a running set)",
      "  troupe token create --name app --scopes read,write",
      "  troupe check --data ./data      (a stopped store; see docs/OPERATIONS.md)",
      "  troupe types apply account.yaml",
      "  troupe act Account/alice open '{\"initial\": 100}'",
      "  troupe get Account/alice",
      "  troupe put Cart/c1 note '\"deliver after 6pm\"'"
    })
public final class TroupeCli implements Runnable {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  /** The command line with every subcommand this module knows; others may add more. */
  public static CommandLine commandLine() {
    return new CommandLine(new TroupeCli());
  }

  public static void main(String[] args) {
    System.exit(commandLine().execute(args));
  }
}
