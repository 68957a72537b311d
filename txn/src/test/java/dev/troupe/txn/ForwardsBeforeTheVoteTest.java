package dev.troupe.txn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import com.fasterxml.jackson.databind.node.LongNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyKeys;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.entity.EntityTurnCore;
import dev.troupe.txn.entity.LockTable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Issue 20: a transaction whose leader forwards waits for no more sequential group commits than
 * one that does not. The coordinator and two entity cores are driven over a store that makes
 * everything submitted durable in one group commit at a time; the test counts the group commits
 * before the commit decision is durable. With forwards reported before the vote, the follower's
 * amended prepared record joins the leader's group commit (decision in the second); with the
 * reports dropped (as between nodes), it waits for the leader's vote (decision in the third).
 */
class ForwardsBeforeTheVoteTest {
  private static final EntityId PRODUCT = EntityId.parse("Product/p");
  private static final EntityId CART = EntityId.parse("Cart/c");
  private static final Dependency ITEM = Dependency.fromJson(Json.parse(
      "{\"kind\":\"update\",\"leader\":{\"entity\":\"Product/p\",\"key\":\"price\"},"
          + "\"follower\":{\"entity\":\"Cart/c\",\"key\":\"item\"},\"function\":\"replicate\"}"));
  private static final CompiledType PRODUCT_TYPE = type("Product", "price");
  private static final CompiledType CART_TYPE = type("Cart", "item\": {\"kind\": \"register\"},"
      + " \"note");

  private static CompiledType type(String name, String keys) {
    return CompiledType.compile(SpecParser.parse(name, ("{\"admission\": \"keys\", \"keys\": {\""
        + keys + "\": {\"kind\": \"register\"}}}").getBytes(StandardCharsets.UTF_8), false));
  }

  /** A message to a core, delivered in order. */
  private record Message(EntityId to, EntityTurnCore.Input<String> input) {}

  private final Map<EntityId, EntityTurnCore<String>> entities = new LinkedHashMap<>();
  private final ArrayDeque<Message> messages = new ArrayDeque<>();
  private final ArrayDeque<CoordinatorCore.Input> coordinatorInputs = new ArrayDeque<>();
  /** What the store holds until the next group commit makes it durable. */
  private final List<Runnable> unsynced = new ArrayList<>();
  private CoordinatorCore coordinator;
  private CoordinatorCore.Outcome outcome;
  private int groupCommits;
  private int decisionDurableAfter;

  private int groupCommitsBeforeTheDecision(boolean reportsDelivered) {
    entities.put(PRODUCT, new EntityTurnCore<>(PRODUCT, EntityState.ABSENT.apply(List.of(
        new Operation.Assign("price", LongNode.valueOf(1)),
        new Operation.RecordDependency(DependencyKeys.outgoing("price"), ITEM, null)), 1, 0),
        TurnLimits.DEFAULTS, 1));
    entities.put(CART, new EntityTurnCore<>(CART, EntityState.ABSENT.apply(List.of(
        new Operation.Assign("item", LongNode.valueOf(1)),
        new Operation.RecordDependency(DependencyKeys.incoming("item"), ITEM, null)), 1, 0),
        TurnLimits.DEFAULTS, 1));
    // Planned, as the reconnaissance plans it: the cart joins with its item key reserved.
    Map<EntityId, CoordinatorCore.Part> parts = new LinkedHashMap<>();
    parts.put(PRODUCT, new CoordinatorCore.Part(
        List.of(new Turn.AssignKeys(Map.of("price", LongNode.valueOf(2)))), false));
    parts.put(CART, new CoordinatorCore.Part(
        List.of(new Turn.AssignKeys(Map.of("note", Json.parse("\"x\"")))), false)
        .reserving(Map.of("item", LockTable.Mode.WRITE)));
    coordinator = new CoordinatorCore(parts, new CoordinatorCore.Limits(1000, 0, 5), true);
    coordinatorInputs.add(new CoordinatorCore.Input.Started(10));
    while (true) {
      deliver(reportsDelivered);
      if (outcome != null) {
        break;
      }
      if (unsynced.isEmpty()) {
        throw new AssertionError("nothing to sync and no outcome");
      }
      groupCommits++;
      List<Runnable> synced = new ArrayList<>(unsynced);
      unsynced.clear();
      synced.forEach(Runnable::run);
    }
    CoordinatorCore.Outcome.Committed committed =
        assertInstanceOf(CoordinatorCore.Outcome.Committed.class, outcome);
    assertEquals(2, ((RegisterValue) committed.results().get(CART).state().get("item")).value()
        .asInt(), "the follower replicated the price");
    return decisionDurableAfter;
  }

  /** Runs every message and input until none is left (the store's completions wait). */
  private void deliver(boolean reportsDelivered) {
    while (!messages.isEmpty() || !coordinatorInputs.isEmpty()) {
      CoordinatorCore.Input input = coordinatorInputs.poll();
      if (input != null) {
        coordinatorEffects(coordinator.handle(input));
        continue;
      }
      Message message = messages.poll();
      entityEffects(message.to(), entities.get(message.to()).handle(message.input()),
          reportsDelivered);
    }
  }

  private void coordinatorEffects(List<CoordinatorCore.Effect> effects) {
    for (CoordinatorCore.Effect effect : effects) {
      switch (effect) {
        case CoordinatorCore.Effect.SendPrepare prepare -> messages.add(new Message(
            prepare.participant(), new EntityTurnCore.Input.PrepareRequested<>(
                prepare.transactionId(), prepare.startTimestamp(), prepare.part().turns(),
                prepare.part().readsState(), prepare.participant().equals(PRODUCT)
                    ? PRODUCT_TYPE : CART_TYPE, "vote " + prepare.participant() + " 1",
                prepare.planned(), prepare.part().forwards(), prepare.part().reserved())));
        case CoordinatorCore.Effect.SendForwards forwards -> messages.add(new Message(
            forwards.participant(), new EntityTurnCore.Input.ForwardsReceived<>(
                forwards.transactionId(), forwards.forwards(),
                "vote " + forwards.participant() + " " + forwards.round(), forwards.round())));
        case CoordinatorCore.Effect.PersistDecision ignored -> unsynced.add(() -> {
          decisionDurableAfter = groupCommits;
          coordinatorInputs.add(new CoordinatorCore.Input.DecisionPersisted(null, false));
        });
        case CoordinatorCore.Effect.SendDecision decision -> messages.add(new Message(
            decision.participant(), new EntityTurnCore.Input.DecisionReceived<>(
                decision.transactionId(), decision.commit(), "ack " + decision.participant())));
        case CoordinatorCore.Effect.Reply reply -> outcome = reply.outcome();
        case CoordinatorCore.Effect.SchedulePrepareTimeout ignored -> {}
        case CoordinatorCore.Effect.ScheduleRetry ignored -> {}
        case CoordinatorCore.Effect.ScheduleDecisionResend ignored -> {}
        case CoordinatorCore.Effect.ForgetDecision ignored -> {}
        case CoordinatorCore.Effect.Finished ignored -> {}
      }
    }
  }

  private void entityEffects(EntityId entity, List<EntityTurnCore.Effect<String>> effects,
      boolean reportsDelivered) {
    for (EntityTurnCore.Effect<String> effect : effects) {
      switch (effect) {
        case EntityTurnCore.Effect.SubmitPrepare<String> prepare -> unsynced.add(() ->
            messages.add(new Message(entity,
                new EntityTurnCore.Input.PrepareSucceeded<>(prepare.transactionId()))));
        case EntityTurnCore.Effect.SubmitCommit<String> commit -> unsynced.add(() ->
            messages.add(new Message(entity,
                new EntityTurnCore.Input.CommitSucceeded<>(commit.serial(), 20))));
        case EntityTurnCore.Effect.Reply<String> reply -> {
          String[] to = reply.replyTo().split(" ");
          EntityId participant = EntityId.parse(to[1]);
          coordinatorInputs.add(to[0].equals("vote")
              ? new CoordinatorCore.Input.VoteReceived(participant, 10, reply.result(),
                  Integer.parseInt(to[2]))
              : new CoordinatorCore.Input.Acknowledged(participant, 10, reply.result()));
        }
        case EntityTurnCore.Effect.ReportForwards<String> report -> {
          if (reportsDelivered) {
            String[] to = report.voteTo().split(" ");
            coordinatorInputs.add(new CoordinatorCore.Input.ForwardsReported(
                EntityId.parse(to[1]), 10, report.forwards(), Integer.parseInt(to[2])));
          }
        }
        case EntityTurnCore.Effect.AbandonPrepared<String> ignored -> {}
        case EntityTurnCore.Effect.Stop<String> ignored -> {}
        case EntityTurnCore.Effect.OfferPassivation<String> ignored -> {}
        case EntityTurnCore.Effect.ScheduleInDoubtQuery<String> ignored -> {}
        case EntityTurnCore.Effect.QueryDecision<String> ignored -> {}
      }
    }
  }

  @Test
  void theFollowersRecordJoinsTheLeadersGroupCommit() {
    assertEquals(2, groupCommitsBeforeTheDecision(true),
        "prepared records in one group commit, the decision in the next");
  }

  @Test
  void withoutReportsTheFollowerPreparesAfterTheLeadersVote() {
    assertEquals(3, groupCommitsBeforeTheDecision(false),
        "the follower's amended record waits for the leader's durable vote");
  }
}
