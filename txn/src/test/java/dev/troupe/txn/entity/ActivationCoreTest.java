package dev.troupe.txn.entity;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.txn.entity.ActivationCore.Effect;
import java.util.List;
import org.junit.jupiter.api.Test;

class ActivationCoreTest {
  private static final EntityId A = new EntityId("T", "a");
  private static final EntityId B = new EntityId("T", "b");
  private static final EntityId C = new EntityId("T", "c");

  @Test
  void activatesOnFirstMessageAndDeliversDirectlyAfterwards() {
    ActivationCore<String> core = new ActivationCore<>(10, 10);
    assertEquals(List.of(new Effect.Activate<String>(A), new Effect.Deliver<>(A, "m1")),
        core.deliver(A, "m1", 0));
    assertEquals(List.of(new Effect.Deliver<>(A, "m2")), core.deliver(A, "m2", 0));
  }

  @Test
  void theLeastRecentlyUsedEntityMakesRoom() {
    ActivationCore<String> core = new ActivationCore<>(2, 10);
    core.deliver(A, "1", 0);
    core.deliver(B, "1", 0);
    core.deliver(A, "2", 0); // A is now more recent than B
    List<Effect<String>> effects = core.deliver(C, "1", 0);
    assertEquals(new Effect.Passivate<String>(B), effects.get(0));
    assertEquals(2, core.activeCount());
    assertEquals(1, core.stoppingCount());
  }

  @Test
  void aTouchCountsAsUseWithoutDeliveringAndOnlyActiveEntitiesAreActive() {
    ActivationCore<String> core = new ActivationCore<>(2, 10);
    core.deliver(A, "1", 0);
    core.deliver(B, "1", 0);
    assertTrue(core.isActive(A));
    assertFalse(core.isActive(C));
    core.touched(A); // delivered straight to A's incarnation: A is now more recent than B
    core.touched(C); // not active: nothing
    assertFalse(core.isActive(C));
    List<Effect<String>> effects = core.deliver(C, "1", 0);
    assertEquals(new Effect.Passivate<String>(B), effects.get(0));
    assertFalse(core.isActive(B)); // stopping is not active
    assertTrue(core.isActive(A));
  }

  @Test
  void messagesForAStoppingEntityAreBufferedAndDeliveredInOrderToTheNextIncarnation() {
    ActivationCore<String> core = new ActivationCore<>(10, 2);
    core.deliver(A, "1", 0);
    assertEquals(List.of(new Effect.Passivate<String>(A)), core.passivationWanted(A, 0));
    assertTrue(core.deliver(A, "2", 0).isEmpty());
    assertTrue(core.deliver(A, "3", 0).isEmpty());
    assertEquals(List.of(new Effect.Refuse<>(A, "4")), core.deliver(A, "4", 0));
    assertEquals(List.of(new Effect.Activate<String>(A), new Effect.Deliver<>(A, "2"),
        new Effect.Deliver<>(A, "3")), core.stopped(A));
    assertEquals(List.of(new Effect.Deliver<>(A, "5")), core.deliver(A, "5", 0));
  }

  @Test
  void anIdleStopWithNothingBufferedLeavesTheEntityInactive() {
    ActivationCore<String> core = new ActivationCore<>(10, 2);
    core.deliver(A, "1", 0);
    core.passivationWanted(A, 0);
    assertTrue(core.stopped(A).isEmpty());
    assertEquals(0, core.activeCount());
    assertEquals(0, core.stoppingCount());
    assertEquals(Effect.Activate.class, core.deliver(A, "2", 0).get(0).getClass());
  }

  @Test
  void aLowerLimitPassivatesTheLeastRecentlyUsedAndALaterActivationRespectsIt() {
    ActivationCore<String> core = new ActivationCore<>(10, 10);
    core.deliver(A, "1", 0);
    core.deliver(B, "1", 0);
    core.deliver(C, "1", 0);
    core.deliver(A, "2", 0); // least recent first: B, C, A
    assertEquals(List.of(new Effect.Passivate<String>(B), new Effect.Passivate<>(C)),
        core.limitActive(1));
    assertEquals(1, core.activeCount());
    assertEquals(2, core.stoppingCount());
    assertTrue(core.limitActive(1).isEmpty(), "already within the limit");
    core.stopped(B);
    core.stopped(C);
    List<Effect<String>> effects = core.deliver(B, "2", 0);
    assertEquals(new Effect.Passivate<String>(A), effects.get(0), "B's activation makes room");
    assertEquals(1, core.activeCount());
    assertTrue(core.limitActive(5).isEmpty(), "a higher limit passivates nothing");
    assertEquals(5, core.maxActive());
  }

  @Test
  void aOnceUsedEntityIsAskedAfterItsDelayOnceAndInActivationOrder() {
    ActivationCore<String> core = new ActivationCore<>(10, 10, 5_000, 0, 0);
    core.deliver(A, "1", 1_000);
    core.deliver(B, "1", 2_000);
    assertEquals(2, core.onceUsedCount());
    assertTrue(core.sweep(5_999).isEmpty(), "A is 4,999 ms old");
    assertEquals(List.of(new Effect.AskIfIdle<String>(A)), core.sweep(6_000));
    assertTrue(core.sweep(6_500).isEmpty(), "A is asked once; B is not old enough");
    assertEquals(List.of(new Effect.AskIfIdle<String>(B)), core.sweep(60_000));
    assertTrue(core.sweep(120_000).isEmpty());
    // Asking changes nothing by itself: the entities stay active until they offer to stop.
    assertTrue(core.isActive(A) && core.isActive(B));
    assertEquals(List.of(new Effect.Passivate<String>(A)), core.passivationWanted(A, 0));
    assertTrue(core.stopped(A).isEmpty());
    // Activated again, A is once used again.
    core.deliver(A, "2", 70_000);
    assertEquals(List.of(new Effect.AskIfIdle<String>(A)), core.sweep(75_000));
  }

  @Test
  void aSecondMessageOrADirectDeliveryMakesAnEntityOrdinary() {
    ActivationCore<String> core = new ActivationCore<>(10, 10, 5_000, 0, 0);
    core.deliver(A, "1", 0);
    core.deliver(A, "2", 10);
    core.deliver(B, "1", 0);
    core.touched(B);
    core.deliver(C, "1", 0);
    assertEquals(List.of(new Effect.AskIfIdle<String>(C)), core.sweep(5_000));
    assertEquals(0, core.onceUsedCount());
  }

  @Test
  void entitiesThatLeaveBeforeTheirDelayAreNotAskedAndTheRuleCanBeOff() {
    ActivationCore<String> core = new ActivationCore<>(1, 10, 5_000, 0, 0);
    core.deliver(A, "1", 0);
    core.deliver(B, "1", 1); // makes room: A is passivated
    assertEquals(1, core.onceUsedCount());
    core.stopped(A);
    core.passivationWanted(B, 0);
    assertEquals(0, core.onceUsedCount());
    assertTrue(core.sweep(10_000).isEmpty());
    // Reactivated with buffered messages: not once used (it has had its share of messages).
    core.deliver(C, "1", 0);
    core.passivationWanted(C, 0);
    core.deliver(C, "2", 1);
    core.stopped(C);
    assertTrue(core.isActive(C));
    assertTrue(core.sweep(10_000).isEmpty());

    ActivationCore<String> off = new ActivationCore<>(10, 10);
    off.deliver(A, "1", 0);
    assertEquals(0, off.onceUsedCount());
    assertTrue(off.sweep(Long.MAX_VALUE / 2).isEmpty());
  }

  @Test
  void anEntityTheSweepPassivatedIsOrdinaryWhenActivatedAgainWhileRemembered() {
    ActivationCore<String> core = new ActivationCore<>(10, 10, 500, 2, 120_000);
    core.deliver(A, "1", 0);
    assertEquals(List.of(new Effect.AskIfIdle<String>(A)), core.sweep(500));
    assertEquals(List.of(new Effect.Passivate<String>(A)), core.passivationWanted(A, 600));
    core.stopped(A);
    assertEquals(1, core.rememberedCount());
    // Written again seconds later: one activation, then an ordinary entity, never asked.
    assertEquals(List.of(new Effect.Activate<String>(A), new Effect.Deliver<>(A, "2")),
        core.deliver(A, "2", 5_000));
    assertEquals(0, core.rememberedCount());
    assertEquals(0, core.onceUsedCount());
    assertTrue(core.sweep(60_000).isEmpty());
    // Passivated by its own idle check (not the sweep), it is once used again next time.
    core.passivationWanted(A, 200_000);
    core.stopped(A);
    assertEquals(0, core.rememberedCount());
    core.deliver(A, "3", 300_000);
    assertEquals(List.of(new Effect.AskIfIdle<String>(A)), core.sweep(300_500));
  }

  @Test
  void rememberedEntitiesAreBoundedInCountAndInTime() {
    ActivationCore<String> core = new ActivationCore<>(10, 10, 500, 2, 10_000);
    for (EntityId entity : List.of(A, B, C)) {
      core.deliver(entity, "1", 0);
    }
    assertEquals(3, core.sweep(500).size());
    core.passivationWanted(A, 600);
    core.passivationWanted(B, 700);
    core.passivationWanted(C, 800);
    assertEquals(2, core.rememberedCount(), "A, the oldest, is forgotten");
    for (EntityId entity : List.of(A, B, C)) {
      core.stopped(entity);
    }
    // Forgotten by count: A is once used again.
    core.deliver(A, "2", 1_000);
    assertEquals(1, core.onceUsedCount());
    // B was passivated 10,000 ms before: too long ago, forgotten (once used again).
    core.deliver(B, "2", 10_700);
    assertEquals(2, core.onceUsedCount());
    // A sweep forgets what is too old: C is no longer remembered after 10,800.
    core.sweep(10_800);
    assertEquals(0, core.rememberedCount());
  }

  @Test
  void anEntityUsedAfterTheSweepAskedItIsNotRemembered() {
    ActivationCore<String> core = new ActivationCore<>(10, 10, 500, 10, 120_000);
    core.deliver(A, "1", 0);
    core.deliver(B, "1", 0);
    assertEquals(2, core.sweep(500).size());
    // A was busy when asked and got a second message: ordinary; its later idle stop is its own.
    core.deliver(A, "2", 600);
    core.passivationWanted(A, 130_000);
    // B was touched directly (the registry's direct route): also ordinary.
    core.touched(B);
    core.passivationWanted(B, 130_000);
    assertEquals(0, core.rememberedCount());
    // A rule without memory remembers nothing.
    ActivationCore<String> forgetful = new ActivationCore<>(10, 10, 500, 0, 120_000);
    forgetful.deliver(A, "1", 0);
    forgetful.sweep(500);
    forgetful.passivationWanted(A, 600);
    assertEquals(0, forgetful.rememberedCount());
  }
}
