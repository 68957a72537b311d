package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * An entity as read: its type, id, keys with their values, and the version they were written at
 * (a commit timestamp: versions of one entity grow with every write).
 */
public record EntityState(String type, String id, ObjectNode state, long version) {
  static EntityState from(JsonNode body) {
    return new EntityState(Wire.text(body, "type"), Wire.text(body, "id"),
        Wire.state(body, "state"), Wire.number(body, "version"));
  }
}
