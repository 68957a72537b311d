package dev.troupe.txn.check;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import dev.troupe.txn.check.ListAppendChecker.Operation.Append;
import dev.troupe.txn.check.ListAppendChecker.Operation.Read;
import dev.troupe.txn.check.ListAppendChecker.Transaction;
import dev.troupe.txn.check.RecordedTransaction.Outcome;
import dev.troupe.txn.check.SerializabilityChecker.Serializable;
import dev.troupe.txn.check.SerializabilityChecker.Violation;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The list-append checker on small hand-written histories: one serializable history with the edges
 * it must find, and one history per anomaly the checker names, so a checker that misses one fails.
 */
class ListAppendCheckerTest {
  private static Transaction committed(String id, ListAppendChecker.Operation... operations) {
    return new Transaction(id, Outcome.COMMITTED, List.of(operations));
  }

  private static Transaction of(String id, Outcome outcome,
      ListAppendChecker.Operation... operations) {
    return new Transaction(id, outcome, List.of(operations));
  }

  private static String kind(List<Transaction> history, Map<String, List<String>> lists) {
    return assertInstanceOf(Violation.class, ListAppendChecker.check(history, lists)).kind();
  }

  @Test
  void aSerialHistoryPassesWithTheEdgesItImplies() {
    // T1 appends 1 to x; T2 reads x=[1] and appends 2 to y; T3 reads y=[2] and x=[1]; T4 of
    // unknown outcome appended 3 to x and took effect; T5 of unknown outcome did not.
    List<Transaction> history = List.of(
        committed("T1", new Append("x", "1")),
        committed("T2", new Read("x", List.of("1")), new Append("y", "2")),
        committed("T3", new Read("y", List.of("2")), new Read("x", List.of("1"))),
        of("T4", Outcome.UNKNOWN, new Append("x", "3")),
        of("T5", Outcome.UNKNOWN, new Append("y", "4")),
        of("T6", Outcome.ABORTED, new Append("y", "5")));
    Serializable verdict = assertInstanceOf(Serializable.class, ListAppendChecker.check(history,
        Map.of("x", List.of("1", "3"), "y", List.of("2"))));
    assertEquals(4, verdict.transactionsChecked());
    assertEquals(1, verdict.writeWriteEdges()); // T1 -> T4 on x
    assertEquals(3, verdict.writeReadEdges()); // T1 -> T2, T2 -> T3, T1 -> T3
    assertEquals(2, verdict.readWriteEdges()); // T2 -> T4, T3 -> T4 (both read x before 3)
  }

  @Test
  void writeSkewIsAnAntiDependencyCycle() {
    List<Transaction> history = List.of(
        committed("T1", new Read("x", List.of()), new Append("y", "1")),
        committed("T2", new Read("y", List.of()), new Append("x", "2")));
    Violation violation = assertInstanceOf(Violation.class, ListAppendChecker.check(history,
        Map.of("x", List.of("2"), "y", List.of("1"))));
    assertEquals(SerializabilityChecker.CYCLE_G2, violation.kind());
  }

  @Test
  void circularInformationFlowIsG1c() {
    List<Transaction> history = List.of(
        committed("T1", new Append("x", "1"), new Read("y", List.of("2"))),
        committed("T2", new Append("y", "2"), new Read("x", List.of("1"))));
    assertEquals(SerializabilityChecker.CYCLE_G1C,
        kind(history, Map.of("x", List.of("1"), "y", List.of("2"))));
  }

  @Test
  void writesInOppositeOrdersOnTwoListsAreG0() {
    List<Transaction> history = List.of(
        committed("T1", new Append("x", "1"), new Append("y", "3")),
        committed("T2", new Append("x", "2"), new Append("y", "4")));
    assertEquals(SerializabilityChecker.CYCLE_G0,
        kind(history, Map.of("x", List.of("1", "2"), "y", List.of("4", "3"))));
  }

  @Test
  void anAppendAppliedTwiceIsCaught() {
    List<Transaction> history = List.of(committed("T1", new Append("x", "1")));
    assertEquals(ListAppendChecker.DUPLICATE_ELEMENT,
        kind(history, Map.of("x", List.of("1", "1"))));
  }

  @Test
  void aLostAppendIsCaught() {
    List<Transaction> history = List.of(committed("T1", new Append("x", "1")));
    assertEquals(ListAppendChecker.LOST_APPEND, kind(history, Map.of("x", List.of())));
  }

  @Test
  void anAbortedAppendSeenAnywhereIsG1a() {
    List<Transaction> aborted = List.of(of("T1", Outcome.ABORTED, new Append("x", "1")));
    assertEquals(SerializabilityChecker.ABORTED_READ, kind(aborted, Map.of("x", List.of("1"))));
    List<Transaction> readIt = List.of(of("T1", Outcome.ABORTED, new Append("x", "1")),
        committed("T2", new Read("x", List.of("1"))));
    assertEquals(SerializabilityChecker.ABORTED_READ, kind(readIt, Map.of("x", List.of())));
  }

  @Test
  void aTransactionInPartIsCaught() {
    List<Transaction> history =
        List.of(of("T1", Outcome.UNKNOWN, new Append("x", "1"), new Append("y", "2")));
    assertEquals(ListAppendChecker.NOT_ATOMIC,
        kind(history, Map.of("x", List.of("1"), "y", List.of())));
  }

  @Test
  void aReadThatIsNotAPrefixIsCaught() {
    List<Transaction> history = List.of(committed("T1", new Append("x", "1")),
        committed("T2", new Append("x", "2")), committed("T3", new Read("x", List.of("2"))));
    assertEquals(ListAppendChecker.INCOMPATIBLE_ORDER,
        kind(history, Map.of("x", List.of("1", "2"))));
  }

  @Test
  void interleavedAppendsAreCaught() {
    List<Transaction> history = List.of(
        committed("T1", new Append("x", "1"), new Append("x", "3")),
        committed("T2", new Append("x", "2")));
    assertEquals(ListAppendChecker.INTERLEAVED_APPENDS,
        kind(history, Map.of("x", List.of("1", "2", "3"))));
  }

  @Test
  void aReadInsideAnotherTransactionsAppendsIsG1b() {
    List<Transaction> history = List.of(
        committed("T1", new Append("x", "1"), new Append("x", "2")),
        committed("T2", new Read("x", List.of("1"))));
    assertEquals(ListAppendChecker.INTERMEDIATE_READ,
        kind(history, Map.of("x", List.of("1", "2"))));
  }

  @Test
  void elementsNobodyAppendedAreCaught() {
    List<Transaction> history = List.of(committed("T1", new Append("x", "1")),
        committed("T2", new Read("y", List.of("1"))));
    assertEquals(ListAppendChecker.UNKNOWN_ELEMENT,
        kind(history, Map.of("x", List.of("1"), "y", List.of())));
    assertEquals(ListAppendChecker.UNKNOWN_ELEMENT,
        kind(List.of(), Map.of("x", List.of("9"))));
    assertEquals(ListAppendChecker.DUPLICATE_APPEND, kind(List.of(
        committed("T1", new Append("x", "1")), committed("T2", new Append("y", "1"))),
        Map.of()));
  }
}
