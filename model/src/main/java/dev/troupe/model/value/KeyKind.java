package dev.troupe.model.value;

import java.util.Locale;

/** The CRDT kind of a key. */
public enum KeyKind {
  /** Any JSON value; concurrent writes resolved last-writer-wins by (timestamp, data centre). */
  REGISTER,
  /** PN-counter of 64-bit integers. */
  COUNTER,
  /** Add-wins observed-remove set of JSON values. */
  SET,
  /**
   * Troupe's own records of a key's dependencies ({@link DependencyTable}, in hidden keys). Never
   * declared in a type spec.
   */
  DEPENDENCIES;

  /** Whether a type spec may declare a key of this kind. */
  public boolean declarable() {
    return this != DEPENDENCIES;
  }

  public String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }

  public static KeyKind fromWireName(String name) {
    for (KeyKind kind : values()) {
      if (kind.declarable() && kind.wireName().equals(name)) {
        return kind;
      }
    }
    return null;
  }
}
