package dev.troupe.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Seeded simulations of one node (bank, list-append, counters, dependencies and registers
 * workloads; the production storage engine over a simulated disk, and the simulator's own
 * journal) with crashes, lost unsynced writes, clock jumps and a lossy client network: the CI
 * seed budget (100 seeds for each admission policy, planned and dynamic: 600; 60 more with
 * damaged stored keys; 60 over a lossy network between coordinators and participants),
 * determinism, regressions, and proof that the checkers catch deliberate breakage of the shell,
 * of a core and of the disk's damage detection within that budget. A failing seed is printed;
 * {@code ./troupe sim --seed S --admission P --mode M} replays it with its trace.
 */
class SimulationTest {
  private static final long MAX_STEPS = 2_000_000;
  /** Admission policy and scheduling of every configuration CI runs. */
  private static final String[][] CONFIGURATIONS = {
      {"serial", "dynamic"}, {"serial", "planned"}, {"keys", "dynamic"}, {"keys", "planned"},
      {"psac", "dynamic"}, {"psac", "planned"}};
  /** 6 configurations x 100 seeds: 600 seeds in CI. */
  private static final long SEEDS_PER_CONFIGURATION = 100;
  /**
   * Runs with the damage fault: 6 configurations x 10 seeds, 60 in CI (about 12 s), a key damaged
   * every 700 simulated ms of the faulty part on average (two per run; some runs have none).
   */
  private static final long DAMAGE_SEEDS_PER_CONFIGURATION = 10;
  private static final Simulation.Options DAMAGE = Simulation.Options.DEFAULTS.withDamage(700);
  /**
   * Runs whose coordinators and participants talk over a network that loses, duplicates and
   * reorders their messages until the faults stop (as between nodes).
   */
  private static final Simulation.Options LOSSY =
      Simulation.Options.DEFAULTS.withInternalNetwork("lossy");

  /**
   * The list-append workload alone, with mailboxes that keep order per connection only: the
   * options a key lock released early is searched with. Its write skew needs two list
   * transactions that cross (each reads a list the other appends to) with their prepares
   * reordered between the two entities, which per-receiver mailboxes never do, and the other
   * workloads would only dilute them.
   */
  private static final Simulation.Options LIST_APPEND_PER_CONNECTION =
      withWorkloads(List.of("list-append")).withMailboxes("per-connection");

  @Test
  void everySeedKeepsAcknowledgedTransfersAtomicityAndMoney() {
    long crashes = 0;
    long resolved = 0;
    long unknown = 0;
    long redone = 0;
    long edges = 0;
    long heldToLiveness = 0;
    long rounds = 0;
    long truncated = 0;
    for (Simulation.Result result :
        passEverySeed(Simulation.Options.DEFAULTS, SEEDS_PER_CONFIGURATION)) {
      crashes += result.crashes();
      resolved += result.resolvedInDoubt();
      unknown += result.unknown();
      redone += result.redone();
      edges += result.serializationEdges();
      heldToLiveness += result.livenessChecked();
      rounds += result.storage().checkpointRounds();
      truncated += result.storage().truncatedRecords();
    }
    // The faults really happened: crashes, in-doubt parts and unknown outcomes.
    assertTrue(crashes > 1_000, "crashes " + crashes);
    System.out.println(CONFIGURATIONS.length * SEEDS_PER_CONFIGURATION + " seeds: " + crashes
        + " crashes, " + resolved + " in-doubt parts resolved (" + redone + " PSAC redone), "
        + unknown + " unknown outcomes, " + edges + " serialization-graph edges checked, "
        + heldToLiveness + " requests held to liveness, " + rounds + " checkpoint rounds, "
        + truncated + " journal records truncated");
    assertTrue(resolved > 0, "in-doubt parts resolved " + resolved);
    assertTrue(unknown > 0, "unknown outcomes " + unknown);
    assertTrue(redone > 0, "PSAC parts redone at recovery " + redone);
    assertTrue(edges > 100_000, "serialization-graph edges checked " + edges);
    // The real storage engine checkpointed and truncated under the crashes.
    assertTrue(rounds > 10_000 && truncated > 100_000, rounds + " rounds, " + truncated
        + " records truncated");
    // The fault-free tail is long enough that liveness is really checked.
    assertTrue(heldToLiveness > 10_000, "requests held to liveness " + heldToLiveness);
  }

  /**
   * Runs seeds 1 to {@code seeds} of every configuration (admission and mode) over {@code base}
   * and asserts each passes, printing the failing one's summary and trace.
   */
  private static java.util.List<Simulation.Result> passEverySeed(Simulation.Options base,
      long seeds) {
    java.util.List<Simulation.Options> configurations = new java.util.ArrayList<>();
    for (String[] configuration : CONFIGURATIONS) {
      configurations.add(base.withAdmission(configuration[0], configuration[1].equals("planned")));
    }
    // Side by side on every core, checked in seed order (ParallelSeeds).
    java.util.List<Simulation.Result> results =
        ParallelSeeds.run(configurations, seeds, MAX_STEPS);
    for (int index = 0; index < results.size(); index++) {
      String[] configuration = CONFIGURATIONS[(int) (index / seeds)];
      Simulation.Options options = configurations.get((int) (index / seeds));
      Simulation.Result result = results.get(index);
      assertTrue(result.passed(), String.join(" ", configuration) + " " + options.storage()
          + " " + options.mailboxes() + " " + result.summary() + ": " + result.failure() + "\n"
          + result.trace());
    }
    return results;
  }

  @Test
  void damagedDataIsDetectedAndNeverServed() {
    long damagedKeys = 0;
    long detected = 0;
    long answeredCorrupt = 0;
    long storeFailures = 0;
    long refusedStarts = 0;
    long unreadable = 0;
    long excused = 0;
    long heldToLiveness = 0;
    long reissued = 0;
    for (Simulation.Result result : passEverySeed(DAMAGE, DAMAGE_SEEDS_PER_CONFIGURATION)) {
      reissued += result.reissuedIds();
      damagedKeys += result.storage().damagedKeys();
      detected += result.storage().corruptionsDetected();
      answeredCorrupt += result.answeredCorrupt();
      storeFailures += result.storage().storeFailures();
      refusedStarts += result.storage().refusedStarts();
      unreadable += result.unreadableAtEnd();
      excused += result.livenessExempted();
      heldToLiveness += result.livenessChecked();
    }
    System.out.println(CONFIGURATIONS.length * DAMAGE_SEEDS_PER_CONFIGURATION
        + " seeds with damage: " + damagedKeys + " keys damaged, " + detected
        + " damaged reads detected, " + answeredCorrupt + " requests answered corrupt_data, "
        + storeFailures + " store failures, " + refusedStarts + " refused starts, " + unreadable
        + " entities unreadable at the end (excluded from final-state checks), " + excused
        + " of " + heldToLiveness + " requests held to liveness excused, " + reissued
        + " transaction ids of a failed store issued again after a restart");
    // The damage really happened and really met the engine's reads, the clients and the writer.
    assertTrue(damagedKeys > 60, "keys damaged " + damagedKeys);
    assertTrue(detected > 0 && answeredCorrupt > 0 && storeFailures > 0,
        detected + " detected, " + answeredCorrupt + " answered, " + storeFailures + " failures");
    // Damage must not excuse everything: most requests of the tail are still held to liveness.
    assertTrue(excused < heldToLiveness / 2, excused + " of " + heldToLiveness + " excused");
  }

  /**
   * Seeds that once failed, kept as regressions, each in the configuration it failed in:
   *
   * <ul>
   *   <li>5142 (psac, dynamic, damage every 500 ms): a commit decision reached a new incarnation of
   *       an entity after a failed store had stopped the one that voted, which knew nothing of its
   *       part and stopped the node on an invariant.
   *   <li>777014, 50101, 50118, 50177 (keys, dynamic) and 50052, 50152 (keys, planned), the four
   *       workloads of the time, per-connection mailboxes: a G0 "cycle" between two dependency transactions that wrote
   *       different members of the same carts in opposite orders, a false alarm of a check that
   *       ordered writes per entity where key locks let them commit in either order (issue 16;
   *       now checked per key, {@code LockLevelHistory}). The list-append workload has changed
   *       since, so these seeds no longer replay the failing schedule; {@code
   *       LockLevelHistoryTest} pins its shape.
   *   <li>4 (psac, dynamic, registers alone): a part that read the whole state and wrote was
   *       admitted beside an undecided reader, a write skew across two entities ({@code
   *       PsacGate}; issue 16).
   * </ul>
   */
  @Test
  void seedsThatOnceFailedPass() {
    List<Simulation.Result> results = new java.util.ArrayList<>();
    results.add(Simulation.run(5142,
        Simulation.Options.DEFAULTS.withDamage(500).withAdmission("psac", false), MAX_STEPS));
    Simulation.Options fourWorkloads = withWorkloads(
        List.of("bank", "list-append", "counters", "dependencies"))
        .withMailboxes("per-connection");
    // Seed and whether it failed planned (otherwise dynamic).
    Map<Long, Boolean> keySeeds = Map.of(777014L, false, 50052L, true, 50101L, false,
        50118L, false, 50152L, true, 50177L, false);
    keySeeds.forEach((seed, planned) -> results.add(
        Simulation.run(seed, fourWorkloads.withAdmission("keys", planned), MAX_STEPS)));
    results.add(Simulation.run(4,
        withWorkloads(List.of("registers")).withAdmission("psac", false), MAX_STEPS));
    for (Simulation.Result result : results) {
      System.out.println("regression " + result.summary());
      assertTrue(result.passed(), result.summary() + ": " + result.failure() + "\n"
          + result.trace());
    }
  }

  /** The default options with only {@code workloads}. */
  private static Simulation.Options withWorkloads(List<String> workloads) {
    Simulation.Options defaults = Simulation.Options.DEFAULTS;
    return new Simulation.Options(defaults.admission(), defaults.storage(), defaults.mailboxes(),
        defaults.planned(), workloads, defaults.accounts(), defaults.lists(), defaults.clients(),
        defaults.openingBalance(), defaults.durationMillis(), defaults.faultFreeShare(),
        defaults.meanMillisBetweenCrashes(), defaults.clientLossProbability(),
        defaults.clientTimeoutMillis(), defaults.traceLines(), defaults.meanMillisBetweenDamage());
  }

  @Test
  void theSimulatorsOwnJournalTearsAndCorruptsRecordsAndLosesNothingAcknowledged() {
    long crashes = 0;
    for (Simulation.Result result :
        passEverySeed(Simulation.Options.DEFAULTS.withStorage("journal"), 20)) {
      crashes += result.crashes();
    }
    assertTrue(crashes > 200, "crashes " + crashes);
  }

  /**
   * The options each breakage is searched with: acknowledging before the sync is the store under
   * ASYNC durability; skipping clock recovery needs the simulator's own journal, whose recovery
   * the simulator writes (the store advances its own clock); a prepare after its abort can only
   * happen when mailboxes keep order per connection only (as between nodes).
   */
  private static final Map<SimulatedNode.Mutation, Simulation.Options> OPTIONS_OF_MUTATION =
      Map.ofEntries(Map.entry(
      SimulatedNode.Mutation.ACKNOWLEDGE_BEFORE_SYNC, Simulation.Options.DEFAULTS),
      Map.entry(SimulatedNode.Mutation.SKIP_IN_DOUBT_COMMITS, Simulation.Options.DEFAULTS),
      Map.entry(SimulatedNode.Mutation.SKIP_CLOCK_RECOVERY,
          Simulation.Options.DEFAULTS.withStorage("journal")),
      Map.entry(SimulatedNode.Mutation.RELEASE_LOCKS_AT_VOTE, Simulation.Options.DEFAULTS),
      Map.entry(SimulatedNode.Mutation.PREPARE_AFTER_ABORT,
          Simulation.Options.DEFAULTS.withMailboxes("per-connection")),
      Map.entry(SimulatedNode.Mutation.DROP_FORWARDS, Simulation.Options.DEFAULTS),
      Map.entry(SimulatedNode.Mutation.RELEASE_KEY_LOCK_EARLY, LIST_APPEND_PER_CONNECTION),
      Map.entry(SimulatedNode.Mutation.IGNORE_DAMAGE, DAMAGE),
      // Lost, duplicated and reordered decisions happen only over a network (as between nodes).
      Map.entry(SimulatedNode.Mutation.COORDINATOR_SKIPS_DECISION_RESEND, LOSSY),
      Map.entry(SimulatedNode.Mutation.APPLY_DUPLICATE_DECISION, LOSSY),
      Map.entry(SimulatedNode.Mutation.PRESUME_COMMIT_IN_DOUBT, LOSSY),
      // Fences matter only where nodes share a database and partitions move between them.
      Map.entry(SimulatedNode.Mutation.UNFENCED_WRITES, SharedStoreSimulationTest.SHARED),
      // So does the coordinator fence: a removed member's transactions presumed aborted.
      Map.entry(SimulatedNode.Mutation.PRESUME_ABORT_WITHOUT_END,
          SharedStoreSimulationTest.SHARED));

  /** Seeds per configuration each breakage must be caught within: the budget of its options. */
  private static long budgetOf(SimulatedNode.Mutation mutation) {
    return mutation == SimulatedNode.Mutation.IGNORE_DAMAGE
        ? DAMAGE_SEEDS_PER_CONFIGURATION : SEEDS_PER_CONFIGURATION;
  }

  @Test
  void theCoresSurviveMailboxesThatKeepOrderOnlyPerConnection() {
    // What the cores will meet between nodes: an abort can overtake its own prepare.
    long crashes = 0;
    for (Simulation.Result result :
        passEverySeed(Simulation.Options.DEFAULTS.withMailboxes("per-connection"), 20)) {
      crashes += result.crashes();
    }
    assertTrue(crashes > 200, "crashes " + crashes);
  }

  /** Seeds per configuration of the runs over a lossy network between coordinators and parts. */
  private static final long LOSSY_SEEDS_PER_CONFIGURATION = 10;

  @Test
  void twoPhaseCommitSurvivesANetworkThatLosesDuplicatesAndReordersItsMessages() {
    long questions = 0;
    long answers = 0;
    long committed = 0;
    for (Simulation.Result result : passEverySeed(LOSSY, LOSSY_SEEDS_PER_CONFIGURATION)) {
      questions += result.inDoubtQuestions();
      answers += result.inDoubtAnswers();
      committed += result.committed();
    }
    System.out.println(CONFIGURATIONS.length * LOSSY_SEEDS_PER_CONFIGURATION
        + " seeds over a lossy network: " + committed + " committed, " + questions
        + " in-doubt questions, " + answers + " answered with a decision");
    // Parts really were in doubt and learned their decision by asking (every run also checks
    // that nothing is left in doubt once the network healed).
    assertTrue(questions > 100 && answers > 10, questions + " questions, " + answers + " answers");
    assertTrue(committed > 1_000, "committed " + committed);
  }

  @Test
  void eachDeliberateBreakageIsCaughtWithinTheSeedBudget() {
    // Every breakage a core accepts is one the node can pass it, so it is tested below.
    for (dev.troupe.txn.Mutations.Mutation core : dev.troupe.txn.Mutations.Mutation.values()) {
      assertTrue(OPTIONS_OF_MUTATION.containsKey(SimulatedNode.Mutation.valueOf(core.name())));
    }
    for (SimulatedNode.Mutation mutation : SimulatedNode.Mutation.values()) {
      if (mutation != SimulatedNode.Mutation.NONE) {
        Catch caught = firstCatch(mutation);
        System.out.println(mutation + " caught by seed " + caught.seed() + " ("
            + String.join(" ", caught.configuration()) + "): " + caught.failure());
        // The same seed and options pass without the breakage: the checks caught the breakage,
        // not the fault itself (for the damage breakage: damage detected passes, damage ignored
        // does not).
        Simulation.Options options = OPTIONS_OF_MUTATION.get(mutation).withAdmission(
            caught.configuration()[0], caught.configuration()[1].equals("planned"));
        Simulation.Result correct = Simulation.run(caught.seed(), options, MAX_STEPS);
        assertTrue(correct.passed(), mutation + ": without it, " + correct.summary() + ": "
            + correct.failure());
      }
    }
    // Without a breakage, the first seeds pass.
    assertTrue(Simulation.run(1, Simulation.Options.DEFAULTS, MAX_STEPS).passed());
  }

  /** The first run a breakage failed. */
  record Catch(long seed, String[] configuration, String failure) {}

  /**
   * Runs the breakage's seed budget (each seed over every configuration) with {@code mutation}
   * until a check fails; fails the test if none does.
   */
  static Catch firstCatch(SimulatedNode.Mutation mutation) {
    for (long seed = 1; seed <= budgetOf(mutation); seed++) {
      for (String[] configuration : CONFIGURATIONS) {
        Simulation.Options options = OPTIONS_OF_MUTATION.get(mutation)
            .withAdmission(configuration[0], configuration[1].equals("planned"));
        Simulation.Result result = Simulation.runMutated(seed, options, MAX_STEPS, mutation);
        if (!result.passed()) {
          return new Catch(seed, configuration, result.failure());
        }
      }
    }
    throw new AssertionError(mutation + " went unnoticed in "
        + budgetOf(mutation) * CONFIGURATIONS.length + " runs");
  }

  @Test
  void theSameSeedReplaysTheSameRun() {
    Simulation.Result first = Simulation.run(42, Simulation.Options.DEFAULTS, MAX_STEPS);
    Simulation.Result second = Simulation.run(42, Simulation.Options.DEFAULTS, MAX_STEPS);
    assertEquals(first.summary(), second.summary());
    assertTrue(first.committed() > 0, first.summary());
  }
}
