package dev.troupe.model.spec;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyFunction;
import dev.troupe.model.dependency.DependencyKind;
import dev.troupe.model.dependency.KeyReference;
import java.util.List;
import java.util.Objects;

/**
 * A dependency declared in a type spec, for every entity of the type: when a transaction gives one
 * of its follower keys a value and the key does not follow the dependency yet, the dependency is
 * registered in that same transaction (the leader must exist, so a delete dependency declared
 * this way is a foreign key). For example, in type {@code Cart}:
 * {@code {follower: "item[p]", kind: update, leader: {entity: "Product/{p}", key: price},
 * function: replicate}}, and in type {@code Stock}: {@code {follower: available, kind: delete,
 * leader: {entity: "Product/{id}", key: price}}}.
 *
 * @param follower a key of the type, or {@code family[variable]} for every member of a key
 *     family (the variable names the member in the leader's template)
 * @param leaderEntity a {@code Type/id} template over {@code {id}} (the follower entity's id) and
 *     the member variable
 * @param function the update function; null for a delete dependency
 */
public record DependencySpec(String follower, DependencyKind kind, String leaderEntity,
    String leaderKey, DependencyFunction function) {
  /** The variable a leader template uses for the follower entity's own id. */
  public static final String ID_VARIABLE = "id";

  public DependencySpec {
    Objects.requireNonNull(follower, "follower");
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(leaderEntity, "leaderEntity");
    Objects.requireNonNull(leaderKey, "leaderKey");
  }

  /** The family a {@code family[variable]} follower names, or null for a plain key. */
  public String family() {
    int open = follower.indexOf('[');
    return open > 0 && follower.endsWith("]") ? follower.substring(0, open) : null;
  }

  /** The member variable of a family follower, or null. */
  public String memberVariable() {
    String family = family();
    return family == null ? null : follower.substring(family.length() + 1, follower.length() - 1);
  }

  /** The placeholders of the leader template. */
  List<SyncSpec.TemplatePart> leaderTemplate() {
    return new SyncSpec(leaderEntity, "-", null).entityTemplate();
  }

  /**
   * The dependency this declaration gives {@code key} of {@code entity}, or null when it does not
   * declare {@code key}.
   *
   * @throws TroupeException {@code invalid_request} when the leader's template gives no valid
   *     entity, or the follower's own entity
   */
  public Dependency instantiate(EntityId entity, String key) {
    String member = null;
    String family = family();
    if (family == null) {
      if (!follower.equals(key)) {
        return null;
      }
    } else {
      if (!key.startsWith(family + "[") || !key.endsWith("]")) {
        return null;
      }
      member = key.substring(family.length() + 1, key.length() - 1);
    }
    StringBuilder reference = new StringBuilder();
    for (SyncSpec.TemplatePart part : leaderTemplate()) {
      switch (part) {
        case SyncSpec.TemplatePart.Literal literal -> reference.append(literal.text());
        case SyncSpec.TemplatePart.Placeholder placeholder ->
            reference.append(placeholder.parameter().equals(ID_VARIABLE) ? entity.id() : member);
      }
    }
    EntityId leader;
    try {
      leader = EntityId.parse(reference.toString());
    } catch (TroupeException e) {
      throw TroupeException.invalid("type %s declares that %s follows %s.%s, which is no entity: %s"
          .formatted(entity.type(), key, reference, leaderKey, e.getMessage()));
    }
    if (leader.equals(entity)) {
      throw TroupeException.invalid("type %s declares that %s.%s follows %s.%s on itself"
          .formatted(entity.type(), entity, key, leader, leaderKey));
    }
    return new Dependency(kind, new KeyReference(leader, leaderKey),
        new KeyReference(entity, key), function);
  }

  /** The canonical form, as {@link SpecParser} reads it. */
  public ObjectNode toJson() {
    ObjectNode node = Json.NODES.objectNode();
    node.put("follower", follower);
    node.put("kind", kind.wireName());
    ObjectNode leader = node.putObject("leader");
    leader.put("entity", leaderEntity);
    leader.put("key", leaderKey);
    if (function != null) {
      node.put("function", function.wireName());
    }
    return node;
  }
}
