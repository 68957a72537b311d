package dev.troupe.storage;

import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import java.util.List;

/** The operations one transaction applies to one entity, in order. */
public record EntityWrite(EntityId entity, List<Operation> operations) {
  public EntityWrite {
    operations = List.copyOf(operations);
  }
}
