package dev.troupe.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.txn.Mutations;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Seeded bank simulations of one node with crashes, torn journals and a lossy client network: the
 * CI seed budget (100 seeds for each admission policy, planned and dynamic: 600), determinism, and proof that the checkers catch
 * deliberate breakage. A failing seed is printed; {@code ./troupe sim --seed S --admission P}
 * replays it with its trace.
 */
class SimulationTest {
  private static final long MAX_STEPS = 2_000_000;
  /** Admission policy and scheduling of every configuration CI runs. */
  private static final String[][] CONFIGURATIONS = {
      {"serial", "dynamic"}, {"serial", "planned"}, {"keys", "dynamic"}, {"keys", "planned"},
      {"psac", "dynamic"}, {"psac", "planned"}};
  /** 6 configurations x 100 seeds: 600 seeds in CI. */
  private static final long SEEDS_PER_CONFIGURATION = 100;

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
    for (String[] configuration : CONFIGURATIONS) {
      String admission = configuration[0];
      Simulation.Options options = Simulation.Options.DEFAULTS.withAdmission(admission,
          configuration[1].equals("planned"));
      for (long seed = 1; seed <= SEEDS_PER_CONFIGURATION; seed++) {
        Simulation.Result result = Simulation.run(seed, options, MAX_STEPS);
        assertTrue(result.passed(), String.join(" ", configuration) + " " + result.summary()
            + ": " + result.failure() + "\n" + result.trace());
        crashes += result.crashes();
        resolved += result.resolvedInDoubt();
        unknown += result.unknown();
        redone += result.redone();
        edges += result.dependencyEdges();
        heldToLiveness += result.livenessChecked();
        rounds += result.storage().checkpointRounds();
        truncated += result.storage().truncatedRecords();
      }
    }
    // The faults really happened: crashes, in-doubt parts and unknown outcomes.
    assertTrue(crashes > 1_000, "crashes " + crashes);
    System.out.println(CONFIGURATIONS.length * SEEDS_PER_CONFIGURATION + " seeds: " + crashes
        + " crashes, " + resolved + " in-doubt parts resolved (" + redone + " PSAC redone), "
        + unknown + " unknown outcomes, " + edges + " dependency edges checked, "
        + heldToLiveness + " requests held to liveness, " + rounds + " checkpoint rounds, "
        + truncated + " journal records truncated");
    assertTrue(resolved > 0, "in-doubt parts resolved " + resolved);
    assertTrue(unknown > 0, "unknown outcomes " + unknown);
    assertTrue(redone > 0, "PSAC parts redone at recovery " + redone);
    assertTrue(edges > 100_000, "dependency edges checked " + edges);
    // The real storage engine checkpointed and truncated under the crashes.
    assertTrue(rounds > 10_000 && truncated > 100_000, rounds + " rounds, " + truncated
        + " records truncated");
    // The fault-free tail is long enough that liveness is really checked.
    assertTrue(heldToLiveness > 10_000, "requests held to liveness " + heldToLiveness);
  }

  @Test
  void theSimulatorsOwnJournalTearsAndCorruptsRecordsAndLosesNothingAcknowledged() {
    long crashes = 0;
    for (String[] configuration : CONFIGURATIONS) {
      Simulation.Options options = Simulation.Options.DEFAULTS.withStorage("journal")
          .withAdmission(configuration[0], configuration[1].equals("planned"));
      for (long seed = 1; seed <= 20; seed++) {
        Simulation.Result result = Simulation.run(seed, options, MAX_STEPS);
        assertTrue(result.passed(), String.join(" ", configuration) + " journal "
            + result.summary() + ": " + result.failure() + "\n" + result.trace());
        crashes += result.crashes();
      }
    }
    assertTrue(crashes > 200, "crashes " + crashes);
  }

  /**
   * Which storage each shell breakage needs: acknowledging before the sync is the store under
   * ASYNC durability; skipping clock recovery needs the simulator's own journal, whose recovery
   * the simulator writes (the store advances its own clock).
   */
  private static final Map<SimulatedNode.Mutation, String> STORAGE_OF_MUTATION = Map.of(
      SimulatedNode.Mutation.ACKNOWLEDGE_BEFORE_SYNC, "store",
      SimulatedNode.Mutation.SKIP_IN_DOUBT_COMMITS, "store",
      SimulatedNode.Mutation.SKIP_CLOCK_RECOVERY, "journal",
      SimulatedNode.Mutation.RELEASE_LOCKS_AT_VOTE, "store");

  @Test
  void eachDeliberateBreakageIsCaughtWithinTheSeedBudget() {
    for (SimulatedNode.Mutation mutation : SimulatedNode.Mutation.values()) {
      if (mutation == SimulatedNode.Mutation.NONE) {
        continue;
      }
      Long caughtBy = null;
      String failure = null;
      for (long seed = 1; seed <= 60 && caughtBy == null; seed++) {
        Simulation.Result result = Simulation.runMutated(seed, Simulation.Options.DEFAULTS
            .withStorage(STORAGE_OF_MUTATION.get(mutation)), MAX_STEPS, mutation);
        if (!result.passed()) {
          caughtBy = seed;
          failure = result.failure();
        }
      }
      assertTrue(caughtBy != null, mutation + " went unnoticed in 60 seeds");
      System.out.println(mutation + " (" + STORAGE_OF_MUTATION.get(mutation)
          + ") caught by seed " + caughtBy + ": " + failure);
    }
  }

  @Test
  void eachDeliberateBreakageOfACoreIsCaughtWithinTheSeedBudget() {
    Map<Mutations.Mutation, Simulation.Options> options = Map.of(
        Mutations.Mutation.RELEASE_LOCKS_AT_VOTE, Simulation.Options.DEFAULTS);
    for (Mutations.Mutation mutation : Mutations.Mutation.values()) {
      Long caughtBy = null;
      String failure = null;
      for (long seed = 1; seed <= SEEDS_PER_CONFIGURATION && caughtBy == null; seed++) {
        // A core mutation reaches the core through the node, which constructs it.
        Simulation.Result result = Simulation.runMutated(seed, options.get(mutation),
            MAX_STEPS, SimulatedNode.Mutation.valueOf(mutation.name()));
        if (!result.passed()) {
          caughtBy = seed;
          failure = result.failure();
        }
      }
      assertTrue(caughtBy != null,
          mutation + " went unnoticed in " + SEEDS_PER_CONFIGURATION + " seeds");
      System.out.println(mutation + " caught by seed " + caughtBy + ": " + failure);
    }
    // Without it, the same seeds pass.
    assertTrue(Simulation.run(1, Simulation.Options.DEFAULTS, MAX_STEPS).passed());
  }

  @Test
  void theSameSeedReplaysTheSameRun() {
    Simulation.Result first = Simulation.run(42, Simulation.Options.DEFAULTS, MAX_STEPS);
    Simulation.Result second = Simulation.run(42, Simulation.Options.DEFAULTS, MAX_STEPS);
    assertEquals(first.summary(), second.summary());
    assertTrue(first.committed() > 0, first.summary());
  }
}
