package dev.troupe.sim.geo;

import dev.troupe.sim.geo.CausalHistory.ObjectRead;
import dev.troupe.sim.geo.CausalHistory.ObjectWrite;
import dev.troupe.sim.geo.CausalHistory.Transaction;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Checks a {@link CausalHistory} for transactional causal consistency, from what clients observed:
 *
 * <ul>
 *   <li><b>Causal visibility.</b> The causal order is the transitive closure of session order (a
 *       client's transactions, in order, whichever DC served them) and reads-from (a transaction
 *       that observed a write of an object follows it). A transaction that reads an object
 *       observes every write of that object in its causal past. Reported as <i>read your
 *       writes</i> when the missing write is the session's own, <i>monotonic reads</i> when an
 *       earlier transaction of the session had observed it, <i>causal visibility</i> otherwise
 *       (it reached the reader through another session).
 *   <li><b>Atomic visibility.</b> A transaction that observed a multi-object transaction's write
 *       of one object observes its writes of every other object it read.
 *   <li><b>Values.</b> Each value read is the one the observed writes determine: a register holds
 *       the value of an observed write that no observed write causally follows (concurrent writes
 *       are resolved by last writer wins, which causality bounds but does not decide); a counter
 *       is the sum of the observed increments (exactly once each); a set holds exactly the
 *       elements of observed additions that no observed removal had seen (add wins).
 *   <li><b>No phantom.</b> A transaction observes only writes of committed transactions that
 *       wrote that object, never its own before it wrote.
 * </ul>
 *
 * <p>Pure; time and memory quadratic in the number of transactions (a bit set of causal past per
 * transaction), a few milliseconds for the simulator's histories.
 */
public final class CausalChecker {
  private CausalChecker() {}

  /** What was violated. */
  public enum Kind {
    PHANTOM_OBSERVATION,
    READ_YOUR_WRITES,
    MONOTONIC_READS,
    CAUSAL_VISIBILITY,
    ATOMIC_VISIBILITY,
    REGISTER_VALUE,
    COUNTER_VALUE,
    SET_VALUE,
    CONVERGENCE,
    LOST_WRITE,
    /** The run itself stopped: an invariant of a core or of the simulated shell broke. */
    RUN_STOPPED
  }

  /** One violation, with the transaction (or DC, for final states) where it shows. */
  public record Violation(Kind kind, String where, String explanation) {
    @Override
    public String toString() {
      return kind.name().toLowerCase().replace('_', ' ') + " at " + where + ": " + explanation;
    }
  }

  /** At most this many violations are reported (the first is what matters). */
  static final int MAX_REPORTED = 20;

  /** The causal past of each transaction, and where each object's writers are. */
  static final class Index {
    final List<Transaction> transactions;
    final Map<String, Integer> positions = new HashMap<>();
    final Map<String, List<Integer>> writersByObject = new HashMap<>();
    /** Object, register key and value to the position of the transaction that wrote it. */
    final Map<String, Integer> registerWriters = new HashMap<>();
    final List<BitSet> pasts = new ArrayList<>();

    Index(CausalHistory history) {
      transactions = history.transactions();
      Map<String, Integer> lastOfSession = new HashMap<>();
      for (int position = 0; position < transactions.size(); position++) {
        Transaction transaction = transactions.get(position);
        positions.put(transaction.id(), position);
        BitSet past = new BitSet();
        Integer previous = lastOfSession.put(transaction.session(), position);
        if (previous != null) {
          past.or(pasts.get(previous));
          past.set(previous);
        }
        for (ObjectRead read : transaction.reads().values()) {
          for (String writer : read.writers()) {
            Integer writerPosition = positions.get(writer);
            if (writerPosition != null && writerPosition < position) {
              past.or(pasts.get(writerPosition));
              past.set(writerPosition);
            }
          }
        }
        pasts.add(past);
        for (Map.Entry<String, ObjectWrite> write : transaction.writes().entrySet()) {
          writersByObject.computeIfAbsent(write.getKey(), ignored -> new ArrayList<>())
              .add(position);
          for (Map.Entry<String, Long> register : write.getValue().registers().entrySet()) {
            registerWriters.put(registerKey(write.getKey(), register.getKey(),
                register.getValue()), position);
          }
        }
      }
    }

    List<Integer> writersOf(String object) {
      return writersByObject.getOrDefault(object, List.of());
    }
  }

  static String registerKey(String object, String key, long value) {
    return object + "\u0000" + key + "\u0000" + value;
  }

  /** Every violation found (at most {@link #MAX_REPORTED}); empty when the history is causal. */
  public static List<Violation> check(CausalHistory history) {
    Index index = new Index(history);
    List<Violation> violations = new ArrayList<>();
    Map<String, List<Integer>> sessions = new HashMap<>();
    for (int position = 0; position < index.transactions.size()
        && violations.size() < MAX_REPORTED; position++) {
      Transaction reader = index.transactions.get(position);
      List<Integer> earlierOfSession =
          sessions.computeIfAbsent(reader.session(), ignored -> new ArrayList<>());
      BitSet past = index.pasts.get(position);
      for (Map.Entry<String, ObjectRead> entry : reader.reads().entrySet()) {
        String object = entry.getKey();
        ObjectRead read = entry.getValue();
        String where = reader.id() + " (" + reader.session() + " at " + reader.dataCentre() + ")";
        // No phantom: every observed writer is an earlier transaction that wrote the object.
        for (String writer : read.writers()) {
          Integer writerPosition = index.positions.get(writer);
          if (writerPosition == null || writerPosition >= position
              || !index.transactions.get(writerPosition).writes().containsKey(object)) {
            violations.add(new Violation(Kind.PHANTOM_OBSERVATION, where,
                "observed " + writer + " on " + object + ", which no earlier transaction wrote"));
          }
        }
        // Causal visibility and the session guarantees.
        for (int writerPosition : index.writersOf(object)) {
          if (writerPosition >= position || !past.get(writerPosition)) {
            continue;
          }
          Transaction writer = index.transactions.get(writerPosition);
          if (read.writers().contains(writer.id())) {
            continue;
          }
          Kind kind = Kind.CAUSAL_VISIBILITY;
          String how = "it causally precedes the reader";
          if (writer.session().equals(reader.session())) {
            kind = Kind.READ_YOUR_WRITES;
            how = "the session wrote it at " + writer.dataCentre();
          } else {
            for (int earlier : earlierOfSession) {
              ObjectRead seen = index.transactions.get(earlier).reads().get(object);
              if (seen != null && seen.writers().contains(writer.id())) {
                kind = Kind.MONOTONIC_READS;
                how = "the session's " + index.transactions.get(earlier).id() + " had observed"
                    + " it at " + index.transactions.get(earlier).dataCentre();
                break;
              }
            }
          }
          violations.add(new Violation(kind, where, "did not observe " + writer.id()
              + " (from " + writer.dataCentre() + ") on " + object + ", but " + how));
        }
        // Atomic visibility.
        for (String writer : read.writers()) {
          Integer writerPosition = index.positions.get(writer);
          if (writerPosition == null) {
            continue;
          }
          for (String other : index.transactions.get(writerPosition).writes().keySet()) {
            ObjectRead otherRead = reader.reads().get(other);
            if (!other.equals(object) && otherRead != null
                && !otherRead.writers().contains(writer)) {
              violations.add(new Violation(Kind.ATOMIC_VISIBILITY, where, "observed " + writer
                  + "'s write of " + object + " but not of " + other));
            }
          }
        }
        checkValues(index, object, read, where, violations);
      }
      earlierOfSession.add(position);
    }
    return violations.size() > MAX_REPORTED
        ? List.copyOf(violations.subList(0, MAX_REPORTED))
        : List.copyOf(violations);
  }

  /**
   * Checks that the values of one read object are those its observed writers determine (the
   * values bullet of the class comment). Used for the final states too.
   */
  static void checkValues(Index index, String object, ObjectRead read, String where,
      List<Violation> violations) {
    List<Integer> observed = new ArrayList<>();
    java.util.HashSet<Integer> observedSet = new java.util.HashSet<>();
    for (String writer : read.writers()) {
      Integer position = index.positions.get(writer);
      if (position != null && index.transactions.get(position).writes().containsKey(object)) {
        observed.add(position);
        observedSet.add(position);
      }
    }
    // Registers.
    Set<String> writtenRegisters = new TreeSet<>();
    for (int position : observed) {
      writtenRegisters.addAll(index.transactions.get(position).writes().get(object).registers()
          .keySet());
    }
    for (String key : writtenRegisters) {
      Long value = read.registers().get(key);
      if (value == null) {
        violations.add(new Violation(Kind.REGISTER_VALUE, where, object + "." + key
            + " read empty although its writes were observed"));
        continue;
      }
      Integer source = index.registerWriters.get(registerKey(object, key, value));
      if (source == null || !observedSet.contains(source)) {
        violations.add(new Violation(Kind.REGISTER_VALUE, where, object + "." + key + " = "
            + value + ", a value no observed write wrote"));
        continue;
      }
      for (int position : observed) {
        if (position != source && index.pasts.get(position).get(source)
            && index.transactions.get(position).writes().get(object).registers()
                .containsKey(key)) {
          violations.add(new Violation(Kind.REGISTER_VALUE, where, object + "." + key + " = "
              + value + " from " + index.transactions.get(source).id() + ", overwritten by "
              + index.transactions.get(position).id() + " that causally follows it and was"
              + " observed"));
          break;
        }
      }
    }
    // Counters: each observed increment exactly once.
    Map<String, Long> sums = new TreeMap<>();
    for (int position : observed) {
      index.transactions.get(position).writes().get(object).increments()
          .forEach((key, amount) -> sums.merge(key, amount, Long::sum));
    }
    for (Map.Entry<String, Long> sum : sums.entrySet()) {
      long total = read.counters().getOrDefault(sum.getKey(), 0L);
      if (total != sum.getValue()) {
        violations.add(new Violation(Kind.COUNTER_VALUE, where, object + "." + sum.getKey()
            + " = " + total + ", but the observed increments sum to " + sum.getValue()));
      }
    }
    // Sets: an observed addition stays unless an observed removal of its element observed it.
    Map<String, List<Transaction>> removals = new HashMap<>();
    for (int position : observed) {
      Transaction removal = index.transactions.get(position);
      removal.writes().get(object).removes().forEach((key, elements) -> {
        for (String element : elements) {
          removals.computeIfAbsent(key + "\u0000" + element, ignored -> new ArrayList<>())
              .add(removal);
        }
      });
    }
    Map<String, Set<String>> expected = new TreeMap<>();
    for (int position : observed) {
      Transaction adder = index.transactions.get(position);
      adder.writes().get(object).adds().forEach((key, elements) -> {
        for (String element : elements) {
          boolean removed = false;
          for (Transaction removal : removals.getOrDefault(key + "\u0000" + element, List.of())) {
            ObjectRead removalSaw = removal.reads().get(object);
            if (removalSaw != null && removalSaw.writers().contains(adder.id())) {
              removed = true;
              break;
            }
          }
          if (!removed) {
            expected.computeIfAbsent(key, ignored -> new TreeSet<>()).add(element);
          }
        }
      });
    }
    Set<String> setKeys = new TreeSet<>(expected.keySet());
    setKeys.addAll(read.sets().keySet());
    for (String key : setKeys) {
      Set<String> want = expected.getOrDefault(key, Set.of());
      Set<String> got = read.sets().getOrDefault(key, Set.of());
      if (!want.equals(got)) {
        violations.add(new Violation(Kind.SET_VALUE, where, object + "." + key + " = " + got
            + ", but the observed additions and removals make " + want));
      }
    }
  }
}
