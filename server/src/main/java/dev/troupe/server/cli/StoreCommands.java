package dev.troupe.server.cli;

import dev.troupe.storage.CorruptDataException;
import dev.troupe.storage.StoreCheck;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code troupe check} and {@code troupe repair}: the operator's recovery path for a damaged store
 * (docs/OPERATIONS.md, "Corruption"). Both run on a stopped store.
 */
final class StoreCommands {
  private StoreCommands() {}

  /** Exit status when the check found problems (0 when the store is intact). */
  static final int EXIT_PROBLEMS = 1;
  /** Exit status when the store could not be opened or read at all. */
  static final int EXIT_UNREADABLE = 2;

  @Command(name = "check", mixinStandardHelpOptions = true,
      description = {"Verify a stopped store: every checksum (table files, records, checkpoints),"
          + " the write-ahead log, and that index, journal and checkpoints agree.",
          "Changes nothing. Exit status 0: intact; 1: problems found (listed, each marked"
              + " repairable or not); 2: the store could not be read."})
  static final class Check implements Callable<Integer> {
    @Option(names = "--data", description = "Data directory (default: ${DEFAULT-VALUE}).",
        defaultValue = "./data")
    Path data;

    @Override
    public Integer call() {
      try {
        StoreCheck.Report report = StoreCheck.check(data);
        System.out.print(report.render());
        return report.clean() ? 0 : EXIT_PROBLEMS;
      } catch (UncheckedIOException | IllegalStateException | CorruptDataException e) {
        System.err.println("troupe check: " + e.getMessage());
        return EXIT_UNREADABLE;
      }
    }
  }

  @Command(name = "repair", mixinStandardHelpOptions = true,
      description = {"Repair a stopped store: rebuild the index from the journal, drop damaged"
          + " checkpoint files whose entities the journal still holds whole, then check again.",
          "Reports what it did and exactly what it could not rebuild (damaged journal records,"
              + " checkpoints of truncated partitions): restore those from a backup.",
          "Exit status 0: intact afterwards; 1: problems remain; 2: the store could not be read."})
  static final class Repair implements Callable<Integer> {
    @Option(names = "--data", description = "Data directory (default: ${DEFAULT-VALUE}).",
        defaultValue = "./data")
    Path data;

    @Option(names = "--accept-write-ahead-log-loss", description = "If the write-ahead log is"
        + " damaged, give up every write from the damage on (the log is copied aside first)."
        + " Without it a damaged log is reported and nothing changes.")
    boolean acceptWriteAheadLogLoss;

    @Override
    public Integer call() {
      try {
        StoreCheck.Report report = StoreCheck.repair(data, acceptWriteAheadLogLoss);
        System.out.print(report.render());
        return report.clean() ? 0 : EXIT_PROBLEMS;
      } catch (UncheckedIOException | IllegalStateException | CorruptDataException e) {
        System.err.println("troupe repair: " + e.getMessage());
        return EXIT_UNREADABLE;
      }
    }
  }
}
