package dev.troupe.model.spec;

import dev.troupe.model.EntityState;
import dev.troupe.model.dependency.DependencyKeys;
import dev.troupe.model.value.KeyKind;
import dev.troupe.model.value.Value;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * The rules of type evolution (docs/ARCHITECTURE.md, "Type evolution"): whether redeclaring a type
 * would hide stored values, and which stored values a {@code discard} migration deletes.
 *
 * <p>The one rule: <b>a redeclaration may not hide a stored value that the current declaration
 * shows</b>. A declaration shows a stored value when a schemaless type holds it (a schemaless type
 * shows every key it stores), or when a declared type declares its key as a plain key of the
 * value's kind, or its family (for a member key {@code family[member]}) as a family of the value's
 * kind. So adding keys and actions, changing actions, defaults and admission never hide anything;
 * changing a key's kind, removing it, turning it into a family or back, or declaring a type over
 * schemaless entities hide the values stored under it, and are refused unless the request names a
 * migration. The decision is made on a summary of what the type's entities store ({@link
 * StoredKeys}), so a change that would hide keys nobody wrote is allowed.
 *
 * <p>Pure and deterministic: no storage, no clock. The runtime builds the summary (bounded by a
 * setting) and acts on the answer.
 */
public final class TypeEvolution {
  private TypeEvolution() {}

  /** A migration a redeclaration may name (query parameter {@code migration}). */
  public enum Migration {
    /** None: a redeclaration that would hide stored values is refused. */
    NONE,
    /**
     * Every stored value the new declaration does not show is deleted from its entity (reads then
     * show the key's default, or nothing for an undeclared key).
     */
    DISCARD;

    public String wireName() {
      return name().toLowerCase(Locale.ROOT);
    }

    /** The migration named {@code name}, or null for an unknown name. */
    public static Migration fromWireName(String name) {
      for (Migration migration : values()) {
        if (migration != NONE && migration.wireName().equals(name)) {
          return migration;
        }
      }
      return null;
    }
  }

  /**
   * A stored key as the rules see it: a plain key, or a member {@code name[member]} filed under its
   * family's name (members of one family are alike for the rules, however many there are).
   */
  public record StoredKey(String name, boolean member) implements Comparable<StoredKey> {
    public StoredKey {
      Objects.requireNonNull(name, "name");
    }

    /** The stored key {@code key}: a member when it looks like {@code family[member]}. */
    public static StoredKey of(String key) {
      int open = key.indexOf('[');
      if (open > 0 && key.endsWith("]")) {
        return new StoredKey(key.substring(0, open), true);
      }
      return new StoredKey(key, false);
    }

    @Override
    public int compareTo(StoredKey other) {
      int byName = name.compareTo(other.name);
      return byName != 0 ? byName : Boolean.compare(member, other.member);
    }

    @Override
    public String toString() {
      return member ? "key family '" + name + "' (its members)" : "key '" + name + "'";
    }
  }

  /**
   * What the entities of one type name store: per stored key, the kinds of the values found.
   *
   * @param kinds stored key to the kinds of value stored under it (hidden keys excluded)
   * @param entities how many entities were examined
   * @param complete whether every entity of the type was examined; when not, keys the
   *     redeclaration changes are taken to hold data (see {@link #check})
   */
  public record StoredKeys(Map<StoredKey, Set<KeyKind>> kinds, long entities, boolean complete) {
    public static final StoredKeys NONE = new StoredKeys(Map.of(), 0, true);

    public StoredKeys {
      TreeMap<StoredKey, Set<KeyKind>> copy = new TreeMap<>();
      kinds.forEach((key, found) -> copy.put(key, Collections.unmodifiableSet(
          found.isEmpty() ? EnumSet.noneOf(KeyKind.class) : EnumSet.copyOf(found))));
      kinds = Collections.unmodifiableMap(copy);
    }

    /** Accumulates entity states into a summary. Not thread-safe. */
    public static final class Builder {
      private final TreeMap<StoredKey, Set<KeyKind>> kinds = new TreeMap<>();
      private long entities;

      public Builder add(EntityState state) {
        entities++;
        state.values().forEach((key, value) -> {
          if (!DependencyKeys.isHidden(key)) {
            kinds.computeIfAbsent(StoredKey.of(key), ignored -> EnumSet.noneOf(KeyKind.class))
                .add(value.kind());
          }
        });
        return this;
      }

      public StoredKeys build(boolean complete) {
        return new StoredKeys(kinds, entities, complete);
      }
    }
  }

  /**
   * One stored key the redeclaration would hide.
   *
   * @param key the stored key
   * @param reason why the new declaration does not show it, naming the key
   */
  public record HiddenKey(StoredKey key, String reason) {}

  /**
   * The verdict on a redeclaration.
   *
   * @param hidden the stored keys whose values the new declaration would hide, in key order;
   *     empty when the redeclaration is compatible
   */
  public record Verdict(List<HiddenKey> hidden) {
    public Verdict {
      hidden = List.copyOf(hidden);
    }

    public boolean compatible() {
      return hidden.isEmpty();
    }

    /** The message of the {@code incompatible_type} refusal: every offending key, one by one. */
    public String message(String typeName) {
      StringBuilder message = new StringBuilder("redeclaring type '").append(typeName)
          .append("' would hide stored values: ");
      for (int i = 0; i < hidden.size(); i++) {
        message.append(i == 0 ? "" : "; ").append(hidden.get(i).reason());
      }
      return message.append(". Nothing was changed. Declare the type so that it shows them,"
          + " or name a migration (?migration=discard deletes the values the new declaration"
          + " does not show)").toString();
    }
  }

  /**
   * Whether {@code proposed} may replace {@code current} without a migration.
   *
   * @param current the declaration in force; null when the type was never declared (its entities
   *     are schemaless)
   * @param proposed the new declaration
   * @param stored what the type's entities store
   */
  public static Verdict check(TypeSpec current, TypeSpec proposed, StoredKeys stored) {
    Objects.requireNonNull(proposed, "proposed");
    Objects.requireNonNull(stored, "stored");
    TypeSpec before = current != null ? current : TypeSpec.schemaless(proposed.name());
    TreeMap<StoredKey, String> hidden = new TreeMap<>();
    stored.kinds().forEach((key, kinds) -> {
      for (KeyKind kind : kinds) {
        if (shows(before, key, kind) && !shows(proposed, key, kind)) {
          hidden.putIfAbsent(key, reason(proposed, key, kind));
        }
      }
    });
    if (!stored.complete()) {
      // Not every entity was examined: any key the redeclaration stops showing may hold data.
      if (before.schemaless() && !proposed.schemaless()) {
        hidden.putIfAbsent(new StoredKey("*", false), "the type's " + stored.entities()
            + " or more entities were stored schemaless (any key), and not all of them could be"
            + " examined");
      }
      before.keys().forEach((name, spec) -> {
        StoredKey key = new StoredKey(name, spec.family());
        if (!shows(proposed, key, spec.kind())) {
          hidden.putIfAbsent(key, reason(proposed, key, spec.kind())
              + " (more entities than could be examined, so it is taken to hold values)");
        }
      });
    }
    List<HiddenKey> result = new ArrayList<>();
    hidden.forEach((key, reason) -> result.add(new HiddenKey(key, reason)));
    return new Verdict(result);
  }

  /** Whether {@code spec} shows a value of {@code kind} stored under {@code key}. */
  public static boolean shows(TypeSpec spec, StoredKey key, KeyKind kind) {
    if (spec.schemaless()) {
      return true;
    }
    KeySpec declared = spec.keys().get(key.name());
    return declared != null && declared.family() == key.member() && declared.kind() == kind;
  }

  /**
   * The keys of {@code state} whose values {@code spec} does not show: what a {@code discard}
   * migration deletes from that entity. Hidden (Troupe's own) keys are never among them.
   */
  public static List<String> keysToDiscard(TypeSpec spec, EntityState state) {
    List<String> keys = new ArrayList<>();
    new TreeMap<String, Value>(state.values()).forEach((key, value) -> {
      if (!DependencyKeys.isHidden(key) && !shows(spec, StoredKey.of(key), value.kind())) {
        keys.add(key);
      }
    });
    return keys;
  }

  private static String reason(TypeSpec proposed, StoredKey key, KeyKind kind) {
    String stored = key + " stores " + kind.wireName() + " values";
    if (proposed.schemaless()) {
      return stored; // unreachable: a schemaless type shows everything
    }
    KeySpec declared = proposed.keys().get(key.name());
    if (declared == null) {
      return stored + " but is not declared";
    }
    if (declared.family() != key.member()) {
      return stored + " but '" + key.name() + "' is declared as "
          + (declared.family() ? "a key family" : "a plain key");
    }
    return stored + " but is declared of kind " + declared.kind().wireName();
  }
}
