package dev.troupe.model.spec;

import com.fasterxml.jackson.databind.node.ArrayNode;
import dev.troupe.model.dependency.DependencyKind;
import dev.troupe.model.value.KeyKind;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The declaration of an entity type (DESIGN.md, "Data model"): either declared keys and actions,
 * or schemaless (any key, register values, no actions).
 *
 * <p>Validated at construction with messages naming the offending path: the type name is a valid
 * entity type name; key names are CEL identifiers other than {@code state} and {@code params};
 * each action is filed under its own name; no parameter shares a name with a key (both would be
 * CEL variables); effects only assign declared keys; a schemaless type declares no keys or actions
 * and a declared type declares at least one of them. CEL compilation happens in {@link
 * CompiledType#compile}.
 *
 * @param name the type name
 * @param keys key name to declaration, in declaration order (null means none)
 * @param actions action name to declaration, in declaration order (null means none)
 * @param admission the admission policy (null means {@link AdmissionPolicy#SERIAL})
 * @param schemaless whether entities of this type take any key, as registers
 * @param psac the PSAC gate's bounds (null means {@link PsacSettings#DEFAULTS}); only meaningful
 *     with {@link AdmissionPolicy#PSAC}
 * @param dependencies dependencies every entity of the type follows (null means none)
 * @param consistency causal (null means {@link Consistency#CAUSAL}) or strong with a home DC
 * @throws TroupeException with {@code INVALID_REQUEST} naming the offending path
 */
public record TypeSpec(
    String name,
    Map<String, KeySpec> keys,
    Map<String, ActionSpec> actions,
    AdmissionPolicy admission,
    boolean schemaless,
    PsacSettings psac,
    List<DependencySpec> dependencies,
    Consistency consistency) {

  public TypeSpec(String name, Map<String, KeySpec> keys, Map<String, ActionSpec> actions,
      AdmissionPolicy admission, boolean schemaless, PsacSettings psac,
      List<DependencySpec> dependencies) {
    this(name, keys, actions, admission, schemaless, psac, dependencies, null);
  }

  public TypeSpec(String name, Map<String, KeySpec> keys, Map<String, ActionSpec> actions,
      AdmissionPolicy admission, boolean schemaless) {
    this(name, keys, actions, admission, schemaless, null, null);
  }

  public TypeSpec(String name, Map<String, KeySpec> keys, Map<String, ActionSpec> actions,
      AdmissionPolicy admission, boolean schemaless, PsacSettings psac) {
    this(name, keys, actions, admission, schemaless, psac, null);
  }

  public TypeSpec {
    Objects.requireNonNull(name, "name");
    keys = Collections.unmodifiableMap(new LinkedHashMap<>(keys == null ? Map.of() : keys));
    actions =
        Collections.unmodifiableMap(new LinkedHashMap<>(actions == null ? Map.of() : actions));
    admission = admission == null ? AdmissionPolicy.SERIAL : admission;
    psac = psac == null ? PsacSettings.DEFAULTS : psac;
    dependencies = dependencies == null ? List.of() : List.copyOf(dependencies);
    consistency = consistency == null ? Consistency.CAUSAL : consistency;
    validate(name, keys, actions, schemaless);
    validateDependencies(keys, admission, dependencies);
  }

  /** This declaration with another consistency (the rest unchanged). */
  public TypeSpec withConsistency(Consistency newConsistency) {
    return new TypeSpec(name, keys, actions, admission, schemaless, psac, dependencies,
        newConsistency);
  }

  /** A schemaless type: any key, register values, no actions, serial admission. */
  public static TypeSpec schemaless(String name) {
    return new TypeSpec(name, Map.of(), Map.of(), AdmissionPolicy.SERIAL, true);
  }

  /**
   * The canonical JSON form, the same shape {@link SpecParser} reads, so that it can be returned by
   * {@code GET /v1/types/{type}} and sent back unchanged: {@code {"type", "admission", "keys",
   * "actions"}} for a declared type, {@code {"type", "admission", "schemaless": true}} for a
   * schemaless one. Key defaults are always explicit.
   */
  public JsonNode toJson() {
    ObjectNode node = Json.NODES.objectNode();
    node.put("type", name);
    node.put("admission", admission.wireName());
    if (admission == AdmissionPolicy.PSAC) {
      node.set("psac", psac.toJson());
    }
    consistency.addTo(node);
    if (schemaless) {
      node.put("schemaless", true);
      return node;
    }
    ObjectNode keysNode = node.putObject("keys");
    keys.forEach((key, spec) -> keysNode.set(key, spec.toJson()));
    ObjectNode actionsNode = node.putObject("actions");
    actions.forEach((action, spec) -> actionsNode.set(action, spec.toJson()));
    if (!dependencies.isEmpty()) {
      ArrayNode dependenciesNode = node.putArray("dependencies");
      dependencies.forEach(dependency -> dependenciesNode.add(dependency.toJson()));
    }
    return node;
  }

  /**
   * Declared dependencies follow declared keys (a register for an update dependency), a family
   * follower names its member variable, and the leader template uses only {@code {id}} and that
   * variable.
   */
  private static void validateDependencies(Map<String, KeySpec> keys, AdmissionPolicy admission,
      List<DependencySpec> dependencies) {
    for (int i = 0; i < dependencies.size(); i++) {
      DependencySpec dependency = dependencies.get(i);
      String path = "dependencies[" + i + "]";
      String family = dependency.family();
      KeySpec key = keys.get(family == null ? dependency.follower() : family);
      if (key == null || key.family() != (family != null)) {
        throw TroupeException.invalid(path + ".follower: '" + dependency.follower()
            + "' is neither a declared key nor family[variable] of a declared key family");
      }
      String variable = dependency.memberVariable();
      if (variable != null && Names.problemWithVariableName(variable) != null) {
        throw TroupeException.invalid(path + ".follower: member variable: "
            + Names.problemWithVariableName(variable));
      }
      if (dependency.kind() == DependencyKind.UPDATE && key.kind() != KeyKind.REGISTER) {
        throw TroupeException.invalid(path + ".follower: an update dependency's follower must be"
            + " a register, '" + dependency.follower() + "' is a " + key.kind().wireName());
      }
      if ((dependency.kind() == DependencyKind.UPDATE) != (dependency.function() != null)) {
        throw TroupeException.invalid(path + ".function: " + (dependency.function() == null
            ? "an update dependency needs one" : "a delete dependency takes none"));
      }
      List<SyncSpec.TemplatePart> template;
      try {
        template = dependency.leaderTemplate();
      } catch (TroupeException e) {
        throw TroupeException.invalid(path + ".leader.entity: " + e.getMessage());
      }
      for (SyncSpec.TemplatePart part : template) {
        if (part instanceof SyncSpec.TemplatePart.Placeholder placeholder
            && !placeholder.parameter().equals(DependencySpec.ID_VARIABLE)
            && !placeholder.parameter().equals(variable)) {
          throw TroupeException.invalid(path + ".leader.entity: {" + placeholder.parameter()
              + "} is neither {id} nor the follower's member variable");
        }
      }
      if (dependency.leaderKey().isEmpty() || dev.troupe.model.dependency.DependencyKeys.isHidden(
          dependency.leaderKey())) {
        throw TroupeException.invalid(path + ".leader.key: must name a key, not a reserved one");
      }
    }
  }

  private static void validate(
      String name, Map<String, KeySpec> keys, Map<String, ActionSpec> actions, boolean schemaless) {
    if (!EntityId.isValidName(name)) {
      throw TroupeException.invalid(
          "type: '"
              + name
              + "' is not a valid type name (non-empty, no '/' or control characters)");
    }
    if (schemaless) {
      if (!keys.isEmpty() || !actions.isEmpty()) {
        throw TroupeException.invalid(
            "schemaless: a schemaless type takes any key and has no actions, so it declares no"
                + " keys or actions");
      }
      return;
    }
    if (keys.isEmpty() && actions.isEmpty()) {
      throw TroupeException.invalid(
          "a type declares keys or actions, or is \"schemaless\": true; this one has neither");
    }
    keys.forEach(
        (key, spec) -> {
          String problem = Names.problemWithVariableName(key);
          if (problem != null) {
            throw TroupeException.invalid("keys." + key + ": key name " + problem);
          }
          if (spec == null) {
            throw TroupeException.invalid("keys." + key + ": missing key declaration");
          }
        });
    actions.forEach(
        (actionName, action) -> {
          if (action == null || !action.name().equals(actionName)) {
            throw TroupeException.invalid(
                "actions." + actionName + ": filed under another name than its own");
          }
          for (String param : action.params().keySet()) {
            if (keys.containsKey(param)) {
              throw TroupeException.invalid(
                  action.path()
                      + ".params."
                      + param
                      + ": parameter has the name of a key; rename one of them (both are CEL"
                      + " variables)");
            }
          }
          action.members().forEach((alias, binding) -> {
            String memberPath = action.path() + ".members." + alias;
            KeySpec family = keys.get(binding.family());
            if (family == null || !family.family()) {
              throw TroupeException.invalid(memberPath + ": '" + binding.family()
                  + "' is not a key family (declare it with family: true)");
            }
            KeySpec sameName = keys.get(alias);
            if (sameName != null && !alias.equals(binding.family())) {
              throw TroupeException.invalid(memberPath + ": the variable has the name of key '"
                  + alias + "' but stands for a member of '" + binding.family() + "'");
            }
          });
          for (String key : action.effects().keySet()) {
            KeySpec declared = keys.get(key);
            boolean member = action.members().containsKey(key);
            if (!member && (declared == null || declared.family())) {
              throw TroupeException.invalid(
                  action.path()
                      + ".effect."
                      + key
                      + (declared != null
                          ? ": '" + key + "' is a key family; bind a member under members and"
                              + " assign that"
                          : ": no such key; declared keys: "
                              + (keys.isEmpty() ? "none" : String.join(", ", keys.keySet()))));
            }
          }
        });
  }
}
