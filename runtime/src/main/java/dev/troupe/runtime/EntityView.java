package dev.troupe.runtime;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;

/**
 * What a client sees of an entity: its state rendered as JSON (declared keys with their defaults)
 * and its version, the commit timestamp of its latest write.
 */
public record EntityView(EntityId entity, JsonNode state, long version) {}
