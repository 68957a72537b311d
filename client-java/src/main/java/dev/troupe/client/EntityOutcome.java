package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;

/** What a transaction did to one entity ({@code Type/id}): the version it read and the one it wrote. */
public record EntityOutcome(String entity, long readVersion, long version, boolean wrote) {
  static EntityOutcome from(JsonNode body) {
    return new EntityOutcome(Wire.text(body, "entity"), Wire.number(body, "readVersion"),
        Wire.number(body, "version"), body.path("wrote").asBoolean());
  }
}
