package dev.troupe.sim.geo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.sim.geo.CausalChecker.Kind;
import dev.troupe.sim.geo.CausalChecker.Violation;
import dev.troupe.sim.geo.CausalHistory.ObjectRead;
import dev.troupe.sim.geo.CausalHistory.ObjectWrite;
import dev.troupe.sim.geo.CausalHistory.Transaction;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** The causal and convergence checkers on small histories written by hand. */
class CausalCheckerTest {
  private static ObjectRead saw(Set<String> writers, Map<String, Long> registers,
      Map<String, Long> counters, Map<String, Set<String>> sets) {
    return new ObjectRead(writers, new TreeMap<>(registers), new TreeMap<>(counters),
        new TreeMap<>(sets));
  }

  private static ObjectRead saw(String... writers) {
    return saw(Set.of(writers), Map.of(), Map.of(), Map.of());
  }

  private static ObjectWrite increment(long by) {
    return new ObjectWrite(new TreeMap<>(), new TreeMap<>(Map.of("n", by)), new TreeMap<>(),
        new TreeMap<>());
  }

  private static Transaction transaction(String id, String session, String dc,
      Map<String, ObjectRead> reads, Map<String, ObjectWrite> writes) {
    return new Transaction(id, session, dc, new TreeMap<>(reads), new TreeMap<>(writes));
  }

  private static Kind only(List<Violation> violations) {
    assertEquals(1, violations.size(), violations.toString());
    return violations.get(0).kind();
  }

  @Test
  void aCausalHistoryPasses() {
    CausalHistory history = new CausalHistory(List.of(
        transaction("w1", "a", "dc0", Map.of("x", saw()), Map.of("x", increment(1))),
        transaction("w2", "b", "dc1", Map.of("x", saw(Set.of("w1"), Map.of(), Map.of("n", 1L),
            Map.of()), "y", saw()), Map.of("y", increment(2))),
        transaction("r", "c", "dc2", Map.of("x", saw(Set.of("w1"), Map.of(), Map.of("n", 1L),
            Map.of()), "y", saw(Set.of("w2"), Map.of(), Map.of("n", 2L), Map.of())),
            Map.of())));
    assertEquals(List.of(), CausalChecker.check(history));
  }

  @Test
  void aReadOfAWriteWithoutItsCauseIsCaught() {
    // w2 read w1 on x and wrote y; r sees w2 on y but not w1 on x.
    CausalHistory history = new CausalHistory(List.of(
        transaction("w1", "a", "dc0", Map.of("x", saw()), Map.of("x", increment(1))),
        transaction("w2", "b", "dc1", Map.of("x", saw(Set.of("w1"), Map.of(), Map.of("n", 1L),
            Map.of()), "y", saw()), Map.of("y", increment(2))),
        transaction("r", "c", "dc2", Map.of("x", saw(), "y", saw(Set.of("w2"), Map.of(),
            Map.of("n", 2L), Map.of())), Map.of())));
    assertEquals(Kind.CAUSAL_VISIBILITY, only(CausalChecker.check(history)));
  }

  @Test
  void sessionGuaranteesAreNamed() {
    CausalHistory ownWrite = new CausalHistory(List.of(
        transaction("w1", "a", "dc0", Map.of("x", saw()), Map.of("x", increment(1))),
        transaction("r", "a", "dc1", Map.of("x", saw()), Map.of())));
    assertEquals(Kind.READ_YOUR_WRITES, only(CausalChecker.check(ownWrite)));
    CausalHistory goingBack = new CausalHistory(List.of(
        transaction("w1", "a", "dc0", Map.of("x", saw()), Map.of("x", increment(1))),
        transaction("r1", "b", "dc0", Map.of("x", saw(Set.of("w1"), Map.of(), Map.of("n", 1L),
            Map.of())), Map.of()),
        transaction("r2", "b", "dc1", Map.of("x", saw()), Map.of())));
    assertEquals(Kind.MONOTONIC_READS, only(CausalChecker.check(goingBack)));
  }

  @Test
  void halfOfAMultiObjectTransactionIsCaught() {
    CausalHistory history = new CausalHistory(List.of(
        transaction("w", "a", "dc0", Map.of("x", saw(), "y", saw()),
            Map.of("x", increment(1), "y", increment(1))),
        transaction("r", "b", "dc1", Map.of("x", saw(Set.of("w"), Map.of(), Map.of("n", 1L),
            Map.of()), "y", saw()), Map.of())));
    // Also a causal visibility failure (w is in the reader's causal past); atomic comes first.
    assertEquals(Kind.ATOMIC_VISIBILITY, CausalChecker.check(history).get(0).kind());
  }

  @Test
  void valuesMustBeWhatTheObservedWritesMake() {
    ObjectWrite register = new ObjectWrite(new TreeMap<>(Map.of("r", 7L)), new TreeMap<>(),
        new TreeMap<>(), new TreeMap<>());
    ObjectWrite overwrite = new ObjectWrite(new TreeMap<>(Map.of("r", 8L)), new TreeMap<>(),
        new TreeMap<>(), new TreeMap<>());
    ObjectWrite add = new ObjectWrite(new TreeMap<>(), new TreeMap<>(),
        new TreeMap<>(Map.of("s", Set.of("a"))), new TreeMap<>());
    CausalHistory history = new CausalHistory(List.of(
        transaction("w1", "a", "dc0", Map.of("x", saw()), Map.of("x", register)),
        transaction("w2", "a", "dc0", Map.of("x", saw(Set.of("w1"), Map.of("r", 7L), Map.of(),
            Map.of())), Map.of("x", overwrite)),
        transaction("w3", "b", "dc1", Map.of("y", saw()), Map.of("y", add)),
        // An overwritten register value, a lost addition, a counter counted twice.
        transaction("r", "c", "dc2", Map.of(
            "x", saw(Set.of("w1", "w2"), Map.of("r", 7L), Map.of(), Map.of()),
            "y", saw(Set.of("w3"), Map.of(), Map.of(), Map.of("s", Set.of()))), Map.of())));
    List<Violation> violations = CausalChecker.check(history);
    assertEquals(List.of(Kind.REGISTER_VALUE, Kind.SET_VALUE),
        violations.stream().map(Violation::kind).toList(), violations.toString());
  }

  @Test
  void finalStatesMustConvergeAndHoldEveryWrite() {
    CausalHistory history = new CausalHistory(List.of(
        transaction("w1", "a", "dc0", Map.of("x", saw()), Map.of("x", increment(1))),
        transaction("w2", "b", "dc1", Map.of("x", saw()), Map.of("x", increment(2)))));
    SortedMap<String, SortedMap<String, ObjectRead>> reads = new TreeMap<>(Map.of(
        "dc0", new TreeMap<>(Map.of("x", saw(Set.of("w1", "w2"), Map.of(), Map.of("n", 3L),
            Map.of()))),
        "dc1", new TreeMap<>(Map.of("x", saw(Set.of("w2"), Map.of(), Map.of("n", 4L),
            Map.of())))));
    SortedMap<String, SortedMap<String, String>> states = new TreeMap<>(Map.of(
        "dc0", new TreeMap<>(Map.of("x", "{n=3}")), "dc1", new TreeMap<>(Map.of("x", "{n=4}"))));
    List<Kind> kinds = ConvergenceChecker.check(history, reads, states).stream()
        .map(Violation::kind).toList();
    assertEquals(List.of(Kind.CONVERGENCE, Kind.LOST_WRITE, Kind.COUNTER_VALUE), kinds);
  }

  @Test
  void thePlumeExportNamesKeysSessionsAndTransactions() {
    ObjectWrite register = new ObjectWrite(new TreeMap<>(Map.of("r", 7L)), new TreeMap<>(),
        new TreeMap<>(), new TreeMap<>());
    CausalHistory history = new CausalHistory(List.of(
        transaction("w1", "a", "dc0", Map.of("x", saw()), Map.of("x", register)),
        transaction("r1", "b", "dc1", Map.of("x", saw(Set.of("w1"), Map.of("r", 7L), Map.of(),
            Map.of())), Map.of())));
    String text = PlumeHistory.format(history);
    assertEquals("r(0,0,0,0)\nw(0,7,0,0)\nr(0,7,1,1)\n", text);
    assertTrue(text.lines().allMatch(line -> line.matches("[rw]\\(\\d+,\\d+,\\d+,\\d+\\)")));
  }
}
