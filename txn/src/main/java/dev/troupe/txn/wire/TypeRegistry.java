package dev.troupe.txn.wire;

import dev.troupe.model.spec.CompiledType;
import java.util.Optional;

/**
 * The receiving node's types, looked up by the {@link TypeReference} a message carries. Implemented
 * by the shell over its declared types (the runtime's type registry, the simulator's fixed types).
 */
@FunctionalInterface
public interface TypeRegistry {
  /**
   * The compiled type of this name at exactly this version; empty when this node does not know
   * that version (yet: a definition committed elsewhere may still be on its way).
   */
  Optional<CompiledType> find(String name, long version);
}
