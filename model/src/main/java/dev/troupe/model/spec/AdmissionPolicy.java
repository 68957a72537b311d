package dev.troupe.model.spec;

/**
 * How the entities of a type admit concurrent turns (DESIGN.md, "Execution"). The admission policy
 * is a policy over the one turn mechanism, chosen per type; later policies ({@code keys},
 * {@code psac}) are added here without touching the entity turn itself.
 */
public enum AdmissionPolicy {
  /** One turn at a time per entity: the default, and always correct. */
  SERIAL("serial");

  private final String wireName;

  AdmissionPolicy(String wireName) {
    this.wireName = wireName;
  }

  /** The name used in type specs and API responses. */
  public String wireName() {
    return wireName;
  }

  /** The policy with this wire name, or {@code null} if there is none. */
  public static AdmissionPolicy fromWireName(String name) {
    for (AdmissionPolicy policy : values()) {
      if (policy.wireName.equals(name)) {
        return policy;
      }
    }
    return null;
  }
}
