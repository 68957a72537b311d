package dev.troupe.txn.check;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import dev.troupe.txn.check.RecordedTransaction.Outcome;
import dev.troupe.txn.check.RegisterChecker.FinalRegister;
import dev.troupe.txn.check.RegisterChecker.Operation.Read;
import dev.troupe.txn.check.RegisterChecker.Operation.Write;
import dev.troupe.txn.check.RegisterChecker.Transaction;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The register check: versions identified by the values read, ordered by the registers' logs. */
class RegisterCheckerTest {
  private static final Map<String, FinalRegister> FINAL = Map.of(
      "x", new FinalRegister("x2", List.of("x1", "x2")),
      "y", new FinalRegister("y1", List.of("y1")));

  @Test
  void aSerialHistoryPasses() {
    var result = RegisterChecker.check(List.of(
        new Transaction("t1", Outcome.COMMITTED, List.of(new Write("x", "x1"))),
        new Transaction("t2", Outcome.COMMITTED,
            List.of(new Read("x", "x1"), new Write("y", "y1"))),
        new Transaction("t3", Outcome.COMMITTED,
            List.of(new Read("y", "y1"), new Write("x", "x2")))),
        FINAL);
    assertInstanceOf(SerializabilityChecker.Serializable.class, result);
  }

  @Test
  void aWriteSkewIsAnAntiDependencyCycle() {
    // Each read the register the other writes, before the other's write: neither order explains it.
    var result = assertInstanceOf(SerializabilityChecker.Violation.class, RegisterChecker.check(
        List.of(new Transaction("t1", Outcome.COMMITTED, List.of(new Write("x", "x1"))),
            new Transaction("a", Outcome.COMMITTED, List.of(new Read("x", "x1"),
                new Write("y", "y1"))),
            new Transaction("b", Outcome.COMMITTED, List.of(new Read("y", null),
                new Write("x", "x2")))),
        FINAL));
    assertEquals(SerializabilityChecker.CYCLE_G2, result.kind());
  }

  @Test
  void aReadOfAnAbortedValueIsCaughtByTheValue() {
    var result = assertInstanceOf(SerializabilityChecker.Violation.class, RegisterChecker.check(
        List.of(new Transaction("t1", Outcome.COMMITTED, List.of(new Write("x", "x1"))),
            new Transaction("t2", Outcome.COMMITTED, List.of(new Write("x", "x2"))),
            new Transaction("gone", Outcome.ABORTED, List.of(new Write("y", "y0"))),
            new Transaction("r", Outcome.COMMITTED, List.of(new Read("y", "y0")))),
        Map.of("x", FINAL.get("x"), "y", new FinalRegister(null, List.of()))));
    assertEquals(SerializabilityChecker.ABORTED_READ, result.kind());
  }

  @Test
  void aCurrentValueThatIsNotTheLastWriteIsCaught() {
    var result = assertInstanceOf(SerializabilityChecker.Violation.class, RegisterChecker.check(
        List.of(new Transaction("t1", Outcome.COMMITTED, List.of(new Write("x", "x1")))),
        Map.of("x", new FinalRegister(null, List.of("x1")))));
    assertEquals(RegisterChecker.CURRENT_NOT_LAST_WRITE, result.kind());
  }
}
