package dev.troupe.txn;

import java.util.EnumSet;
import java.util.Set;

/**
 * Deliberate breakages of the cores, which only the deterministic simulator's tests switch on, to
 * show that its checkers catch a core that is wrong (issue 5). Production never activates one:
 * each fault point is a read of an empty set, and the cores behave exactly as without it.
 *
 * <p><b>Concurrency.</b> A single volatile reference: tests activate a mutation around a
 * single-threaded simulation run and deactivate it after ({@link #activate} returns the handle
 * that does).
 */
public final class Mutations {
  /** One breakage. */
  public enum Mutation {
    /**
     * A participant releases its locks as soon as it votes yes, not when its commit is submitted:
     * another transaction can then read and overwrite what the first one is about to commit.
     */
    RELEASE_LOCKS_AT_VOTE
  }

  private static volatile Set<Mutation> active = Set.of();

  private Mutations() {}

  /** Whether {@code mutation} is switched on (never, outside the simulator's tests). */
  static boolean isActive(Mutation mutation) {
    Set<Mutation> current = active;
    return !current.isEmpty() && current.contains(mutation);
  }

  /** Switches {@code mutation} on until the returned handle is closed. */
  public static Activation activate(Mutation mutation) {
    EnumSet<Mutation> next = active.isEmpty() ? EnumSet.noneOf(Mutation.class)
        : EnumSet.copyOf(active);
    next.add(mutation);
    active = Set.copyOf(next);
    return () -> {
      EnumSet<Mutation> remaining = EnumSet.noneOf(Mutation.class);
      remaining.addAll(active);
      remaining.remove(mutation);
      active = Set.copyOf(remaining);
    };
  }

  /** Switches a mutation off again. */
  @FunctionalInterface
  public interface Activation extends AutoCloseable {
    @Override
    void close();
  }
}
