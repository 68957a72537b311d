package dev.troupe.txn.check;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.troupe.txn.check.ConservationChecker.Conserved;
import dev.troupe.txn.check.ConservationChecker.Violation;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The money-conservation checker: a conserved total with no overdraft passes; a lost or created
 * amount and an overdrawn account are each reported, separately and together.
 */
class ConservationCheckerTest {

  @Test
  void conservedBalancesPass() {
    assertEquals(new Conserved(300, 3),
        ConservationChecker.check(Map.of("a", 100L, "b", 0L, "c", 200L), 300));
    assertEquals(new Conserved(0, 0), ConservationChecker.check(Map.of(), 0));
  }

  @Test
  void aChangedTotalIsReported() {
    Violation violation = assertInstanceOf(Violation.class,
        ConservationChecker.check(Map.of("a", 100L, "b", 150L), 300));
    assertEquals(List.of(ConservationChecker.TOTAL_NOT_CONSERVED), violation.kinds());
    assertEquals(250, violation.total());
    assertEquals(300, violation.expectedTotal());
    assertEquals(Map.of(), violation.negativeBalances());
    assertEquals("total 250 (expected 300)", violation.explanation());
  }

  @Test
  void aNegativeBalanceIsReportedEvenWhenTheTotalIsConserved() {
    Violation violation = assertInstanceOf(Violation.class,
        ConservationChecker.check(Map.of("a", 350L, "b", -50L), 300));
    assertEquals(List.of(ConservationChecker.NEGATIVE_BALANCE), violation.kinds());
    assertEquals(Map.of("b", -50L), violation.negativeBalances());
    assertEquals("total 300 (expected 300), negative balances {b=-50}", violation.explanation());
  }

  @Test
  void bothViolationsAreReportedTogether() {
    Violation violation = assertInstanceOf(Violation.class,
        ConservationChecker.check(Map.of("a", -1L, "b", -2L, "c", 10L), 10));
    assertEquals(List.of(ConservationChecker.TOTAL_NOT_CONSERVED,
        ConservationChecker.NEGATIVE_BALANCE), violation.kinds());
    assertEquals(7, violation.total());
    assertEquals(Map.of("a", -1L, "b", -2L), violation.negativeBalances());
  }

  @Test
  void nullsAndOverflowAreRejected() {
    Map<String, Long> withNull = new HashMap<>();
    withNull.put("a", null);
    assertThrows(NullPointerException.class, () -> ConservationChecker.check(withNull, 0));
    assertThrows(NullPointerException.class, () -> ConservationChecker.check(null, 0));
    assertThrows(ArithmeticException.class,
        () -> ConservationChecker.check(Map.of("a", Long.MAX_VALUE, "b", 1L), 0));
  }
}
