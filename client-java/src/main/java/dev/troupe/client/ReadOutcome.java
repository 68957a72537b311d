package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** A state a transaction or a snapshot read read: the entity ({@code Type/id}), version, state. */
public record ReadOutcome(String entity, long version, ObjectNode state) {
  static ReadOutcome from(JsonNode body) {
    return new ReadOutcome(Wire.text(body, "entity"), Wire.number(body, "version"),
        Wire.state(body, "state"));
  }
}
