package dev.troupe.runtime;

import dev.troupe.storage.StoreHealth;
import java.util.ArrayList;
import java.util.List;

/**
 * A node's readiness: whether it should receive traffic, and if not, why ({@code problems}, each
 * with a stable code a probe or an operator can switch on).
 *
 * @param problems what keeps the node from being ready; empty when ready
 * @param corruptionsDetected reads that met damaged data since the node started
 */
public record NodeHealth(List<Problem> problems, long corruptionsDetected) {
  /**
   * One reason the node is not ready.
   *
   * @param code {@code storage_failed}, {@code corrupt_data}, {@code internal_error} or {@code
   *     closed}
   * @param message what happened and what to do, for people
   */
  public record Problem(String code, String message) {}

  public boolean ready() {
    return problems.isEmpty();
  }

  /** The health of an engine that is {@code closed} or {@code failed}, over its store's. */
  static NodeHealth of(boolean closed, boolean failed, StoreHealth storage) {
    List<Problem> problems = new ArrayList<>();
    if (closed) {
      problems.add(new Problem("closed", "the engine is closed"));
    }
    if (failed) {
      problems.add(new Problem("internal_error",
          "the engine stopped after an internal error; see the log"));
    }
    if (!storage.accepting()) {
      problems.add(new Problem("storage_failed",
          "storage failed and refuses every write until the node restarts: " + storage.failure()));
    }
    if (!storage.intact()) {
      problems.add(new Problem("corrupt_data",
          storage.corruptionsDetected() + " read(s) met data that failed its integrity check; last: "
              + storage.lastCorruption() + ". Run troupe check (docs/OPERATIONS.md)"));
    }
    return new NodeHealth(List.copyOf(problems), storage.corruptionsDetected());
  }
}
