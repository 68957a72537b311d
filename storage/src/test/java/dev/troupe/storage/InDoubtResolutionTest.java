package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Recovery's pure rule: alone on one node, and on one node of several (parts that must ask). */
class InDoubtResolutionTest {
  private static final EntityId HERE = new EntityId("Account", "here");
  private static final EntityId ALSO_HERE = new EntityId("Account", "also-here");
  private static final EntityId ELSEWHERE = new EntityId("Account", "elsewhere");
  /** Transactions coordinated here (node 0) and by node 3. */
  private static final long OURS = 64;
  private static final long THEIRS = 64 + 3;
  private static final long OURS_COMMITTED = 128;

  private static PreparedTransaction part(long transactionId, EntityId entity) {
    return new PreparedTransaction(transactionId, entity, List.of(new Operation.Increment("n", 1)));
  }

  private static final List<PreparedTransaction> PREPARED =
      List.of(part(OURS, HERE), part(THEIRS, HERE), part(OURS_COMMITTED, HERE));
  private static final DecidedTransaction LOCAL_DECISION =
      new DecidedTransaction(OURS_COMMITTED, List.of(HERE, ALSO_HERE));
  private static final DecidedTransaction SPANNING_DECISION =
      new DecidedTransaction(256, List.of(ALSO_HERE, ELSEWHERE));

  @Test
  void aloneOnOneNodeEveryUndecidedPartIsAbortedAndEveryDecisionForgotten() {
    InDoubtResolution resolution =
        InDoubtResolution.of(PREPARED, List.of(LOCAL_DECISION, SPANNING_DECISION));
    assertEquals(OURS_COMMITTED, resolution.toCommit().get(0).transactionId());
    assertEquals(1, resolution.toCommit().size());
    assertEquals(2, resolution.toAbort().size());
    assertEquals(List.of(LOCAL_DECISION, SPANNING_DECISION), resolution.decisionsToForget());
    assertEquals(List.of(), resolution.toAsk());
    assertEquals(List.of(), resolution.decisionsToKeep());
  }

  @Test
  void aPartWhoseCoordinatorIsElsewhereAsksAndASpanningDecisionIsKept() {
    InDoubtResolution resolution = InDoubtResolution.of(PREPARED,
        List.of(LOCAL_DECISION, SPANNING_DECISION), id -> (id & 63) == 0,
        Set.of(HERE, ALSO_HERE)::contains);
    assertEquals(1, resolution.toCommit().size());
    assertEquals(OURS, resolution.toAbort().get(0).transactionId(),
        "coordinated here and died here: presumed abort, as alone");
    assertEquals(1, resolution.toAbort().size());
    assertEquals(THEIRS, resolution.toAsk().get(0).transactionId(),
        "its coordinator may be alive and commit: never abandoned blindly");
    assertEquals(List.of(LOCAL_DECISION), resolution.decisionsToForget());
    assertEquals(List.of(SPANNING_DECISION), resolution.decisionsToKeep(),
        "a participant elsewhere may still ask");
  }
}
