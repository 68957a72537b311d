package dev.troupe.runtime;

import dev.troupe.model.EntityId;
import dev.troupe.model.Invariants;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * The direct route to one partition's active entities (docs/ARCHITECTURE.md, "A write, end to
 * end"): the incarnations its {@link EntityRegistry} publishes, so that a message to an active
 * entity is told straight to the entity's actor by the sender's thread instead of passing through
 * the registry actor (one thread hand-off and one mailbox fewer per message). Anything else (an
 * entity not active, stopping, or with messages still on their way through the registry) goes
 * through the registry as before.
 *
 * <p><b>Invariants.</b> (1) Per entity, messages reach its incarnation's mailbox in the order
 * their senders handed them here, whichever way each went: a message goes direct only when every
 * earlier one sent through the registry has been handled by it (its count of messages on their
 * way is zero), and the registry reports a message handled only after it told it on (or buffered
 * or refused it). (2) Nothing goes direct to an incarnation once the registry withdrew it: the
 * registry withdraws an entity before telling it to stop, and senders tell under the same lock,
 * so every direct message is in the mailbox before the stop (which the entity then handles after
 * them; a stopping entity's messages are buffered by the registry for its next incarnation).
 * (3) The registry's recency order (which entity is passivated to make room) still sees direct
 * deliveries: each is noted as a touch, which the registry applies before its next decision.
 *
 * <p><b>Concurrency.</b> Senders (any thread) and the registry (its actor's thread) meet on the
 * entity's route, under its lock (a {@link ConcurrentHashMap} bin's); a direct tell is a mailbox
 * enqueue made under that lock, and never blocks. Generic in the incarnation
 * ({@code I}) so it can be tested without actors.
 *
 * <p><b>Recovery.</b> None: it lives and dies with the registry; a new registry starts empty.
 */
final class DirectRoutes<I> {
  private static final class Route<I> {
    /** The active incarnation (null: none published, the registry decides). */
    I incarnation;
    /** Messages sent through the registry that it has not handled yet. */
    int throughRegistry;
    /** Whether a direct delivery is noted in {@link #touched} since the registry last drained it. */
    boolean touched;
  }

  /**
   * One route per entity with an incarnation published or messages on their way. A route is read
   * and changed only inside {@code compute} (under its bin's lock), so senders of different
   * entities rarely wait for each other, and never for a whole partition.
   */
  private final ConcurrentHashMap<EntityId, Route<I>> routes = new ConcurrentHashMap<>();
  /** Messages told straight to an incarnation (for tests and the profile's findings). */
  private final LongAdder directSends = new LongAdder();
  /** Entities delivered to directly since the registry last drained them. */
  private final ConcurrentLinkedQueue<EntityId> touched = new ConcurrentLinkedQueue<>();

  /**
   * Sends {@code message} to {@code entity}: straight to its incarnation with {@code direct} when
   * it is published and nothing sent through the registry is still on its way; otherwise through
   * the registry with {@code throughRegistry} (which must be followed, on the registry's thread, by
   * one {@link #handled}). Returns whether it went direct.
   */
  <M> boolean send(EntityId entity, M message, BiConsumer<I, M> direct,
      Consumer<M> throughRegistry) {
    boolean[] wentDirect = {false};
    routes.compute(entity, (key, existing) -> {
      if (existing != null && existing.incarnation != null && existing.throughRegistry == 0) {
        wentDirect[0] = true;
        // Told under the route's lock: a withdrawal (before the stop is told) waits for it.
        direct.accept(existing.incarnation, message);
        if (!existing.touched) {
          existing.touched = true;
          touched.add(key);
        }
        return existing;
      }
      Route<I> counted = existing != null ? existing : new Route<>();
      counted.throughRegistry++;
      throughRegistry.accept(message);
      return counted;
    });
    if (wentDirect[0]) {
      directSends.increment();
    }
    return wentDirect[0];
  }

  /** How many messages went straight to an incarnation so far. */
  long directSends() {
    return directSends.sum();
  }

  /**
   * The registry handled one message sent through it for {@code entity} (told it on, buffered or
   * refused it); {@code active} is the entity's incarnation if it is active now, else null.
   */
  void handled(EntityId entity, I active) {
    routes.compute(entity, (key, route) -> {
      Invariants.check(route != null && route.throughRegistry > 0,
          "%s: the registry handled a message nobody sent through it", key);
      route.throughRegistry--;
      route.incarnation = active;
      return unused(route) ? null : route;
    });
  }

  /**
   * The registry's view of {@code entity} changed without a message of its own (it started a new
   * incarnation for buffered messages, or one stopped): {@code active} as in {@link #handled}.
   */
  void publish(EntityId entity, I active) {
    routes.compute(entity, (key, route) -> {
      if (route == null) {
        if (active == null) {
          return null;
        }
        route = new Route<>();
      }
      route.incarnation = active;
      return unused(route) ? null : route;
    });
  }

  /**
   * The registry is about to tell {@code entity} to stop: from now on its messages go through the
   * registry (which buffers them for the next incarnation). Returns once no sender is telling it
   * directly any more.
   */
  void withdraw(EntityId entity) {
    publish(entity, null);
  }

  /**
   * The entities delivered to directly since the last call, oldest touch first. A touch that
   * races with the draining may be missed; the recency order is a heuristic (which entity makes
   * room), never a guarantee.
   */
  List<EntityId> drainTouched() {
    if (touched.isEmpty()) {
      return List.of();
    }
    List<EntityId> drained = new ArrayList<>();
    EntityId entity;
    while ((entity = touched.poll()) != null) {
      drained.add(entity);
      routes.computeIfPresent(entity, (key, route) -> {
        route.touched = false;
        return route;
      });
    }
    return drained;
  }

  /** Entities with a route (published or with messages on their way): for tests. */
  int size() {
    return routes.size();
  }

  /**
   * No incarnation and nothing on its way: the route goes. A touch noted for it stays queued;
   * draining it finds no route, and the core ignores a touch of an entity that is not active.
   */
  private static boolean unused(Route<?> route) {
    return route.incarnation == null && route.throughRegistry == 0;
  }
}
