package dev.troupe.model.spec;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.common.collect.ImmutableMap;
import dev.cel.bundle.Cel;
import dev.cel.bundle.CelBuilder;
import dev.cel.bundle.CelFactory;
import dev.cel.common.CelAbstractSyntaxTree;
import dev.cel.common.CelIssue;
import dev.cel.common.CelOptions;
import dev.cel.common.CelValidationException;
import dev.cel.common.types.CelKind;
import dev.cel.common.types.CelType;
import dev.cel.common.types.MapType;
import dev.cel.common.types.SimpleType;
import dev.cel.parser.CelStandardMacro;
import dev.cel.runtime.CelEvaluationException;
import dev.cel.runtime.CelRuntime;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.Json;
import dev.troupe.model.dependency.DependencyKeys;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import dev.troupe.model.ValueLimits;
import dev.troupe.model.value.CounterValue;
import dev.troupe.model.value.KeyKind;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.model.value.SetValue;
import dev.troupe.model.value.Tag;
import dev.troupe.model.value.Value;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * A {@link TypeSpec} compiled for execution: every CEL expression is parsed, type-checked and
 * planned once, when the type is defined, so that a definition with a mistake is rejected then
 * (HTTP 400 on {@code PUT /v1/types/{type}}) and turns only evaluate.
 *
 * <p><b>Invariants.</b> Everything here is a pure, deterministic function of its arguments: no
 * I/O, no clock, no randomness, no mutable state. CEL has no function that reads the clock or the
 * environment, variables are bound in declaration order and sets are read in the order of their
 * elements' JSON text, so the same (state, arguments, transaction id, data centre) always yield the
 * same outcome. That is what the rest of Troupe relies on: PSAC (psac.txt) evaluates preconditions
 * and effects against each possible outcome of the in-flight actions, which is only sound if they
 * are pure functions of (state, params); the deterministic simulator replays schedules and must
 * get the same operations every time; and effects are recorded as operations (incremental logging,
 * antidote-cache.txt, smsa.txt), never as whole states, so replicas converge by applying them.
 *
 * <p><b>Thread safety.</b> Immutable; CEL programs are immutable and safe for concurrent use. One
 * instance serves every turn of every entity of the type.
 *
 * <p><b>Variables.</b> An expression of an action sees every declared plain key by name (CEL type
 * {@code dyn}), every member binding of the action by its variable name (the current value of the
 * member key {@code family[argument]}), every parameter by name (typed: {@code int}, {@code
 * double}, {@code string}, {@code bool}; the other parameter types are {@code dyn}), {@code state}
 * (map of every declared plain key to its current value; key families are not in it, since an
 * entity may hold many members) and {@code params} (map of every parameter to its argument). A key's
 * current value is the entity's stored value, or the key's default while it has none. A stored
 * value of another kind than declared (left by an earlier definition of the type) reads as absent.
 * A counter reads as its default plus its total (see {@link KeySpec}), a set as the list of its
 * elements.
 *
 * <p><b>Limits.</b> Comprehensions ({@code all}, {@code exists}, {@code map}, {@code filter})
 * stop after {@link #MAX_COMPREHENSION_ITERATIONS} iterations in all, so no expression runs
 * unboundedly long on a large state; the expression text is limited by CEL's own 100,000 code
 * point limit; and every evaluation runs within an {@link EvaluationBudget} ({@code
 * troupe.limits}), so none builds strings or lists past what a value may hold.
 */
public final class CompiledType {
  /**
   * The most iterations one evaluation may spend in comprehensions; past it the evaluation fails.
   * Bounds the work of a turn whatever the state holds.
   */
  public static final int MAX_COMPREHENSION_ITERATIONS = 100_000;

  static final CelOptions CEL_OPTIONS =
      CelOptions.current()
          // Registers hold any JSON number, so `balance > amount` must work whether the stored
          // balance is an int or a double.
          .enableHeterogeneousNumericComparisons(true)
          .comprehensionMaxIterations(MAX_COMPREHENSION_ITERATIONS)
          .build();

  private static final CelType MAP_OF_STRING_TO_DYN =
      MapType.create(SimpleType.STRING, SimpleType.DYN);

  /** CEL's evaluation error text: "evaluation error at <input>:OFFSET: MESSAGE". */
  private static final Pattern EVALUATION_ERROR =
      Pattern.compile("evaluation error at <input>:(\\d+): (.*)", Pattern.DOTALL);

  private final TypeSpec spec;

  /** Key to the CEL value of its default (a {@code Long} for counters, a list for sets). */
  private final Map<String, Object> defaults;

  private final Map<String, CompiledAction> actions;

  /** One compiled CEL expression with the spec path and text used in messages. */
  private record Expression(String path, String text, CelRuntime.Program program) {
    /** Evaluates within {@code limits} ({@link EvaluationBudget}); a refusal is too_large. */
    Object evaluate(Map<String, Object> variables, ValueLimits limits)
        throws CelEvaluationException {
      return EvaluationBudget.evaluate(program, variables, limits, path + " `" + text + "`");
    }
  }

  /**
   * One effect: the variable it assigns (a plain key, or a member binding's variable, whose key is
   * known once the arguments are) and that key's kind.
   */
  private record Effect(String variable, KeyKind kind, Expression expression) {}

  /** A member binding resolved for one invocation: the member key and its declaration. */
  private record BoundMember(String key, String family, KeySpec declaration) {}

  private record CompiledSync(
      String path,
      List<SyncSpec.TemplatePart> entityTemplate,
      String action,
      Map<String, Expression> arguments) {}

  /**
   * @param plainKeysRead declared plain keys named in a precondition or effect
   * @param variablesRead member bindings' variables named in a precondition or effect
   * @param readsWholeState whether an expression names {@code state}
   */
  private record CompiledAction(
      ActionSpec spec,
      List<Expression> preconditions,
      List<Effect> effects,
      List<CompiledSync> sync,
      List<CompiledSync> send,
      Set<String> plainKeysRead,
      Set<String> variablesRead,
      boolean readsWholeState) {}

  private CompiledType(
      TypeSpec spec, Map<String, Object> defaults, Map<String, CompiledAction> actions) {
    this.spec = spec;
    this.defaults = defaults;
    this.actions = actions;
  }

  /**
   * Compiles every precondition, effect and sync argument of the spec.
   *
   * @throws TroupeException with {@code INVALID_REQUEST} naming the expression's path, e.g. {@code
   *     actions.withdraw.pre[1]: column 1: undeclared reference to 'amont'}, if an expression does
   *     not compile or has the wrong type: a precondition must be {@code bool}, a counter effect
   *     {@code int}, a set effect a list ({@code dyn} is accepted everywhere and checked when
   *     evaluated)
   */
  public static CompiledType compile(TypeSpec spec) {
    Objects.requireNonNull(spec, "spec");
    Map<String, Object> defaults = new LinkedHashMap<>();
    spec.keys()
        .forEach((key, keySpec) -> defaults.put(key, CelValues.fromJson(keySpec.defaultValue())));
    Map<String, CompiledAction> actions = new LinkedHashMap<>();
    for (ActionSpec action : spec.actions().values()) {
      actions.put(action.name(), compileAction(spec, action));
    }
    return new CompiledType(
        spec, Collections.unmodifiableMap(defaults), Collections.unmodifiableMap(actions));
  }

  /** A schemaless type: any key, register values, no actions. */
  public static CompiledType schemaless(String typeName) {
    return compile(TypeSpec.schemaless(typeName));
  }

  /** The spec this was compiled from. */
  public TypeSpec spec() {
    return spec;
  }

  /** The type name. */
  public String name() {
    return spec.name();
  }

  /** Whether entities of this type take any key, as registers. */
  public boolean isSchemaless() {
    return spec.schemaless();
  }

  /**
   * The dependencies this type declares for {@code key} of {@code entity} (see {@link
   * DependencySpec}); usually none, at the cost of one emptiness check.
   */
  public List<dev.troupe.model.dependency.Dependency> declaredDependencies(EntityId entity,
      String key) {
    if (spec.dependencies().isEmpty()) {
      return List.of();
    }
    List<dev.troupe.model.dependency.Dependency> declared = new ArrayList<>();
    for (DependencySpec dependency : spec.dependencies()) {
      dev.troupe.model.dependency.Dependency instance = dependency.instantiate(entity, key);
      if (instance != null) {
        declared.add(instance);
      }
    }
    return declared;
  }

  /**
   * The kind of a key: the declared kind, {@link KeyKind#REGISTER} for any key of a schemaless
   * type, {@code null} for a key a declared type does not have.
   */
  public KeyKind kindOf(String key) {
    if (spec.schemaless()) {
      return KeyKind.REGISTER;
    }
    KeySpec keySpec = spec.keys().get(key);
    if (keySpec != null) {
      return keySpec.family() ? null : keySpec.kind();
    }
    KeySpec family = familyOfMember(key);
    return family == null ? null : family.kind();
  }

  /**
   * The declaration of the family whose member {@code key} is ({@code checking[c17]} is a member
   * of {@code checking}), or null if it names no member of a declared family.
   */
  private KeySpec familyOfMember(String key) {
    int open = key.indexOf('[');
    if (open <= 0 || !key.endsWith("]")) {
      return null;
    }
    KeySpec family = spec.keys().get(key.substring(0, open));
    if (family == null || !family.family()) {
      return null;
    }
    String member = key.substring(open + 1, key.length() - 1);
    return ActionSpec.MemberBinding.problemWithMemberName(member) == null ? family : null;
  }

  /**
   * What clients see of an entity: an object of key to value. For a declared type, every declared
   * key in declaration order, with its default while the entity holds no value of the declared kind
   * for it; for a schemaless type, the keys the entity holds, in key order. The result is a fresh
   * tree owned by the caller. Whether the entity exists is the caller's concern.
   */
  public ObjectNode render(EntityState state) {
    Objects.requireNonNull(state, "state");
    ObjectNode rendered = Json.NODES.objectNode();
    if (spec.schemaless()) {
      new TreeMap<>(state.values()).forEach((key, value) -> {
        if (!DependencyKeys.isHidden(key)) {
          rendered.set(key, value.toJson().deepCopy());
        }
      });
      return rendered;
    }
    Map<String, ObjectNode> families = new LinkedHashMap<>();
    spec.keys().forEach((key, keySpec) -> {
      if (keySpec.family()) {
        families.put(key, rendered.putObject(key));
      } else {
        rendered.set(key, renderValue(key, state));
      }
    });
    if (!families.isEmpty()) {
      // Members render under their family, in member order. Stored member keys were checked when
      // written, so only their family is looked up here.
      Map<String, TreeMap<String, JsonNode>> members = new HashMap<>();
      state.values().forEach((key, value) -> {
        int open = key.indexOf('[');
        if (open > 0 && key.endsWith("]") && families.containsKey(key.substring(0, open))) {
          String family = key.substring(0, open);
          members.computeIfAbsent(family, ignored -> new TreeMap<>())
              .put(key.substring(open + 1, key.length() - 1),
                  memberValue(spec.keys().get(family), family, value));
        }
      });
      members.forEach((family, byMember) -> byMember.forEach(families.get(family)::set));
    }
    return rendered;
  }

  /**
   * What clients see of the keys {@code projection} names ({@link StateProjection}): the whole
   * state's shape restricted to them, each as {@link #renderValue} renders it (a member of a
   * declared family nested under its family, with its default while unset; a family named by
   * itself with every member; keys the entity does not have left out). Costs the named keys and,
   * for a family named by itself, its members: never a render of the whole state, so two members
   * of an entity of many cost two. A fresh tree owned by the caller.
   */
  public ObjectNode render(EntityState state, StateProjection projection) {
    Objects.requireNonNull(state, "state");
    ObjectNode rendered = Json.NODES.objectNode();
    for (String key : projection.keys()) {
      KeySpec declared = spec.schemaless() ? null : spec.keys().get(key);
      if (declared != null && declared.family()) {
        ObjectNode members = familyNode(rendered, key);
        TreeMap<String, JsonNode> byMember = new TreeMap<>();
        String prefix = key + "[";
        state.values().forEach((stored, value) -> {
          if (stored.startsWith(prefix) && stored.endsWith("]")) {
            byMember.put(stored.substring(prefix.length(), stored.length() - 1),
                memberValue(declared, key, value));
          }
        });
        byMember.forEach(members::set);
        continue;
      }
      JsonNode value = renderValue(key, state);
      if (value == null) {
        continue;
      }
      String family = spec.schemaless() || declared != null
          ? null : StateProjection.familyOf(spec, key);
      if (family == null) {
        rendered.set(key, value);
      } else {
        familyNode(rendered, family).set(key.substring(family.length() + 1, key.length() - 1),
            value);
      }
    }
    return rendered;
  }

  /** The object a family's members render into, made when its first member is. */
  private static ObjectNode familyNode(ObjectNode rendered, String family) {
    JsonNode existing = rendered.get(family);
    return existing instanceof ObjectNode members ? members : rendered.putObject(family);
  }

  /**
   * What clients see of one key, as in {@link #render}: for a declared key or a member of a
   * declared family, the stored value or the default; {@code null} if the key is not part of the
   * entity (a key a declared type does not declare, a family itself, or a key a schemaless entity
   * does not hold). A fresh tree owned by the caller.
   */
  public JsonNode renderValue(String key, EntityState state) {
    Objects.requireNonNull(state, "state");
    if (DependencyKeys.isHidden(key)) {
      return null;
    }
    Value stored = state.get(key);
    if (spec.schemaless()) {
      return stored == null ? null : stored.toJson().deepCopy();
    }
    KeySpec keySpec = spec.keys().get(key);
    String declared = key;
    if (keySpec == null || keySpec.family()) {
      keySpec = familyOfMember(key);
      if (keySpec == null) {
        return null;
      }
      declared = key.substring(0, key.indexOf('['));
    }
    return memberValue(keySpec, declared, stored);
  }

  /** A declared key is never of kind dependencies: the spec parser refuses that kind. */
  private static Invariants.InvariantViolation undeclarable(String key) {
    return new Invariants.InvariantViolation("key '" + key + "' is declared of kind dependencies");
  }

  /** What clients see of a stored value (or its absence) of a key declared by {@code keySpec}. */
  private JsonNode memberValue(KeySpec keySpec, String declared, Value stored) {
    return switch (keySpec.kind()) {
      case REGISTER ->
          stored instanceof RegisterValue register
              ? register.value().deepCopy()
              : keySpec.defaultValue();
      case COUNTER -> LongNode.valueOf(renderedCounter(declared, stored));
      case SET -> stored instanceof SetValue set ? set.toJson().deepCopy() : keySpec.defaultValue();
      case DEPENDENCIES -> throw undeclarable(declared);
    };
  }

  /**
   * Evaluates an action against an entity state and returns the operations that perform it, without
   * applying them.
   *
   * <p>Steps: the arguments are checked against the declared parameters; the preconditions are
   * evaluated in declaration order, and the first that does not hold stops the action with {@link
   * ActionOutcome.PreconditionFailed}; then every effect is evaluated against the state as it was
   * before the action (effects are a simultaneous assignment: one effect never sees another's
   * result), and each result becomes operations on its key: a register is assigned the value; a
   * counter is incremented by the difference between the new and the current value (nothing when
   * equal); a set gets an {@link Operation.AddElement} for each new element, tagged
   * {@code Tag(originDc, transactionId, index)} with {@code index} the number of operations this
   * call emitted before it, and a {@link Operation.RemoveElement} with the observed tags for each
   * element no longer in the list.
   *
   * <p>A precondition that cannot be evaluated in this state (no such map key, overflow, division
   * by zero, a result that is not a bool) is reported as {@link ActionOutcome.PreconditionFailed}
   * with the error in its message, not as an invalid request: whether it evaluates depends on the
   * entity's state, not only on the request, so it is a conflict (409) like a false precondition.
   * An effect that cannot be evaluated or gives a value its key cannot hold is reported as an
   * invalid request (400), as the spec is to blame or the arguments push a value out of range,
   * with the abort reason {@code evaluation_failed}: inside a transaction it aborts it with that
   * reason (409), since whether it evaluates may depend on the state the transaction meets.
   *
   * <p>Sync calls are not made here; see {@link #synchronizedCalls}.
   *
   * @param action the action's name
   * @param params the arguments: a JSON object with exactly the declared parameters (null or a
   *     missing node count as an empty object)
   * @param state the entity's current state ({@link EntityState#ABSENT} for an entity never
   *     written)
   * @param transactionId the id of the transaction, unique within the data centre; with {@code
   *     originDc} it makes the tags of set additions unique
   * @param originDc the data centre where the transaction runs
   * @throws TroupeException with {@code UNKNOWN_ACTION} if the type has no such action, with
   *     {@code INVALID_REQUEST} for missing, extra or ill-typed arguments and for failing effects
   */
  public ActionOutcome invoke(
      String action, JsonNode params, EntityState state, long transactionId, int originDc) {
    return invoke(action, params, state, transactionId, originDc, ValueLimits.DEFAULTS);
  }

  /**
   * {@link #invoke(String, JsonNode, EntityState, long, int)} with every expression evaluated
   * within {@code limits} ({@link EvaluationBudget}): an evaluation that would build a string or
   * collection past them is refused with {@code too_large} (abort reason {@code too_large}). The
   * values the effects produce are not checked here; the turn core checks them against the same
   * limits before anything is written.
   */
  public ActionOutcome invoke(String action, JsonNode params, EntityState state,
      long transactionId, int originDc, ValueLimits limits) {
    Objects.requireNonNull(state, "state");
    CompiledAction compiled = action(action);
    Map<String, Object> arguments = bindArguments(compiled.spec(), params);
    Map<String, BoundMember> members = bindMembers(compiled.spec(), arguments);
    Map<String, Object> variables = variables(state, arguments, members);

    String where = name() + "." + action;
    for (Expression precondition : compiled.preconditions()) {
      Object result;
      try {
        result = precondition.evaluate(variables, limits);
      } catch (CelEvaluationException e) {
        return new ActionOutcome.PreconditionFailed(
            precondition.text(),
            "precondition of "
                + where
                + " could not be evaluated: `"
                + precondition.text()
                + "`: "
                + evaluationMessage(e));
      }
      if (!(result instanceof Boolean holds)) {
        return new ActionOutcome.PreconditionFailed(
            precondition.text(),
            "precondition of "
                + where
                + " does not evaluate to a bool but to "
                + CelValues.describeWithArticle(result)
                + ": `"
                + precondition.text()
                + "`");
      }
      if (!holds) {
        return new ActionOutcome.PreconditionFailed(
            precondition.text(),
            "precondition of " + where + " does not hold: " + precondition.text());
      }
    }

    List<Operation> operations = new ArrayList<>();
    for (Effect effect : compiled.effects()) {
      Object result;
      try {
        result = effect.expression().evaluate(variables, limits);
      } catch (CelEvaluationException e) {
        throw effectProblem(effect, evaluationMessage(e));
      }
      BoundMember member = members.get(effect.variable());
      String key = member == null ? effect.variable() : member.key();
      String declared = member == null ? effect.variable() : member.family();
      switch (effect.kind()) {
        case REGISTER -> operations.add(new Operation.Assign(key, effectJson(effect, result)));
        case COUNTER ->
            counterOperation(effect, key, declared, result,
                (Long) variables.get(effect.variable()), operations);
        case SET ->
            setOperations(effect, key, declared, result, state, transactionId, originDc,
                operations);
      }
    }
    return new ActionOutcome.Applied(operations);
  }

  /**
   * The sync calls of an action resolved for these arguments: target entities with their
   * placeholders filled in and arguments evaluated. They depend on the arguments alone, never on
   * state, so a transaction's access set is known before it runs. The caller invokes them on their
   * entities in the same transaction, all or nothing.
   *
   * @param action the action's name
   * @param params the arguments, as for {@link #invoke}
   * @throws TroupeException with {@code UNKNOWN_ACTION} if the type has no such action, with
   *     {@code INVALID_REQUEST} for bad arguments, an argument expression that fails, or a target
   *     that is not a valid entity reference
   */
  public List<SyncInvocation> synchronizedCalls(String action, JsonNode params) {
    return synchronizedCalls(action, params, ValueLimits.DEFAULTS);
  }

  /** {@link #synchronizedCalls(String, JsonNode)} with the arguments evaluated within limits. */
  public List<SyncInvocation> synchronizedCalls(String action, JsonNode params,
      ValueLimits limits) {
    CompiledAction compiled = action(action);
    if (compiled.sync().isEmpty()) {
      return List.of();
    }
    return resolve(compiled, compiled.sync(), params, limits);
  }

  /**
   * The messages an action sends ({@code send}) resolved for these arguments, as {@link
   * #synchronizedCalls} resolves sync calls: destinations and arguments depend on the arguments
   * alone. The caller makes each an operation of the turn ({@link
   * dev.troupe.model.Operation.SendMessage}); whether the action exists on the receiver is
   * checked only when the message is delivered.
   *
   * @throws TroupeException as {@link #synchronizedCalls}
   */
  public List<SyncInvocation> messages(String action, JsonNode params, ValueLimits limits) {
    CompiledAction compiled = action(action);
    if (compiled.send().isEmpty()) {
      return List.of();
    }
    return resolve(compiled, compiled.send(), params, limits);
  }

  /** Whether the action declares messages ({@code send}); false for an unknown action. */
  public boolean sendsMessages(String action) {
    CompiledAction compiled = actions.get(action);
    return compiled != null && !compiled.send().isEmpty();
  }

  private List<SyncInvocation> resolve(CompiledAction compiled, List<CompiledSync> targets,
      JsonNode params, ValueLimits limits) {
    Map<String, Object> arguments = bindArguments(compiled.spec(), params);
    Map<String, Object> argumentVariables = new HashMap<>(arguments);
    argumentVariables.put(Names.PARAMS_VARIABLE, arguments);
    Map<String, Object> variables = celActivation(argumentVariables);
    List<SyncInvocation> calls = new ArrayList<>();
    for (CompiledSync sync : targets) {
      StringBuilder entity = new StringBuilder();
      for (SyncSpec.TemplatePart part : sync.entityTemplate()) {
        switch (part) {
          case SyncSpec.TemplatePart.Literal literal -> entity.append(literal.text());
          // Only string and int parameters may be placeholders (checked by ActionSpec), and both
          // print as their plain text.
          case SyncSpec.TemplatePart.Placeholder placeholder ->
              entity.append(arguments.get(placeholder.parameter()));
        }
      }
      EntityId target;
      try {
        target = EntityId.parse(entity.toString());
      } catch (TroupeException e) {
        throw TroupeException.invalid(sync.path() + ".entity: " + e.getMessage());
      }
      ObjectNode callArguments = Json.NODES.objectNode();
      for (Map.Entry<String, Expression> argument : sync.arguments().entrySet()) {
        Expression expression = argument.getValue();
        try {
          callArguments.set(argument.getKey(),
              CelValues.toJson(expression.evaluate(variables, limits)));
        } catch (CelEvaluationException e) {
          throw expressionProblem(expression, evaluationMessage(e));
        } catch (CelValues.NotJsonException e) {
          throw expressionProblem(expression, e.getMessage());
        }
      }
      calls.add(new SyncInvocation(target, sync.action(), callArguments));
    }
    return List.copyOf(calls);
  }

  @Override
  public String toString() {
    return "CompiledType[" + name() + (isSchemaless() ? ", schemaless" : "") + "]";
  }

  // ---- invocation helpers ----

  /**
   * The keys an action may read and write for these arguments, known before it runs (for
   * key-level locking). Writes are the keys of its effects (a member binding's effect writes the
   * member key its argument names); reads every declared plain key or bound member whose name
   * occurs as an identifier in a precondition or effect. This over-approximates (a key name
   * inside a string literal counts), which only costs concurrency, never correctness. An action that names the {@code state}
   * variable reads the whole entity.
   *
   * @throws TroupeException with {@code UNKNOWN_ACTION} if the type has no such action, with
   *     {@code INVALID_REQUEST} if the arguments do not name valid members
   */
  public ActionAccess access(String action, JsonNode params) {
    CompiledAction compiled = action(action);
    Map<String, BoundMember> members =
        compiled.spec().members().isEmpty()
            ? Map.of()
            : bindMembers(compiled.spec(), bindArguments(compiled.spec(), params));
    // Hash sets: ActionAccess keeps immutable copies, whose order is unspecified anyway (issue 20:
    // sorted sets here cost about 1 % of the embedded SmallBank mix's samples).
    java.util.Set<String> reads = new java.util.HashSet<>(compiled.plainKeysRead());
    for (String variable : compiled.variablesRead()) {
      reads.add(members.get(variable).key());
    }
    java.util.Set<String> writes = new java.util.HashSet<>();
    for (Effect effect : compiled.effects()) {
      BoundMember member = members.get(effect.variable());
      writes.add(member == null ? effect.variable() : member.key());
    }
    return new ActionAccess(reads, writes, compiled.readsWholeState());
  }

  /**
   * The names an action's expressions mention, found once at compilation (the {@link #access}
   * of every turn under key-level admission needs them).
   */
  private static CompiledAction withNamesRead(TypeSpec type, CompiledAction action) {
    java.util.Set<String> plainKeys = new java.util.TreeSet<>();
    java.util.Set<String> variables = new java.util.TreeSet<>();
    boolean wholeState = false;
    List<String> texts = new ArrayList<>();
    action.preconditions().forEach(expression -> texts.add(expression.text()));
    action.effects().forEach(effect -> texts.add(effect.expression().text()));
    for (String text : texts) {
      java.util.regex.Matcher identifiers = IDENTIFIER.matcher(text);
      while (identifiers.find()) {
        String identifier = identifiers.group();
        if (identifier.equals(Names.STATE_VARIABLE)) {
          wholeState = true;
        } else if (action.spec().members().containsKey(identifier)) {
          variables.add(identifier);
        } else if (type.keys().containsKey(identifier) && !type.keys().get(identifier).family()) {
          plainKeys.add(identifier);
        }
      }
    }
    return new CompiledAction(action.spec(), action.preconditions(), action.effects(),
        action.sync(), action.send(), Set.copyOf(plainKeys), Set.copyOf(variables), wholeState);
  }

  /** Whether the action has effects (so it writes), whatever its arguments. */
  public boolean writes(String action) {
    return !action(action).effects().isEmpty();
  }

  private static final java.util.regex.Pattern IDENTIFIER =
      java.util.regex.Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

  /**
   * The keys an action reads and writes (see {@link #access}).
   *
   * @param readsWholeState the action reads {@code state} as a map, so every key
   */
  public record ActionAccess(
      java.util.Set<String> reads, java.util.Set<String> writes, boolean readsWholeState) {
    public ActionAccess {
      reads = java.util.Set.copyOf(reads);
      writes = java.util.Set.copyOf(writes);
    }
  }

  private CompiledAction action(String action) {
    CompiledAction compiled = actions.get(action);
    if (compiled == null) {
      throw new TroupeException(
          ErrorCode.UNKNOWN_ACTION, "type " + name() + " has no action '" + action + "'");
    }
    return compiled;
  }

  /**
   * Checks the arguments against the declared parameters and converts them to CEL values, in
   * declaration order. The result is unmodifiable: it is also the {@code params} variable.
   */
  private Map<String, Object> bindArguments(ActionSpec action, JsonNode params) {
    String where = name() + "." + action.name();
    JsonNode given = params == null || params.isMissingNode() ? Json.NODES.objectNode() : params;
    if (!given.isObject()) {
      throw TroupeException.invalid(
          "the arguments of "
              + where
              + " must be a JSON object, got "
              + given.getNodeType().name().toLowerCase(Locale.ROOT));
    }
    for (String field : (Iterable<String>) given::fieldNames) {
      if (!action.params().containsKey(field)) {
        throw TroupeException.invalid(
            where
                + " has no parameter '"
                + field
                + "'; its parameters: "
                + (action.params().isEmpty()
                    ? "none"
                    : String.join(", ", action.params().keySet())));
      }
    }
    Map<String, Object> arguments = new LinkedHashMap<>();
    action
        .params()
        .forEach(
            (param, type) -> {
              JsonNode value = given.get(param);
              if (value == null) {
                throw TroupeException.invalid(
                    "missing parameter '" + param + "' (" + type.wireName() + ") of " + where);
              }
              arguments.put(param, argument(where, param, type, value));
            });
    return Collections.unmodifiableMap(arguments);
  }

  private static Object argument(String where, String param, ParamType type, JsonNode value) {
    Object converted =
        switch (type) {
          case INT ->
              value.isIntegralNumber() && value.canConvertToLong()
                  ? (Object) value.longValue()
                  : null;
          case DOUBLE ->
              value.isNumber() && Double.isFinite(value.doubleValue())
                  ? (Object) value.doubleValue()
                  : null;
          case STRING -> value.isTextual() ? value.textValue() : null;
          case BOOL -> value.isBoolean() ? (Object) value.booleanValue() : null;
          case LIST -> value.isArray() ? CelValues.fromJson(value) : null;
          case MAP -> value.isObject() ? CelValues.fromJson(value) : null;
          case ANY -> CelValues.fromJson(value);
        };
    if (converted == null) {
      throw TroupeException.invalid(
          "parameter '"
              + param
              + "' of "
              + where
              + " must be "
              + switch (type) {
                case INT -> "an int (a whole number within 64 bits)";
                case DOUBLE -> "a double (a finite number)";
                case STRING -> "a string";
                case BOOL -> "a bool";
                case LIST -> "a list (JSON array)";
                case MAP -> "a map (JSON object)";
                case ANY -> "a JSON value";
              }
              + ", got "
              + abbreviate(Json.write(value)));
    }
    return converted;
  }

  /**
   * The member keys an action's bindings name for these arguments: the argument's text (a string,
   * or an int's decimal form) inside the family's brackets.
   *
   * <p>Two variables may name the same member (both read it), but not when an effect assigns
   * either: effects are a simultaneous assignment, so one of the two writes would silently win
   * ({@code pay} from an account to itself would create money).
   *
   * @throws TroupeException with {@code INVALID_REQUEST} if an argument is no valid member name,
   *     or if an assigned variable names the same member as another variable
   */
  private Map<String, BoundMember> bindMembers(ActionSpec action, Map<String, Object> arguments) {
    if (action.members().isEmpty()) {
      return Map.of();
    }
    Map<String, BoundMember> bound = new HashMap<>();
    action.members().forEach((alias, binding) -> {
      String member = String.valueOf(arguments.get(binding.parameter()));
      String problem = ActionSpec.MemberBinding.problemWithMemberName(member);
      if (problem != null) {
        throw TroupeException.invalid("parameter '" + binding.parameter() + "' of " + name()
            + "." + action.name() + " names a member of '" + binding.family() + "': " + problem);
      }
      bound.put(alias, new BoundMember(
          ActionSpec.MemberBinding.memberKey(binding.family(), member), binding.family(),
          spec.keys().get(binding.family())));
    });
    Map<String, String> variableByKey = new HashMap<>();
    for (String alias : action.members().keySet()) {
      String key = bound.get(alias).key();
      String other = variableByKey.putIfAbsent(key, alias);
      if (other != null
          && (action.effects().containsKey(other) || action.effects().containsKey(alias))) {
        throw TroupeException.invalid("variables '" + other + "' and '" + alias + "' of "
            + name() + "." + action.name() + " both name " + key
            + ", and an effect assigns one of them; name two different members");
      }
    }
    return bound;
  }

  /**
   * The CEL variables of an action: plain keys, bound members, parameters, {@code state} and
   * {@code params}.
   */
  private Map<String, Object> variables(
      EntityState state, Map<String, Object> arguments, Map<String, BoundMember> members) {
    Map<String, Object> stateMap = new LinkedHashMap<>();
    spec.keys().forEach((key, keySpec) -> {
      if (!keySpec.family()) {
        stateMap.put(key, currentValue(key, key, keySpec.kind(), state));
      }
    });
    Map<String, Object> variables = new HashMap<>(stateMap);
    members.forEach((alias, member) -> variables.put(alias,
        currentValue(member.key(), member.family(), member.declaration().kind(), state)));
    variables.putAll(arguments);
    variables.put(Names.STATE_VARIABLE, Collections.unmodifiableMap(stateMap));
    variables.put(Names.PARAMS_VARIABLE, arguments);
    return celActivation(variables);
  }

  /**
   * {@code variables} as the immutable map CEL evaluates against, without its entries of null
   * value: what CEL's {@code Activation.copyOf} would make of them on every evaluation, made once
   * per action instead of once per precondition and effect (it took 2.4 % of the embedded SmallBank
   * mix's CPU samples, issue 20). CEL uses an {@link ImmutableMap} as it is.
   */
  private static ImmutableMap<String, Object> celActivation(Map<String, Object> variables) {
    ImmutableMap.Builder<String, Object> activation =
        ImmutableMap.builderWithExpectedSize(variables.size());
    variables.forEach((name, value) -> {
      if (value != null) {
        activation.put(name, value);
      }
    });
    return activation.buildOrThrow();
  }

  /**
   * The CEL value an action sees for a stored key (see the class comment).
   *
   * @param declared the declaration it follows: the key itself, or the family of a member
   */
  private Object currentValue(String key, String declared, KeyKind kind, EntityState state) {
    Value stored = state.get(key);
    return switch (kind) {
      case REGISTER ->
          stored instanceof RegisterValue register
              ? CelValues.fromJson(register.value())
              : defaults.get(declared);
      case COUNTER -> {
        long base = (Long) defaults.get(declared);
        if (!(stored instanceof CounterValue counter)) {
          yield base;
        }
        try {
          yield Math.addExact(base, counter.total());
        } catch (ArithmeticException e) {
          throw TroupeException.invalid(
              "keys." + key + ": the counter's value is beyond the 64-bit range");
        }
      }
      // Elements in the order of their JSON text, as sets render: deterministic.
      case SET ->
          stored instanceof SetValue set
              ? CelValues.fromJson(set.toJson())
              : defaults.get(declared);
      case DEPENDENCIES -> throw undeclarable(declared);
    };
  }

  /** A counter's value for display: the default plus the total, pinned to the 64-bit range. */
  private long renderedCounter(String key, Value stored) {
    long base = (Long) defaults.get(key);
    if (!(stored instanceof CounterValue counter)) {
      return base;
    }
    long total = counter.total();
    long sum = base + total;
    // Overflow only if both operands have the sign opposite to the sum's. Invocations never let a
    // counter leave the range, but concurrent increments from other data centres could; show the
    // nearest representable value rather than a wrapped one.
    if (((base ^ sum) & (total ^ sum)) < 0) {
      return base < 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
    }
    return sum;
  }

  private void counterOperation(Effect effect, String key, String declared, Object result,
      long currentValue, List<Operation> operations) {
    if (!(result instanceof Long || result instanceof Integer)) {
      throw effectProblem(
          effect,
          "a counter effect must evaluate to an int, got "
              + CelValues.describeWithArticle(result));
    }
    long newValue = ((Number) result).longValue();
    long delta;
    try {
      // The stored total after the increment is newValue - default: it must stay representable.
      Math.subtractExact(newValue, (Long) defaults.get(declared));
      delta = Math.subtractExact(newValue, currentValue);
    } catch (ArithmeticException e) {
      throw effectProblem(
          effect,
          "changing the counter from " + currentValue + " to " + newValue + " overflows 64 bits");
    }
    if (delta != 0) {
      operations.add(new Operation.Increment(key, delta));
    }
  }

  private void setOperations(
      Effect effect,
      String key,
      String declared,
      Object result,
      EntityState state,
      long transactionId,
      int originDc,
      List<Operation> operations) {
    if (!(result instanceof Collection<?> elements)) {
      throw effectProblem(
          effect,
          "a set effect must evaluate to a list, got " + CelValues.describeWithArticle(result));
    }
    // Keyed by JSON text, the identity of a set element; a repeated element counts once.
    Map<String, JsonNode> wanted = new LinkedHashMap<>();
    for (Object element : elements) {
      JsonNode json;
      try {
        json = CelValues.toJson(element);
      } catch (CelValues.NotJsonException e) {
        throw effectProblem(effect, "set element: " + e.getMessage());
      }
      wanted.putIfAbsent(Json.write(json), json);
    }
    // The diff is against the stored set, not the default: while the key is absent, the default's
    // elements are not stored, so the first effect must add the ones it keeps.
    SetValue current = state.get(key) instanceof SetValue set ? set : SetValue.EMPTY;
    for (JsonNode element : wanted.values()) {
      if (!current.contains(element)) {
        operations.add(
            new Operation.AddElement(
                key, element, new Tag(originDc, transactionId, operations.size())));
      }
    }
    for (JsonNode element : current.toJson()) {
      if (!wanted.containsKey(Json.write(element))) {
        operations.add(
            new Operation.RemoveElement(key, element, current.tagsOf(element)));
      }
    }
    JsonNode defaultElements = spec.keys().get(declared).defaultValue();
    if (wanted.isEmpty()
        && !(state.get(key) instanceof SetValue)
        && !defaultElements.isEmpty()) {
      // The key reads as its non-empty default and the effect empties it: an empty set must be
      // stored, or the default would show again. There is no operation that creates an empty set,
      // so add one element and remove exactly that addition: the result is a stored empty set,
      // and a concurrent addition elsewhere still wins (its tag was not observed).
      JsonNode element = defaultElements.get(0);
      Tag tag = new Tag(originDc, transactionId, operations.size());
      operations.add(new Operation.AddElement(key, element, tag));
      operations.add(new Operation.RemoveElement(key, element, Set.of(tag)));
    }
  }

  private static JsonNode effectJson(Effect effect, Object result) {
    try {
      return CelValues.toJson(result);
    } catch (CelValues.NotJsonException e) {
      throw effectProblem(effect, e.getMessage());
    }
  }

  private static TroupeException effectProblem(Effect effect, String message) {
    return expressionProblem(effect.expression(), message);
  }

  /**
   * An expression that could not be evaluated, or whose result its key cannot hold: {@code
   * invalid_request} for a single turn, the abort reason {@code evaluation_failed} in a
   * transaction (whether it evaluates may depend on the state the transaction meets).
   */
  private static TroupeException expressionProblem(Expression expression, String message) {
    return ValueLimits.evaluationFailed(
        expression.path() + " `" + expression.text() + "`: " + message);
  }

  /**
   * CEL's evaluation error as one readable clause: the message, the error code (some messages are
   * just the missing key) and the 1-based position in the expression.
   */
  static String evaluationMessage(CelEvaluationException e) {
    String message = String.valueOf(e.getMessage());
    String code = e.getErrorCode() == null ? "" : e.getErrorCode().name().toLowerCase(Locale.ROOT);
    Matcher matcher = EVALUATION_ERROR.matcher(message);
    if (matcher.matches()) {
      int character = Integer.parseInt(matcher.group(1)) + 1;
      return matcher.group(2)
          + " ("
          + (code.isEmpty() ? "" : code + ", ")
          + "at character "
          + character
          + ")";
    }
    return code.isEmpty() ? message : message + " (" + code + ")";
  }

  private static String abbreviate(String text) {
    return text.length() <= 80 ? text : text.substring(0, 77) + "...";
  }

  // ---- compilation ----

  private static CompiledAction compileAction(TypeSpec type, ActionSpec action) {
    String path = action.path();
    List<String> keyVariables = new ArrayList<>();
    type.keys().forEach((key, keySpec) -> {
      if (!keySpec.family()) {
        keyVariables.add(key);
      }
    });
    keyVariables.addAll(action.members().keySet());
    Cel withState = environment(keyVariables, action.params(), true);
    List<Expression> preconditions = new ArrayList<>();
    for (int i = 0; i < action.preconditions().size(); i++) {
      Expression precondition =
          compileExpression(
              withState,
              path + ".pre[" + i + "]",
              action.preconditions().get(i),
              Set.of(CelKind.BOOL),
              "a precondition must be a bool");
      preconditions.add(precondition);
    }
    List<Effect> effects = new ArrayList<>();
    action
        .effects()
        .forEach(
            (key, text) -> {
              ActionSpec.MemberBinding binding = action.members().get(key);
              KeyKind kind = type.keys().get(binding == null ? key : binding.family()).kind();
              String effectPath = path + ".effect." + key;
              Expression expression =
                  switch (kind) {
                    case REGISTER -> compileExpression(withState, effectPath, text, null, null);
                    case COUNTER ->
                        compileExpression(
                            withState,
                            effectPath,
                            text,
                            Set.of(CelKind.INT),
                            "an effect on a counter must be an int");
                    case SET ->
                        compileExpression(
                            withState,
                            effectPath,
                            text,
                            Set.of(CelKind.LIST),
                            "an effect on a set must be a list");
                    case DEPENDENCIES -> throw undeclarable(key);
                  };
              effects.add(new Effect(key, kind, expression));
            });
    List<CompiledSync> sync = compileCalls(action, action.sync(), path + ".sync");
    // Messages are compiled as sync calls: over the parameters only.
    List<CompiledSync> send = compileCalls(action, action.send(), path + ".send");
    return withNamesRead(type, new CompiledAction(action, List.copyOf(preconditions),
        List.copyOf(effects), sync, send, Set.of(), Set.of(), false));
  }

  private static List<CompiledSync> compileCalls(ActionSpec action, List<SyncSpec> calls,
      String callsPath) {
    List<CompiledSync> sync = new ArrayList<>();
    if (!calls.isEmpty()) {
      // Sync arguments see the parameters only, so the calls are known before state is read.
      Cel parametersOnly = environment(Set.of(), action.params(), false);
      for (int i = 0; i < calls.size(); i++) {
        SyncSpec call = calls.get(i);
        String syncPath = callsPath + "[" + i + "]";
        Map<String, Expression> arguments = new LinkedHashMap<>();
        call.arguments()
            .forEach(
                (argument, text) ->
                    arguments.put(
                        argument,
                        compileExpression(
                            parametersOnly, syncPath + ".args." + argument, text, null, null)));
        sync.add(
            new CompiledSync(
                syncPath,
                call.entityTemplate(),
                call.action(),
                Collections.unmodifiableMap(arguments)));
      }
    }
    return List.copyOf(sync);
  }

  private static Cel environment(
      Collection<String> keys, Map<String, ParamType> params, boolean withState) {
    CelBuilder builder =
        CelFactory.standardCelBuilder()
            .setOptions(CEL_OPTIONS)
            .setStandardMacros(CelStandardMacro.STANDARD_MACROS);
    if (withState) {
      for (String key : keys) {
        builder.addVar(key, SimpleType.DYN);
      }
      builder.addVar(Names.STATE_VARIABLE, MAP_OF_STRING_TO_DYN);
    }
    params.forEach((param, type) -> builder.addVar(param, celType(type)));
    builder.addVar(Names.PARAMS_VARIABLE, MAP_OF_STRING_TO_DYN);
    return builder.build();
  }

  private static CelType celType(ParamType type) {
    return switch (type) {
      case INT -> SimpleType.INT;
      case DOUBLE -> SimpleType.DOUBLE;
      case STRING -> SimpleType.STRING;
      case BOOL -> SimpleType.BOOL;
      case LIST, MAP, ANY -> SimpleType.DYN;
    };
  }

  /**
   * Compiles one expression.
   *
   * @param allowedKinds the result kinds accepted besides {@code dyn}; null accepts any
   * @param requirement the sentence explaining {@code allowedKinds}, for the message
   */
  private static Expression compileExpression(
      Cel cel, String path, String text, Set<CelKind> allowedKinds, String requirement) {
    CelAbstractSyntaxTree syntaxTree;
    try {
      syntaxTree = cel.compile(text).getAst();
    } catch (CelValidationException e) {
      throw TroupeException.invalid(path + ": " + compileMessage(e));
    }
    CelType resultType = syntaxTree.getResultType();
    if (allowedKinds != null
        && resultType.kind() != CelKind.DYN
        && !allowedKinds.contains(resultType.kind())) {
      throw TroupeException.invalid(
          path + ": " + requirement + ", but `" + text + "` is of type " + resultType.name());
    }
    try {
      return new Expression(path, text, cel.createProgram(syntaxTree));
    } catch (CelEvaluationException e) {
      throw TroupeException.invalid(path + ": " + evaluationMessage(e));
    }
  }

  /** CEL's issues, one line each, with 1-based positions (CEL reports 0-based columns). */
  static String compileMessage(CelValidationException e) {
    if (e.getErrors().isEmpty()) {
      return String.valueOf(e.getMessage());
    }
    return e.getErrors().stream()
        .map(CompiledType::describeIssue)
        .collect(Collectors.joining("; "));
  }

  private static String describeIssue(CelIssue issue) {
    // Troupe declares no containers, so CEL's note about the empty one only adds noise.
    String message = issue.getMessage().replace(" (in container '')", "");
    int line = issue.getSourceLocation().getLine();
    int column = issue.getSourceLocation().getColumn();
    if (column < 0) {
      return message;
    }
    return (line > 1 ? "line " + line + ", " : "") + "column " + (column + 1) + ": " + message;
  }
}
