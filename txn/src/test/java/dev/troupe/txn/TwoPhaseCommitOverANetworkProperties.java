package dev.troupe.txn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.coordinator.DecisionQueryCore;
import dev.troupe.txn.entity.EntityTurnCore;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

/**
 * The real coordinator, participants and decision-query cores over a network that loses,
 * duplicates and reorders every message (and fires timers at any moment) until it heals: the
 * transaction is applied exactly once everywhere or nowhere, the client is answered once, and
 * nothing is left in doubt.
 */
class TwoPhaseCommitOverANetworkProperties {
  private static final CompiledType SERIAL = CompiledType.compile(SpecParser.parse("Hot", """
      {"admission": "serial", "keys": {"a": {"kind": "counter"}}}
      """.getBytes(StandardCharsets.UTF_8), false));
  private static final long ID = 64;

  @Property(tries = 300)
  void appliedOnceEverywhereOrNowhereAndNothingLeftInDoubt(@ForAll long seed,
      @ForAll boolean someoneVotesNo) {
    Random random = new Random(seed);
    List<EntityId> entities = List.of(new EntityId("Hot", "a"), new EntityId("Hot", "b"),
        new EntityId("Hot", "c"));
    Map<EntityId, CoordinatorCore.Part> parts = new LinkedHashMap<>();
    for (EntityId entity : entities) {
      // A precondition-free increment; a "no" is a decrement below zero on a guarded action.
      parts.put(entity, new CoordinatorCore.Part(List.of(new Turn.IncrementKey("a", 1)), false));
    }
    CoordinatorCore coordinator =
        new CoordinatorCore(parts, new CoordinatorCore.Limits(1000, 0, 1), false);
    DecisionQueryCore decisions = new DecisionQueryCore();
    Map<EntityId, EntityTurnCore<String>> participants = new LinkedHashMap<>();
    Map<EntityId, Long> durableSerial = new LinkedHashMap<>();
    for (EntityId entity : entities) {
      participants.put(entity, new EntityTurnCore<>(entity, EntityState.ABSENT,
          TurnLimits.DEFAULTS, new EntityTurnCore.ParticipantLimits(10, 8), 0, Set.of()));
      durableSerial.put(entity, 0L);
    }
    Map<EntityId, java.util.ArrayDeque<Long>> submitted = new LinkedHashMap<>();
    List<Runnable> network = new ArrayList<>();
    List<Runnable> timers = new ArrayList<>();
    List<CoordinatorCore.Outcome> replies = new ArrayList<>();
    int[] deliveries = {0};
    int healedAfter = 5 + random.nextInt(60);

    class Run {
      void send(Runnable message) {
        boolean faulty = deliveries[0] < healedAfter;
        if (faulty && random.nextInt(10) == 0) {
          return; // lost
        }
        network.add(message);
        if (faulty && random.nextInt(10) == 0) {
          network.add(message); // duplicated
        }
      }

      void coordinator(CoordinatorCore.Input input) {
        for (CoordinatorCore.Effect effect : coordinator.handle(input)) {
          switch (effect) {
            case CoordinatorCore.Effect.SendPrepare prepare -> send(() -> participant(
                prepare.participant(), new EntityTurnCore.Input.PrepareRequested<>(
                    prepare.transactionId(), prepare.startTimestamp(), prepare.part().turns(),
                    false, SERIAL, "vote:" + prepare.participant().id() + ":1")));
            case CoordinatorCore.Effect.SendForwards forwards ->
                throw new AssertionError("no dependencies here");
            case CoordinatorCore.Effect.SchedulePrepareTimeout timeout -> timers.add(
                () -> coordinator(new CoordinatorCore.Input.PrepareTimedOut(timeout.transactionId())));
            case CoordinatorCore.Effect.ScheduleRetry retry -> throw new AssertionError("no retry");
            case CoordinatorCore.Effect.PersistDecision persist -> {
              decisions.handle(new DecisionQueryCore.Input.DecisionRecorded(persist.transactionId()));
              timers.add(() -> coordinator(new CoordinatorCore.Input.DecisionPersisted(null, false)));
            }
            case CoordinatorCore.Effect.SendDecision decision -> send(() -> participant(
                decision.participant(), new EntityTurnCore.Input.DecisionReceived<>(
                    decision.transactionId(), decision.commit(),
                    decision.commit() ? "ack:" + decision.participant().id() : null)));
            case CoordinatorCore.Effect.ScheduleDecisionResend resend -> timers.add(
                () -> coordinator(new CoordinatorCore.Input.DecisionResendDue(resend.transactionId())));
            case CoordinatorCore.Effect.ForgetDecision forget -> decisions.handle(
                new DecisionQueryCore.Input.DecisionForgotten(forget.transactionId()));
            case CoordinatorCore.Effect.Reply reply -> replies.add(reply.outcome());
            case CoordinatorCore.Effect.Finished ignored -> {}
          }
        }
      }

      void participant(EntityId entity, EntityTurnCore.Input<String> input) {
        EntityTurnCore<String> core = participants.get(entity);
        for (EntityTurnCore.Effect<String> effect : core.handle(input)) {
          switch (effect) {
            case EntityTurnCore.Effect.SubmitPrepare<String> prepare -> {
              boolean refuse = someoneVotesNo && entity.equals(entities.get(2));
              timers.add(() -> participant(entity, refuse
                  ? new EntityTurnCore.Input.PrepareFailed<>(prepare.transactionId(),
                      new dev.troupe.model.TroupeException(dev.troupe.model.ErrorCode.UNAVAILABLE,
                          "refused"))
                  : new EntityTurnCore.Input.PrepareSucceeded<>(prepare.transactionId())));
            }
            case EntityTurnCore.Effect.SubmitCommit<String> commit -> {
              // A partition's writer makes one entity's commits durable in submission order.
              submitted.computeIfAbsent(entity, ignored -> new java.util.ArrayDeque<>())
                  .add(commit.serial());
              timers.add(() -> {
                long serial = submitted.get(entity).poll();
                durableSerial.put(entity, serial);
                participant(entity, new EntityTurnCore.Input.CommitSucceeded<>(serial, 100 + serial));
              });
            }
            case EntityTurnCore.Effect.AbandonPrepared<String> ignored -> {}
            case EntityTurnCore.Effect.ReportForwards<String> ignored -> {} // the vote carries them too
            case EntityTurnCore.Effect.Reply<String> reply -> {
              String[] to = reply.replyTo().split(":");
              EntityId from = new EntityId("Hot", to[1]);
              send(() -> coordinator(to[0].equals("vote")
                  ? new CoordinatorCore.Input.VoteReceived(from, ID, reply.result(),
                      Integer.parseInt(to[2]))
                  : new CoordinatorCore.Input.Acknowledged(from, ID, reply.result())));
            }
            case EntityTurnCore.Effect.Stop<String> ignored -> throw new AssertionError("stop");
            case EntityTurnCore.Effect.OfferPassivation<String> ignored -> {}
            case EntityTurnCore.Effect.ScheduleInDoubtQuery<String> check -> timers.add(
                () -> participant(entity,
                    new EntityTurnCore.Input.InDoubtQueryDue<>(check.transactionId())));
            case EntityTurnCore.Effect.QueryDecision<String> query -> send(() -> {
              for (DecisionQueryCore.Effect answer : decisions.handle(new DecisionQueryCore.Input
                  .Asked(query.transactionId(), coordinator.knowledgeOf(query.transactionId())))) {
                DecisionQueryCore.Answer said = ((DecisionQueryCore.Effect.Answered) answer).answer();
                if (said != DecisionQueryCore.Answer.UNDECIDED) {
                  send(() -> participant(entity, new EntityTurnCore.Input.DecisionAnswered<>(
                      query.transactionId(), said == DecisionQueryCore.Answer.COMMITTED)));
                }
              }
            });
          }
        }
      }
    }
    Run run = new Run();
    run.coordinator(new CoordinatorCore.Input.Started(ID));
    int steps = 0;
    while ((!network.isEmpty() || !timers.isEmpty()) && steps++ < 100_000) {
      boolean fromNetwork = !network.isEmpty() && (timers.isEmpty() || random.nextInt(4) != 0);
      List<Runnable> from = fromNetwork ? network : timers;
      Runnable next = from.remove(random.nextInt(from.size()));
      deliveries[0]++;
      next.run();
    }
    assertTrue(steps < 100_000, "did not settle");
    assertEquals(1, replies.size(), "answered once: " + replies);
    boolean committed = replies.get(0) instanceof CoordinatorCore.Outcome.Committed;
    assertTrue(!committed || !someoneVotesNo, "committed although a participant voted no");
    for (EntityId entity : entities) {
      EntityTurnCore<String> core = participants.get(entity);
      assertEquals(0, core.openTransactions(), entity + " left in doubt");
      assertEquals(committed ? 1L : 0L, durableSerial.get(entity),
          entity + ": the transaction applied " + durableSerial.get(entity) + " times");
    }
  }
}
