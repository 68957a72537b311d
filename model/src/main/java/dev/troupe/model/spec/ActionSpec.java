package dev.troupe.model.spec;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The declaration of one action of a type: typed parameters, preconditions and effects written in
 * CEL, and synchronous calls on other entities.
 *
 * <p>Preconditions and effects are pure functions of (entity state, parameters): PSAC
 * (psac.txt) admits concurrent actions by evaluating exactly these against the possible outcomes of
 * in-flight actions, so they must not depend on anything else.
 *
 * <p>Validated at construction, with messages that name the offending path ({@code
 * actions.withdraw.params.x: ...}): the name and parameter names are CEL identifiers, parameters do
 * not use the reserved names {@code state} and {@code params}, expressions are non-blank, sync
 * templates only use declared {@code string} or {@code int} parameters, and the action does
 * something (has a precondition, an effect or a sync call). Whether effects name declared keys,
 * and whether parameter names clash with key names, is checked by {@link TypeSpec}; whether the
 * expressions compile, by {@link CompiledType#compile}.
 *
 * @param name the action's name, unique within its type
 * @param params parameter name to type, in declaration order (null means none)
 * @param members variable name to the member of a key family it stands for, chosen by an argument
 *     ({@code {"checking": "checking[customer]"}}); the variable reads and the effect under its
 *     name writes that member key, so the keys an action touches are known from its arguments
 *     before it runs (null means none)
 * @param preconditions CEL expressions that must all evaluate to true, checked in order (null
 *     means none)
 * @param effects key to CEL expression computing the key's new value, in declaration order (null
 *     means none)
 * @param sync calls on other entities made in the same transaction (null means none)
 * @param send causal messages to actions of other entities (TTCC), the same shape as {@code sync}:
 *     each is an operation of the sending turn's transaction ({@link
 *     dev.troupe.model.Operation.SendMessage}), delivered after it commits (docs/ARCHITECTURE.md,
 *     "Causal messages"); at most one per destination entity template (null means none)
 * @throws TroupeException with {@code INVALID_REQUEST} naming the offending path
 */
public record ActionSpec(
    String name,
    Map<String, ParamType> params,
    Map<String, MemberBinding> members,
    List<String> preconditions,
    Map<String, String> effects,
    List<SyncSpec> sync,
    List<SyncSpec> send) {

  /** The longest member name ({@code c17} in {@code checking[c17]}) an argument may give. */
  public static final int MAX_MEMBER_NAME_LENGTH = 128;

  /**
   * One member binding: the family and the parameter whose argument names the member.
   *
   * @param family the key family
   * @param parameter a {@code string} or {@code int} parameter of the action
   */
  public record MemberBinding(String family, String parameter) {
    private static final java.util.regex.Pattern FORM =
        java.util.regex.Pattern.compile("([A-Za-z_][A-Za-z0-9_]*)\\[([A-Za-z_][A-Za-z0-9_]*)\\]");

    public MemberBinding {
      Objects.requireNonNull(family, "family");
      Objects.requireNonNull(parameter, "parameter");
    }

    /** Parses {@code family[parameter]}; {@code path} prefixes the message of a bad form. */
    public static MemberBinding parse(String path, String text) {
      java.util.regex.Matcher matcher = FORM.matcher(text.strip());
      if (!matcher.matches()) {
        throw TroupeException.invalid(path + ": must look like family[parameter], e.g."
            + " checking[customer], got '" + text + "'");
      }
      return new MemberBinding(matcher.group(1), matcher.group(2));
    }

    /** The stored key of the member an argument names: {@code family[member]}. */
    public static String memberKey(String family, String member) {
      return family + "[" + member + "]";
    }

    /**
     * Why {@code member} cannot name a member, or null if it can: non-empty, at most {@link
     * #MAX_MEMBER_NAME_LENGTH} characters, no brackets or control characters.
     */
    public static String problemWithMemberName(String member) {
      if (member.isEmpty() || member.length() > MAX_MEMBER_NAME_LENGTH) {
        return "a member name has 1 to " + MAX_MEMBER_NAME_LENGTH + " characters";
      }
      for (int i = 0; i < member.length(); i++) {
        char character = member.charAt(i);
        if (character == '[' || character == ']' || Character.isISOControl(character)) {
          return "a member name has no brackets or control characters";
        }
      }
      return null;
    }

    /** The canonical text form, {@code family[parameter]}. */
    @Override
    public String toString() {
      return family + "[" + parameter + "]";
    }
  }

  public ActionSpec {
    Objects.requireNonNull(name, "name");
    params = Collections.unmodifiableMap(new LinkedHashMap<>(params == null ? Map.of() : params));
    members =
        Collections.unmodifiableMap(new LinkedHashMap<>(members == null ? Map.of() : members));
    preconditions = List.copyOf(preconditions == null ? List.of() : preconditions);
    effects =
        Collections.unmodifiableMap(new LinkedHashMap<>(effects == null ? Map.of() : effects));
    sync = List.copyOf(sync == null ? List.of() : sync);
    send = List.copyOf(send == null ? List.of() : send);
    validate(!send.isEmpty(), name, params, members, preconditions, effects, sync);
    validateSend(name, params, send);
  }

  /** An action without messages. */
  public ActionSpec(
      String name,
      Map<String, ParamType> params,
      Map<String, MemberBinding> members,
      List<String> preconditions,
      Map<String, String> effects,
      List<SyncSpec> sync) {
    this(name, params, members, preconditions, effects, sync, List.of());
  }

  /** An action without member bindings or sync calls. */
  public ActionSpec(
      String name,
      Map<String, ParamType> params,
      List<String> preconditions,
      Map<String, String> effects) {
    this(name, params, Map.of(), preconditions, effects, List.of());
  }

  /** The path of this action in a spec, for messages: {@code actions.<name>}. */
  public String path() {
    return "actions." + name;
  }

  /**
   * The canonical JSON form: {@code {"params": {...}, "pre": [...], "effect": {...}}}, plus
   * {@code "members": {...}} when there are member bindings and {@code "sync": [...]} when there
   * are sync calls.
   */
  public JsonNode toJson() {
    ObjectNode node = Json.NODES.objectNode();
    ObjectNode paramsNode = node.putObject("params");
    params.forEach((param, type) -> paramsNode.put(param, type.wireName()));
    if (!members.isEmpty()) {
      ObjectNode membersNode = node.putObject("members");
      members.forEach((alias, binding) -> membersNode.put(alias, binding.toString()));
    }
    ArrayNode pre = node.putArray("pre");
    preconditions.forEach(pre::add);
    ObjectNode effect = node.putObject("effect");
    effects.forEach(effect::put);
    if (!sync.isEmpty()) {
      ArrayNode syncNode = node.putArray("sync");
      sync.forEach(call -> syncNode.add(call.toJson()));
    }
    if (!send.isEmpty()) {
      ArrayNode sendNode = node.putArray("send");
      send.forEach(message -> sendNode.add(message.toJson()));
    }
    return node;
  }

  private static void validate(
      boolean hasSend,
      String name,
      Map<String, ParamType> params,
      Map<String, MemberBinding> members,
      List<String> preconditions,
      Map<String, String> effects,
      List<SyncSpec> sync) {
    String path = "actions." + name;
    String nameProblem = Names.problemWithActionName(name);
    if (nameProblem != null) {
      throw TroupeException.invalid(path + ": action name " + nameProblem);
    }
    params.forEach(
        (param, type) -> {
          String problem = Names.problemWithVariableName(param);
          if (problem != null) {
            throw TroupeException.invalid(
                path + ".params." + param + ": parameter name " + problem);
          }
          if (type == null) {
            throw TroupeException.invalid(path + ".params." + param + ": missing parameter type");
          }
        });
    members.forEach(
        (alias, binding) -> {
          String memberPath = path + ".members." + alias;
          String problem = Names.problemWithVariableName(alias);
          if (problem != null) {
            throw TroupeException.invalid(memberPath + ": variable name " + problem);
          }
          if (binding == null) {
            throw TroupeException.invalid(memberPath + ": missing binding");
          }
          if (params.containsKey(alias)) {
            throw TroupeException.invalid(memberPath + ": a parameter has this name too; rename"
                + " one of them (both are CEL variables)");
          }
          ParamType type = params.get(binding.parameter());
          if (type == null) {
            throw TroupeException.invalid(memberPath + ": [" + binding.parameter()
                + "] names no parameter of the action");
          }
          if (type != ParamType.STRING && type != ParamType.INT) {
            throw TroupeException.invalid(memberPath + ": the member is named by parameter '"
                + binding.parameter() + "', which must be a string or int, not "
                + type.wireName());
          }
        });
    for (int i = 0; i < preconditions.size(); i++) {
      requireExpression(path + ".pre[" + i + "]", preconditions.get(i));
    }
    effects.forEach(
        (key, expression) -> requireExpression(path + ".effect." + key, expression));
    for (int i = 0; i < sync.size(); i++) {
      validateSync(path + ".sync[" + i + "]", sync.get(i), params);
    }
    if (preconditions.isEmpty() && effects.isEmpty() && sync.isEmpty() && !hasSend) {
      throw TroupeException.invalid(
          path + ": an action needs at least one precondition (pre), effect, sync call or"
              + " message (send)");
    }
  }

  /**
   * Messages are checked as sync calls are (templates over string or int parameters, argument
   * expressions), and two of one action may not have the same destination template: TTCC (§3.1)
   * allows at most one message per destination per transaction. Templates that differ may still
   * name one entity for some arguments; evaluation refuses those turns.
   */
  private static void validateSend(String name, Map<String, ParamType> params,
      List<SyncSpec> send) {
    String path = "actions." + name;
    java.util.Set<String> destinations = new java.util.HashSet<>();
    for (int i = 0; i < send.size(); i++) {
      validateSync(path + ".send[" + i + "]", send.get(i), params);
      if (!destinations.add(send.get(i).entity())) {
        throw TroupeException.invalid(path + ".send[" + i + "].entity: a second message to '"
            + send.get(i).entity() + "'; an action sends at most one message per destination");
      }
    }
  }

  private static void requireExpression(String path, String expression) {
    if (expression == null || expression.isBlank()) {
      throw TroupeException.invalid(path + ": empty expression");
    }
  }

  private static void validateSync(String path, SyncSpec call, Map<String, ParamType> params) {
    List<SyncSpec.TemplatePart> template;
    try {
      template = call.entityTemplate();
    } catch (TroupeException e) {
      throw TroupeException.invalid(path + ".entity: " + e.getMessage());
    }
    boolean hasSeparator = false;
    for (SyncSpec.TemplatePart part : template) {
      switch (part) {
        case SyncSpec.TemplatePart.Literal literal ->
            hasSeparator |= literal.text().indexOf('/') >= 0;
        case SyncSpec.TemplatePart.Placeholder placeholder -> {
          ParamType type = params.get(placeholder.parameter());
          if (type == null) {
            throw TroupeException.invalid(
                path
                    + ".entity: placeholder {"
                    + placeholder.parameter()
                    + "} names no parameter of the action");
          }
          if (type != ParamType.STRING && type != ParamType.INT) {
            throw TroupeException.invalid(
                path
                    + ".entity: placeholder {"
                    + placeholder.parameter()
                    + "} must be a string or int parameter, not "
                    + type.wireName());
          }
        }
      }
    }
    if (!hasSeparator) {
      throw TroupeException.invalid(
          path + ".entity: '" + call.entity() + "' must look like Type/id, e.g. Account/{from}");
    }
    String actionProblem = Names.problemWithActionName(call.action());
    if (actionProblem != null) {
      throw TroupeException.invalid(path + ".action: action name " + actionProblem);
    }
    call.arguments()
        .forEach(
            (argument, expression) -> {
              String problem = Names.problemWithVariableName(argument);
              if (problem != null) {
                throw TroupeException.invalid(
                    path + ".args." + argument + ": argument name " + problem);
              }
              requireExpression(path + ".args." + argument, expression);
            });
  }
}
