package dev.troupe.model;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.codec.BinaryWriter;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Iterator;
import java.util.Map;

/**
 * The limits on one value (a register's JSON value or a set element), parsed once from {@code
 * troupe.limits}, and the bounds on one CEL evaluation that computes values. The same limits hold
 * for a value a client sends (checked at the HTTP boundary) and for a value a turn computes (an
 * action's effect, a dependency's forward; checked in the turn core before anything is written).
 *
 * <p><b>Invariants.</b> A value that passed {@link #check} serializes to at most {@code
 * maxValueBytes} bytes of JSON, nests at most {@code maxNestingDepth} arrays and objects, holds no
 * string (nor object field name) longer than {@code maxStringLength} characters and only finite
 * numbers, integers within the signed 64-bit range. Checking costs at most the value's node count
 * plus {@code maxValueBytes} bytes of output: an oversized value is refused as soon as its
 * serialization passes the limit, so a huge computed value is never serialized in full.
 *
 * <p>Immutable and thread-safe.
 *
 * @param maxValueBytes most bytes of a value's compact JSON
 * @param maxNestingDepth most arrays and objects nested in one value (a scalar is depth 0, {@code
 *     [1]} depth 1)
 * @param maxStringLength most characters (UTF-16 code units) of one string in a value
 * @param maxEvaluationStringCharacters most characters of all the strings one CEL evaluation
 *     builds together (concatenations, conversions), whether or not they end in its result
 * @param maxEvaluationCollectionElements most elements of one list or map a CEL evaluation builds
 */
public record ValueLimits(
    int maxValueBytes,
    int maxNestingDepth,
    int maxStringLength,
    long maxEvaluationStringCharacters,
    int maxEvaluationCollectionElements) {

  /** The defaults of {@code troupe.limits} in the runtime's reference.conf. */
  public static final ValueLimits DEFAULTS = new ValueLimits(65_536, 64, 65_536, 1_048_576, 100_000);

  public ValueLimits {
    Invariants.check(maxValueBytes > 0 && maxNestingDepth > 0 && maxStringLength > 0
        && maxEvaluationStringCharacters > 0 && maxEvaluationCollectionElements > 0,
        "value limits must be positive: %s %s %s %s %s", maxValueBytes, maxNestingDepth,
        maxStringLength, maxEvaluationStringCharacters, maxEvaluationCollectionElements);
  }

  /**
   * Refuses a value past a limit: {@code too_large} (with reason {@link TransactionAbort#TOO_LARGE},
   * which a transaction reports as its abort reason) for size, nesting and string length; {@code
   * invalid_request} (reason {@link TransactionAbort#EVALUATION_FAILED}) for a number JSON cannot
   * carry.
   *
   * @param what names the value in the message, e.g. "value of key 'name'"
   * @return the value, for chaining
   */
  public JsonNode check(JsonNode value, String what) {
    walk(value, 0, what);
    // Most values (YCSB's, names, numbers) have a length known without serializing them: a
    // generator per written value was 2.4 % of the allocation under YCSB A over REST.
    int plainLength = BinaryWriter.plainJsonLength(value);
    if (plainLength >= 0) {
      if (plainLength > maxValueBytes) {
        throw tooManyBytes(what);
      }
      return value;
    }
    try {
      Json.MAPPER.writeValue(new BoundedSink(maxValueBytes), value);
    } catch (TooManyBytes e) {
      throw tooManyBytes(what);
    } catch (IOException e) {
      if (e.getCause() instanceof TooManyBytes) {
        throw tooManyBytes(what);
      }
      throw new IllegalStateException("a JsonNode always serializes", e);
    }
    return value;
  }

  /** The refusal of a value whose JSON is longer than {@code max-value-bytes}. */
  private TroupeException tooManyBytes(String what) {
    return tooLarge("%s exceeds the limit of %d bytes of JSON (troupe.limits.max-value-bytes)"
        .formatted(what, maxValueBytes));
  }

  /** A refusal for a limit, recognizable in a transaction as the abort reason {@code too_large}. */
  public static TroupeException tooLarge(String message) {
    return new TroupeException(ErrorCode.TOO_LARGE, TransactionAbort.TOO_LARGE, message);
  }

  /**
   * A computed value that cannot be computed or held (a CEL error, an overflow, a non-finite
   * number): {@code invalid_request} for a single turn, the abort reason {@code evaluation_failed}
   * in a transaction.
   */
  public static TroupeException evaluationFailed(String message) {
    return new TroupeException(ErrorCode.INVALID_REQUEST, TransactionAbort.EVALUATION_FAILED,
        message);
  }

  private void walk(JsonNode node, int depth, String what) {
    if (node.isContainerNode()) {
      if (depth + 1 > maxNestingDepth) {
        throw tooLarge("%s nests deeper than %d arrays and objects (troupe.limits.max-nesting-depth)"
            .formatted(what, maxNestingDepth));
      }
      if (node.isObject()) {
        Iterator<Map.Entry<String, JsonNode>> fields = node.fields();
        while (fields.hasNext()) {
          Map.Entry<String, JsonNode> field = fields.next();
          checkString(field.getKey(), what);
          walk(field.getValue(), depth + 1, what);
        }
      } else {
        for (JsonNode element : node) {
          walk(element, depth + 1, what);
        }
      }
    } else if (node.isTextual()) {
      checkString(node.textValue(), what);
    } else if (node.isNumber()) {
      checkNumber(node, what);
    }
  }

  private void checkString(String text, String what) {
    if (text.length() > maxStringLength) {
      throw tooLarge(("%s holds a string of %d characters, more than %d (troupe.limits."
          + "max-string-length)").formatted(what, text.length(), maxStringLength));
    }
  }

  /** Finite, and integral numbers within 64 bits signed: what JSON readers and CEL agree on. */
  private static void checkNumber(JsonNode number, String what) {
    if (number.isIntegralNumber()) {
      if (!number.canConvertToLong()) {
        throw evaluationFailed(what + " holds the integer " + number.asText()
            + ", beyond the 64-bit signed range of stored integers");
      }
    } else if (!Double.isFinite(number.doubleValue())) {
      throw evaluationFailed(what + " holds " + number.doubleValue()
          + ", not a finite number, which JSON cannot carry");
    }
  }

  /** Thrown by {@link BoundedSink} past its limit; no stack trace, it is control flow. */
  private static final class TooManyBytes extends RuntimeException {
    private static final long serialVersionUID = 1L;

    TooManyBytes() {
      super(null, null, false, false);
    }
  }

  /** Counts bytes written and stops the serialization once they pass the limit. */
  private static final class BoundedSink extends OutputStream {
    private final long limit;
    private long written;

    BoundedSink(long limit) {
      this.limit = limit;
    }

    @Override
    public void write(int b) {
      count(1);
    }

    @Override
    public void write(byte[] bytes, int offset, int length) {
      count(length);
    }

    private void count(int length) {
      written += length;
      if (written > limit) {
        throw new TooManyBytes();
      }
    }
  }
}
