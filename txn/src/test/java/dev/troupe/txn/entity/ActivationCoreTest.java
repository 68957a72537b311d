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
        core.deliver(A, "m1"));
    assertEquals(List.of(new Effect.Deliver<>(A, "m2")), core.deliver(A, "m2"));
  }

  @Test
  void theLeastRecentlyUsedEntityMakesRoom() {
    ActivationCore<String> core = new ActivationCore<>(2, 10);
    core.deliver(A, "1");
    core.deliver(B, "1");
    core.deliver(A, "2"); // A is now more recent than B
    List<Effect<String>> effects = core.deliver(C, "1");
    assertEquals(new Effect.Passivate<String>(B), effects.get(0));
    assertEquals(2, core.activeCount());
    assertEquals(1, core.stoppingCount());
  }

  @Test
  void aTouchCountsAsUseWithoutDeliveringAndOnlyActiveEntitiesAreActive() {
    ActivationCore<String> core = new ActivationCore<>(2, 10);
    core.deliver(A, "1");
    core.deliver(B, "1");
    assertTrue(core.isActive(A));
    assertFalse(core.isActive(C));
    core.touched(A); // delivered straight to A's incarnation: A is now more recent than B
    core.touched(C); // not active: nothing
    assertFalse(core.isActive(C));
    List<Effect<String>> effects = core.deliver(C, "1");
    assertEquals(new Effect.Passivate<String>(B), effects.get(0));
    assertFalse(core.isActive(B)); // stopping is not active
    assertTrue(core.isActive(A));
  }

  @Test
  void messagesForAStoppingEntityAreBufferedAndDeliveredInOrderToTheNextIncarnation() {
    ActivationCore<String> core = new ActivationCore<>(10, 2);
    core.deliver(A, "1");
    assertEquals(List.of(new Effect.Passivate<String>(A)), core.passivationWanted(A));
    assertTrue(core.deliver(A, "2").isEmpty());
    assertTrue(core.deliver(A, "3").isEmpty());
    assertEquals(List.of(new Effect.Refuse<>(A, "4")), core.deliver(A, "4"));
    assertEquals(List.of(new Effect.Activate<String>(A), new Effect.Deliver<>(A, "2"),
        new Effect.Deliver<>(A, "3")), core.stopped(A));
    assertEquals(List.of(new Effect.Deliver<>(A, "5")), core.deliver(A, "5"));
  }

  @Test
  void anIdleStopWithNothingBufferedLeavesTheEntityInactive() {
    ActivationCore<String> core = new ActivationCore<>(10, 2);
    core.deliver(A, "1");
    core.passivationWanted(A);
    assertTrue(core.stopped(A).isEmpty());
    assertEquals(0, core.activeCount());
    assertEquals(0, core.stoppingCount());
    assertEquals(Effect.Activate.class, core.deliver(A, "2").get(0).getClass());
  }

  @Test
  void aLowerLimitPassivatesTheLeastRecentlyUsedAndALaterActivationRespectsIt() {
    ActivationCore<String> core = new ActivationCore<>(10, 10);
    core.deliver(A, "1");
    core.deliver(B, "1");
    core.deliver(C, "1");
    core.deliver(A, "2"); // least recent first: B, C, A
    assertEquals(List.of(new Effect.Passivate<String>(B), new Effect.Passivate<>(C)),
        core.limitActive(1));
    assertEquals(1, core.activeCount());
    assertEquals(2, core.stoppingCount());
    assertTrue(core.limitActive(1).isEmpty(), "already within the limit");
    core.stopped(B);
    core.stopped(C);
    List<Effect<String>> effects = core.deliver(B, "2");
    assertEquals(new Effect.Passivate<String>(A), effects.get(0), "B's activation makes room");
    assertEquals(1, core.activeCount());
    assertTrue(core.limitActive(5).isEmpty(), "a higher limit passivates nothing");
    assertEquals(5, core.maxActive());
  }
}
