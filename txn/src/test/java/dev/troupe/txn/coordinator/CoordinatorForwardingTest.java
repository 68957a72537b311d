package dev.troupe.txn.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.LongNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants.InvariantViolation;
import dev.troupe.model.Json;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.txn.DependencyEvaluator;
import dev.troupe.txn.Forward;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.coordinator.CoordinatorCore.Effect;
import dev.troupe.txn.coordinator.CoordinatorCore.Input;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Phase one with declared dependencies: followers join, amended parts vote again, limits. */
class CoordinatorForwardingTest {
  private static final EntityId PRODUCT = EntityId.parse("Product/p");
  private static final EntityId CART = EntityId.parse("Cart/c");
  private static final EntityId OTHER = EntityId.parse("Cart/d");
  private static final Dependency ITEM = Dependency.fromJson(Json.parse(
      "{\"kind\":\"update\",\"leader\":{\"entity\":\"Product/p\",\"key\":\"price\"},"
          + "\"follower\":{\"entity\":\"Cart/c\",\"key\":\"item\"},\"function\":\"replicate\"}"));
  private static final Forward CHANGE =
      new Forward.LeaderChanged(ITEM, LongNode.valueOf(1), LongNode.valueOf(2));

  private static CoordinatorCore coordinator(boolean planned, int maxForwardRounds,
      EntityId... participants) {
    Map<EntityId, CoordinatorCore.Part> parts = new LinkedHashMap<>();
    for (EntityId participant : participants) {
      parts.put(participant, new CoordinatorCore.Part(
          List.of(new Turn.AssignKeys(Map.of("x", LongNode.valueOf(1)))), false));
    }
    return new CoordinatorCore(parts, new CoordinatorCore.Limits(1000, 2, 5, 8, maxForwardRounds,
        3), planned);
  }

  private static TurnResult yes(List<Forward> forwards) {
    return yes(new DependencyEvaluator.Forwarding(forwards, Map.of(), Map.of()));
  }

  private static TurnResult yes(DependencyEvaluator.Forwarding forwarding) {
    return new TurnResult.Done(5, EntityState.ABSENT, true, 5, forwarding);
  }

  private static TroupeExceptionView failure(List<Effect> effects) {
    for (Effect effect : effects) {
      if (effect instanceof Effect.Reply reply) {
        CoordinatorCore.Outcome.Failed failed =
            assertInstanceOf(CoordinatorCore.Outcome.Failed.class, reply.outcome());
        return new TroupeExceptionView(failed.error().code(), failed.error().reason());
      }
    }
    throw new AssertionError("no reply in " + effects);
  }

  private record TroupeExceptionView(ErrorCode code, String reason) {}

  @Test
  void aFollowerJoinsWithAPrepareOfWhatIsForwardedToIt() {
    CoordinatorCore core = coordinator(false, 4, PRODUCT);
    core.handle(new Input.Started(10));
    List<Effect> effects = core.handle(new Input.VoteReceived(PRODUCT, 10, yes(List.of(CHANGE))));
    assertEquals(List.of(new Effect.SendPrepare(CART, 10, 10,
        new CoordinatorCore.Part(List.of(), false, List.of(CHANGE)))), effects);
    assertEquals(List.of(new Effect.PersistDecision(10, List.of(PRODUCT, CART))),
        core.handle(new Input.VoteReceived(CART, 10, yes(List.of()))));
  }

  @Test
  void aParticipantThatAlreadyVotedIsAskedAgainAndOnlyItsLatestVoteCounts() {
    CoordinatorCore core = coordinator(false, 4, PRODUCT, CART);
    core.handle(new Input.Started(10));
    assertTrue(core.handle(new Input.VoteReceived(CART, 10, yes(List.of()))).isEmpty());
    assertEquals(List.of(new Effect.SendForwards(CART, 10, List.of(CHANGE), 2)),
        core.handle(new Input.VoteReceived(PRODUCT, 10, yes(List.of(CHANGE)))));
    assertTrue(core.handle(new Input.VoteReceived(CART, 10, yes(List.of()))).isEmpty(),
        "a late copy of the first round's vote does not count for the second");
    assertEquals(List.of(new Effect.PersistDecision(10, List.of(PRODUCT, CART))),
        core.handle(new Input.VoteReceived(CART, 10, yes(List.of()), 2)));
  }

  @Test
  void forwardsToAParticipantWhoseVoteIsStillToComeWaitForIt() {
    CoordinatorCore core = coordinator(false, 4, PRODUCT, CART);
    core.handle(new Input.Started(10));
    assertTrue(core.handle(new Input.VoteReceived(PRODUCT, 10, yes(List.of(CHANGE)))).isEmpty(),
        "the cart has not voted yet: nothing is sent to it, nothing decided");
    assertEquals(List.of(new Effect.SendForwards(CART, 10, List.of(CHANGE), 2)),
        core.handle(new Input.VoteReceived(CART, 10, yes(List.of()))));
  }

  @Test
  void forwardsThatNeverSettleAbortPastTheRoundLimit() {
    CoordinatorCore core = coordinator(false, 2, PRODUCT, CART);
    core.handle(new Input.Started(10));
    core.handle(new Input.VoteReceived(CART, 10, yes(List.of())));
    core.handle(new Input.VoteReceived(PRODUCT, 10, yes(List.of(CHANGE))));
    // The cart answers with a forward back that keeps changing what the product must do.
    Forward back = new Forward.FollowerDeleted(ITEM);
    core.handle(new Input.VoteReceived(CART, 10, yes(List.of(back)), 2));
    Forward changedAgain =
        new Forward.LeaderChanged(ITEM, LongNode.valueOf(1), LongNode.valueOf(3));
    List<Effect> effects = core.handle(new Input.VoteReceived(PRODUCT, 10,
        yes(List.of(changedAgain)), 2));
    assertEquals(ErrorCode.TOO_LARGE, failure(effects).code());
    assertTrue(effects.contains(new Effect.SendDecision(CART, 10, false)));
    assertTrue(effects.contains(new Effect.SendDecision(PRODUCT, 10, false)));
  }

  @Test
  void aChainThroughANewDependencyIsCheckedBeforeTheDecision() {
    CoordinatorCore core = coordinator(false, 4, PRODUCT, OTHER);
    core.handle(new Input.Started(10));
    core.handle(new Input.VoteReceived(PRODUCT, 10, yes(new DependencyEvaluator.Forwarding(
        List.of(), Map.of(ITEM.id(), 1), Map.of()))));
    List<Effect> effects = core.handle(new Input.VoteReceived(OTHER, 10, yes(
        new DependencyEvaluator.Forwarding(List.of(), Map.of(), Map.of(ITEM.id(), 2)))));
    assertEquals(ErrorCode.TOO_LARGE, failure(effects).code(), "1 + 1 + 2 > 3");
  }

  @Test
  void aPlannedTransactionThatForwardsAbortsToRunAgainAsDynamic() {
    CoordinatorCore core = coordinator(true, 4, PRODUCT);
    core.handle(new Input.Started(10, 1));
    List<Effect> effects = core.handle(new Input.VoteReceived(PRODUCT, 10, yes(List.of(CHANGE))));
    TroupeExceptionView failure = failure(effects);
    assertEquals(ErrorCode.ABORTED, failure.code());
    assertEquals(TransactionAbort.DEPENDENCIES_INVOLVED, failure.reason());
  }

  @Test
  void aPlannedTransactionForwardsToTheFollowersItWasPlannedWith() {
    CoordinatorCore core = coordinator(true, 4, PRODUCT, CART);
    core.handle(new Input.Started(10, 1));
    core.handle(new Input.VoteReceived(CART, 10, yes(List.of())));
    assertEquals(List.of(new Effect.SendForwards(CART, 10, List.of(CHANGE), 2)),
        core.handle(new Input.VoteReceived(PRODUCT, 10, yes(List.of(CHANGE)))));
  }

  @Test
  void aReportedForwardPreparesTheFollowerBeforeTheLeaderVotes() {
    CoordinatorCore core = coordinator(false, 4, PRODUCT);
    core.handle(new Input.Started(10));
    assertEquals(List.of(new Effect.SendPrepare(CART, 10, 10,
        new CoordinatorCore.Part(List.of(), false, List.of(CHANGE)))),
        core.handle(new Input.ForwardsReported(PRODUCT, 10, List.of(CHANGE), 1)));
    assertTrue(core.handle(new Input.ForwardsReported(PRODUCT, 10, List.of(CHANGE), 1)).isEmpty(),
        "a duplicated report changes nothing");
    assertTrue(core.handle(new Input.VoteReceived(CART, 10, yes(List.of()))).isEmpty(),
        "the decision still waits for the leader's durable vote");
    assertEquals(List.of(new Effect.PersistDecision(10, List.of(PRODUCT, CART))),
        core.handle(new Input.VoteReceived(PRODUCT, 10, yes(List.of(CHANGE)))));
  }

  @Test
  void aFollowerThatReportedItsOwnEvaluationIsSentTheForwardsBeforeItVotes() {
    CoordinatorCore core = coordinator(true, 4, PRODUCT, CART);
    core.handle(new Input.Started(10));
    assertTrue(core.handle(new Input.ForwardsReported(CART, 10, List.of(), 1)).isEmpty());
    assertEquals(List.of(new Effect.SendForwards(CART, 10, List.of(CHANGE), 2)),
        core.handle(new Input.ForwardsReported(PRODUCT, 10, List.of(CHANGE), 1)));
    assertTrue(core.handle(new Input.VoteReceived(CART, 10, yes(List.of()))).isEmpty(),
        "the follower's vote of the first round no longer counts");
    assertTrue(core.handle(new Input.VoteReceived(PRODUCT, 10, yes(List.of(CHANGE)))).isEmpty());
    assertEquals(List.of(new Effect.PersistDecision(10, List.of(PRODUCT, CART))),
        core.handle(new Input.VoteReceived(CART, 10, yes(List.of()), 2)));
  }

  @Test
  void aFollowerThatHasNotReportedGetsTheReportedForwardsAfterItsVote() {
    CoordinatorCore core = coordinator(true, 4, PRODUCT, CART);
    core.handle(new Input.Started(10));
    assertTrue(core.handle(new Input.ForwardsReported(PRODUCT, 10, List.of(CHANGE), 1)).isEmpty());
    assertEquals(List.of(new Effect.SendForwards(CART, 10, List.of(CHANGE), 2)),
        core.handle(new Input.VoteReceived(CART, 10, yes(List.of()))));
  }

  @Test
  void aReportAfterItsVoteCountedIsIgnored() {
    CoordinatorCore core = coordinator(false, 4, PRODUCT);
    core.handle(new Input.Started(10));
    core.handle(new Input.VoteReceived(PRODUCT, 10, yes(List.of())));
    assertTrue(core.handle(new Input.ForwardsReported(PRODUCT, 10, List.of(CHANGE), 1)).isEmpty());
  }

  @Test
  void aVoteThatForwardsOtherThanItsReportIsAnInvariantViolation() {
    CoordinatorCore core = coordinator(false, 4, PRODUCT);
    core.handle(new Input.Started(10));
    core.handle(new Input.ForwardsReported(PRODUCT, 10, List.of(CHANGE), 1));
    assertThrows(InvariantViolation.class,
        () -> core.handle(new Input.VoteReceived(PRODUCT, 10, yes(List.of()))));
  }

  @Test
  void aPlannedReportReachingBeyondThePlanAborts() {
    CoordinatorCore core = coordinator(true, 4, PRODUCT);
    core.handle(new Input.Started(10));
    assertEquals(TransactionAbort.DEPENDENCIES_INVOLVED, failure(core.handle(
        new Input.ForwardsReported(PRODUCT, 10, List.of(CHANGE), 1))).reason());
  }
}
