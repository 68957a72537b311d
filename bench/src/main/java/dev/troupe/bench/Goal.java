package dev.troupe.bench;

import java.util.Locale;

/**
 * A target a benchmark figure must reach, e.g. "engine / raw throughput at least 0.7" or "recovery
 * at most 5 s".
 *
 * @param comparison whether the figure must be at least or at most the threshold
 * @param threshold the target
 * @param unit appended to the threshold when printed ("" for ratios)
 */
public record Goal(Comparison comparison, double threshold, String unit) {
  public enum Comparison {
    AT_LEAST(">="),
    AT_MOST("<=");

    private final String symbol;

    Comparison(String symbol) {
      this.symbol = symbol;
    }
  }

  public static Goal atLeast(double threshold) {
    return new Goal(Comparison.AT_LEAST, threshold, "");
  }

  public static Goal atMost(double threshold, String unit) {
    return new Goal(Comparison.AT_MOST, threshold, unit);
  }

  public boolean isMetBy(double value) {
    return switch (comparison) {
      case AT_LEAST -> value >= threshold;
      case AT_MOST -> value <= threshold;
    };
  }

  /** PASS when the value meets the goal, MISS otherwise. */
  public String verdict(double value) {
    return isMetBy(value) ? "PASS" : "MISS";
  }

  @Override
  public String toString() {
    String number = threshold == Math.rint(threshold)
        ? String.format(Locale.ROOT, "%.0f", threshold)
        : String.format(Locale.ROOT, "%s", threshold);
    return comparison.symbol + " " + number + (unit.isEmpty() ? "" : " " + unit);
  }
}
