package dev.troupe.bench;

import java.util.SplittableRandom;

/**
 * SmSa's skewed pick (smsa.txt §4.2.2): of {@code size} items the first {@code skew} share is hot,
 * and a pick falls on the hot set with probability 3/4, on the rest otherwise; a share of 1 makes
 * every pick uniform. Shared by the SmallBank and Marketplace workloads. Stateless.
 */
final class HotSetPick {
  /** Probability that a pick falls on the hot set (SmSa: 75%). */
  static final double HOT_PICK_PROBABILITY = 0.75;

  private HotSetPick() {}

  /** An index in [0, size): from the hot set [0, hot) with probability 3/4, else the rest. */
  static int pick(SplittableRandom random, int size, double skew) {
    int hot = Math.max(1, (int) Math.round(size * skew));
    if (hot >= size) {
      return random.nextInt(size);
    }
    return random.nextDouble() < HOT_PICK_PROBABILITY
        ? random.nextInt(hot)
        : hot + random.nextInt(size - hot);
  }
}
