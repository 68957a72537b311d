package dev.troupe.txn.entity;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import dev.troupe.model.value.CounterValue;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

/**
 * The PSAC gate on a bank account: the paper's Fig. 4 walk-through, the 2PC degenerate case, the
 * fairness bound, wait-die, and a property: whatever the arrivals and decisions, every applied
 * action's precondition holds on the state it meets and effects are applied in arrival order.
 */
class PsacGateTest {
  /** An action: add {@code amount} to the balance, precondition: the result is not negative. */
  record Change(int id, long amount) {}

  private static long balance(EntityState state) {
    return state.get("balance") instanceof CounterValue counter ? counter.total() : 0;
  }

  private static EntityState withBalance(long amount) {
    return EntityState.ABSENT.apply(List.of(new Operation.Increment("balance", amount)), 1, 1);
  }

  private static PsacGate.Evaluation evaluate(Change change, EntityState state) {
    long after = balance(state) + change.amount();
    if (after < 0) {
      return new PsacGate.Evaluation.Fails(
          new TroupeException(ErrorCode.PRECONDITION_FAILED, "balance - amount >= 0"));
    }
    return new PsacGate.Evaluation.Holds(state.apply(
        List.of(new Operation.Increment("balance", change.amount())), state.version() + 1, 1));
  }

  private static PsacGate<Change> gate(int maxInFlight, int maxOvertakes) {
    return new PsacGate<>(new PsacGate.Limits(maxInFlight, maxOvertakes), PsacGateTest::evaluate);
  }

  @Test
  void theFigureFourWalkThrough() {
    PsacGate<Change> gate = gate(8, 100);
    EntityState state = withBalance(100);
    Change minus30 = new Change(1, -30);
    Change minus50 = new Change(2, -50);
    Change minus60 = new Change(3, -60);
    // Both withdrawals fit in every outcome: admitted side by side (2PC would delay the second).
    assertInstanceOf(PsacGate.Decision.Admitted.class, gate.offer(minus30, 1, true, false, state));
    assertInstanceOf(PsacGate.Decision.Admitted.class, gate.offer(minus50, 2, true, false, state));
    // -60 holds only if one of them aborts: delayed. It is older than neither, so under
    // wait-die it would die; as a single turn it may wait.
    assertInstanceOf(PsacGate.Decision.Died.class, gate.offer(minus60, 3, true, false, state));
    assertInstanceOf(PsacGate.Decision.Delayed.class, gate.offer(minus60, 3, false, false, state));
    // -50 commits first (step 4): its effect waits for -30, which arrived earlier. The outcomes
    // left are 50 and 20, and -60 fails in both (step 5): rejected on retry.
    gate.commit(minus50);
    assertNull(gate.pollApplicable());
    List<PsacGate.Decision<Change>> retried = gate.retryDelayed(state);
    assertInstanceOf(PsacGate.Decision.Rejected.class, retried.get(0));
    gate.commit(minus30);
    assertEquals(minus30, gate.pollApplicable());
    state = evaluateHolds(minus30, state);
    assertEquals(minus50, gate.pollApplicable());
    state = evaluateHolds(minus50, state);
    assertEquals(20, balance(state));
    assertTrue(gate.isEmpty());
  }

  private static EntityState evaluateHolds(Change change, EntityState state) {
    return ((PsacGate.Evaluation.Holds) evaluate(change, state)).after();
  }

  @Test
  void committedActionsWaitingForAnEarlierDecisionDoNotFillTheGate() {
    PsacGate<Change> gate = gate(2, 100);
    EntityState state = withBalance(100);
    Change first = new Change(1, -1);
    Change second = new Change(2, -1);
    assertInstanceOf(PsacGate.Decision.Admitted.class, gate.offer(first, 1, true, false, state));
    assertInstanceOf(PsacGate.Decision.Admitted.class, gate.offer(second, 2, true, false, state));
    // The second commits while the first's decision is still travelling: it waits to be applied
    // after it, but branches no outcome any more, so a newcomer is admitted beside them.
    gate.commit(second);
    assertNull(gate.pollApplicable());
    Change third = new Change(3, -1);
    assertInstanceOf(PsacGate.Decision.Admitted.class, gate.offer(third, 3, false, false, state));
    // Two undecided again (first, third): the next waits.
    assertInstanceOf(PsacGate.Decision.Delayed.class,
        gate.offer(new Change(4, -1), 4, false, false, state));
    gate.commit(third);
    List<PsacGate.Decision<Change>> retried = gate.retryDelayed(state);
    assertInstanceOf(PsacGate.Decision.Admitted.class, retried.get(0));
    Change fourth = (Change) retried.get(0).item();
    gate.commit(fourth);
    // Four in progress, three committed behind the undecided first: 2 * maxInFlight, full.
    assertInstanceOf(PsacGate.Decision.Delayed.class,
        gate.offer(new Change(5, -1), 5, false, false, state));
    gate.commit(first);
    for (Change expected : List.of(first, second, third, fourth)) {
      assertEquals(expected, gate.pollApplicable(), "applied in admission order");
      state = evaluateHolds(expected, state);
    }
    assertEquals(96, balance(state));
    assertInstanceOf(PsacGate.Decision.Admitted.class, gate.retryDelayed(state).get(0));
  }

  @Test
  void oneInFlightIsPlainTwoPhaseCommit() {
    PsacGate<Change> gate = gate(1, 100);
    EntityState state = withBalance(100);
    assertInstanceOf(PsacGate.Decision.Admitted.class, gate.offer(new Change(1, -1), 1, true, false, state));
    assertInstanceOf(PsacGate.Decision.Delayed.class, gate.offer(new Change(2, -1), 0, true, false, state),
        "an older transaction waits");
    assertInstanceOf(PsacGate.Decision.Died.class, gate.offer(new Change(3, -1), 5, true, false, state),
        "a younger one dies");
  }

  @Test
  void anExclusiveActionIsAdmittedOnlyAloneAndHoldsNewcomersBackUntilApplied() {
    // Change 2 is exclusive, and so is any action once the balance is below 99.
    PsacGate<Change> gate = new PsacGate<>(new PsacGate.Limits(4, 100), PsacGateTest::evaluate,
        (change, state) -> change.id() == 2 || balance(state) < 99);
    EntityState state = withBalance(100);
    Change first = new Change(1, -1);
    assertInstanceOf(PsacGate.Decision.Admitted.class,
        gate.offer(first, 1, false, false, false, state));
    Change exclusive = new Change(2, -1);
    assertInstanceOf(PsacGate.Decision.Delayed.class,
        gate.offer(exclusive, 2, false, false, false, state),
        "not beside an action in progress, though it commutes with it");
    gate.commit(first);
    assertEquals(first, gate.pollApplicable());
    EntityState applied = withBalance(99);
    List<PsacGate.Decision<Change>> retried = gate.retryDelayed(applied);
    assertInstanceOf(PsacGate.Decision.Admitted.class, retried.get(0), "alone now");
    assertTrue(gate.isExclusive(exclusive));
    Change newcomer = new Change(3, 5);
    assertInstanceOf(PsacGate.Decision.Delayed.class,
        gate.offer(newcomer, 3, false, false, false, applied),
        "nothing is admitted beside an exclusive action");
    Change another = new Change(4, 1);
    assertInstanceOf(PsacGate.Decision.Delayed.class,
        gate.offer(another, 4, false, false, false, applied));
    gate.commit(exclusive);
    assertEquals(exclusive, gate.pollApplicable());
    List<PsacGate.Decision<Change>> after = gate.retryDelayed(withBalance(98));
    assertInstanceOf(PsacGate.Decision.Admitted.class, after.get(0),
        "admitted once the exclusive one is applied");
    assertTrue(gate.isExclusive(newcomer),
        "judged exclusive on the state it was admitted against, not the one it arrived on");
    assertEquals(1, after.size(), "so the next one waits behind it");
  }

  /** A blind assignment of the balance: assignments of different values do not commute. */
  record Assignment(int id, long value) {}

  @Test
  void aWriterIsAdmittedBesideActionsInProgressOnlyIfItCommutesWithThem() {
    PsacGate<Assignment> gate = new PsacGate<>(new PsacGate.Limits(8, 100),
        (assignment, state) -> new PsacGate.Evaluation.Holds(state.apply(List.of(
            new Operation.Assign("balance", com.fasterxml.jackson.databind.node.LongNode.valueOf(
                assignment.value()))), state.version() + 1, 1)));
    EntityState state = EntityState.ABSENT;
    assertInstanceOf(PsacGate.Decision.Admitted.class,
        gate.offer(new Assignment(1, 5), 1, false, false, state));
    // Applied before or after the first, the result differs: it must wait, whatever the order
    // other entities choose.
    assertInstanceOf(PsacGate.Decision.Delayed.class,
        gate.offer(new Assignment(2, 7), 2, false, false, state));
    // The same value commutes.
    assertInstanceOf(PsacGate.Decision.Admitted.class,
        gate.offer(new Assignment(3, 5), 3, false, false, state));
    // Increments commute with each other: the paper's case, admitted side by side.
    PsacGate<Change> increments = gate(8, 100);
    EntityState funded = withBalance(100);
    assertInstanceOf(PsacGate.Decision.Admitted.class,
        increments.offer(new Change(1, -10), 1, false, false, funded));
    assertInstanceOf(PsacGate.Decision.Admitted.class,
        increments.offer(new Change(2, 20), 2, false, false, funded));
  }

  @Test
  void aDelayedActionIsOvertakenAtMostMaxOvertakesTimes() {
    PsacGate<Change> gate = gate(8, 2);
    EntityState state = withBalance(10);
    gate.offer(new Change(1, -8), 1, true, false, state);
    // Dependent (fits only if -8 aborts), and a turn, so it waits.
    Change dependent = new Change(2, -5);
    assertInstanceOf(PsacGate.Decision.Delayed.class, gate.offer(dependent, 2, false, false, state));
    assertInstanceOf(PsacGate.Decision.Admitted.class, gate.offer(new Change(3, 1), 3, false, false, state));
    assertInstanceOf(PsacGate.Decision.Admitted.class, gate.offer(new Change(4, 1), 4, false, false, state));
    assertInstanceOf(PsacGate.Decision.Delayed.class, gate.offer(new Change(5, 1), 5, false, false, state),
        "independent, but the delayed action was overtaken twice already");
  }

  @Test
  void aPlannedActionNeverDiesAndNeverOvertakesAnEarlierDelayedPlannedOne() {
    PsacGate<Change> gate = gate(8, 100);
    EntityState state = withBalance(10);
    gate.offer(new Change(1, -8), 50, true, false, false, state);
    Change dependent = new Change(2, -5);
    assertInstanceOf(PsacGate.Decision.Delayed.class,
        gate.offer(dependent, 60, true, false, true, state), "planned: waits, does not die");
    assertInstanceOf(PsacGate.Decision.Delayed.class,
        gate.offer(new Change(3, 1), 61, true, false, true, state),
        "independent, but behind an earlier delayed planned action");
    assertInstanceOf(PsacGate.Decision.Admitted.class,
        gate.offer(new Change(4, 1), 62, true, false, false, state),
        "a dynamic one may still overtake");
  }

  @Test
  void anEarlierPlannedActionArrivingAfterALaterOneDiesInsteadOfWaitingForIt() {
    PsacGate<Change> gate = gate(1, 100);
    EntityState state = withBalance(10);
    assertInstanceOf(PsacGate.Decision.Admitted.class,
        gate.offer(new Change(2, -1), 20, true, false, true, state));
    assertInstanceOf(PsacGate.Decision.Died.class,
        gate.offer(new Change(1, -1), 10, true, false, true, state),
        "position 10 would wait for position 20, which may wait for it elsewhere");
    assertInstanceOf(PsacGate.Decision.Delayed.class,
        gate.offer(new Change(3, -1), 30, true, false, true, state),
        "a later one waits as before");
    assertInstanceOf(PsacGate.Decision.Died.class,
        gate.offer(new Change(4, -1), 25, true, false, true, state),
        "nor does an earlier one wait behind a later delayed one");
  }

  @Test
  void aReaderOfTheWholeStateIsAdmittedOnlyWhenEveryOutcomeIsTheSame() {
    PsacGate<Change> gate = gate(8, 100);
    EntityState state = withBalance(10);
    Change reader = new Change(9, 0);
    assertInstanceOf(PsacGate.Decision.Admitted.class, gate.offer(reader, 1, true, true, state));
    gate.abort(reader);
    gate.offer(new Change(1, -3), 2, true, false, state);
    assertInstanceOf(PsacGate.Decision.Delayed.class, gate.offer(new Change(10, 0), 1, true, true, state));
  }

  @Test
  void aPartThatReadsTheWholeStateAndWritesWaitsForAnUndecidedReader() {
    // Issue 16: it was admitted as a reader only (every outcome the same), so it changed the view
    // of a reader whose transaction had read before it elsewhere: a write skew across entities.
    PsacGate<Change> gate = gate(8, 100);
    EntityState state = withBalance(10);
    Change reader = new Change(9, 0);
    assertInstanceOf(PsacGate.Decision.Admitted.class, gate.offer(reader, 1, true, true, state));
    assertInstanceOf(PsacGate.Decision.Delayed.class,
        gate.offer(new Change(10, 5), 0, true, true, state), "older: it waits for the reader");
    assertInstanceOf(PsacGate.Decision.Died.class,
        gate.offer(new Change(11, 5), 2, true, true, state), "younger: it dies");
    // Another reader that writes nothing still shares the state with the first.
    assertInstanceOf(PsacGate.Decision.Admitted.class,
        gate.offer(new Change(12, 0), 3, true, true, state));
  }

  /**
   * Random arrivals (transactions that may die, and turns), random commit and abort decisions,
   * applying heads as they become applicable: every applied action holds on the balance it meets,
   * the balance never goes negative, effects are applied in admission order (a delayed action is
   * admitted when a retry finds it independent), and at the end nothing is left in the gate.
   */
  @Property(tries = 300)
  void appliedActionsAlwaysHoldAndFollowArrivalOrder(@ForAll long seed) {
    Random random = new Random(seed);
    PsacGate<Change> gate = gate(1 + random.nextInt(5), random.nextInt(4));
    EntityState state = withBalance(random.nextInt(50));
    List<Change> admitted = new ArrayList<>();
    List<Change> applied = new ArrayList<>();
    List<Change> admissionOrder = new ArrayList<>();
    int next = 0;
    for (int step = 0; step < 300; step++) {
      int choice = random.nextInt(4);
      if (choice <= 1 || admitted.isEmpty()) {
        Change change = new Change(next++, random.nextInt(21) - 12);
        handle(gate.offer(change, change.id(), random.nextBoolean(), false, state), admitted,
            admissionOrder);
      } else {
        Change decided = admitted.remove(random.nextInt(admitted.size()));
        if (choice == 2) {
          gate.commit(decided);
        } else {
          gate.abort(decided);
        }
      }
      state = drain(gate, state, applied, admitted, admissionOrder);
    }
    while (!admitted.isEmpty() || !gate.isEmpty()) {
      if (!admitted.isEmpty()) {
        gate.commit(admitted.remove(0));
      }
      state = drain(gate, state, applied, admitted, admissionOrder);
      if (admitted.isEmpty() && !gate.isEmpty() && gate.inProgressCount() == 0) {
        for (PsacGate.Decision<Change> decision : gate.retryDelayed(state)) {
          handle(decision, admitted, admissionOrder);
        }
      }
    }
    assertTrue(balance(state) >= 0);
    List<Change> expected = new ArrayList<>(admissionOrder);
    expected.retainAll(applied);
    assertEquals(expected, applied, "effects in admission order");
  }

  private static void handle(PsacGate.Decision<Change> decision, List<Change> admitted,
      List<Change> admissionOrder) {
    if (decision instanceof PsacGate.Decision.Admitted<Change> yes) {
      admitted.add(yes.item());
      admissionOrder.add(yes.item());
    }
  }

  private static EntityState drain(PsacGate<Change> gate, EntityState state, List<Change> applied,
      List<Change> admitted, List<Change> admissionOrder) {
    boolean moved = true;
    while (moved) {
      moved = false;
      Change head;
      while ((head = gate.pollApplicable()) != null) {
        PsacGate.Evaluation evaluation = evaluate(head, state);
        assertInstanceOf(PsacGate.Evaluation.Holds.class, evaluation,
            "applied " + head + " on balance " + balance(state));
        state = ((PsacGate.Evaluation.Holds) evaluation).after();
        applied.add(head);
        moved = true;
      }
      for (PsacGate.Decision<Change> decision : gate.retryDelayed(state)) {
        handle(decision, admitted, admissionOrder);
        moved = true;
      }
    }
    return state;
  }
}
