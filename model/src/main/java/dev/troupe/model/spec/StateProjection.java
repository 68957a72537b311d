package dev.troupe.model.spec;

import dev.troupe.model.TroupeException;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * A projection: the keys of an entity a client asks to see, instead of its whole state (issue 20,
 * "reads of parts of an entity"). {@code GET /v1/entities/Branch/b1?key=checking[c17]&key=savings[c17]}
 * answers the state restricted to those two members, rendered from one committed state; the
 * answers of writes and actions take the same parameters. Rendering it ({@link
 * CompiledType#render(dev.troupe.model.EntityState, StateProjection)}) costs the named keys, never
 * the whole entity, so reading two members of a branch of 400 costs two.
 *
 * <p>Each named key renders as {@code GET .../keys/{key}} answers it: a plain declared key or a
 * member of a declared family with its value or its default; a member nested under its family
 * (the same shape as the whole state: {@code {"checking":{"c17":5}}}); a family named by itself
 * with all its members; a key a schemaless entity does not hold is left out. An empty projection
 * ({@link #NONE}) answers {@code {}}.
 *
 * <p>Invariants: immutable; the keys are distinct, in the order named. Parsing requests into
 * projections (and their limit) is the HTTP layer's; this class only checks a projection against a
 * type.
 */
public record StateProjection(List<String> keys) {
  /** The empty projection: no key ({@code ?state=none}). */
  public static final StateProjection NONE = new StateProjection(List.of());

  public StateProjection {
    keys = List.copyOf(Objects.requireNonNull(keys, "keys"));
    Set<String> seen = new HashSet<>();
    for (String key : keys) {
      if (!seen.add(key)) {
        throw TroupeException.invalid("the projection names key '" + key + "' twice");
      }
    }
  }

  /**
   * Refuses ({@code invalid_request}) a projection naming a key that is no part of an entity of
   * {@code type}: neither a declared key (plain or family) nor a member of a declared family. Any
   * key of a schemaless type is accepted (absent ones are left out when rendered).
   */
  public void checkAgainst(TypeSpec type) {
    if (type.schemaless()) {
      return;
    }
    for (String key : keys) {
      if (type.keys().containsKey(key)) {
        continue;
      }
      String family = familyOf(type, key);
      if (family == null) {
        throw TroupeException.invalid("type " + type.name() + " has no key '" + key
            + "' (a projection names declared keys, families or members such as family[member])");
      }
    }
  }

  /**
   * The declared family {@code key} is a member of ({@code checking} for {@code checking[c17]}),
   * or null when it names no member of a declared family of {@code type}.
   */
  static String familyOf(TypeSpec type, String key) {
    int open = key.indexOf('[');
    if (open <= 0 || !key.endsWith("]")) {
      return null;
    }
    String family = key.substring(0, open);
    KeySpec declared = type.keys().get(family);
    if (declared == null || !declared.family()) {
      return null;
    }
    String member = key.substring(open + 1, key.length() - 1);
    return ActionSpec.MemberBinding.problemWithMemberName(member) == null ? family : null;
  }
}
