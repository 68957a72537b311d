package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** One end of a dependency: a key of an entity ({@code Type/id}). */
public record KeyReference(String entity, String key) {
  ObjectNode json() {
    return Wire.NODES.objectNode().put("entity", entity).put("key", key);
  }

  static KeyReference from(JsonNode body) {
    return new KeyReference(Wire.text(body, "entity"), Wire.text(body, "key"));
  }
}
