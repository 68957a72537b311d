package dev.troupe.model.value;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The replicated state of one key: an operation-based CRDT. Immutable; every change returns a new
 * value. Concurrent operations commute (tested as properties), which is what replication between
 * data centres relies on, given causal delivery of operations.
 */
public sealed interface Value permits RegisterValue, CounterValue, SetValue, DependencyTable {
  KeyKind kind();

  /** What clients see. */
  JsonNode toJson();
}
