package dev.troupe.model.causal;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import java.util.Objects;

/**
 * The records of a <b>bootstrap image</b> (docs/ARCHITECTURE.md, "Bootstrapping a new data
 * centre"): what a running DC streams to a DC added to the set, in this order: one {@link Began},
 * one {@link EntityImage} per stored entity, one {@link Ended}. The new DC installs the entity
 * states, takes the start vector as its received and applied vectors, pulls every origin's log
 * after it, and serves clients once its applied vector covers the end vector.
 */
public sealed interface BootstrapImage {

  /**
   * The image's start.
   *
   * @param sourceDc the serving DC
   * @param startVector taken before any entity was read: the source's applied vector, with its own
   *     entry at its local safe timestamp. Every entity state that follows contains every
   *     transaction at or below it.
   */
  record Began(int sourceDc, DependencyVector startVector) implements BootstrapImage {
    public Began {
      Objects.requireNonNull(startVector, "startVector");
    }
  }

  /**
   * One entity's current state at the source, with all its CRDT metadata and hidden keys
   * (replication markers included).
   *
   * @param versionAtSource the entity's version at the source: the commit timestamp of the last
   *     journal record the state contains (0 for an entity never written there)
   */
  record EntityImage(EntityId entity, long versionAtSource, EntityState state)
      implements BootstrapImage {
    public EntityImage {
      Objects.requireNonNull(entity, "entity");
      Objects.requireNonNull(state, "state");
    }
  }

  /**
   * The image's end.
   *
   * @param endVector taken after the last entity was read (as the start vector): a transaction of
   *     an entity state may be as late as it, and no later
   * @param entityCount how many {@link EntityImage}s came, so a cut stream is told from a whole one
   */
  record Ended(DependencyVector endVector, long entityCount) implements BootstrapImage {
    public Ended {
      Objects.requireNonNull(endVector, "endVector");
    }
  }
}
