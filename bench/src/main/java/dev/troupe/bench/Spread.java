package dev.troupe.bench;

import java.util.List;

/**
 * How far a figure's rounds lie apart: the lowest and highest, the median and the relative
 * standard deviation (the sample standard deviation over the mean, in percent; 0 for one round).
 * A ratio whose rounds spread by more than the difference it claims says nothing.
 */
record Spread(double min, double max, double median, double relativeStandardDeviationPercent,
    int rounds) {

  static Spread of(List<Double> values) {
    if (values.isEmpty()) {
      throw new IllegalArgumentException("no values to spread");
    }
    List<Double> sorted = values.stream().sorted().toList();
    int middle = sorted.size() / 2;
    double median = sorted.size() % 2 == 1
        ? sorted.get(middle)
        : (sorted.get(middle - 1) + sorted.get(middle)) / 2;
    double mean = sorted.stream().mapToDouble(Double::doubleValue).average().orElseThrow();
    double squares = 0;
    for (double value : sorted) {
      squares += (value - mean) * (value - mean);
    }
    double deviation = sorted.size() < 2 ? 0 : Math.sqrt(squares / (sorted.size() - 1));
    double relative = mean == 0 ? 0 : 100 * deviation / Math.abs(mean);
    return new Spread(sorted.get(0), sorted.get(sorted.size() - 1), median, relative,
        sorted.size());
  }

  /**
   * The spread of the per-round ratios {@code numerators[i] / denominators[i]}: rounds of the two
   * sides with the same index ran back to back, so each pair saw the same state of the machine.
   */
  static Spread ofRatios(List<Double> numerators, List<Double> denominators) {
    int rounds = Math.min(numerators.size(), denominators.size());
    List<Double> ratios = new java.util.ArrayList<>();
    for (int round = 0; round < rounds; round++) {
      ratios.add(numerators.get(round) / denominators.get(round));
    }
    return of(ratios);
  }

  /** Every value multiplied by {@code factor} (the relative deviation does not change). */
  Spread scaled(double factor) {
    double low = min * factor;
    double high = max * factor;
    return new Spread(Math.min(low, high), Math.max(low, high), median * factor,
        relativeStandardDeviationPercent, rounds);
  }
}
