package dev.troupe.txn.check;

import dev.troupe.txn.check.RecordedTransaction.Outcome;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Checks a list-append history (the workload Jepsen's Elle uses): transactions append unique
 * elements to lists and read whole lists. Because every read returns the list's contents, the
 * version order of each list is read off the data itself rather than taken from versions the
 * system reports, so a system that lies about its versions, applies an append twice, loses one,
 * or shows an aborted or half-done transaction is caught by what clients saw.
 *
 * <p>Ground truth is the final contents of every list, read after the run. Lists only grow, so
 * every read must be a prefix of its list's final contents. The checks, in order (the first
 * violation found is reported):
 *
 * <ol>
 *   <li>{@link #DUPLICATE_APPEND}: the workload appended an element twice (a malformed history).
 *   <li>{@link #DUPLICATE_ELEMENT}: an element appears twice in a final list (an append applied
 *       twice, for example by a recovery that redid it).
 *   <li>{@link #UNKNOWN_ELEMENT}: a final list or a read holds an element no transaction appended
 *       to that list.
 *   <li>{@link SerializabilityChecker#ABORTED_READ} (G1a): an aborted transaction's element is in
 *       a final list or was read.
 *   <li>{@link #LOST_APPEND}: a committed transaction's element is missing from its final list.
 *   <li>{@link #NOT_ATOMIC}: some of a transaction's appends took effect and some did not.
 *   <li>{@link #INCOMPATIBLE_ORDER}: a read is not a prefix of its list's final contents.
 *   <li>{@link #INTERLEAVED_APPENDS}: one transaction's elements on one list are not adjacent
 *       (another transaction's append landed between them).
 *   <li>{@link #INTERMEDIATE_READ} (G1b): a read ends inside another transaction's run of
 *       appends to that list (it saw that transaction's intermediate state).
 *   <li>The direct serialization graph, through {@link SerializabilityChecker}: each transaction
 *       whose appends took effect (committed, or of unknown outcome but present in the final
 *       lists) writes, on each list, the version numbered by the position of its last element
 *       there; a read of n elements reads version n. Write-write, write-read and anti-dependency
 *       edges follow, and a cycle is G0, G1c or G2.
 * </ol>
 *
 * <p>A transaction must not read a list it also appends to (the reads of Troupe's transactions
 * return state after the transaction's own turns, which this encoding does not model). Pure: no
 * clock, no randomness; the verdict is deterministic for a given history.
 */
public final class ListAppendChecker {
  /** The workload appended one element twice: elements must be unique per history. */
  public static final String DUPLICATE_APPEND = "duplicate_append";

  /** An element appears twice in a final list: an append took effect twice. */
  public static final String DUPLICATE_ELEMENT = "duplicate_element";

  /** A final list or a read holds an element that no transaction appended to that list. */
  public static final String UNKNOWN_ELEMENT = "unknown_element";

  /** A committed transaction's element is missing from the final list. */
  public static final String LOST_APPEND = "lost_append";

  /** Some, not all, of a transaction's appends took effect. */
  public static final String NOT_ATOMIC = "not_atomic";

  /** A read is not a prefix of its list's final contents. */
  public static final String INCOMPATIBLE_ORDER = "incompatible_order";

  /** One transaction's appends to one list are not adjacent in it. */
  public static final String INTERLEAVED_APPENDS = "interleaved_appends";

  /** G1b: a read observed another transaction's intermediate state of a list. */
  public static final String INTERMEDIATE_READ = "intermediate_read";

  private ListAppendChecker() {}

  /** One operation of a transaction, in the order the transaction ran them. */
  public sealed interface Operation {
    String list();

    /** Appended {@code element} (unique in the whole history) to {@code list}. */
    record Append(String list, String element) implements Operation {}

    /** Read {@code list} whole; {@code observed} is what the read returned. */
    record Read(String list, List<String> observed) implements Operation {
      public Read {
        observed = List.copyOf(observed);
      }
    }
  }

  /**
   * One transaction as its client saw it. A read is recorded only when the transaction committed
   * (a read of an aborted or unknown transaction says nothing).
   */
  public record Transaction(String id, Outcome outcome, List<Operation> operations) {
    public Transaction {
      Objects.requireNonNull(id, "id");
      Objects.requireNonNull(outcome, "outcome");
      operations = List.copyOf(operations);
    }
  }

  /** Checks a history against the final contents of every list it touched. */
  public static SerializabilityChecker.Result check(
      List<Transaction> transactions, Map<String, List<String>> finalLists) {
    Objects.requireNonNull(transactions, "transactions");
    Objects.requireNonNull(finalLists, "finalLists");
    // Who appended each element, and where.
    Map<String, Transaction> appender = new HashMap<>();
    Map<String, String> listOfElement = new HashMap<>();
    for (Transaction transaction : transactions) {
      for (Operation operation : transaction.operations()) {
        if (operation instanceof Operation.Append append) {
          if (appender.putIfAbsent(append.element(), transaction) != null) {
            return violation(DUPLICATE_APPEND, List.of(transaction.id()),
                "element " + append.element() + " was appended twice by the workload");
          }
          listOfElement.put(append.element(), append.list());
        }
      }
    }
    // Position (0-based) of every element in its final list.
    Map<String, Integer> position = new HashMap<>();
    for (Map.Entry<String, List<String>> list : finalLists.entrySet()) {
      List<String> elements = list.getValue();
      for (int index = 0; index < elements.size(); index++) {
        String element = elements.get(index);
        Transaction writer = appender.get(element);
        if (position.put(element, index) != null) {
          return violation(DUPLICATE_ELEMENT, writer == null ? List.of() : List.of(writer.id()),
              "element " + element + " appears twice in list " + list.getKey() + ": "
                  + elements);
        }
        if (writer == null || !list.getKey().equals(listOfElement.get(element))) {
          return violation(UNKNOWN_ELEMENT, List.of(), "list " + list.getKey() + " holds "
              + element + ", which no transaction appended to it");
        }
        if (writer.outcome() == Outcome.ABORTED) {
          return violation(SerializabilityChecker.ABORTED_READ, List.of(writer.id()),
              "aborted " + writer.id() + "'s element " + element + " is in list "
                  + list.getKey());
        }
      }
    }
    // Appends that took effect, per transaction.
    List<RecordedTransaction> graph = new ArrayList<>();
    Map<String, Transaction> effective = new LinkedHashMap<>();
    for (Transaction transaction : transactions) {
      int present = 0;
      int appends = 0;
      String missing = null;
      for (Operation operation : transaction.operations()) {
        if (operation instanceof Operation.Append append) {
          appends++;
          if (position.containsKey(append.element())) {
            present++;
          } else {
            missing = append.element();
          }
        }
      }
      if (transaction.outcome() == Outcome.COMMITTED && missing != null) {
        return violation(LOST_APPEND, List.of(transaction.id()), "committed "
            + transaction.id() + "'s element " + missing + " is not in its final list");
      }
      if (present > 0 && present < appends) {
        return violation(NOT_ATOMIC, List.of(transaction.id()), transaction.id() + " took effect"
            + " in part: " + present + " of its " + appends + " appends are in the final lists");
      }
      if (transaction.outcome() == Outcome.COMMITTED || present > 0) {
        effective.put(transaction.id(), transaction);
      }
    }
    // Reads, then the runs of each transaction's elements per list.
    for (Transaction transaction : effective.values()) {
      for (Operation operation : transaction.operations()) {
        if (!(operation instanceof Operation.Read read)) {
          continue;
        }
        List<String> complete = finalLists.getOrDefault(read.list(), List.of());
        for (String element : read.observed()) {
          Transaction writer = appender.get(element);
          if (writer == null || !read.list().equals(listOfElement.get(element))) {
            return violation(UNKNOWN_ELEMENT, List.of(transaction.id()), transaction.id()
                + " read " + element + " in list " + read.list() + ", which nobody appended to it");
          }
          if (writer.outcome() == Outcome.ABORTED) {
            return violation(SerializabilityChecker.ABORTED_READ,
                List.of(transaction.id(), writer.id()), transaction.id() + " read aborted "
                    + writer.id() + "'s element " + element + " in list " + read.list());
          }
        }
        if (read.observed().size() > complete.size()
            || !complete.subList(0, read.observed().size()).equals(read.observed())) {
          return violation(INCOMPATIBLE_ORDER, List.of(transaction.id()), transaction.id()
              + " read " + read.list() + " as " + read.observed() + ", not a prefix of its final "
              + complete);
        }
      }
    }
    Map<String, Map<String, Long>> writes = new HashMap<>();
    for (Transaction transaction : effective.values()) {
      Map<String, Integer> first = new LinkedHashMap<>();
      Map<String, Integer> last = new LinkedHashMap<>();
      Map<String, Integer> count = new HashMap<>();
      for (Operation operation : transaction.operations()) {
        if (operation instanceof Operation.Append append) {
          int at = position.get(append.element());
          first.merge(append.list(), at, Math::min);
          last.merge(append.list(), at, Math::max);
          count.merge(append.list(), 1, Integer::sum);
        }
      }
      for (String list : last.keySet()) {
        if (last.get(list) - first.get(list) + 1 != count.get(list)) {
          return violation(INTERLEAVED_APPENDS, List.of(transaction.id()), transaction.id()
              + "'s appends to " + list + " are not adjacent in " + finalLists.get(list));
        }
      }
      Map<String, Long> versions = new LinkedHashMap<>();
      last.forEach((list, at) -> versions.put(list, at + 1L));
      writes.put(transaction.id(), versions);
    }
    for (Transaction transaction : effective.values()) {
      Map<String, Long> reads = new LinkedHashMap<>();
      for (Operation operation : transaction.operations()) {
        if (!(operation instanceof Operation.Read read)) {
          continue;
        }
        long seen = read.observed().size();
        if (seen > 0) {
          // Its writer's elements are in the final lists (the read is a prefix of them).
          Transaction writer = appender.get(read.observed().get((int) seen - 1));
          if (writer != transaction && writes.get(writer.id()).get(read.list()) != seen) {
            return violation(INTERMEDIATE_READ, List.of(transaction.id(), writer.id()),
                transaction.id() + " read " + read.list() + " as " + read.observed()
                    + ", in the middle of " + writer.id() + "'s appends");
          }
        }
        reads.put(read.list(), seen);
      }
      graph.add(RecordedTransaction.committed(transaction.id(), reads,
          writes.get(transaction.id())));
    }
    return SerializabilityChecker.check(new History(graph));
  }

  private static SerializabilityChecker.Violation violation(String kind, List<String> evidence,
      String explanation) {
    return new SerializabilityChecker.Violation(kind, evidence, explanation);
  }
}
