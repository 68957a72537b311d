package dev.troupe.model.spec;

/**
 * The declared type of an action parameter. Arguments are checked against it before any CEL
 * expression runs, so expressions can rely on it; the CEL compiler also sees the scalar types
 * ({@code int}, {@code double}, {@code string}, {@code bool}) and rejects ill-typed expressions at
 * definition time.
 */
public enum ParamType {
  /** A JSON integer within the signed 64-bit range; CEL {@code int}. */
  INT("int"),
  /** Any JSON number, as a 64-bit float; CEL {@code double}. */
  DOUBLE("double"),
  /** A JSON string; CEL {@code string}. */
  STRING("string"),
  /** A JSON boolean; CEL {@code bool}. */
  BOOL("bool"),
  /** A JSON array of any values; CEL {@code dyn}. */
  LIST("list"),
  /** A JSON object; CEL {@code dyn}. */
  MAP("map"),
  /** Any JSON value, including null; CEL {@code dyn}. */
  ANY("any");

  private final String wireName;

  ParamType(String wireName) {
    this.wireName = wireName;
  }

  /** The name used in type specs. */
  public String wireName() {
    return wireName;
  }

  /** The parameter type with this wire name, or {@code null} if there is none. */
  public static ParamType fromWireName(String name) {
    for (ParamType type : values()) {
      if (type.wireName.equals(name)) {
        return type;
      }
    }
    return null;
  }
}
