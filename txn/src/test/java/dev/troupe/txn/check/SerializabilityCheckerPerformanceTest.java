package dev.troupe.txn.check;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.txn.check.RecordedTransaction.Outcome;
import dev.troupe.txn.check.SerializabilityChecker.Serializable;
import dev.troupe.txn.check.SerializabilityChecker.Violation;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The serializability checker on histories of 100,000 transactions: a random serial workload, and
 * dependency chains as long as the history closed into one cycle, which a recursive depth-first
 * search would overflow the stack on. No timing assertions; these guard against stack overflow and
 * quadratic blow-ups.
 */
class SerializabilityCheckerPerformanceTest {
  private static final int TRANSACTIONS = 100_000;

  @Test
  void aLargeSerialHistoryIsCheckedWithoutStackOverflow() {
    Random random = new Random(20_240_601L);
    SerialStore store = new SerialStore();
    for (int position = 0; position < TRANSACTIONS; position++) {
      TreeSet<String> reads = new TreeSet<>();
      TreeSet<String> writes = new TreeSet<>();
      for (int object = random.nextInt(4); object > 0; object--) {
        reads.add("account-" + random.nextInt(1_000));
      }
      for (String read : reads) {
        if (random.nextBoolean()) {
          writes.add(read);
        }
      }
      if (random.nextInt(4) == 0) {
        writes.add("account-" + random.nextInt(1_000));
      }
      store.run("T" + position, Outcome.COMMITTED, true, reads, writes);
    }
    History history = store.history();

    Serializable verdict =
        assertInstanceOf(Serializable.class, SerializabilityChecker.check(history));
    assertEquals(TRANSACTIONS, verdict.transactionsChecked());
    assertTrue(verdict.writeWriteEdges() > TRANSACTIONS / 2, verdict::toString);
    assertTrue(verdict.writeReadEdges() > TRANSACTIONS / 2, verdict::toString);
    assertTrue(verdict.readWriteEdges() > TRANSACTIONS / 2, verdict::toString);
  }

  @Test
  void aWriteCycleThroughTheWholeHistoryIsFound() {
    // T0 -ww-> T1 -ww-> ... on x, and the last transaction's write of y precedes the first's.
    List<RecordedTransaction> transactions = new ArrayList<>();
    for (int position = 0; position < TRANSACTIONS; position++) {
      Map<String, Long> writes = position == 0 ? Map.of("x", 1L, "y", 2L)
          : position == TRANSACTIONS - 1 ? Map.of("x", (long) TRANSACTIONS, "y", 1L)
          : Map.of("x", position + 1L);
      transactions.add(RecordedTransaction.committed("T" + position, Map.of(), writes));
    }

    Violation violation = assertInstanceOf(
        Violation.class, SerializabilityChecker.check(new History(transactions)));
    assertEquals(SerializabilityChecker.CYCLE_G0, violation.kind());
    assertEquals(TRANSACTIONS, violation.cycleOrEvidence().size());
    assertEquals("T0", violation.cycleOrEvidence().get(0));
    assertTrue(violation.explanation().endsWith(
        "T" + (TRANSACTIONS - 1) + " -ww(y/1)-> T0"), violation::kind);
  }

  @Test
  void anAntiDependencyClosingAChainOfReadModifyWritesIsFound() {
    // Each transaction increments x; the last also read y before the first wrote it.
    List<RecordedTransaction> transactions = new ArrayList<>();
    for (int position = 0; position < TRANSACTIONS; position++) {
      Map<String, Long> reads = position == TRANSACTIONS - 1
          ? Map.of("x", (long) position, "y", 0L)
          : Map.of("x", (long) position);
      Map<String, Long> writes = position == 0
          ? Map.of("x", 1L, "y", 1L)
          : Map.of("x", position + 1L);
      transactions.add(RecordedTransaction.committed("T" + position, reads, writes));
    }

    Violation violation = assertInstanceOf(
        Violation.class, SerializabilityChecker.check(new History(transactions)));
    assertEquals(SerializabilityChecker.CYCLE_G2, violation.kind());
    assertEquals(TRANSACTIONS, violation.cycleOrEvidence().size());
    assertTrue(violation.explanation().endsWith(
        "T" + (TRANSACTIONS - 1) + " -rw(y/0)-> T0"), violation::kind);
  }
}
