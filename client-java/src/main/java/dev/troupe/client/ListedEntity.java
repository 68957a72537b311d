package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Optional;

/**
 * One entity of a listing: its id, its version (now, or as of the listing's {@code at}) and, when
 * the listing asked for states, its state.
 */
public record ListedEntity(String id, long version, Optional<ObjectNode> state) {
  static ListedEntity from(JsonNode body) {
    return new ListedEntity(Wire.text(body, "id"), Wire.number(body, "version"),
        Wire.optionalState(body, "state"));
  }
}
