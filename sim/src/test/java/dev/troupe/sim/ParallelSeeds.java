package dev.troupe.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Runs many simulation seeds on every core of the machine, for the seed sweeps of the tests.
 *
 * <p>Why it is safe: a seed's run is a deterministic function of its seed and options (the
 * simulator's clock, randomness, disks and network are its own; what is static is per-thread
 * scratch buffers, a synchronized cache of compiled dependency expressions, and the breakage
 * switches of the mutation tests, which run their seeds one at a time and never beside a sweep),
 * so running seeds side by side changes no result, and the results
 * come back in the order asked for, so a test checks and reports them exactly as one after the
 * other. Why: the sweeps were the longest part of the simulator module's CI time (600 seeds one
 * after the other took 66 s of SimulationTest's 107 on the 2-core machine, 35 s side by side).
 * Not used by ClusterSimulationTest: its 300 three-node seeds took 32.6 s two at a time against
 * 27.6 s one at a time (why is not traced; something in the multi-node runs contends). {@code
 * -Dtroupe.sim.threads=N} sets the number of seeds run at once (default: the cores).
 */
final class ParallelSeeds {
  private ParallelSeeds() {}

  /**
   * The results of seeds 1 to {@code seedsPerConfiguration} under each of {@code configurations},
   * in that order (every seed of the first configuration, then of the second...).
   */
  static List<Simulation.Result> run(List<Simulation.Options> configurations,
      long seedsPerConfiguration, long maxSteps) {
    int threads = Integer.getInteger("troupe.sim.threads",
        Math.max(1, Runtime.getRuntime().availableProcessors()));
    try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
      List<Future<Simulation.Result>> runs = new ArrayList<>();
      for (Simulation.Options options : configurations) {
        for (long seed = 1; seed <= seedsPerConfiguration; seed++) {
          long thisSeed = seed;
          runs.add(pool.submit(() -> Simulation.run(thisSeed, options, maxSteps)));
        }
      }
      List<Simulation.Result> results = new ArrayList<>(runs.size());
      for (int index = 0; index < runs.size(); index++) {
        try {
          results.add(runs.get(index).get());
        } catch (ExecutionException failed) {
          throw new AssertionError("seed " + (index % seedsPerConfiguration + 1) + " of "
              + configurations.get((int) (index / seedsPerConfiguration)) + " threw",
              failed.getCause());
        } catch (InterruptedException interrupted) {
          Thread.currentThread().interrupt();
          throw new AssertionError("interrupted", interrupted);
        }
      }
      return results;
    }
  }
}
