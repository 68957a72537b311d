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
   * One entity's part. Its state is rendered for clients only when first asked for: an embedded
   * caller that only needs to know the transaction committed does not pay for rendering every
   * participant's whole state.
   */
  public static final class EntityOutcome {
    private final EntityId entity;
    private final long readVersion;
    private final long version;
    private final boolean wrote;
    private final java.util.function.Supplier<JsonNode> renderer;
    private JsonNode state;

    /**
     * @param readVersion the entity's durable version when the transaction read it (it held the
     *     entity's locks from then on, so under the serial policy no other write came between)
     * @param version the entity's version after the transaction (its commit timestamp there when
     *     it wrote; the read version otherwise)
     * @param wrote whether the transaction changed this entity
     * @param renderer renders the entity's state right after the transaction, as clients see it
     */
    public EntityOutcome(EntityId entity, long readVersion, long version, boolean wrote,
        java.util.function.Supplier<JsonNode> renderer) {
      this.entity = java.util.Objects.requireNonNull(entity, "entity");
      this.readVersion = readVersion;
      this.version = version;
      this.wrote = wrote;
      this.renderer = java.util.Objects.requireNonNull(renderer, "renderer");
    }

    public EntityId entity() {
      return entity;
    }

    public long readVersion() {
      return readVersion;
    }

    public long version() {
      return version;
    }

    public boolean wrote() {
      return wrote;
    }

    /** The entity's state right after the transaction, as clients see it (rendered once). */
    public synchronized JsonNode state() {
      if (state == null) {
        state = renderer.get();
      }
      return state;
    }

    @Override
    public String toString() {
      return "EntityOutcome[" + entity + ", readVersion=" + readVersion + ", version=" + version
          + ", wrote=" + wrote + "]";
    }
  }
}
