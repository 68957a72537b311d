package dev.troupe.model.spec;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The rule that keeps a causal type's preconditions true in every DC's merged state
 * (docs/ARCHITECTURE.md, "Strong types with a home DC").
 *
 * <p>Why: in a causal type every DC runs actions on its own state and merges the others' effects
 * later. A precondition that reads a key some action writes held against the local state only: a
 * concurrent effect in another DC can make it false once merged (two DCs each withdraw 80 of a
 * balance of 100, each seeing 100: 160 is paid out; merged, the balance is 20 under
 * last-writer-wins, -60 as a counter). A precondition that reads only
 * parameters and keys no action writes cannot be broken that way: nothing an action does in any
 * DC changes what it read.
 *
 * <p>The rule: every precondition of a causal type may read only its parameters and keys that no
 * action's effect of the type writes, directly or through a member binding of a family any
 * effect writes, nor the follower key of a declared dependency; a precondition naming {@code
 * state} reads every key. Names are found as identifiers in the expression's text, like {@link
 * CompiledType#access}: a key's name inside a string literal counts too, which only refuses more.
 * Strong and schemaless types pass (a schemaless type has no actions). Key writes (key routes)
 * bypass preconditions in one DC too, so they are not part of the rule.
 *
 * <p>Applied only by a DC with peers; a single DC needs no rule (its actions are serializable).
 * Pure and stateless.
 */
public final class CausalPreconditions {
  private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

  private CausalPreconditions() {}

  /**
   * Every precondition of {@code spec} that breaks the rule, one message each, naming the action,
   * the precondition, the key and an action that writes it; empty when the type is safe as a
   * causal type (or is strong).
   */
  public static List<String> violations(TypeSpec spec) {
    if (spec.consistency().strong() || spec.schemaless()) {
      return List.of();
    }
    // Written key (a plain key or a family) -> the first writer, for the message.
    Map<String, String> writers = new LinkedHashMap<>();
    for (ActionSpec action : spec.actions().values()) {
      for (String variable : action.effects().keySet()) {
        ActionSpec.MemberBinding member = action.members().get(variable);
        writers.putIfAbsent(member == null ? variable : member.family(),
            "action '" + action.name() + "'");
      }
    }
    for (DependencySpec dependency : spec.dependencies()) {
      String follower =
          dependency.family() != null ? dependency.family() : dependency.follower();
      writers.putIfAbsent(follower, "the dependency on " + dependency.follower());
    }
    List<String> violations = new ArrayList<>();
    if (writers.isEmpty()) {
      return violations;
    }
    for (ActionSpec action : spec.actions().values()) {
      List<String> preconditions = action.preconditions();
      for (int i = 0; i < preconditions.size(); i++) {
        Set<String> read = keysRead(spec, action, preconditions.get(i));
        for (String key : read) {
          String writer = writers.get(key);
          if (writer != null) {
            violations.add(action.path() + ".pre[" + i + "]: `" + preconditions.get(i)
                + "` reads key '" + key + "', which " + writer + " writes: with several data"
                + " centres a concurrent write in another DC can make it false after it held"
                + " here; declare the type \"consistency\": \"strong\" with a \"home\" data"
                + " centre, or read only parameters and keys no action writes");
          }
        }
      }
    }
    return violations;
  }

  /** The keys (plain keys, or families for member variables) one expression names. */
  private static Set<String> keysRead(TypeSpec spec, ActionSpec action, String expression) {
    Set<String> keys = new TreeSet<>();
    Matcher identifiers = IDENTIFIER.matcher(expression);
    while (identifiers.find()) {
      String identifier = identifiers.group();
      if (identifier.equals(Names.STATE_VARIABLE)) {
        keys.addAll(spec.keys().keySet());
      } else if (action.members().containsKey(identifier)) {
        keys.add(action.members().get(identifier).family());
      } else if (spec.keys().containsKey(identifier)
          && !action.params().containsKey(identifier)) {
        keys.add(identifier);
      }
    }
    return keys;
  }
}
