package dev.troupe.model.dependency;

/**
 * Where an entity keeps its dependency records: hidden keys next to the keys they describe. A leader
 * key {@code k} keeps its outgoing dependencies in {@code $out:k}; a follower key keeps its incoming
 * ones (with each leader's last forwarded value) in {@code $in:k}. Keys starting with '$' are
 * Troupe's own: clients cannot write them, states never render them, and key-level locking treats
 * them as part of the key they describe (so a dependency's registration and a write of its leader
 * key conflict). Other hidden keys (a data centre's replication marker, {@code $replicated:<dc>})
 * describe no key: they are locked as themselves and keep no dependency.
 */
public final class DependencyKeys {
  private static final String OUTGOING = "$out:";
  private static final String INCOMING = "$in:";

  private DependencyKeys() {}

  public static boolean isHidden(String key) {
    return !key.isEmpty() && key.charAt(0) == '$';
  }

  /** The hidden key holding the dependencies that {@code key} leads. */
  public static String outgoing(String key) {
    return OUTGOING + key;
  }

  /** The hidden key holding the dependencies that {@code key} follows. */
  public static String incoming(String key) {
    return INCOMING + key;
  }

  /**
   * The key a hidden key describes (its own name for a key that is not hidden): the key locks are
   * taken on.
   */
  public static String describedKey(String key) {
    if (key.startsWith(OUTGOING)) {
      return key.substring(OUTGOING.length());
    }
    if (key.startsWith(INCOMING)) {
      return key.substring(INCOMING.length());
    }
    return key;
  }

  /** Whether the key holds dependency records ({@code $out:k} or {@code $in:k}). */
  public static boolean isDependencyKey(String key) {
    return key.startsWith(OUTGOING) || key.startsWith(INCOMING);
  }

  public static boolean isOutgoing(String key) {
    return key.startsWith(OUTGOING);
  }
}
