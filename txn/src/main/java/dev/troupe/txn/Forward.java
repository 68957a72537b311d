package dev.troupe.txn;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.KeyReference;

/**
 * An operation one participant of a transaction forwards to another to keep a declared dependency
 * (smsa.txt §2.3: "the operations that need to be forwarded to the other keys on the other
 * actors"). Computed by {@link DependencyEvaluator} when a part is evaluated, carried in the
 * part's yes vote, and applied by the target inside the same transaction, before it votes: so a
 * dependency holds in every committed state, never only eventually.
 *
 * <p>Forwards are values: a participant evaluated again from the same inputs forwards equal ones,
 * which is how the coordinator sees that a cascade has settled.
 */
public sealed interface Forward {
  /** The entity that applies this forward. */
  EntityId target();

  /** The leader key of an update dependency changed from {@code oldValue} to {@code newValue}. */
  record LeaderChanged(Dependency dependency, JsonNode oldValue, JsonNode newValue)
      implements Forward {
    @Override
    public EntityId target() {
      return dependency.follower().entity();
    }
  }

  /**
   * The leader key was deleted: a delete dependency deletes the follower; an update dependency is
   * deregistered (an aggregate drops the leader's contribution).
   */
  record LeaderDeleted(Dependency dependency) implements Forward {
    @Override
    public EntityId target() {
      return dependency.follower().entity();
    }
  }

  /** The follower key was deleted: the leader forgets the dependency (smsa.txt §2.3.2). */
  record FollowerDeleted(Dependency dependency) implements Forward {
    @Override
    public EntityId target() {
      return dependency.leader().entity();
    }
  }

  /**
   * The leader recorded a new dependency: the follower records it and takes the leader's value
   * (smsa.txt §2.3.5). {@code leaderValue} is null for a delete dependency.
   */
  record Registered(Dependency dependency, JsonNode leaderValue) implements Forward {
    @Override
    public EntityId target() {
      return dependency.follower().entity();
    }
  }

  /**
   * A follower key took a value and its type declares that it follows this dependency (a {@code
   * DependencySpec}), which it does not yet: the leader registers it as for {@link
   * Turn.RegisterDependency} (so its key must exist) and answers with {@link Registered}.
   */
  record RegistrationRequested(Dependency dependency) implements Forward {
    @Override
    public EntityId target() {
      return dependency.leader().entity();
    }
  }

  /** The leader forgot a dependency at the client's request: the follower forgets it too. */
  record Deregistered(Dependency dependency) implements Forward {
    @Override
    public EntityId target() {
      return dependency.follower().entity();
    }
  }

  /**
   * A registration's walk along the dependencies of its kind, to refuse cycles and chains longer
   * than the limit: {@code DOWNSTREAM} from the new dependency's follower through the keys it
   * leads, {@code UPSTREAM} from its leader through the keys it follows. {@code depth} is the
   * number of dependencies between {@code at} and the new one's end. The walk reads (and so
   * read-locks) every key it visits, so a concurrent registration that would close a cycle
   * conflicts with it.
   */
  record Probe(Dependency registered, KeyReference at, Direction direction, int depth)
      implements Forward {
    @Override
    public EntityId target() {
      return at.entity();
    }
  }

  enum Direction {
    UPSTREAM,
    DOWNSTREAM
  }

  /** The key this forward reads or writes at its target (the key locks are taken on). */
  default String keyAtTarget() {
    return switch (this) {
      case LeaderChanged changed -> changed.dependency().follower().key();
      case LeaderDeleted deleted -> deleted.dependency().follower().key();
      case FollowerDeleted deleted -> deleted.dependency().leader().key();
      case Registered registered -> registered.dependency().follower().key();
      case RegistrationRequested requested -> requested.dependency().leader().key();
      case Deregistered deregistered -> deregistered.dependency().follower().key();
      case Probe probe -> probe.at().key();
    };
  }

  /** Whether applying it only reads its key (a probe). */
  default boolean readsOnly() {
    return this instanceof Probe;
  }

  /**
   * Whether it needs no lock at its target: none does. (A leader once forgot a deleted
   * follower's dependency without one, reasoning that the follower key orders the two; but the
   * order at the follower is not the order at the leader: a registration committed at the cart
   * may still be only prepared at its product when the deletion that followed it there forgets
   * "nothing" at the product, whose record then outlives the cart's. The cluster simulator found
   * it, seed 509: commit and prepare come from different nodes, so nothing orders their arrival.)
   * Kept as the one place that says so.
   */
  default boolean needsNoLock() {
    return false;
  }
}
