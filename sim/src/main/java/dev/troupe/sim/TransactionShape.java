package dev.troupe.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Which keys one request of a key-level workload (list-append, registers) touches, drawn from the
 * seed: a Fisher-Yates shuffle of every key, then the first one to three of them. A quarter of the
 * requests are single writes (one turn, no transaction), the rest transactions.
 *
 * @param chosen every key, shuffled; the request touches the first {@code width}
 */
record TransactionShape(List<String> chosen, boolean single, int width) {
  static TransactionShape draw(SplittableRandom random, List<String> keys) {
    List<String> chosen = new ArrayList<>(keys);
    for (int index = chosen.size() - 1; index > 0; index--) {
      int other = random.nextInt(index + 1);
      chosen.set(other, chosen.set(index, chosen.get(other)));
    }
    boolean single = random.nextInt(4) == 0;
    int width = single ? 1 : 1 + random.nextInt(Math.min(3, chosen.size()));
    return new TransactionShape(List.copyOf(chosen), single, width);
  }
}
