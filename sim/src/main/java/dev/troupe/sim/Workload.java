package dev.troupe.sim;

import dev.troupe.model.spec.CompiledType;
import java.util.Map;

/**
 * One workload of a {@link Simulation}: its entity types, its opening state, the requests its
 * clients issue and the checks run on the node's durable state after the run. Several workloads
 * compose in one run: they share the node, its faults and the client network, and each checks its
 * own entities (their types are disjoint).
 */
interface Workload {
  /** The entity types this workload uses, by type name, compiled for the run's admission. */
  Map<String, CompiledType> types();

  /** Writes the opening state (before any fault). */
  void preload();

  /**
   * Issues one request of client {@code client} (its {@code sequence}th); returns it, so the
   * harness can time it out. {@code next} (the client's next request) must be the call's.
   */
  ClientCall issue(String client, int sequence, Runnable next);

  /** After the run, with the node up: the first violated property, or null. */
  String check();

  /** Requests issued so far. */
  Iterable<? extends ClientCall> calls();

  /** Serialization-graph edges its serializability checks examined (0 if none ran). */
  int serializationEdges();
}
