package dev.troupe.sim.geo;

import dev.troupe.sim.geo.CausalChecker.Kind;
import dev.troupe.sim.geo.CausalChecker.Violation;
import dev.troupe.sim.geo.CausalHistory.ObjectRead;
import dev.troupe.sim.geo.CausalHistory.Transaction;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SortedMap;
import java.util.TreeSet;

/**
 * Checks the final states of every data centre (DC), read after the faults healed and replication
 * went quiet:
 *
 * <ul>
 *   <li><b>Convergence.</b> Every DC holds the same user-visible state of every object (hidden
 *       replication markers aside, which differ by design).
 *   <li><b>No lost write.</b> Every committed write is present in every DC (its id in the
 *       object's write log): nothing acknowledged is lost, not even an addition concurrent with a
 *       removal in another DC (the Jepsen case of AntidoteDB).
 *   <li><b>Values, exactly once.</b> Each DC's final values are those all committed writes
 *       determine (as {@link CausalChecker} checks each read): counters equal the sum of every
 *       committed increment, sets hold exactly the additions no removal had seen, registers a
 *       value no later write overwrote.
 * </ul>
 */
public final class ConvergenceChecker {
  private ConvergenceChecker() {}

  /**
   * @param history every committed transaction
   * @param finalReads per DC name, each object's final state as a read
   * @param finalStates per DC name, the user-visible state (what a client could see) rendered
   *     canonically, per object and key, compared for equality
   */
  public static List<Violation> check(CausalHistory history,
      SortedMap<String, SortedMap<String, ObjectRead>> finalReads,
      SortedMap<String, SortedMap<String, String>> finalStates) {
    List<Violation> violations = new ArrayList<>();
    String firstDc = null;
    SortedMap<String, String> first = null;
    for (Map.Entry<String, SortedMap<String, String>> dc : finalStates.entrySet()) {
      if (first == null) {
        firstDc = dc.getKey();
        first = dc.getValue();
        continue;
      }
      TreeSet<String> objects = new TreeSet<>(first.keySet());
      objects.addAll(dc.getValue().keySet());
      for (String object : objects) {
        String mine = first.get(object);
        String theirs = dc.getValue().get(object);
        if (!Objects.equals(mine, theirs)) {
          violations.add(new Violation(Kind.CONVERGENCE, dc.getKey(), object + " is " + theirs
              + " there but " + mine + " at " + firstDc));
          break;
        }
      }
    }
    CausalChecker.Index index = new CausalChecker.Index(history);
    for (Map.Entry<String, SortedMap<String, ObjectRead>> dc : finalReads.entrySet()) {
      for (Transaction transaction : history.transactions()) {
        for (String object : transaction.writes().keySet()) {
          ObjectRead read = dc.getValue().get(object);
          if (read == null || !read.writers().contains(transaction.id())) {
            violations.add(new Violation(Kind.LOST_WRITE, dc.getKey(), transaction.id()
                + " (committed at " + transaction.dataCentre() + ") is missing from " + object));
          }
        }
        if (violations.size() >= CausalChecker.MAX_REPORTED) {
          return List.copyOf(violations);
        }
      }
      for (Map.Entry<String, ObjectRead> object : dc.getValue().entrySet()) {
        CausalChecker.checkValues(index, object.getKey(), object.getValue(),
            "the final state of " + dc.getKey(), violations);
      }
    }
    return violations.size() > CausalChecker.MAX_REPORTED
        ? List.copyOf(violations.subList(0, CausalChecker.MAX_REPORTED))
        : List.copyOf(violations);
  }
}
