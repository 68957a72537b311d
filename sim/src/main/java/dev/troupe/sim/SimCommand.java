package dev.troupe.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code troupe sim}: runs the deterministic simulator, one seed ({@code --seed}) or a sweep
 * ({@code --seeds K --from S0}). A failure prints its seed, what was violated and the last steps
 * that led to it; re-running that seed reproduces it exactly. Exit code 0 when every seed passed,
 * 1 otherwise.
 */
@Command(
    name = "sim",
    mixinStandardHelpOptions = true,
    description = "Deterministic simulation of the engine with injected faults (bank and"
        + " list-append workloads, node crashes with torn journals, clock jumps, a lossy client"
        + " network).",
    footer = {"", "Examples:", "  troupe sim --seed 42", "  troupe sim --seeds 500 --from 1",
        "  troupe sim --seeds 10000 --from 1 --admission psac --mode planned",
        "  troupe sim --nodes 3 --seeds 1000 --from 1",
        "  troupe sim --nodes 3 --shared-store --seeds 500 --from 1",
        "  troupe sim --dcs 3 --seeds 200 --from 1",
        "  troupe sim --dcs 3 --seed 9 --history seed9.plume"})
public final class SimCommand implements Callable<Integer> {
  @Option(names = "--seed", description = "Run this one seed (prints its trace on failure).")
  Long seed;

  @Option(names = "--seeds", defaultValue = "1",
      description = "How many consecutive seeds to sweep (default: ${DEFAULT-VALUE}).")
  int seeds;

  @Option(names = "--from", defaultValue = "1",
      description = "The first seed of a sweep (default: ${DEFAULT-VALUE}).")
  long from;

  @Option(names = "--steps", defaultValue = "2000000",
      description = "Most scheduler steps per seed; a run that needs more fails"
          + " (default: ${DEFAULT-VALUE}).")
  long steps;

  @Option(names = "--admission", defaultValue = "all",
      description = "Accounts' admission policy: serial, keys, psac or all"
          + " (default: ${DEFAULT-VALUE}).")
  String admission;

  @Option(names = "--mode", defaultValue = "both",
      description = "Transfers as planned or dynamic transactions, or both"
          + " (default: ${DEFAULT-VALUE}).")
  String mode;

  @Option(names = "--storage", defaultValue = "store",
      description = "store (the production storage engine over a simulated disk) or journal"
          + " (the simulator's minimal journal: torn and corrupted records)"
          + " (default: ${DEFAULT-VALUE}).")
  String storage;

  @Option(names = "--mailboxes", defaultValue = "per-receiver",
      description = "Order of messages between the node's cores: per-receiver (Pekko's local"
          + " mailboxes) or per-connection (as between nodes) (default: ${DEFAULT-VALUE}).")
  String mailboxes;

  @Option(names = "--internal-network", defaultValue = "reliable",
      description = "Between coordinators and participants: reliable (the node's mailboxes) or"
          + " lossy (loses, duplicates and reorders until the faults stop, as between nodes)"
          + " (default: ${DEFAULT-VALUE}).")
  String internalNetwork;

  @Option(names = "--trace-lines", defaultValue = "400",
      description = "How many of the last steps a failure's trace shows"
          + " (default: ${DEFAULT-VALUE}).")
  int traceLines;

  @Option(names = "--workload", defaultValue = "all",
      description = "bank, list-append, counters, dependencies, registers or all (composed in"
          + " one run)"
          + " (default: ${DEFAULT-VALUE}).")
  String workload;

  @Option(names = "--lists", defaultValue = "3",
      description = "Entities of the list-append and registers workloads (two lists or"
          + " registers each), tallies of the counters workload, products and carts of the"
          + " dependencies workload"
          + " (default: ${DEFAULT-VALUE}).")
  int lists;

  @Option(names = "--accounts", defaultValue = "4",
      description = "Accounts (few means contention) (default: ${DEFAULT-VALUE}).")
  int accounts;

  @Option(names = "--clients", defaultValue = "8",
      description = "Concurrent clients (default: ${DEFAULT-VALUE}).")
  int clients;

  @Option(names = "--duration-millis", defaultValue = "3000",
      description = "Simulated milliseconds of client load (default: ${DEFAULT-VALUE}).")
  long durationMillis;

  @Option(names = "--crash-mean-millis", defaultValue = "400",
      description = "Mean simulated milliseconds between node crashes; 0 for none"
          + " (default: ${DEFAULT-VALUE}).")
  long crashMeanMillis;

  @Option(names = "--damage-mean-millis", defaultValue = "0",
      description = "Mean simulated milliseconds between damaged stored keys (a checkpoint, an"
          + " index entry or a journal record failing its checksum) during the faulty part;"
          + " 0 for none. Store storage only (default: ${DEFAULT-VALUE}).")
  long damageMeanMillis;

  @Option(names = "--client-loss", defaultValue = "0.02",
      description = "Chance that a client request or answer is lost (default: ${DEFAULT-VALUE}).")
  double clientLoss;

  @Option(names = "--nodes", defaultValue = "1",
      description = "Nodes of the simulated cluster: each entity lives on one (a hash of its id),"
          + " clients reach random nodes, coordinators and participants talk over a network"
          + " between nodes; 1 is the single node (default: ${DEFAULT-VALUE}).")
  int nodes;

  @Option(names = "--node-loss", defaultValue = "0.02",
      description = "With several nodes: chance that a message between nodes is lost while"
          + " faults last (default: ${DEFAULT-VALUE}).")
  double nodeLoss;

  @Option(names = "--node-duplication", defaultValue = "0.02",
      description = "With several nodes: chance that a commit-protocol message between nodes"
          + " arrives twice while faults last (default: ${DEFAULT-VALUE}).")
  double nodeDuplication;

  @Option(names = "--dcs", defaultValue = "0",
      description = "Simulate this many data centres (2 to 5) replicating to each other instead"
          + " of one cluster: partitions between DCs, crashes, skewed clocks, clients moving"
          + " between DCs with causal tokens, checked for causal and atomic visibility, session"
          + " guarantees and convergence. Uses its own workload and defaults; --seed, --seeds,"
          + " --from, --trace-lines, --history and --breakage apply (default: off).")
  int dcs;

  @Option(names = "--history",
      description = "With --dcs: write the history of the first seed run (clients' committed"
          + " transactions, registers only) to this file in the Plume/AWDIT text format.")
  java.nio.file.Path history;

  @Option(names = "--shared-store",
      description = "With --nodes 2 or more: the nodes share ONE database (the production store"
          + " in acquired-partitions mode over one simulated disk); partitions are placed on live"
          + " nodes and move on crashes, restarts and cuts between nodes (a cut-off node runs on as"
          + " a fenced zombie until it downs itself; the survivors end its coordinators); the new"
          + " owner resolves the parts in doubt. Adds the owner-epoch"
          + " audit of the journal to the checks.")
  boolean sharedStore;

  @Option(names = "--breakage",
      description = "With --dcs: switch on a deliberate breakage (repeatable) to see the checkers"
          + " catch it: APPLY_BEFORE_DEPENDENCIES, TRUNCATE_BEFORE_STABLE,"
          + " SPLIT_MULTI_ENTITY_TRANSACTIONS, REGISTER_MERGE_WITHOUT_TIE_BREAK,"
          + " IGNORE_CAUSAL_TOKENS, DELETE_WITHOUT_TOMBSTONE. With --shared-store (one only):"
          + " UNFENCED_WRITES (the nodes' writes carry no owner-epoch fence),"
          + " PRESUME_ABORT_WITHOUT_END (a removed member's coordinators are never ended and its"
          + " transactions are presumed aborted when no decision is recorded).")
  List<String> breakages = new ArrayList<>();

  @Override
  public Integer call() {
    if (dcs != 0) {
      return callDataCentres();
    }
    if (history != null) {
      throw new IllegalArgumentException("--history needs --dcs");
    }
    SimulatedNode.Mutation mutation = SimulatedNode.Mutation.NONE;
    if (!breakages.isEmpty()) {
      List<String> shared = List.of("UNFENCED_WRITES", "PRESUME_ABORT_WITHOUT_END");
      if (!sharedStore || breakages.size() != 1 || !shared.contains(breakages.get(0))) {
        throw new IllegalArgumentException("--breakage needs --dcs, or --shared-store with one"
            + " --breakage of UNFENCED_WRITES, PRESUME_ABORT_WITHOUT_END");
      }
      mutation = SimulatedNode.Mutation.valueOf(breakages.get(0));
    }
    if (sharedStore && (nodes < 2 || !storage.equals("store") || damageMeanMillis > 0)) {
      throw new IllegalArgumentException(
          "--shared-store needs --nodes 2 or more, --storage store and no damage");
    }
    List<String> admissions = switch (admission) {
      case "all" -> List.of("serial", "keys", "psac");
      case "serial", "keys", "psac" -> List.of(admission);
      default -> throw new IllegalArgumentException(
          "--admission must be serial, keys, psac or all");
    };
    List<Boolean> modes = switch (mode) {
      case "both" -> List.of(false, true);
      case "dynamic" -> List.of(false);
      case "planned" -> List.of(true);
      default -> throw new IllegalArgumentException("--mode must be planned, dynamic or both");
    };
    List<String> workloads = workload.equals("all") ? Simulation.WORKLOADS : List.of(workload);
    if (!Simulation.WORKLOADS.containsAll(workloads)) {
      throw new IllegalArgumentException(
          "--workload must be bank, list-append, counters, dependencies, registers or all");
    }
    if (nodes < 1 || nodes > 64) {
      throw new IllegalArgumentException("--nodes must be 1 to 64");
    }
    if (seeds < 1 || steps < 1 || accounts < 2 || lists < 1 || clients < 1
        || durationMillis < 1) {
      throw new IllegalArgumentException("--seeds, --steps, --lists, --clients and"
          + " --duration-millis must be positive, --accounts >= 2");
    }
    Simulation.Options defaults = Simulation.Options.DEFAULTS;
    List<Simulation.Options> configurations = new ArrayList<>();
    for (String policy : admissions) {
      for (boolean planned : modes) {
        configurations.add(new Simulation.Options(policy, storage, mailboxes, planned, workloads,
            accounts, lists,
            clients, defaults.openingBalance(), durationMillis, defaults.faultFreeShare(),
            crashMeanMillis, clientLoss, defaults.clientTimeoutMillis(), traceLines,
            damageMeanMillis, internalNetwork, nodes, nodeLoss, nodeDuplication)
            .withSharedStore(sharedStore));
      }
    }
    long first = seed != null ? seed : from;
    int count = seed != null ? 1 : seeds;
    long started = System.nanoTime();
    long totalSteps = 0;
    List<Simulation.Result> failures = new ArrayList<>();
    try (ProgressBar progress = new ProgressBarBuilder().setTaskName("sim")
        .setInitialMax((long) count * configurations.size()).setUnit(" runs", 1)
        .setStyle(ProgressBarStyle.ASCII).setConsumer(
            new me.tongfei.progressbar.ConsoleProgressBarConsumer(System.err))
        .build()) {
      for (long each = first; each < first + count; each++) {
        for (Simulation.Options options : configurations) {
          Simulation.Result result = Simulation.runMutated(each, options, steps, mutation);
          totalSteps += result.steps();
          String mode = options.planned() ? "planned" : "dynamic";
          String name = options.admission() + " " + mode;
          if (seed != null) {
            System.out.println(name + " " + result.summary());
          }
          if (!result.passed()) {
            failures.add(result);
            System.out.println("FAILED: --seed " + result.seed() + " --admission "
                + options.admission() + " --mode " + mode + " --workload " + workload
                + " --storage " + storage + " --mailboxes " + mailboxes
                + (damageMeanMillis > 0 ? " --damage-mean-millis " + damageMeanMillis : "")
                + (internalNetwork.equals("lossy") ? " --internal-network lossy" : "")
                + (nodes > 1 ? " --nodes " + nodes + " --node-loss " + nodeLoss
                    + " --node-duplication " + nodeDuplication : "")
                + (sharedStore ? " --shared-store" : "")
                + (mutation != SimulatedNode.Mutation.NONE ? " --breakage " + mutation : "")
                + ": "
                + result.failure());
            System.out.println(result.trace());
          }
          progress.step();
        }
      }
    }
    double seconds = (System.nanoTime() - started) / 1e9;
    System.out.printf("%d runs, %d failed; %,d simulated steps in %.1f s (%,.0f steps/s)%n",
        count * configurations.size(), failures.size(), totalSteps, seconds,
        totalSteps / seconds);
    return failures.isEmpty() ? 0 : 1;
  }

  /** {@code --dcs N}: the data-centre simulation ({@code dev.troupe.sim.geo}). */
  private int callDataCentres() {
    if (dcs < 2 || dcs > 5) {
      throw new IllegalArgumentException("--dcs must be 2 to 5");
    }
    if (!dev.troupe.sim.geo.GeoSimulation.mutationNames().containsAll(breakages)) {
      throw new IllegalArgumentException("--breakage must be one of "
          + dev.troupe.sim.geo.GeoSimulation.mutationNames());
    }
    dev.troupe.sim.geo.GeoOptions options = dev.troupe.sim.geo.GeoOptions.DEFAULTS
        .withDataCentres(dcs).withMutations(java.util.Set.copyOf(breakages));
    long first = seed != null ? seed : from;
    int count = seed != null ? 1 : seeds;
    long started = System.nanoTime();
    long totalSteps = 0;
    int failed = 0;
    for (long each = first; each < first + count; each++) {
      dev.troupe.sim.geo.GeoSimulation.Result result =
          dev.troupe.sim.geo.GeoSimulation.run(each, options);
      totalSteps += result.steps();
      if (each == first && history != null) {
        try {
          java.nio.file.Files.writeString(history,
              dev.troupe.sim.geo.PlumeHistory.format(result.history()));
        } catch (java.io.IOException failure) {
          throw new java.io.UncheckedIOException(failure);
        }
      }
      if (seed != null) {
        System.out.println("dcs " + dcs + " " + result.summary());
      }
      if (!result.passed()) {
        failed++;
        System.out.println("FAILED: --dcs " + dcs + " --seed " + result.seed()
            + breakages.stream().map(name -> " --breakage " + name).reduce("", String::concat)
            + ": " + result.failure());
        List<String> lines = result.trace().lines().toList();
        System.out.println(String.join("\n",
            lines.subList(Math.max(0, lines.size() - traceLines), lines.size())));
      }
    }
    double seconds = (System.nanoTime() - started) / 1e9;
    System.out.printf("%d runs, %d failed; %,d simulated steps in %.1f s (%,.0f steps/s)%n",
        count, failed, totalSteps, seconds, totalSteps / seconds);
    return failed == 0 ? 0 : 1;
  }
}
