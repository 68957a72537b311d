package dev.troupe.model.dependency;

import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.DependencyExpression;

/**
 * How an update dependency computes its follower's value (smsa.txt §2.3.1, the IFunc of Fig. 2e).
 *
 * <p>Unlike the paper's functions, which see only the old and new leader value, the aggregates
 * ({@code sum}, {@code count}, {@code min}, {@code max}) are exact over every leader a follower
 * has: the follower keeps each leader's last forwarded value (its <b>contribution</b>) in its
 * dependency record, so a leader's decrease, deletion or deregistration corrects the aggregate
 * instead of drifting. {@code replicate} copies the leader's value; {@code cel:<expression>} is any
 * CEL expression over {@code old_value}, {@code new_value} (the leader's value before and after,
 * null when absent), {@code current} (the follower's value, null when absent), {@code leader_key}
 * and {@code follower_key}.
 */
public sealed interface DependencyFunction {
  /** The text clients write: {@code replicate}, {@code sum}, ..., {@code cel:<expression>}. */
  String wireName();

  /** Whether the follower's value is an aggregate over all its leaders' contributions. */
  default boolean isAggregate() {
    return false;
  }

  record Replicate() implements DependencyFunction {
    @Override
    public String wireName() {
      return "replicate";
    }
  }

  /** The sum of the leaders' numeric values (a missing or non-numeric value counts 0). */
  record Sum() implements DependencyFunction {
    @Override
    public String wireName() {
      return "sum";
    }

    @Override
    public boolean isAggregate() {
      return true;
    }
  }

  /** How many leaders hold a value (not null). */
  record Count() implements DependencyFunction {
    @Override
    public String wireName() {
      return "count";
    }

    @Override
    public boolean isAggregate() {
      return true;
    }
  }

  /** The least numeric leader value; null when no leader holds a number. */
  record Min() implements DependencyFunction {
    @Override
    public String wireName() {
      return "min";
    }

    @Override
    public boolean isAggregate() {
      return true;
    }
  }

  /** The greatest numeric leader value; null when no leader holds a number. */
  record Max() implements DependencyFunction {
    @Override
    public String wireName() {
      return "max";
    }

    @Override
    public boolean isAggregate() {
      return true;
    }
  }

  /** A CEL expression, compiled when parsed (a bad expression is refused at registration). */
  record Custom(String expression) implements DependencyFunction {
    public static final String PREFIX = "cel:";

    public Custom {
      DependencyExpression.compile(expression);
    }

    @Override
    public String wireName() {
      return PREFIX + expression;
    }
  }

  /** Parses the wire form; an unknown name or a bad expression is {@code invalid_request}. */
  static DependencyFunction parse(String text) {
    if (text == null) {
      throw TroupeException.invalid("a dependency needs a function: replicate, sum, count, min,"
          + " max or cel:<expression>");
    }
    return switch (text) {
      case "replicate" -> new Replicate();
      case "sum" -> new Sum();
      case "count" -> new Count();
      case "min" -> new Min();
      case "max" -> new Max();
      default -> {
        if (text.startsWith(Custom.PREFIX)) {
          yield new Custom(text.substring(Custom.PREFIX.length()));
        }
        throw TroupeException.invalid("unknown dependency function '" + text
            + "': expected replicate, sum, count, min, max or cel:<expression>");
      }
    };
  }
}
