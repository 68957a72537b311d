package dev.troupe.txn.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.troupe.txn.coordinator.CoordinatorCore.Knowledge;
import dev.troupe.txn.coordinator.DecisionQueryCore.Answer;
import dev.troupe.txn.coordinator.DecisionQueryCore.Effect;
import dev.troupe.txn.coordinator.DecisionQueryCore.Input;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The coordinator's node answering participants in doubt, under presumed abort. */
class DecisionQueryCoreTest {
  private static Answer ask(DecisionQueryCore core, long transactionId, Knowledge live) {
    List<Effect> effects = core.handle(new Input.Asked(transactionId, live));
    return ((Effect.Answered) effects.get(0)).answer();
  }

  @Test
  void aLiveCoordinatorAnswersFirstAndUndecidedIsNeverAbort() {
    DecisionQueryCore core = new DecisionQueryCore();
    assertEquals(Answer.UNDECIDED, ask(core, 7, Knowledge.UNDECIDED));
    assertEquals(Answer.COMMITTED, ask(core, 7, Knowledge.COMMITTED));
    assertEquals(Answer.ABORTED, ask(core, 7, Knowledge.ABORTED));
  }

  @Test
  void aRecordTheShellFoundInTheStoreMeansCommitWhenNoCoordinatorKnowsIt() {
    // Several nodes: the record was written by another node's coordinator, or before a restart.
    DecisionQueryCore core = new DecisionQueryCore();
    assertEquals(Answer.COMMITTED, ((Effect.Answered) core.handle(
        new Input.Asked(7, Knowledge.NOT_MINE, true)).get(0)).answer());
    assertEquals(Answer.UNDECIDED, ((Effect.Answered) core.handle(
        new Input.Asked(7, Knowledge.UNDECIDED, true)).get(0)).answer(),
        "a live coordinator still answers first");
    assertEquals(0, core.recordedDecisions(), "a looked-up record is not mirrored (never forgotten)");
  }

  @Test
  void anotherNodesTransactionIsPresumedAbortedOnlyOnceThatNodesCoordinatorsAreEnded() {
    DecisionQueryCore core = new DecisionQueryCore();
    core.handle(new Input.DecisionRecorded(7)); // this node's mirror says nothing of another's
    assertEquals(Answer.UNDECIDED, ((Effect.Answered) core.handle(
        new Input.AskedForAnotherNode(7, false, false)).get(0)).answer(),
        "a zombie coordinator could still record a commit: never presume");
    assertEquals(Answer.UNDECIDED, ((Effect.Answered) core.handle(
        new Input.AskedForAnotherNode(7, false, true)).get(0)).answer());
    assertEquals(Answer.COMMITTED, ((Effect.Answered) core.handle(
        new Input.AskedForAnotherNode(7, true, true)).get(0)).answer());
    assertEquals(Answer.ABORTED, ((Effect.Answered) core.handle(
        new Input.AskedForAnotherNode(8, true, false)).get(0)).answer(), "ended: presumed abort");
  }

  @Test
  void withoutACoordinatorARecordMeansCommitAndNothingMeansAbort() {
    DecisionQueryCore core = new DecisionQueryCore();
    assertEquals(Answer.ABORTED, ask(core, 7, Knowledge.NOT_MINE), "presumed abort");
    core.handle(new Input.DecisionRecorded(7));
    assertEquals(Answer.COMMITTED, ask(core, 7, Knowledge.NOT_MINE));
    core.handle(new Input.DecisionForgotten(7));
    assertEquals(Answer.ABORTED, ask(core, 7, Knowledge.NOT_MINE));
    core.handle(new Input.DecisionsRecovered(List.of(8L, 9L)));
    assertEquals(Answer.COMMITTED, ask(core, 9, Knowledge.NOT_MINE));
    assertEquals(2, core.recordedDecisions());
  }

  @Test
  void aDecisionWriteOfUnknownFateIsNeverPresumedAborted() {
    DecisionQueryCore core = new DecisionQueryCore();
    core.handle(new Input.DecisionWriteUncertain(7));
    assertEquals(Answer.UNDECIDED, ask(core, 7, Knowledge.NOT_MINE));
  }
}
