package dev.troupe.model.spec;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.TroupeException;
import dev.troupe.model.causal.DataCentreIds;

/**
 * A type's consistency across data centres (docs/ARCHITECTURE.md, "Strong types with a home DC").
 *
 * <ul>
 *   <li><b>Causal</b> (the default): every DC accepts the type's writes and replicates them
 *       asynchronously; concurrent writes merge (registers last-writer-wins, counters and sets as
 *       CRDTs). With peers, its preconditions may not read what its actions write ({@link
 *       CausalPreconditions}).
 *   <li><b>Strong</b>, with a home DC, one for the type ({@code home: NAME}) or one per entity
 *       given by a rule over its id ({@code home: {rule: CEL}}, {@link HomeRule}): every write to
 *       an entity of the type runs at its home, serializably as in one DC; other DCs forward
 *       writes there and see the results causally.
 * </ul>
 *
 * @param strong whether the type is strong
 * @param home the home DC's name of a strong type with one home; null for a causal type or a rule
 * @param homeRule the CEL rule giving each entity's home (compiled here to check it); null unless
 *     a strong type declares one
 * @throws TroupeException with {@code INVALID_REQUEST}: a strong type without exactly one of a
 *     valid home DC name and a rule that compiles, or a causal one with either
 */
public record Consistency(boolean strong, String home, String homeRule) {
  /** The default: writes accepted in every DC. */
  public static final Consistency CAUSAL = new Consistency(false, null, null);

  public static final String CAUSAL_WIRE_NAME = "causal";
  public static final String STRONG_WIRE_NAME = "strong";

  public Consistency {
    if (strong && home == null && homeRule == null) {
      throw TroupeException.invalid("consistency: a strong type names its home data centre"
          + " (\"home\": NAME, or \"home\": {\"rule\": CEL over id})");
    }
    if (home != null && homeRule != null) {
      throw TroupeException.invalid("home: a data centre name or a rule, not both");
    }
    if (strong && home != null && !DataCentreIds.isValidName(home)) {
      throw TroupeException.invalid("home: '" + home + "' is not a data centre name (1-63"
          + " letters, digits, '-', '_' or '.')");
    }
    if (strong && homeRule != null) {
      HomeRule.compile(homeRule);
    }
    if (!strong && (home != null || homeRule != null)) {
      throw TroupeException.invalid("home: only a strong type has a home data centre (add"
          + " \"consistency\": \"strong\")");
    }
  }

  /** A strong type or a causal one with a single home (null for causal). */
  public Consistency(boolean strong, String home) {
    this(strong, home, null);
  }

  /** A strong type homed at {@code home}. */
  public static Consistency strongAt(String home) {
    return new Consistency(true, home, null);
  }

  /** A strong type whose entities' homes {@code rule} gives. */
  public static Consistency strongByRule(String rule) {
    return new Consistency(true, null, rule);
  }

  /** {@code causal} or {@code strong}. */
  public String wireName() {
    return strong ? STRONG_WIRE_NAME : CAUSAL_WIRE_NAME;
  }

  /** Adds {@code consistency} and {@code home} to a spec's JSON; nothing for the default. */
  void addTo(ObjectNode node) {
    if (strong) {
      node.put("consistency", STRONG_WIRE_NAME);
      if (home != null) {
        node.put("home", home);
      } else {
        node.putObject("home").put("rule", homeRule);
      }
    }
  }
}
