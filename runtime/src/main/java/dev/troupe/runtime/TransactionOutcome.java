package dev.troupe.runtime;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import java.util.List;

/**
 * A committed transaction, answered once every participant's commit is durable (so any later read
 * sees it).
 *
 * @param transactionId the id of the attempt that committed
 * @param entities every entity the transaction touched or read, in first-mention order
 */
public record TransactionOutcome(long transactionId, List<EntityOutcome> entities) {
  public TransactionOutcome {
    entities = List.copyOf(entities);
  }

  /**
   * One entity's part.
   *
   * @param readVersion the entity's durable version when the transaction read it (it held the
   *     entity's locks from then on, so under the serial policy no other write came between)
   * @param version the entity's version after the transaction (its commit timestamp there when it
   *     wrote; the read version otherwise)
   * @param wrote whether the transaction changed this entity
   * @param state the entity's state right after the transaction, as clients see it
   */
  public record EntityOutcome(EntityId entity, long readVersion, long version, boolean wrote,
      JsonNode state) {}
}
