package dev.troupe.model.dependency;

import dev.troupe.model.EntityId;
import dev.troupe.model.TroupeException;

/** One key of one entity: a dependency's leader or follower. */
public record KeyReference(EntityId entity, String key) {
  public KeyReference {
    if (entity == null) {
      throw TroupeException.invalid("a dependency end needs an entity");
    }
    if (key == null || key.isEmpty()) {
      throw TroupeException.invalid("a dependency end needs a key");
    }
    if (DependencyKeys.isHidden(key)) {
      throw TroupeException.invalid(
          "keys starting with '$' hold Troupe's own records and cannot take part in a dependency");
    }
  }

  @Override
  public String toString() {
    return entity + "." + key;
  }
}
