package dev.troupe.txn.wire;

/**
 * A type as it travels between nodes: by name and version, never as a compiled type. The version
 * is the commit timestamp of the type's stored definition (what the runtime keeps beside each
 * declared type), so every node that loaded the same definition resolves it to the same compiled
 * type ({@link TypeRegistry}).
 *
 * @param name the type's name (an entity's {@code type})
 * @param version the commit timestamp of the stored definition; 0 for a type never declared (a
 *     schemaless one)
 */
public record TypeReference(String name, long version) {
  public TypeReference {
    if (name == null || name.isEmpty()) {
      throw new IllegalArgumentException("a type reference needs a name");
    }
  }
}
