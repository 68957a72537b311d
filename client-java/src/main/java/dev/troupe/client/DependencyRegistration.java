package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Optional;

/**
 * The answer to a registration: the dependency, or (replayed, rebuilt after a lost answer) only
 * its id and the transaction that registered it.
 */
public record DependencyRegistration(String id, long txId, Optional<Dependency> dependency,
    boolean replayed) {
  static DependencyRegistration from(JsonNode body, boolean replayed) {
    if (body.has("kind")) {
      Dependency dependency = Dependency.from(body);
      return new DependencyRegistration(dependency.id(), Wire.number(body, "txId"),
          Optional.of(dependency), replayed);
    }
    return new DependencyRegistration(body.path("id").asText(""), Wire.number(body, "txId"),
        Optional.empty(), replayed);
  }
}
