package dev.troupe.runtime;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The answer to a write or action, given only once it is durable.
 *
 * @param version the entity's version after the turn (the turn's commit timestamp when it wrote)
 * @param state the entity's state right after the turn
 * @param changed false when the turn had nothing to write (e.g. removing an absent element)
 */
public record TurnOutcome(long version, JsonNode state, boolean changed) {}
