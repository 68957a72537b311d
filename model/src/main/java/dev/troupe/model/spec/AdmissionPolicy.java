package dev.troupe.model.spec;

/**
 * How the entities of a type admit concurrent turns (DESIGN.md, "Execution"). The admission policy
 * is a policy over the one turn mechanism, chosen per type; later policies ({@code keys},
 * {@code psac}) are added here without touching the entity turn itself.
 */
public enum AdmissionPolicy {
  /**
   * One turn at a time per entity: the default, and always correct. A transaction locks the whole
   * entity until its decision.
   */
  SERIAL("serial"),
  /**
   * Key-level concurrency control (smsa.txt §3.3.4): a transaction locks only the keys its
   * operations read or write, so transactions and turns on disjoint keys of a hot entity proceed
   * side by side. An action's keys are those its preconditions and effects name; an action that
   * reads {@code state} as a whole locks the whole entity.
   */
  KEYS("keys"),
  /**
   * Path-Sensitive Atomic Commit (psac.txt): no locks; an action is admitted while transactions are
   * in progress when its preconditions hold in every possible outcome of them, rejected when they
   * hold in none, delayed otherwise; effects are applied in arrival order. Bounded by the type's
   * {@link PsacSettings}.
   */
  PSAC("psac");

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
