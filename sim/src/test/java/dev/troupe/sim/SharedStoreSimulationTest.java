package dev.troupe.sim;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Seeded simulations of a data centre of three nodes on ONE shared database (the shared-store
 * mode, {@code ./troupe sim --nodes 3 --shared-store}): every node's production store opened in
 * the acquired-partitions mode over its view of one {@link SharedDatabase}, partitions placed on
 * the live nodes by {@link SimulatedSharding} and moving on crashes, restarts and cuts between
 * nodes (a cut-off minority runs on as a zombie, fenced, until it downs itself), the acquiring
 * node resolving the partition's parts in doubt, and the coordinator fence: the survivors end a
 * removed member's coordinators, and its transactions are answered from the store. Every seed passes every check of the cluster runs plus the
 * shared-store ones (no journal record written by a node that did not own its partition's epoch;
 * every partition served at the end); a failing seed is printed with the command that replays it.
 */
class SharedStoreSimulationTest {
  private static final long MAX_STEPS = 2_000_000;
  static final Simulation.Options SHARED =
      Simulation.Options.DEFAULTS.withNodes(3, 0.02, 0.02).withSharedStore(true);

  @Test
  void everySharedStoreSeedPassesEveryCheck() {
    String[][] configurations = {
        {"serial", "dynamic"}, {"serial", "planned"}, {"keys", "dynamic"}, {"keys", "planned"},
        {"psac", "dynamic"}, {"psac", "planned"}};
    long seedsPerConfiguration = Long.getLong("troupe.sim.sharedSeeds", 25);
    long committed = 0;
    long crashes = 0;
    long questions = 0;
    long moves = 0;
    long failures = 0;
    long fenced = 0;
    long databaseCrashes = 0;
    long removals = 0;
    long selfDowns = 0;
    long ended = 0;
    long refusedDecisions = 0;
    long answeredFromStore = 0;
    for (String[] configuration : configurations) {
      Simulation.Options options =
          SHARED.withAdmission(configuration[0], configuration[1].equals("planned"));
      for (long seed = 1; seed <= seedsPerConfiguration; seed++) {
        Simulation.Result result = Simulation.run(seed, options, MAX_STEPS);
        if (!result.passed()) {
          System.out.println("FAILED " + configuration[0] + " " + configuration[1] + " "
              + result.summary() + ": " + result.failure());
          failures++;
          continue;
        }
        assertTrue(result.passed(), "./troupe sim --seed " + seed
            + " --nodes 3 --shared-store --admission " + configuration[0] + " --mode "
            + configuration[1] + ": " + result.summary() + ": " + result.failure() + "\n"
            + result.trace());
        committed += result.committed();
        crashes += result.crashes();
        questions += result.inDoubtQuestions();
        moves += count(result.cluster(), "(\\d+) partition moves");
        fenced += count(result.cluster(), "(\\d+) zombie writes fenced");
        databaseCrashes += count(result.cluster(), "(\\d+) database crashes");
        removals += count(result.cluster(), "(\\d+) members removed");
        selfDowns += count(result.cluster(), "(\\d+) downed themselves");
        ended += count(result.cluster(), "(\\d+) coordinator partitions ended");
        refusedDecisions += count(result.cluster(), "(\\d+) zombie decisions refused");
        answeredFromStore += count(result.cluster(), "(\\d+) in-doubt questions answered from");
      }
    }
    System.out.println(configurations.length * seedsPerConfiguration
        + " shared-store seeds of 3 nodes: " + committed + " committed, " + crashes
        + " crashes, " + databaseCrashes + " database crashes, " + moves + " partition moves, "
        + fenced + " partitions whose zombie writes were fenced, " + questions
        + " in-doubt questions; coordinator fence: " + removals + " members removed, "
        + selfDowns + " downed themselves, " + ended + " coordinator partitions ended, "
        + refusedDecisions + " zombie decisions refused, " + answeredFromStore
        + " questions answered from the store");
    assertTrue(failures == 0, failures + " seeds failed (see the output)");
    // The faults really happened: partitions moved, zombies wrote and were fenced, the database
    // crashed.
    assertTrue(moves > 1_000, "partition moves " + moves);
    assertTrue(fenced > 10, "fenced zombie writes " + fenced);
    assertTrue(databaseCrashes > 10, "database crashes " + databaseCrashes);
    // The coordinator fence ran: detections removed members, survivors ended their coordinators,
    // removed zombies downed themselves, and participants of removed members' transactions were
    // answered from the shared store.
    assertTrue(removals > 100 && ended > 100, removals + " removals, " + ended + " ends");
    assertTrue(selfDowns > 10, "self-downs " + selfDowns);
    assertTrue(answeredFromStore > 10, "answered from the store " + answeredFromStore);
  }

  static long count(String summary, String pattern) {
    java.util.regex.Matcher matcher = java.util.regex.Pattern.compile(pattern).matcher(summary);
    return matcher.find() ? Long.parseLong(matcher.group(1)) : 0;
  }

  /**
   * The deliberate breakage: views of the shared database drop every fence (a writer that does not
   * fence). A zombie's write lands after the new owner acquired its partition; the journal audit
   * (and the bank's checks) must catch it within the seed budget.
   */
  @Test
  void unfencedWritesAreCaught() {
    long budget = 20;
    for (long seed = 1; seed <= budget; seed++) {
      Simulation.Result result = Simulation.runMutated(seed, SHARED, MAX_STEPS,
          SimulatedNode.Mutation.UNFENCED_WRITES);
      System.out.println("unfenced writes, " + result.summary()
          + (result.passed() ? "" : ": " + result.failure()));
      if (!result.passed()) {
        return;
      }
    }
    throw new AssertionError("unfenced writes not caught in " + budget + " seeds");
  }

  /** A seed replays exactly: the same trace and the same journal, step for step. */
  @Test
  void aSeedReplaysExactly() {
    for (long seed = 1; seed <= Long.getLong("troupe.sim.replaySeeds", 1); seed++) {
      Simulation.Result first = Simulation.run(seed, SHARED, MAX_STEPS);
      Simulation.Result again = Simulation.run(seed, SHARED, MAX_STEPS);
      org.junit.jupiter.api.Assertions.assertEquals(first.summary(), again.summary());
      org.junit.jupiter.api.Assertions.assertEquals(first.traceFingerprint(),
          again.traceFingerprint(), "seed " + seed);
      org.junit.jupiter.api.Assertions.assertEquals(first.journalFingerprint(),
          again.journalFingerprint(), "seed " + seed);
    }
  }
}
