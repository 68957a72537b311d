package dev.troupe.txn.check;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.util.Map;
import org.junit.jupiter.api.Test;

class AtomicVisibilityCheckerTest {
  private static RecordedTransaction committed(String id, Map<String, Long> reads,
      Map<String, Long> writes) {
    return new RecordedTransaction(id, RecordedTransaction.Outcome.COMMITTED, reads, writes);
  }

  @Test
  void aReaderThatSeesAllOrNothingOfEachWriterIsAtomic() {
    History history = History.of(
        committed("w1", Map.of(), Map.of("x", 10L, "y", 10L)),
        committed("w2", Map.of(), Map.of("x", 20L, "y", 5L)), // opposite orders: allowed here
        committed("r", Map.of("x", 20L, "y", 10L), Map.of()));
    AtomicVisibilityChecker.Atomic atomic = assertInstanceOf(AtomicVisibilityChecker.Atomic.class,
        AtomicVisibilityChecker.check(history));
    assertEquals(2, atomic.pairsChecked());
  }

  @Test
  void seeingHalfAWriterIsFractured() {
    History history = History.of(
        committed("w", Map.of(), Map.of("x", 10L, "y", 10L)),
        committed("r", Map.of("x", 10L, "y", 9L), Map.of()));
    AtomicVisibilityChecker.Fractured fractured = assertInstanceOf(
        AtomicVisibilityChecker.Fractured.class, AtomicVisibilityChecker.check(history));
    assertEquals("r", fractured.reader());
    assertEquals("w", fractured.writer());
  }

  @Test
  void abortedWritersAreIgnored() {
    History history = History.of(
        new RecordedTransaction("w", RecordedTransaction.Outcome.ABORTED, Map.of(), Map.of("x", 10L, "y", 10L)),
        committed("r", Map.of("x", 10L, "y", 9L), Map.of()));
    assertInstanceOf(AtomicVisibilityChecker.Atomic.class, AtomicVisibilityChecker.check(history));
  }
}
