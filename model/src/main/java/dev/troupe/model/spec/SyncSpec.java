package dev.troupe.model.spec;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One synchronous call of an action on another entity, made in the same transaction as the calling
 * action, all or nothing (DESIGN.md, "Data model": {@code sync}). For example
 * {@code {entity: "Account/{from}", action: withdraw, args: {amount: amount}}}.
 *
 * <p>The target entity and the arguments are functions of the calling action's parameters only,
 * never of entity state: that way the set of entities a transaction touches is known before it
 * runs, which planned transactions need (they declare their access set up front).
 *
 * @param entity a {@code Type/id} template; {@code {name}} is replaced by the value of parameter
 *     {@code name}, which must be declared as {@code string} or {@code int}
 * @param action the action to invoke on the target entity; checked against the target type when the
 *     transaction runs, since types may be defined in any order
 * @param arguments argument name to CEL expression over the calling action's parameters, in
 *     declaration order
 */
public record SyncSpec(String entity, String action, Map<String, String> arguments) {
  public SyncSpec {
    Objects.requireNonNull(entity, "entity");
    Objects.requireNonNull(action, "action");
    arguments =
        Collections.unmodifiableMap(new LinkedHashMap<>(arguments == null ? Map.of() : arguments));
  }

  /** One piece of an entity template: literal text or a parameter placeholder. */
  public sealed interface TemplatePart {
    /** Text copied as is. */
    record Literal(String text) implements TemplatePart {}

    /** Replaced by the value of the named parameter. */
    record Placeholder(String parameter) implements TemplatePart {}
  }

  /**
   * The entity template split into literals and placeholders.
   *
   * @throws TroupeException with {@code INVALID_REQUEST} for an unbalanced brace or an empty
   *     placeholder (no path in the message; the caller adds it)
   */
  public List<TemplatePart> entityTemplate() {
    List<TemplatePart> parts = new ArrayList<>();
    int position = 0;
    while (position < entity.length()) {
      int open = entity.indexOf('{', position);
      int close = entity.indexOf('}', position);
      if (close >= 0 && (open < 0 || close < open)) {
        throw TroupeException.invalid("'}' without '{' in entity template '" + entity + "'");
      }
      if (open < 0) {
        parts.add(new TemplatePart.Literal(entity.substring(position)));
        break;
      }
      if (open > position) {
        parts.add(new TemplatePart.Literal(entity.substring(position, open)));
      }
      if (close < 0) {
        throw TroupeException.invalid("'{' without '}' in entity template '" + entity + "'");
      }
      String parameter = entity.substring(open + 1, close);
      if (parameter.isEmpty() || parameter.indexOf('{') >= 0) {
        throw TroupeException.invalid(
            "a placeholder must name one parameter, as in {from}, in entity template '"
                + entity
                + "'");
      }
      parts.add(new TemplatePart.Placeholder(parameter));
      position = close + 1;
    }
    return List.copyOf(parts);
  }

  /** The canonical JSON form: {@code {"entity": ..., "action": ..., "args": {...}}}. */
  public JsonNode toJson() {
    ObjectNode node = Json.NODES.objectNode();
    node.put("entity", entity);
    node.put("action", action);
    ObjectNode args = node.putObject("args");
    arguments.forEach(args::put);
    return node;
  }
}
