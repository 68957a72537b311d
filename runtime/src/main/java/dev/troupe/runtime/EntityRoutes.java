package dev.troupe.runtime;

import dev.troupe.model.EntityId;

/**
 * How a message reaches an entity this node hosts: through its partition's {@link EntityRegistry},
 * or straight to its actor when it is active (the registry's {@link DirectRoutes}, on a single
 * node). Every sender of entity messages uses it, so that one entity's messages keep the order
 * their senders sent them in. Thread-safe; never blocks.
 */
@FunctionalInterface
interface EntityRoutes {
  void route(EntityId entity, EntityActor.Routed message);
}
