package dev.troupe.model.spec;

import java.util.Set;
import java.util.regex.Pattern;

/**
 * Naming rules shared by the spec records. Key, parameter, action and argument names become CEL
 * variables or appear in URLs, so they must be plain CEL identifiers that are not CEL keywords and
 * do not shadow the two variables every expression sees ({@code state} and {@code params}).
 */
final class Names {
  /** The variable holding the map of all current key values. */
  static final String STATE_VARIABLE = "state";

  /** The variable holding the map of all arguments of the action. */
  static final String PARAMS_VARIABLE = "params";

  private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

  /** CEL language keywords and reserved words: a variable with one of these names cannot be referenced. */
  private static final Set<String> CEL_RESERVED =
      Set.of(
          "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
          "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
          "void", "while");

  private Names() {}

  /**
   * Why {@code name} cannot name a CEL variable, or {@code null} if it can.
   *
   * @param reserveVariables whether {@code state} and {@code params} are also forbidden (true for
   *     keys and parameters, which become variables next to them)
   */
  static String problemWithIdentifier(String name, boolean reserveVariables) {
    if (name == null || !IDENTIFIER.matcher(name).matches()) {
      return "'" + name + "' is not an identifier (letters, digits and '_', not starting with a digit)";
    }
    if (CEL_RESERVED.contains(name)) {
      return "'" + name + "' is a reserved word of CEL";
    }
    if (reserveVariables && (name.equals(STATE_VARIABLE) || name.equals(PARAMS_VARIABLE))) {
      return "'" + name + "' is reserved: every expression sees the variables 'state' and 'params'";
    }
    return null;
  }
}
