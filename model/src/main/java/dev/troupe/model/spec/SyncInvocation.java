package dev.troupe.model.spec;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import java.util.Objects;

/**
 * A {@link SyncSpec} resolved for one invocation: the action to invoke on another entity in the
 * same transaction, with its arguments computed from the calling action's arguments.
 *
 * @param entity the target entity
 * @param action the action to invoke on it
 * @param arguments the arguments, ready to pass to {@link CompiledType#invoke}; a fresh object
 *     owned by the caller
 */
public record SyncInvocation(EntityId entity, String action, ObjectNode arguments) {
  public SyncInvocation {
    Objects.requireNonNull(entity, "entity");
    Objects.requireNonNull(action, "action");
    Objects.requireNonNull(arguments, "arguments");
  }
}
