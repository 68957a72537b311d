package dev.troupe.model.dependency;

import java.util.Locale;

/** What a dependency forwards from its leader key to its follower key (smsa.txt §2.3.1). */
public enum DependencyKind {
  /**
   * A change of the leader's value updates the follower through the dependency's function; the
   * leader's deletion deregisters the dependency and leaves the follower's value (an aggregate
   * drops the leader's contribution).
   */
  UPDATE,
  /** The leader's deletion deletes the follower (a foreign key with cascading delete). */
  DELETE;

  public String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** The kind named {@code name}, or null. */
  public static DependencyKind fromWireName(String name) {
    for (DependencyKind kind : values()) {
      if (kind.wireName().equals(name)) {
        return kind;
      }
    }
    return null;
  }
}
