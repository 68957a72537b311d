package dev.troupe.sim.geo;

import dev.troupe.sim.geo.CausalHistory.ObjectRead;
import dev.troupe.sim.geo.CausalHistory.ObjectWrite;
import dev.troupe.sim.geo.CausalHistory.Transaction;
import java.util.HashMap;
import java.util.Map;

/**
 * Writes a {@link CausalHistory} in the text format the Plume and AWDIT checkers read, so outside
 * tools can check what the simulator checks itself: one event per line,
 *
 * <pre>
 *   r(KEY,VALUE,SESSION,TRANSACTION)
 *   w(KEY,VALUE,SESSION,TRANSACTION)
 * </pre>
 *
 * with non-negative integers (AWDIT's parser: {@code ([rw])\((\d++),(\d++),(\d++),(-?\d++)\)});
 * a transaction's events are consecutive lines in program order, a session's transactions in
 * session order. The format knows read-write registers only, so only registers are exported:
 * each (object, register key) is one key, numbered from 0 in order of first appearance; values are
 * the workload's unique register values, 0 reading the initial (never written) state; sessions
 * and transactions are numbered from 0. A transaction's reads come first (it read one snapshot
 * before writing), then its writes. Counters, sets and the write logs are left out (Plume has no
 * such types); every exported transaction committed (the simulator records only those).
 */
public final class PlumeHistory {
  private PlumeHistory() {}

  /** The history as Plume text, lines ending in '\n'. */
  public static String format(CausalHistory history) {
    Map<String, Integer> keys = new HashMap<>();
    Map<String, Integer> sessions = new HashMap<>();
    StringBuilder text = new StringBuilder();
    int transactionNumber = 0;
    for (Transaction transaction : history.transactions()) {
      int session = sessions.computeIfAbsent(transaction.session(), ignored -> sessions.size());
      int number = transactionNumber++;
      for (Map.Entry<String, ObjectRead> read : transaction.reads().entrySet()) {
        ObjectWrite write = transaction.writes().get(read.getKey());
        java.util.TreeSet<String> registerKeys =
            new java.util.TreeSet<>(read.getValue().registers().keySet());
        if (write != null) {
          registerKeys.addAll(write.registers().keySet());
        }
        for (String register : registerKeys) {
          int key = keys.computeIfAbsent(read.getKey() + "." + register, ignored -> keys.size());
          long value = read.getValue().registers().getOrDefault(register, 0L);
          text.append("r(").append(key).append(',').append(value).append(',').append(session)
              .append(',').append(number).append(")\n");
        }
      }
      for (Map.Entry<String, ObjectWrite> write : transaction.writes().entrySet()) {
        for (Map.Entry<String, Long> register : write.getValue().registers().entrySet()) {
          int key = keys.computeIfAbsent(write.getKey() + "." + register.getKey(),
              ignored -> keys.size());
          text.append("w(").append(key).append(',').append(register.getValue()).append(',')
              .append(session).append(',').append(number).append(")\n");
        }
      }
    }
    return text.toString();
  }
}
