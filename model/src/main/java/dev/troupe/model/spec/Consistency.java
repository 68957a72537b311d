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
 *   <li><b>Strong</b>, with a {@code home} DC: every write to an entity of the type runs at the
 *       home, serializably as in one DC; other DCs forward writes there and see the results
 *       causally.
 * </ul>
 *
 * @param strong whether the type is strong
 * @param home the home DC's name for a strong type, null for a causal one
 * @throws TroupeException with {@code INVALID_REQUEST}: a strong type without a valid home DC
 *     name, or a causal one with a home
 */
public record Consistency(boolean strong, String home) {
  /** The default: writes accepted in every DC. */
  public static final Consistency CAUSAL = new Consistency(false, null);

  public static final String CAUSAL_WIRE_NAME = "causal";
  public static final String STRONG_WIRE_NAME = "strong";

  public Consistency {
    if (strong && home == null) {
      throw TroupeException.invalid("consistency: a strong type names its home data centre"
          + " (\"home\": NAME)");
    }
    if (strong && !DataCentreIds.isValidName(home)) {
      throw TroupeException.invalid("home: '" + home + "' is not a data centre name (1-63"
          + " letters, digits, '-', '_' or '.')");
    }
    if (!strong && home != null) {
      throw TroupeException.invalid("home: only a strong type has a home data centre (add"
          + " \"consistency\": \"strong\")");
    }
  }

  /** A strong type homed at {@code home}. */
  public static Consistency strongAt(String home) {
    return new Consistency(true, home);
  }

  /** {@code causal} or {@code strong}. */
  public String wireName() {
    return strong ? STRONG_WIRE_NAME : CAUSAL_WIRE_NAME;
  }

  /**
   * Whether a DC named {@code dataCentreName} runs this type's writes: always for a causal type;
   * for a strong one only at its home, or on a node without a DC name (empty: a single DC, where
   * every type is serializable anyway).
   */
  public boolean writableAt(String dataCentreName) {
    return !strong || dataCentreName.isEmpty() || home.equals(dataCentreName);
  }

  /** Adds {@code consistency} and {@code home} to a spec's JSON; nothing for the default. */
  void addTo(ObjectNode node) {
    if (strong) {
      node.put("consistency", STRONG_WIRE_NAME);
      node.put("home", home);
    }
  }
}
