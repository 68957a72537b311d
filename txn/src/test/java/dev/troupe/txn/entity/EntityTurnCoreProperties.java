package dev.troupe.txn.entity;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnLimits;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.entity.EntityTurnCore.Effect;
import dev.troupe.txn.entity.EntityTurnCore.Input;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * The turn core under random interleavings of requests, durable commits and refusals, driven the
 * way the entity actor drives it (a refused commit is reported at once and the later commits of the
 * same batch are dropped). Checks: answers that depend on state come in request order (a refusal,
 * which depends on nothing, may come at once); a write is answered only after
 * its commit is durable, with that commit's timestamp and the state the durable history has right
 * after it; the durable counter equals the sum of the acknowledged increments.
 */
class EntityTurnCoreProperties {
  private static final CompiledType TYPE = CompiledType.compile(SpecParser.parse("Tally",
      "{\"keys\": {\"n\": {\"kind\": \"counter\"}}}".getBytes(StandardCharsets.UTF_8), false));

  private record Pending(long serial, long by) {}

  @Property(tries = 300)
  void repliesAreOrderedDurableAndConsistent(
      @ForAll @Size(max = 200) List<@IntRange(min = 0, max = 9) Integer> steps) {
    EntityTurnCore<Integer> core = new EntityTurnCore<>(
        new EntityId("Tally", "t"), EntityState.ABSENT, new TurnLimits(10, 10, 4, 8), 1);
    ArrayDeque<Pending> submitted = new ArrayDeque<>();
    Map<Integer, Long> incrementOfRequest = new HashMap<>();
    Map<Long, Long> durableTotalAfterSerial = new HashMap<>();
    Map<Long, Long> timestampOfSerial = new HashMap<>();
    List<Integer> replyOrder = new ArrayList<>();
    long durableTotal = 0;
    long acknowledgedTotal = 0;
    long nextTimestamp = 100;
    long lastDurableSerial = 0;
    int nextRequest = 0;

    for (int step : steps) {
      List<Effect<Integer>> effects;
      if (step <= 5) {
        int request = nextRequest++;
        long by = step + 1;
        incrementOfRequest.put(request, by);
        effects = core.handle(new Input.TurnRequested<>(new Turn.IncrementKey("n", by), TYPE,
            1000 + request, request));
        effects = runShell(core, effects, submitted, step == 5);
      } else if (!submitted.isEmpty()) {
        Pending done = submitted.pollFirst();
        durableTotal += done.by();
        durableTotalAfterSerial.put(done.serial(), durableTotal);
        timestampOfSerial.put(done.serial(), nextTimestamp);
        lastDurableSerial = done.serial();
        effects = runShell(core, core.handle(new Input.CommitSucceeded<>(done.serial(),
            nextTimestamp++)), submitted, false);
      } else {
        continue;
      }
      for (Effect<Integer> effect : effects) {
        if (effect instanceof Effect.Reply<Integer> reply) {
          if (!isRefusal(reply.result())) {
            replyOrder.add(reply.replyTo());
          }
          if (reply.result() instanceof TurnResult.Done done && done.wrote()) {
            acknowledgedTotal += incrementOfRequest.get(reply.replyTo());
            long rendered = TYPE.render(done.state()).get("n").asLong();
            Long serial = timestampOfSerial.entrySet().stream()
                .filter(e -> e.getValue() == done.version()).map(Map.Entry::getKey)
                .findFirst().orElseThrow(() -> new AssertionError(
                    "answered with version " + done.version() + " before it was durable"));
            assertTrue(serial <= lastDurableSerial);
            assertEquals(durableTotalAfterSerial.get(serial), rendered,
                "the answer shows the durable state right after its commit");
          } else if (reply.result() instanceof TurnResult.Failed failed) {
            assertEquals(ErrorCode.OVERLOADED, failed.error().code());
          }
        }
      }
    }
    // Drain: everything submitted becomes durable and answered.
    while (!submitted.isEmpty()) {
      Pending done = submitted.pollFirst();
      durableTotal += done.by();
      for (Effect<Integer> effect : runShell(core, core.handle(
          new Input.CommitSucceeded<>(done.serial(), nextTimestamp++)), submitted, false)) {
        if (effect instanceof Effect.Reply<Integer> reply) {
          if (!isRefusal(reply.result())) {
            replyOrder.add(reply.replyTo());
          }
          if (reply.result() instanceof TurnResult.Done answered && answered.wrote()) {
            acknowledgedTotal += incrementOfRequest.get(reply.replyTo());
          }
        }
      }
    }
    assertEquals(durableTotal, acknowledgedTotal, "durable history = acknowledged increments");
    for (int i = 1; i < replyOrder.size(); i++) {
      assertTrue(replyOrder.get(i - 1) < replyOrder.get(i), "answers in request order");
    }
    assertTrue(core.isIdle());
  }

  private static boolean isRefusal(TurnResult result) {
    return result instanceof TurnResult.Failed failed
        && failed.error().code() == ErrorCode.OVERLOADED;
  }

  /**
   * Runs effects as the entity actor does: submits commits (or refuses the first one at once when
   * asked to, dropping the rest of the batch) and returns every reply, including those the refusal
   * produced.
   */
  private static List<Effect<Integer>> runShell(EntityTurnCore<Integer> core,
      List<Effect<Integer>> effects, ArrayDeque<Pending> submitted, boolean refuse) {
    List<Effect<Integer>> replies = new ArrayList<>();
    boolean dropping = false;
    for (Effect<Integer> effect : effects) {
      switch (effect) {
        case Effect.SubmitCommit<Integer> submit -> {
          if (dropping) {
            continue;
          }
          if (refuse) {
            dropping = true;
            replies.addAll(runShell(core, core.handle(new Input.CommitFailed<>(submit.serial(),
                new TroupeException(ErrorCode.OVERLOADED, "full"), true)), submitted, false));
          } else {
            long by = ((dev.troupe.model.Operation.Increment) submit.operations().get(0)).by();
            submitted.add(new Pending(submit.serial(), by));
          }
        }
        case Effect.ReportForwards<Integer> ignored -> {} // the vote carries them too
        case Effect.Reply<Integer> reply -> replies.add(reply);
        case Effect.Stop<Integer> ignored -> throw new AssertionError("no stop expected");
        case Effect.OfferPassivation<Integer> ignored -> {}
        case Effect.SubmitPrepare<Integer> ignored -> throw new AssertionError("no transactions");
        case Effect.AbandonPrepared<Integer> ignored -> throw new AssertionError("no transactions");
        case Effect.ScheduleInDoubtQuery<Integer> ignored ->
            throw new AssertionError("no transactions");
        case Effect.QueryDecision<Integer> ignored -> throw new AssertionError("no transactions");
      }
    }
    return replies;
  }
}
