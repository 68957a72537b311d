package dev.troupe.model.spec;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cel.bundle.Cel;
import dev.cel.bundle.CelFactory;
import dev.cel.common.CelAbstractSyntaxTree;
import dev.cel.common.CelValidationException;
import dev.cel.common.types.SimpleType;
import dev.cel.parser.CelStandardMacro;
import dev.cel.runtime.CelEvaluationException;
import dev.cel.runtime.CelRuntime;
import dev.troupe.model.TroupeException;
import dev.troupe.model.ValueLimits;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A compiled {@code cel:} dependency function: a CEL expression over {@code old_value}, {@code
 * new_value} (the leader's value before and after the change, null when absent), {@code current}
 * (the follower's value, null when absent), {@code leader_key} and {@code follower_key}, whose
 * result becomes the follower's value.
 *
 * <p>Compiled programs are shared through a bounded cache keyed by the expression's text, so
 * dependency records decoded again and again (each materialization of an entity) compile once.
 * Thread-safe.
 */
public final class DependencyExpression {
  /**
   * At most this many distinct expressions stay compiled; past it the least recently used is
   * dropped (and compiled again when next used). A bound on memory whatever clients register.
   */
  public static final int MAX_COMPILED_EXPRESSIONS = 1024;

  /** The longest expression accepted, in characters. */
  public static final int MAX_EXPRESSION_LENGTH = 4096;

  private static final Cel CEL = CelFactory.standardCelBuilder()
      .setOptions(CompiledType.CEL_OPTIONS)
      .setStandardMacros(CelStandardMacro.STANDARD_MACROS)
      .addVar("old_value", SimpleType.DYN)
      .addVar("new_value", SimpleType.DYN)
      .addVar("current", SimpleType.DYN)
      .addVar("leader_key", SimpleType.STRING)
      .addVar("follower_key", SimpleType.STRING)
      .build();

  private static final Map<String, DependencyExpression> COMPILED =
      new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, DependencyExpression> eldest) {
          return size() > MAX_COMPILED_EXPRESSIONS;
        }
      };

  private final String text;
  private final CelRuntime.Program program;

  private DependencyExpression(String text, CelRuntime.Program program) {
    this.text = text;
    this.program = program;
  }

  /** The compiled expression; {@code invalid_request} with CEL's message when it does not compile. */
  public static DependencyExpression compile(String text) {
    if (text == null || text.isBlank()) {
      throw TroupeException.invalid("cel: needs an expression, e.g. cel:new_value * 2");
    }
    if (text.length() > MAX_EXPRESSION_LENGTH) {
      throw TroupeException.invalid("a dependency expression may have at most "
          + MAX_EXPRESSION_LENGTH + " characters");
    }
    synchronized (COMPILED) {
      DependencyExpression cached = COMPILED.get(text);
      if (cached != null) {
        return cached;
      }
    }
    CelAbstractSyntaxTree syntaxTree;
    try {
      syntaxTree = CEL.compile(text).getAst();
    } catch (CelValidationException e) {
      throw TroupeException.invalid("cel:" + text + ": " + CompiledType.compileMessage(e));
    }
    DependencyExpression compiled;
    try {
      compiled = new DependencyExpression(text, CEL.createProgram(syntaxTree));
    } catch (CelEvaluationException e) {
      throw TroupeException.invalid("cel:" + text + ": " + CompiledType.evaluationMessage(e));
    }
    synchronized (COMPILED) {
      COMPILED.put(text, compiled);
    }
    return compiled;
  }

  /**
   * The follower's new value, evaluated within {@code limits} ({@link EvaluationBudget}: an
   * evaluation that would build a string or list past them is {@code too_large}). A failed
   * evaluation or a result with no JSON form is {@code invalid_request} naming the expression,
   * with the abort reason {@code evaluation_failed}: the transaction that forwarded the change
   * aborts. The result itself is checked against the value limits by the caller.
   */
  public JsonNode evaluate(JsonNode oldValue, JsonNode newValue, JsonNode current,
      String leaderKey, String followerKey, ValueLimits limits) {
    Map<String, Object> variables = new HashMap<>();
    variables.put("old_value", CelValues.fromJson(oldValue));
    variables.put("new_value", CelValues.fromJson(newValue));
    variables.put("current", CelValues.fromJson(current));
    variables.put("leader_key", leaderKey);
    variables.put("follower_key", followerKey);
    try {
      return CelValues.toJson(EvaluationBudget.evaluate(program, variables, limits,
          "dependency function cel:" + text));
    } catch (CelEvaluationException e) {
      throw ValueLimits.evaluationFailed("dependency function cel:" + text + " failed: "
          + CompiledType.evaluationMessage(e));
    } catch (CelValues.NotJsonException e) {
      throw ValueLimits.evaluationFailed("dependency function cel:" + text + " produced "
          + e.getMessage());
    }
  }
}
