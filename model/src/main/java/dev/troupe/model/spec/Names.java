package dev.troupe.model.spec;

import java.util.Set;
import java.util.regex.Pattern;

/**
 * Naming rules shared by the spec records. Key, parameter and sync argument names become CEL
 * variables, so they must be plain identifiers that are not CEL keywords and do not shadow the two
 * variables every expression sees ({@code state} and {@code params}). Action names appear in URLs
 * and messages only, so any identifier will do.
 */
final class Names {
  /** The variable holding the map of all current key values. */
  static final String STATE_VARIABLE = "state";

  /** The variable holding the map of all arguments of the action. */
  static final String PARAMS_VARIABLE = "params";

  private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

  /** CEL keywords and reserved words: a variable with one of these names cannot be referenced. */
  private static final Set<String> CEL_RESERVED =
      Set.of(
          "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
          "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
          "void", "while");

  private Names() {}

  /**
   * Why {@code name} cannot name an action, or {@code null} if it can. Action names appear in URLs
   * and messages but never in expressions, so any identifier will do.
   */
  static String problemWithActionName(String name) {
    if (name == null || !IDENTIFIER.matcher(name).matches()) {
      return "'"
          + name
          + "' is not an identifier (letters, digits and '_', not starting with a digit)";
    }
    return null;
  }

  /**
   * Why {@code name} cannot name a CEL variable (a key, a parameter, a sync argument), or {@code
   * null} if it can: it must be an identifier, not a CEL keyword, and neither {@code state} nor
   * {@code params}, the variables every expression sees next to the keys and parameters.
   */
  static String problemWithVariableName(String name) {
    String problem = problemWithActionName(name);
    if (problem != null) {
      return problem;
    }
    if (CEL_RESERVED.contains(name)) {
      return "'" + name + "' is a reserved word of CEL";
    }
    if (name.equals(STATE_VARIABLE) || name.equals(PARAMS_VARIABLE)) {
      return "'" + name + "' is reserved: every expression sees the variables 'state' and 'params'";
    }
    return null;
  }
}
