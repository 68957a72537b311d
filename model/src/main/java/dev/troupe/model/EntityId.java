package dev.troupe.model;

import java.nio.charset.StandardCharsets;

/**
 * The identity of an entity: its type name and its id within the type. Both are non-empty and may
 * not contain '/' or control characters, so that {@code type/id} is unambiguous in URLs, logs and
 * storage keys. Length limits are enforced by the server's request limits, not here.
 */
public record EntityId(String type, String id) {
  public EntityId {
    if (!isValidName(type)) {
      throw TroupeException.invalid("invalid entity type name: " + quote(type));
    }
    if (!isValidName(id)) {
      throw TroupeException.invalid("invalid entity id: " + quote(id));
    }
  }

  /** Parses {@code Type/id}. */
  public static EntityId parse(String text) {
    int slash = text == null ? -1 : text.indexOf('/');
    if (slash <= 0) {
      throw TroupeException.invalid("entity reference must look like Type/id: " + quote(text));
    }
    return new EntityId(text.substring(0, slash), text.substring(slash + 1));
  }

  public static boolean isValidName(String name) {
    if (name == null || name.isEmpty()) {
      return false;
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (c == '/' || Character.isISOControl(c)) {
        return false;
      }
    }
    return true;
  }

  /** Stable byte form used in storage keys: UTF-8 type, 0x00, UTF-8 id. */
  public byte[] toBytes() {
    byte[] typeBytes = type.getBytes(StandardCharsets.UTF_8);
    byte[] idBytes = id.getBytes(StandardCharsets.UTF_8);
    byte[] result = new byte[typeBytes.length + 1 + idBytes.length];
    System.arraycopy(typeBytes, 0, result, 0, typeBytes.length);
    System.arraycopy(idBytes, 0, result, typeBytes.length + 1, idBytes.length);
    return result;
  }

  public static EntityId fromBytes(byte[] bytes) {
    for (int i = 0; i < bytes.length; i++) {
      if (bytes[i] == 0) {
        return new EntityId(
            new String(bytes, 0, i, StandardCharsets.UTF_8),
            new String(bytes, i + 1, bytes.length - i - 1, StandardCharsets.UTF_8));
      }
    }
    throw new IllegalArgumentException("not an entity id encoding");
  }

  private static String quote(String text) {
    return text == null ? "null" : "'" + text + "'";
  }

  @Override
  public String toString() {
    return type + "/" + id;
  }
}
