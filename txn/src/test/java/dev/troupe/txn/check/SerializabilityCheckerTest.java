package dev.troupe.txn.check;

import static dev.troupe.txn.check.RecordedTransaction.aborted;
import static dev.troupe.txn.check.RecordedTransaction.committed;
import static dev.troupe.txn.check.RecordedTransaction.unknown;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.txn.check.RecordedTransaction.Outcome;
import dev.troupe.txn.check.SerializabilityChecker.Serializable;
import dev.troupe.txn.check.SerializabilityChecker.Violation;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * The serializability checker on small hand-written histories, one per rule and per anomaly class
 * (G0, G1a, G1c, G2 as lost update and as write skew), with the exact cycle and edges expected, so
 * a checker that misses an edge, mislabels one or misclassifies a cycle fails here.
 */
class SerializabilityCheckerTest {
  private static final Map<String, Long> NONE = Map.of();

  private static Serializable serializable(History history) {
    return assertInstanceOf(Serializable.class, SerializabilityChecker.check(history));
  }

  private static Violation violation(History history) {
    return assertInstanceOf(Violation.class, SerializabilityChecker.check(history));
  }

  @Test
  void anEmptyHistoryIsSerializable() {
    assertEquals(new Serializable(0, 0, 0, 0), serializable(History.empty()));
  }

  @Test
  void aSerialChainOfReadModifyWritesIsSerializable() {
    History history = History.of(
        committed("T1", Map.of("x", 0L), Map.of("x", 1L)),
        committed("T2", Map.of("x", 1L), Map.of("x", 2L)),
        committed("T3", Map.of("x", 2L, "y", 0L), Map.of("x", 3L)),
        committed("T4", Map.of("x", 3L), Map.of("y", 4L)));
    // ww: T1->T2, T2->T3 (x); wr: T1->T2, T2->T3, T3->T4; rw: T3 read y/0, T4 wrote y/4.
    assertEquals(new Serializable(4, 2, 3, 1), serializable(history));
  }

  @Test
  void theRecordingOrderDoesNotMatter() {
    History history = History.of(
        committed("T3", Map.of("x", 2L), Map.of("x", 3L)),
        committed("T1", Map.of("x", 0L), Map.of("x", 1L)),
        committed("T2", Map.of("x", 1L), Map.of("x", 2L)));
    assertEquals(new Serializable(3, 2, 2, 0), serializable(history));
  }

  @Test
  void aLostUpdateIsAG2Cycle() {
    History history = History.of(
        committed("T0", NONE, Map.of("x", 1L)),
        committed("T1", Map.of("x", 1L), Map.of("x", 2L)),
        committed("T2", Map.of("x", 1L), Map.of("x", 3L)));
    Violation violation = violation(history);
    assertEquals(SerializabilityChecker.CYCLE_G2, violation.kind());
    assertEquals(List.of("T2", "T1"), violation.cycleOrEvidence());
    assertTrue(violation.explanation().startsWith("lost update: T2 read x/1 and wrote x/3"),
        violation.explanation());
    assertTrue(violation.explanation().endsWith("G2 cycle (anti-dependency cycle): "
        + "T2 -rw(x/1)-> T1 -ww(x/2)-> T2"), violation.explanation());
  }

  @Test
  void aLostUpdateOverSeveralInterveningVersionsNamesTheWholeWriteChain() {
    History history = History.of(
        committed("T1", Map.of("x", 0L), Map.of("x", 5L)),
        committed("T2", NONE, Map.of("x", 2L)),
        committed("T3", NONE, Map.of("x", 3L)));
    Violation violation = violation(history);
    assertEquals(SerializabilityChecker.CYCLE_G2, violation.kind());
    assertEquals(List.of("T1", "T2", "T3"), violation.cycleOrEvidence());
    assertTrue(violation.explanation().endsWith(
        "T1 -rw(x/0)-> T2 -ww(x/2)-> T3 -ww(x/3)-> T1"), violation.explanation());
  }

  @Test
  void writeSkewIsAG2Cycle() {
    History history = History.of(
        committed("T1", Map.of("x", 0L, "y", 0L), Map.of("x", 1L)),
        committed("T2", Map.of("x", 0L, "y", 0L), Map.of("y", 1L)));
    Violation violation = violation(history);
    assertEquals(SerializabilityChecker.CYCLE_G2, violation.kind());
    assertEquals(List.of("T1", "T2"), violation.cycleOrEvidence());
    assertEquals("G2 cycle (anti-dependency cycle): T1 -rw(y/0)-> T2 -rw(x/0)-> T1",
        violation.explanation());
  }

  @Test
  void interleavedWritesAreAG0Cycle() {
    History history = History.of(
        committed("T1", NONE, Map.of("x", 1L, "y", 2L)),
        committed("T2", NONE, Map.of("x", 2L, "y", 1L)));
    Violation violation = violation(history);
    assertEquals(SerializabilityChecker.CYCLE_G0, violation.kind());
    assertEquals(List.of("T1", "T2"), violation.cycleOrEvidence());
    assertEquals("G0 cycle (write cycle): T1 -ww(x/1)-> T2 -ww(y/1)-> T1",
        violation.explanation());
  }

  @Test
  void circularInformationFlowIsAG1cCycle() {
    History history = History.of(
        committed("T1", Map.of("y", 1L), Map.of("x", 1L)),
        committed("T2", Map.of("x", 1L), Map.of("y", 1L)));
    Violation violation = violation(history);
    assertEquals(SerializabilityChecker.CYCLE_G1C, violation.kind());
    assertEquals(List.of("T1", "T2"), violation.cycleOrEvidence());
    assertEquals("G1c cycle (circular information flow): T1 -wr(x/1)-> T2 -wr(y/1)-> T1",
        violation.explanation());
  }

  @Test
  void readingALaterVersionThanOnesOwnWriteIsAG1cCycle() {
    History history = History.of(
        committed("T1", NONE, Map.of("x", 2L)),
        committed("T2", Map.of("x", 2L), Map.of("x", 1L)));
    Violation violation = violation(history);
    assertEquals(SerializabilityChecker.CYCLE_G1C, violation.kind());
    assertEquals("G1c cycle (circular information flow): T1 -wr(x/2)-> T2 -ww(x/1)-> T1",
        violation.explanation());
  }

  @Test
  void aWriteCycleIsReportedBeforeOtherCyclesFoundEarlier() {
    // T1 and T2 form a write skew (G2), T3 and T4 circular information flow (G1c), T5 and T6
    // interleave their writes (G0).
    History history = History.of(
        committed("T1", Map.of("x", 0L, "y", 0L), Map.of("x", 1L)),
        committed("T2", Map.of("x", 0L, "y", 0L), Map.of("y", 1L)),
        committed("T3", Map.of("b", 1L), Map.of("a", 1L)),
        committed("T4", Map.of("a", 1L), Map.of("b", 1L)),
        committed("T5", NONE, Map.of("c", 1L, "d", 2L)),
        committed("T6", NONE, Map.of("c", 2L, "d", 1L)));
    Violation violation = violation(history);
    assertEquals(SerializabilityChecker.CYCLE_G0, violation.kind());
    assertEquals(List.of("T5", "T6"), violation.cycleOrEvidence());
  }

  @Test
  void circularInformationFlowIsReportedBeforeAnAntiDependencyCycleFoundEarlier() {
    History history = History.of(
        committed("T1", Map.of("x", 0L, "y", 0L), Map.of("x", 1L)),
        committed("T2", Map.of("x", 0L, "y", 0L), Map.of("y", 1L)),
        committed("T3", Map.of("b", 1L), Map.of("a", 1L)),
        committed("T4", Map.of("a", 1L), Map.of("b", 1L)));
    Violation violation = violation(history);
    assertEquals(SerializabilityChecker.CYCLE_G1C, violation.kind());
    assertEquals(List.of("T3", "T4"), violation.cycleOrEvidence());
  }

  @Test
  void aReadOfAnAbortedWriteIsG1a() {
    History history = History.of(
        aborted("T1", NONE, Map.of("x", 1L)),
        committed("T2", Map.of("x", 1L), NONE));
    Violation violation = violation(history);
    assertEquals(SerializabilityChecker.ABORTED_READ, violation.kind());
    assertEquals(List.of("T2", "T1"), violation.cycleOrEvidence());
    assertEquals("G1a (aborted read): T2 read x/1, written by T1, which aborted",
        violation.explanation());
  }

  @Test
  void abortedTransactionsAreIgnoredOtherwise() {
    History history = History.of(
        committed("T1", NONE, Map.of("x", 1L)),
        aborted("T2", Map.of("x", 1L), Map.of("x", 2L)),
        aborted("T3", Map.of("x", 2L, "z", 9L), Map.of("y", 3L)),
        committed("T4", Map.of("x", 1L, "y", 0L), NONE));
    assertEquals(new Serializable(2, 0, 1, 0), serializable(history));
  }

  @Test
  void anUnknownTransactionWhoseWriteWasReadCountsAsCommitted() {
    History history = History.of(
        unknown("U1", Map.of("x", 0L), Map.of("x", 1L)),
        committed("T2", Map.of("x", 1L), NONE));
    assertEquals(new Serializable(2, 0, 1, 0), serializable(history));
  }

  @Test
  void unknownTransactionsReadOnlyByUnknownOnesCountThroughTheChain() {
    History history = History.of(
        unknown("U1", NONE, Map.of("x", 1L)),
        unknown("U2", Map.of("x", 1L), Map.of("y", 2L)),
        unknown("U3", Map.of("x", 1L), Map.of("z", 3L)),
        committed("T4", Map.of("y", 2L), NONE));
    assertEquals(new Serializable(3, 0, 2, 0), serializable(history));
  }

  @Test
  void anUnknownTransactionWhoseWriteWasNotReadIsIgnored() {
    // Had U2 committed, T3 would have lost its update: it read x/1 and wrote x/3 over x/2.
    History history = History.of(
        committed("T1", NONE, Map.of("x", 1L)),
        unknown("U2", Map.of("x", 1L), Map.of("x", 2L)),
        committed("T3", Map.of("x", 1L), Map.of("x", 3L)));
    assertEquals(new Serializable(2, 1, 1, 0), serializable(history));
  }

  @Test
  void anUnknownTransactionWhoseWriteWasReadTakesPartInCycles() {
    History history = History.of(
        committed("T1", NONE, Map.of("x", 1L)),
        unknown("U2", Map.of("x", 1L), Map.of("x", 2L)),
        committed("T3", Map.of("x", 1L), Map.of("x", 3L)),
        committed("T4", Map.of("x", 2L), NONE));
    Violation violation = violation(history);
    assertEquals(SerializabilityChecker.CYCLE_G2, violation.kind());
    assertEquals(List.of("T3", "U2"), violation.cycleOrEvidence());
  }

  @Test
  void twoWritesOfOneVersionAreReported() {
    History history = History.of(
        committed("T1", NONE, Map.of("x", 1L)),
        committed("T2", NONE, Map.of("x", 1L)));
    Violation violation = violation(history);
    assertEquals(SerializabilityChecker.DUPLICATE_VERSION, violation.kind());
    assertEquals(List.of("T1", "T2"), violation.cycleOrEvidence());
  }

  @Test
  void versionsMustBeUniqueWhateverTheOutcome() {
    History history = History.of(
        aborted("T1", NONE, Map.of("x", 1L)),
        committed("T2", NONE, Map.of("x", 1L)));
    assertEquals(SerializabilityChecker.DUPLICATE_VERSION, violation(history).kind());
  }

  @Test
  void theSameVersionNumberOnDifferentObjectsIsFine() {
    History history = History.of(
        committed("T1", NONE, Map.of("x", 1L)),
        committed("T2", NONE, Map.of("y", 1L)));
    assertEquals(new Serializable(2, 0, 0, 0), serializable(history));
  }

  @Test
  void aReadOfAVersionNobodyWroteIsReported() {
    History history = History.of(
        committed("T1", NONE, Map.of("x", 1L)),
        committed("T2", Map.of("x", 2L), NONE));
    Violation violation = violation(history);
    assertEquals(SerializabilityChecker.READ_OF_UNWRITTEN_VERSION, violation.kind());
    assertEquals(List.of("T2"), violation.cycleOrEvidence());
  }

  @Test
  void theInitialVersionNeedsNoWriter() {
    History history = History.of(committed("T1", Map.of("x", 0L, "y", 0L), NONE));
    assertEquals(new Serializable(1, 0, 0, 0), serializable(history));
  }

  @Test
  void aTransactionMustNotReadTheVersionItWrites() {
    History history = History.of(committed("T1", Map.of("x", 1L), Map.of("x", 1L)));
    Violation violation = violation(history);
    assertEquals(SerializabilityChecker.READ_MODIFY_WRITE_ORDER, violation.kind());
    assertEquals(List.of("T1"), violation.cycleOrEvidence());
  }

  @Test
  void aStaleReadAloneCanBeSerializable() {
    // T2 read the initial x after T1 overwrote it, but nothing else orders T1 before T2: the
    // serial order T2, T1 explains the history.
    History history = History.of(
        committed("T1", NONE, Map.of("x", 1L)),
        committed("T2", Map.of("x", 0L), NONE));
    assertEquals(new Serializable(2, 0, 0, 1), serializable(history));
  }

  @Test
  void aStaleReadOrderedByAnotherDependencyIsAG2Cycle() {
    History history = History.of(
        committed("T1", NONE, Map.of("x", 1L, "y", 1L)),
        committed("T2", Map.of("x", 0L, "y", 1L), NONE));
    Violation violation = violation(history);
    assertEquals(SerializabilityChecker.CYCLE_G2, violation.kind());
    assertEquals("G2 cycle (anti-dependency cycle): T1 -wr(y/1)-> T2 -rw(x/0)-> T1",
        violation.explanation());
  }

  @Test
  void duplicateTransactionIdsAreReported() {
    History history = History.of(
        committed("T1", NONE, Map.of("x", 1L)),
        committed("T1", NONE, Map.of("y", 1L)));
    Violation violation = violation(history);
    assertEquals(SerializabilityChecker.DUPLICATE_TRANSACTION_ID, violation.kind());
    assertEquals(List.of("T1"), violation.cycleOrEvidence());
  }

  @Test
  void recordedTransactionsAreValidatedAndCopied() {
    assertThrows(IllegalArgumentException.class,
        () -> committed("T1", Map.of("x", -1L), NONE));
    assertThrows(IllegalArgumentException.class, () -> committed("T1", NONE, Map.of("x", 0L)));
    assertThrows(IllegalArgumentException.class, () -> committed(" ", NONE, NONE));
    assertThrows(NullPointerException.class, () -> committed(null, NONE, NONE));
    assertThrows(NullPointerException.class,
        () -> new RecordedTransaction("T1", null, NONE, NONE));
    assertThrows(NullPointerException.class, () -> committed("T1", null, NONE));
    Map<String, Long> withNullVersion = new HashMap<>();
    withNullVersion.put("x", null);
    assertThrows(NullPointerException.class, () -> committed("T1", withNullVersion, NONE));

    Map<String, Long> writes = new HashMap<>(Map.of("x", 1L));
    RecordedTransaction transaction = committed("T1", NONE, writes);
    writes.put("y", 2L);
    assertEquals(Map.of("x", 1L), transaction.writes());
    assertThrows(UnsupportedOperationException.class, () -> transaction.writes().put("z", 3L));
  }

  @Test
  void theRecorderCollectsConcurrentClientsAndSnapshotsAreImmutable() throws Exception {
    int clients = 8;
    int transactionsPerClient = 500;
    History.Recorder recorder = new History.Recorder();
    CountDownLatch start = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(clients);
    try {
      List<Future<?>> running = new ArrayList<>();
      for (int client = 0; client < clients; client++) {
        String object = "account-" + client;
        running.add(pool.submit(() -> {
          start.await();
          for (int step = 1; step <= transactionsPerClient; step++) {
            recorder.record(new RecordedTransaction(object + "/" + step, Outcome.COMMITTED,
                Map.of(object, step - 1L), Map.of(object, (long) step)));
          }
          return null;
        }));
      }
      start.countDown();
      for (Future<?> client : running) {
        client.get();
      }
    } finally {
      pool.shutdownNow();
    }
    History history = recorder.snapshot();
    assertEquals(clients * transactionsPerClient, history.size());
    assertEquals(clients * transactionsPerClient,
        new HashSet<>(history.transactions().stream().map(RecordedTransaction::id).toList())
            .size());
    int chainEdges = clients * (transactionsPerClient - 1);
    assertEquals(new Serializable(clients * transactionsPerClient, chainEdges, chainEdges, 0),
        serializable(history));

    recorder.record(committed("late", NONE, NONE));
    assertEquals(clients * transactionsPerClient, history.size());
    assertEquals(clients * transactionsPerClient + 1, recorder.snapshot().size());
    assertThrows(UnsupportedOperationException.class,
        () -> history.transactions().add(committed("extra", NONE, NONE)));
  }
}
