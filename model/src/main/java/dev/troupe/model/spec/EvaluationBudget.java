package dev.troupe.model.spec;

import com.google.protobuf.ByteString;
import dev.cel.common.ast.CelExpr;
import dev.cel.common.values.CelByteString;
import dev.cel.runtime.CelEvaluationException;
import dev.cel.runtime.CelEvaluationListener;
import dev.cel.runtime.CelRuntime;
import dev.troupe.model.TroupeException;
import dev.troupe.model.ValueLimits;
import java.util.Collection;
import java.util.Map;

/**
 * Bounds the memory one CEL evaluation may take, whatever the expression and the state: CEL's
 * options (cel-java 0.11.1) bound comprehension iterations ({@link
 * CompiledType#MAX_COMPREHENSION_ITERATIONS}, over the whole evaluation) and expression size, but
 * not the size of the values an evaluation builds, so an effect {@code name + name} run again and
 * again doubles a string until the heap is gone. The evaluation is traced: after every
 * sub-expression that builds a value (a call such as {@code +}, a list or map literal, a
 * comprehension) this listener sees the value and stops the evaluation, by throwing, as soon as
 *
 * <ul>
 *   <li>one string is longer than {@link ValueLimits#maxStringLength} characters (no value may hold
 *       it, so nothing can come of it),
 *   <li>the strings built so far hold more than {@link ValueLimits#maxEvaluationStringCharacters}
 *       characters together (a comprehension may build a new string per iteration), or
 *   <li>one list or map holds more than {@link ValueLimits#maxEvaluationCollectionElements}.
 * </ul>
 *
 * <p>So the strings one evaluation builds take at most {@code maxEvaluationStringCharacters} plus
 * one string's worth of heap before it stops, and the lists it builds are bounded by the
 * iteration limit (each element comes from an iteration or from the expression's text). Values
 * read (variables, selections) are not counted: they exist already. A refusal is {@code too_large} with the abort reason {@code
 * too_large}, whether the expression is a precondition, an effect, a sync call's argument or a
 * dependency function.
 *
 * <p>One instance per evaluation (it counts); not thread-safe, and needs not be: an evaluation runs
 * on one thread.
 */
final class EvaluationBudget implements CelEvaluationListener {
  private final ValueLimits limits;
  private final String where;
  private long stringCharacters;

  private EvaluationBudget(ValueLimits limits, String where) {
    this.limits = limits;
    this.where = where;
  }

  /**
   * Evaluates {@code program} within the limits. A refusal by the budget surfaces as the {@link
   * TroupeException} it is (not as a {@link CelEvaluationException}); CEL's own errors stay
   * {@link CelEvaluationException}s.
   *
   * @param where names the expression in messages, e.g. {@code Account.rename: effect name}
   */
  static Object evaluate(CelRuntime.Program program, Map<String, ?> variables, ValueLimits limits,
      String where) throws CelEvaluationException {
    try {
      return program.trace(variables, new EvaluationBudget(limits, where));
    } catch (CelEvaluationException e) {
      if (e.getCause() instanceof TroupeException refusal) {
        throw refusal;
      }
      throw e;
    }
  }

  @Override
  public void callback(CelExpr expression, Object result) {
    switch (expression.getKind()) {
      case IDENT, SELECT, CONSTANT, NOT_SET -> {
        return; // read, not built
      }
      default -> {}
    }
    switch (result) {
      case String text -> countString(text.length());
      case ByteString bytes -> countString(bytes.size());
      case CelByteString bytes -> countString(bytes.size());
      case Collection<?> collection -> checkCollection(collection.size());
      case Map<?, ?> map -> checkCollection(map.size());
      case null, default -> {}
    }
  }

  private void countString(long length) {
    if (length > limits.maxStringLength()) {
      throw ValueLimits.tooLarge(where + " builds a string of " + length + " characters, more"
          + " than troupe.limits.max-string-length (" + limits.maxStringLength() + ")");
    }
    stringCharacters += length;
    if (stringCharacters > limits.maxEvaluationStringCharacters()) {
      throw ValueLimits.tooLarge(where + " builds strings of more than "
          + limits.maxEvaluationStringCharacters()
          + " characters in one evaluation (troupe.limits.max-evaluation-string-characters)");
    }
  }

  private void checkCollection(int size) {
    if (size > limits.maxEvaluationCollectionElements()) {
      throw ValueLimits.tooLarge(where + " builds a list or map of " + size
          + " elements, more than troupe.limits.max-evaluation-collection-elements ("
          + limits.maxEvaluationCollectionElements() + ")");
    }
  }
}
