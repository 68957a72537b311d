package dev.troupe.sim.geo;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What the clients of several data centres (DCs) observed, for the causal checkers ({@link
 * CausalChecker}, {@link ConvergenceChecker}) and the Plume export ({@link PlumeHistory}).
 *
 * <p>The unit is a committed transaction of one session (a client), run at one DC, in the order
 * the transactions committed (simulated time, which is a topological order of the causal order:
 * a transaction can observe only writes that committed before it). Objects are entities, named by
 * a string. What a transaction observed of an object is identified by the data, not by versions
 * the system reports: every transaction that writes an object also adds its own id to the
 * object's write log (an observed-remove set nobody removes from), so reading the log tells
 * exactly which writes of that object were visible. Register values are unique per write, so a
 * register read names the write it returned.
 *
 * @param transactions the committed transactions, in commit order
 */
public record CausalHistory(List<Transaction> transactions) {
  public CausalHistory {
    transactions = List.copyOf(transactions);
  }

  /**
   * One object's part of a transaction's effects.
   *
   * @param registers register key to the unique value written
   * @param increments counter key to the amount added
   * @param adds set key to the elements added
   * @param removes set key to the elements removed (the additions of them the transaction
   *     observed)
   */
  public record ObjectWrite(SortedMap<String, Long> registers, SortedMap<String, Long> increments,
      SortedMap<String, Set<String>> adds, SortedMap<String, Set<String>> removes) {
    public ObjectWrite {
      registers = Collections.unmodifiableSortedMap(new TreeMap<>(registers));
      increments = Collections.unmodifiableSortedMap(new TreeMap<>(increments));
      adds = copy(adds);
      removes = copy(removes);
    }
  }

  /**
   * One object as a transaction (or a final read) found it.
   *
   * @param writers ids of the transactions whose writes of this object were visible
   * @param registers register key to the value read (absent: never written)
   * @param counters counter key to its total
   * @param sets set key to its elements
   */
  public record ObjectRead(Set<String> writers, SortedMap<String, Long> registers,
      SortedMap<String, Long> counters, SortedMap<String, Set<String>> sets) {
    public ObjectRead {
      writers = Collections.unmodifiableSet(new TreeSet<>(writers));
      registers = Collections.unmodifiableSortedMap(new TreeMap<>(registers));
      counters = Collections.unmodifiableSortedMap(new TreeMap<>(counters));
      sets = copy(sets);
    }
  }

  /**
   * A committed transaction.
   *
   * @param id unique in the history
   * @param session the client that ran it; its transactions are in session order in the history
   * @param dataCentre the DC that served it
   * @param reads what it observed of each object it read or wrote, before its own writes (one
   *     atomic snapshot of that DC)
   * @param writes what it wrote, per object
   */
  public record Transaction(String id, String session, String dataCentre,
      SortedMap<String, ObjectRead> reads, SortedMap<String, ObjectWrite> writes) {
    public Transaction {
      Objects.requireNonNull(id, "id");
      reads = Collections.unmodifiableSortedMap(new TreeMap<>(reads));
      writes = Collections.unmodifiableSortedMap(new TreeMap<>(writes));
    }
  }

  /** Collects transactions in commit order (single-threaded, as the simulator). */
  public static final class Recorder {
    private final List<Transaction> recorded = new ArrayList<>();

    public void record(Transaction transaction) {
      recorded.add(transaction);
    }

    public CausalHistory history() {
      return new CausalHistory(recorded);
    }
  }

  private static SortedMap<String, Set<String>> copy(Map<String, Set<String>> sets) {
    TreeMap<String, Set<String>> copy = new TreeMap<>();
    sets.forEach((key, elements) -> copy.put(key, Collections.unmodifiableSet(
        new TreeSet<>(elements))));
    return Collections.unmodifiableSortedMap(copy);
  }
}
