package dev.troupe.dist;

import dev.troupe.bench.BenchCommand;
import dev.troupe.server.cli.TroupeCli;
import dev.troupe.sim.SimCommand;
import picocli.CommandLine;

/** Entry point of troupe.jar: the server's command line plus {@code troupe bench} and {@code troupe sim}. */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    CommandLine cli = TroupeCli.commandLine();
    cli.addSubcommand("bench", new BenchCommand());
    cli.addSubcommand("sim", new SimCommand());
    System.exit(cli.execute(args));
  }
}
