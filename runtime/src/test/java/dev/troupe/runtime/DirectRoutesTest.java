package dev.troupe.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.Invariants;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link DirectRoutes} without actors: the incarnation is a name, the registry a list of messages
 * it has not handled yet, and every tell is appended to one log of (incarnation, message).
 */
class DirectRoutesTest {
  private static final EntityId A = new EntityId("T", "a");
  private static final EntityId B = new EntityId("T", "b");

  private final DirectRoutes<String> routes = new DirectRoutes<>();
  /** What reached an incarnation's mailbox, in order: "incarnation:message". */
  private final List<String> mailboxes = new ArrayList<>();
  /** What waits in the registry's mailbox. */
  private final List<String> registry = new ArrayList<>();

  private boolean send(EntityId entity, String message) {
    return routes.send(entity, message, (incarnation, m) -> mailboxes.add(incarnation + ":" + m),
        registry::add);
  }

  /** The registry handles its oldest message: tells it to {@code incarnation}, now active. */
  private void registryDelivers(EntityId entity, String incarnation) {
    mailboxes.add(incarnation + ":" + registry.remove(0));
    routes.handled(entity, incarnation);
  }

  @Test
  void anEntityGoesDirectOnlyOnceEverythingSentThroughTheRegistryReachedItsIncarnation() {
    assertFalse(send(A, "1")); // not active: through the registry, which activates it
    assertFalse(send(A, "2")); // "1" still on its way: "2" must not overtake it
    registryDelivers(A, "a#1");
    assertFalse(send(A, "3")); // "2" still on its way
    registryDelivers(A, "a#1");
    registryDelivers(A, "a#1");
    assertTrue(send(A, "4")); // nothing on its way: straight to the published incarnation
    assertTrue(send(A, "5"));
    assertEquals(List.of("a#1:1", "a#1:2", "a#1:3", "a#1:4", "a#1:5"), mailboxes);
    assertEquals(List.of(A), routes.drainTouched()); // noted once for the registry's recency order
    assertEquals(List.of(), routes.drainTouched());
    assertTrue(send(A, "6"));
    assertEquals(List.of(A), routes.drainTouched());
  }

  @Test
  void aWithdrawnEntityGoesThroughTheRegistryUntilItsNextIncarnationIsPublished() {
    send(A, "1");
    registryDelivers(A, "a#1");
    assertTrue(send(A, "2"));
    routes.withdraw(A); // the registry is about to tell a#1 to stop
    mailboxes.add("a#1:stop");
    assertFalse(send(A, "3")); // buffered by the registry for the next incarnation
    routes.handled(A, null); // handled while stopping: buffered, the entity not active
    assertFalse(send(A, "4"));
    routes.handled(A, null);
    routes.publish(A, "a#2"); // a#1 stopped; the registry started a#2 and told it "3", "4"
    mailboxes.add("a#2:3");
    mailboxes.add("a#2:4");
    assertTrue(send(A, "5"));
    assertEquals(List.of("a#1:1", "a#1:2", "a#1:stop", "a#2:3", "a#2:4", "a#2:5"), mailboxes);
  }

  @Test
  void anInactiveEntityLeavesNoRouteBehindAndEntitiesAreIndependent() {
    send(A, "1");
    send(B, "1");
    registryDelivers(A, "a#1");
    assertTrue(send(A, "2"));
    assertFalse(send(B, "2")); // B's first message is still on its way
    routes.publish(A, null); // a#1 stopped by itself (a failed commit): not active any more
    assertFalse(send(A, "3"));
    routes.handled(A, null); // the registry refused it (or buffered it)
    routes.handled(B, null);
    routes.handled(B, null);
    assertEquals(0, routes.size());
    routes.publish(B, null); // an old incarnation's stop for an entity without a route: nothing
    assertEquals(0, routes.size());
    assertThrows(Invariants.InvariantViolation.class, () -> routes.handled(A, "a#2"));
  }
}
