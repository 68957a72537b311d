package dev.troupe.sim.geo;

import dev.troupe.model.ModelMutations;
import dev.troupe.sim.Scheduler;
import dev.troupe.sim.geo.CausalChecker.Violation;
import dev.troupe.sim.geo.CausalHistory.ObjectRead;
import dev.troupe.replication.ReceiverCore;
import dev.troupe.replication.ReceiverLimits;
import dev.troupe.replication.ReplicationMutations;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Set;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * A seeded run of several data centres ({@link SimulatedDataCentres}) under the {@link
 * GeoWorkload}: faults (crashes, partitions between DCs, a lossy inter-DC network, skewed clocks)
 * during the first part of the load, then none; after the load, replication runs until every DC
 * has applied everything (quiescence, bounded), and the checkers judge the recorded history
 * ({@link CausalChecker}: causal visibility, session guarantees, atomic visibility, values) and
 * the final states ({@link ConvergenceChecker}: convergence, no lost write, exactly once).
 *
 * <p>Deterministic: everything comes from the seed, so a failing seed replays exactly.
 */
public final class GeoSimulation {
  private GeoSimulation() {}

  /**
   * One run's verdict.
   *
   * @param violations empty when every check passed
   * @param history what the clients observed (for {@code --history})
   * @param trace the last steps of the run
   */
  public record Result(long seed, List<Violation> violations, String summary, long steps,
      CausalHistory history, String trace) {
    public boolean passed() {
      return violations.isEmpty();
    }

    public String failure() {
      return violations.isEmpty() ? "" : violations.get(0).toString()
          + (violations.size() > 1 ? " (and " + (violations.size() - 1) + " more)" : "");
    }
  }

  /** The receivers the DCs run; the production core, or one with breakages. */
  public static Result run(long seed, GeoOptions options) {
    boolean modelBreakage = false;
    for (ModelMutations.Mutation mutation : ModelMutations.Mutation.values()) {
      if (options.mutations().contains(mutation.name())) {
        ModelMutations.enable(mutation);
        modelBreakage = true;
      }
    }
    try {
      return runWith(seed, options);
    } finally {
      if (modelBreakage) {
        ModelMutations.clear();
      }
    }
  }

  /**
   * Batched application's bounds in every simulated DC: small against the workload's few objects,
   * so both bounds cut runs and runs both of one entity and of several are applied.
   */
  static final int MAX_TRANSACTIONS_PER_APPLICATION = 8;
  static final int MAX_ENTITIES_PER_APPLICATION = 3;

  /** The production receiver core, with the breakages the options name. */
  private static ReceiverCore receiver(SimulatedDataCentre dataCentre, GeoOptions options,
      int[] ids) {
    List<Integer> peers = new ArrayList<>();
    for (int id : ids) {
      peers.add(id);
    }
    Set<ReplicationMutations.Mutation> mutations = new HashSet<>();
    for (ReplicationMutations.Mutation mutation : ReplicationMutations.Mutation.values()) {
      if (options.mutations().contains(mutation.name())) {
        mutations.add(mutation);
      }
    }
    return new ReceiverCore(dataCentre.id, peers, new ReceiverLimits(
        options.maxApplyingTransactions(), 4 * options.pullIntervalMillis(), 20,
        options.appliedRecordIntervalMillis(), options.truncateIntervalMillis(),
        MAX_TRANSACTIONS_PER_APPLICATION, MAX_ENTITIES_PER_APPLICATION), mutations);
  }

  /** Every breakage a run may switch on, by name: the replication core's and the model's. */
  public static List<String> mutationNames() {
    List<String> names = new ArrayList<>();
    for (ReplicationMutations.Mutation mutation : ReplicationMutations.Mutation.values()) {
      names.add(mutation.name());
    }
    for (ModelMutations.Mutation mutation : ModelMutations.Mutation.values()) {
      names.add(mutation.name());
    }
    names.add(GeoWorkload.IGNORE_CAUSAL_TOKENS);
    return names;
  }

  private static Result runWith(long seed, GeoOptions options) {
    Scheduler scheduler = new Scheduler(seed, 300);
    int[] ids = new int[options.dataCentres()];
    for (int index = 0; index < ids.length; index++) {
      ids[index] = dev.troupe.model.causal.DataCentreIds.of("dc" + index);
    }
    SimulatedDataCentres dataCentres = new SimulatedDataCentres(scheduler, options,
        dataCentre -> receiver(dataCentre, options, ids));
    GeoWorkload workload = new GeoWorkload(scheduler, options, dataCentres);
    workload.start();
    dataCentres.scheduleFaults();
    long healAt = (long) (options.durationMillis() * (1 - options.faultFreeShare()));
    scheduler.schedule(healAt, "heal", dataCentres::heal);
    List<Violation> violations = new ArrayList<>();
    long quiescentAt = -1;
    try {
      scheduler.runUntil(options.durationMillis());
      long deadline = options.durationMillis() + options.quiescenceMaxMillis();
      while (scheduler.nowMillis() < deadline) {
        if (dataCentres.converged()) {
          quiescentAt = scheduler.nowMillis();
          break;
        }
        scheduler.runUntil(scheduler.nowMillis() + 20);
      }
    } catch (RuntimeException failure) {
      violations.add(new Violation(CausalChecker.Kind.RUN_STOPPED, "t="
          + scheduler.nowMillis(), failure.toString()));
    }
    CausalHistory history = workload.history();
    if (violations.isEmpty()) {
      violations.addAll(CausalChecker.check(history));
      SortedMap<String, SortedMap<String, ObjectRead>> finalReads = new TreeMap<>();
      SortedMap<String, SortedMap<String, String>> finalStates = new TreeMap<>();
      for (SimulatedDataCentre dataCentre : dataCentres.dataCentres) {
        SortedMap<String, ObjectRead> reads = new TreeMap<>(dataCentre.readAll());
        // Objects of delete requests are not in the history: only convergence checks them.
        reads.keySet().removeIf(object -> object.startsWith(GeoWorkload.DELETED_OBJECTS));
        finalReads.put(dataCentre.name, reads);
        finalStates.put(dataCentre.name, dataCentre.canonicalStates());
      }
      if (quiescentAt < 0) {
        violations.add(new Violation(CausalChecker.Kind.CONVERGENCE, "the end",
            "replication did not catch up within " + options.quiescenceMaxMillis()
                + " ms after the load: " + dataCentres.describe()));
      }
      violations.addAll(ConvergenceChecker.check(history, finalReads, finalStates));
    }
    long crashes = 0;
    long truncated = 0;
    long applied = 0;
    long appliedTransactions = 0;
    long skipped = 0;
    for (SimulatedDataCentre dataCentre : dataCentres.dataCentres) {
      crashes += dataCentre.crashes;
      truncated += dataCentre.truncatedEntries;
      applied += dataCentre.remoteApplications;
      appliedTransactions += dataCentre.remoteTransactionsInApplications;
      skipped += dataCentre.skippedReapplications;
    }
    String summary = "seed " + seed + ": " + (violations.isEmpty() ? "ok" : "FAILED") + " ("
        + history.transactions().size() + " transactions " + workload.counts() + ", "
        + applied + " remote applications of " + appliedTransactions + " transactions, "
        + skipped + " re-applications skipped, "
        + crashes + " crashes, " + dataCentres.partitions + " partitions, "
        + dataCentres.forwardedPulls + " forwarded pulls, " + truncated
        + " log entries truncated, " + dataCentres.batchesRefused + " batches refused, "
        + (quiescentAt < 0 ? "never quiescent" : "quiescent at " + quiescentAt + " ms") + ", "
        + scheduler.steps() + " steps)";
    String trace = violations.isEmpty() ? "" : scheduler.trace().toString();
    return new Result(seed, List.copyOf(violations), summary, scheduler.steps(), history, trace);
  }
}
