package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.NoSuchElementException;

/** A consistent cut: each state equals the entity read with {@code at=timestamp}. */
public record SnapshotRead(long timestamp, List<ReadOutcome> entities) {
  static SnapshotRead from(JsonNode body) {
    return new SnapshotRead(Wire.number(body, "timestamp"),
        Wire.list(body, "entities", ReadOutcome::from));
  }

  /** The state of {@code entity} ({@code Type/id}) in the cut; NoSuchElementException if not read. */
  public ObjectNode state(String entity) {
    return entities.stream().filter(read -> read.entity().equals(entity)).findFirst()
        .orElseThrow(() -> new NoSuchElementException("the cut did not read " + entity)).state();
  }
}
