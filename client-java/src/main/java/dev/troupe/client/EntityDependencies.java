package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;

/** The dependencies an entity ({@code Type/id}) leads and those it follows, at a version. */
public record EntityDependencies(String entity, long version, List<Dependency> leads,
    List<Dependency> follows) {
  static EntityDependencies from(JsonNode body) {
    return new EntityDependencies(Wire.text(body, "entity"), Wire.number(body, "version"),
        Wire.list(body, "leads", Dependency::from), Wire.list(body, "follows", Dependency::from));
  }
}
