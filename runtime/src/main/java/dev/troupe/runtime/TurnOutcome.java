package dev.troupe.runtime;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityState;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.StateProjection;

/**
 * The answer to a write or action, given only once it is durable. Immutable.
 *
 * <p>The state is rendered to JSON only when asked for: most writers need just the version.
 */
public final class TurnOutcome {
  private final long version;
  private final boolean changed;
  private final EntityState state;
  private final CompiledType type;

  TurnOutcome(long version, boolean changed, EntityState state, CompiledType type) {
    this.version = version;
    this.changed = changed;
    this.state = state;
    this.type = type;
  }

  /** The entity's version after the turn (the turn's commit timestamp when it wrote). */
  public long version() {
    return version;
  }

  /** False when the turn had nothing to write (e.g. removing an absent element). */
  public boolean changed() {
    return changed;
  }

  /** The entity's state right after the turn, as clients see it (a fresh tree each call). */
  public JsonNode state() {
    return type.render(state);
  }

  /**
   * The keys {@code projection} names of the state right after the turn ({@link
   * CompiledType#render(EntityState, StateProjection)}): costs those keys, not the whole state.
   */
  public JsonNode state(StateProjection projection) {
    return type.render(state, projection);
  }

  /** The state unrendered, hidden keys included (the engine's own use: delivered markers). */
  EntityState rawState() {
    return state;
  }

  @Override
  public String toString() {
    return "TurnOutcome[version=" + version + ", changed=" + changed + "]";
  }
}
