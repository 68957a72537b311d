package dev.troupe.model.spec;

import dev.cel.bundle.Cel;
import dev.cel.bundle.CelFactory;
import dev.cel.common.CelAbstractSyntaxTree;
import dev.cel.common.CelValidationException;
import dev.cel.common.types.CelKind;
import dev.cel.common.types.SimpleType;
import dev.cel.parser.CelStandardMacro;
import dev.cel.runtime.CelEvaluationException;
import dev.cel.runtime.CelRuntime;
import dev.troupe.model.TroupeException;
import dev.troupe.model.ValueLimits;
import dev.troupe.model.causal.DataCentreIds;
import java.util.Map;

/**
 * A strong type's per-entity home: a CEL expression over the entity's {@code id} (a string) that
 * gives the name of the entity's home data centre, e.g. {@code id.startsWith("eu-") ? "paris" :
 * "oslo"} (docs/ARCHITECTURE.md, "Strong types with a home DC"). A pure function of the id, so
 * every DC that holds the declaration finds the same home for an entity, and an entity's home
 * never changes while the declaration does not.
 *
 * <p>Compiled once per declaration; evaluation is bounded like every expression ({@link
 * EvaluationBudget}). Immutable and thread-safe.
 */
public final class HomeRule {
  /** The rule's only variable: the entity's id. */
  public static final String ID_VARIABLE = "id";

  private final String text;
  private final CelRuntime.Program program;

  private HomeRule(String text, CelRuntime.Program program) {
    this.text = text;
    this.program = program;
  }

  /**
   * Compiles a rule.
   *
   * @throws TroupeException {@code invalid_request} starting with {@code home.rule: } when it does
   *     not compile or is not of type string
   */
  public static HomeRule compile(String text) {
    if (text == null || text.isBlank()) {
      throw TroupeException.invalid("home.rule: must be a non-blank CEL expression over id");
    }
    Cel cel = CelFactory.standardCelBuilder()
        .setOptions(CompiledType.CEL_OPTIONS)
        .setStandardMacros(CelStandardMacro.STANDARD_MACROS)
        .addVar(ID_VARIABLE, SimpleType.STRING)
        .build();
    CelAbstractSyntaxTree syntaxTree;
    try {
      syntaxTree = cel.compile(text).getAst();
    } catch (CelValidationException e) {
      throw TroupeException.invalid("home.rule: " + CompiledType.compileMessage(e));
    }
    CelKind kind = syntaxTree.getResultType().kind();
    if (kind != CelKind.STRING && kind != CelKind.DYN) {
      throw TroupeException.invalid("home.rule: must give a data centre name (a string), but `"
          + text + "` is of type " + syntaxTree.getResultType().name());
    }
    try {
      return new HomeRule(text, cel.createProgram(syntaxTree));
    } catch (CelEvaluationException e) {
      throw TroupeException.invalid("home.rule: " + e.getMessage());
    }
  }

  /** The rule's text, as declared. */
  public String text() {
    return text;
  }

  /**
   * The home of the entity with this id.
   *
   * @throws TroupeException {@code invalid_request} when the rule fails for this id or gives
   *     something that is not a data centre name
   */
  public String homeOf(String id) {
    Object home;
    try {
      home = EvaluationBudget.evaluate(program, Map.of(ID_VARIABLE, id), ValueLimits.DEFAULTS,
          "home.rule `" + text + "`");
    } catch (CelEvaluationException e) {
      throw TroupeException.invalid("home.rule `" + text + "` failed for id '" + id + "': "
          + e.getMessage());
    }
    if (!(home instanceof String name) || !DataCentreIds.isValidName(name)) {
      throw TroupeException.invalid("home.rule `" + text + "` gives " + home + " for id '" + id
          + "', which is not a data centre name");
    }
    return name;
  }
}
