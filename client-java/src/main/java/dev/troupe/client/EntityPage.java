package dev.troupe.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Optional;

/**
 * One page of a type's entities, ordered by id. {@code next} is the cursor of the following page
 * (give it to {@link ListQuery#after}), empty on the last page; a page may hold fewer entities
 * than its limit and still have a next.
 */
public record EntityPage(String type, List<ListedEntity> entities, Optional<String> next) {
  static EntityPage from(JsonNode body) {
    JsonNode next = body.get("next");
    return new EntityPage(body.path("type").asText(""),
        Wire.list(body, "entities", ListedEntity::from),
        next == null || next.isNull() ? Optional.empty() : Optional.of(next.asText()));
  }
}
