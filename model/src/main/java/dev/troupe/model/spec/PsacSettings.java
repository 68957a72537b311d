package dev.troupe.model.spec;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;

/**
 * The bounds of a type's PSAC gate (psac.txt §2.3; type spec field {@code psac}).
 *
 * @param maxInFlight most actions in progress on one entity at once; the outcome tree has at most
 *     2^maxInFlight leaves. 1 is plain two-phase commit (one action at a time).
 * @param maxOvertakes how many newcomers may be admitted past a delayed action before newcomers
 *     wait behind it (the fairness bound the paper leaves open, §5.1.3)
 */
public record PsacSettings(int maxInFlight, int maxOvertakes) {
  /** Most actions in progress any type may ask for: the tree has up to 2^10 = 1,024 leaves. */
  public static final int MAX_IN_FLIGHT_LIMIT = 10;

  public static final PsacSettings DEFAULTS = new PsacSettings(4, 16);

  public PsacSettings {
    if (maxInFlight < 1 || maxInFlight > MAX_IN_FLIGHT_LIMIT) {
      throw TroupeException.invalid("psac.maxInFlight must be 1 to " + MAX_IN_FLIGHT_LIMIT
          + ", was " + maxInFlight);
    }
    if (maxOvertakes < 0 || maxOvertakes > 1_000_000) {
      throw TroupeException.invalid("psac.maxOvertakes must be 0 to 1000000, was " + maxOvertakes);
    }
  }

  static PsacSettings fromJson(JsonNode node) {
    if (node == null) {
      return DEFAULTS;
    }
    if (!node.isObject()) {
      throw TroupeException.invalid("psac: must be an object {maxInFlight, maxOvertakes}");
    }
    node.fieldNames().forEachRemaining(field -> {
      if (!field.equals("maxInFlight") && !field.equals("maxOvertakes")) {
        throw TroupeException.invalid("psac." + field + ": unknown field (allowed: maxInFlight,"
            + " maxOvertakes)");
      }
    });
    return new PsacSettings(integer(node, "maxInFlight", DEFAULTS.maxInFlight()),
        integer(node, "maxOvertakes", DEFAULTS.maxOvertakes()));
  }

  private static int integer(JsonNode node, String field, int fallback) {
    JsonNode value = node.get(field);
    if (value == null) {
      return fallback;
    }
    if (!value.isIntegralNumber() || !value.canConvertToInt()) {
      throw TroupeException.invalid("psac." + field + " must be an integer, was " + value);
    }
    return value.intValue();
  }

  JsonNode toJson() {
    ObjectNode node = Json.NODES.objectNode();
    node.put("maxInFlight", maxInFlight);
    node.put("maxOvertakes", maxOvertakes);
    return node;
  }
}
