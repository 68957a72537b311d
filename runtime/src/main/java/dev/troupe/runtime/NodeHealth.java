package dev.troupe.runtime;

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
}
