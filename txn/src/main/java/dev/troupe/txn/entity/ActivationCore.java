package dev.troupe.txn.entity;

import dev.troupe.model.EntityId;
import dev.troupe.model.Invariants;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Which entities of one partition are active (have a live actor), as a deterministic state machine.
 * Bounds the number of active entities: activating one more than {@code maxActive} passivates the
 * least recently used one. While an entity is being stopped its messages are buffered (up to {@code
 * maxBufferedPerEntity}) and delivered to its next incarnation, so passivation never loses or
 * reorders a message, and an entity never has two incarnations at once.
 *
 * <p>Pure: no Pekko, no threads. The registry actor runs the effects.
 *
 * @param <M> the message type delivered to entities
 */
public final class ActivationCore<M> {

  /** What the shell must do. */
  public sealed interface Effect<M> {
    /** Start a new incarnation of the entity; deliver messages to it afterwards. */
    record Activate<M>(EntityId entity) implements Effect<M> {}

    record Deliver<M>(EntityId entity, M message) implements Effect<M> {}

    /** Ask the entity to stop once idle; report {@link #stopped} when it has. */
    record Passivate<M>(EntityId entity) implements Effect<M> {}

    /** Too many messages already wait for this entity: refuse this one (overloaded). */
    record Refuse<M>(EntityId entity, M message) implements Effect<M> {}
  }

  private int maxActive;
  private final int maxBufferedPerEntity;
  /** Active entities in least-recently-used order. */
  private final LinkedHashMap<EntityId, Boolean> active = new LinkedHashMap<>(16, 0.75f, true);
  /** Entities stopping, with the messages that arrived meanwhile. */
  private final Map<EntityId, ArrayDeque<M>> stopping = new HashMap<>();

  public ActivationCore(int maxActive, int maxBufferedPerEntity) {
    Invariants.check(maxActive > 0 && maxBufferedPerEntity > 0, "limits must be positive");
    this.maxActive = maxActive;
    this.maxBufferedPerEntity = maxBufferedPerEntity;
  }

  /** A message for an entity arrived. */
  public List<Effect<M>> deliver(EntityId entity, M message) {
    List<Effect<M>> effects = new ArrayList<>(2);
    ArrayDeque<M> buffer = stopping.get(entity);
    if (buffer != null) {
      if (buffer.size() < maxBufferedPerEntity) {
        buffer.add(message);
      } else {
        effects.add(new Effect.Refuse<>(entity, message));
      }
      return effects;
    }
    if (active.get(entity) == null) {
      makeRoom(effects);
      active.put(entity, Boolean.TRUE);
      effects.add(new Effect.Activate<>(entity));
    }
    effects.add(new Effect.Deliver<>(entity, message));
    return effects;
  }

  /** The entity has been idle and offers to stop. */
  public List<Effect<M>> passivationWanted(EntityId entity) {
    List<Effect<M>> effects = new ArrayList<>(1);
    if (active.remove(entity) != null) {
      stopping.put(entity, new ArrayDeque<>());
      effects.add(new Effect.Passivate<>(entity));
    }
    return effects;
  }

  /** The entity's incarnation stopped (passivated or failed). */
  public List<Effect<M>> stopped(EntityId entity) {
    List<Effect<M>> effects = new ArrayList<>();
    active.remove(entity);
    ArrayDeque<M> buffer = stopping.remove(entity);
    if (buffer != null && !buffer.isEmpty()) {
      makeRoom(effects);
      active.put(entity, Boolean.TRUE);
      effects.add(new Effect.Activate<>(entity));
      for (M message : buffer) {
        effects.add(new Effect.Deliver<>(entity, message));
      }
    }
    return effects;
  }

  /**
   * Changes the most active entities (the memory budget moves it as entities grow or the heap
   * fills): past the new limit, the least recently used are passivated now.
   */
  public List<Effect<M>> limitActive(int newMaxActive) {
    Invariants.check(newMaxActive > 0, "the active limit must be positive, was %d", newMaxActive);
    maxActive = newMaxActive;
    List<Effect<M>> effects = new ArrayList<>();
    passivateLeastRecentBeyond(maxActive, effects);
    return effects;
  }

  /**
   * Whether the entity is active: it has a live incarnation that is not stopping. The shell may
   * then deliver to that incarnation without asking the core (the registry's direct route), and
   * reports the use with {@link #touched}. Does not change the recency order.
   */
  public boolean isActive(EntityId entity) {
    return active.containsKey(entity);
  }

  /**
   * The shell delivered to the active entity without the core (a message told straight to its
   * incarnation): it becomes the most recently used, as a {@link #deliver} would make it. Nothing
   * for an entity not active.
   */
  public void touched(EntityId entity) {
    active.get(entity); // an access-ordered map: the lookup moves the entity to the newest end
  }

  public int maxActive() {
    return maxActive;
  }

  public int activeCount() {
    return active.size();
  }

  int stoppingCount() {
    return stopping.size();
  }

  private void makeRoom(List<Effect<M>> effects) {
    passivateLeastRecentBeyond(maxActive - 1, effects);
  }

  /** Passivates the least recently used active entities until at most {@code keep} remain. */
  private void passivateLeastRecentBeyond(int keep, List<Effect<M>> effects) {
    Iterator<EntityId> leastRecent = active.keySet().iterator();
    while (active.size() > keep && leastRecent.hasNext()) {
      EntityId victim = leastRecent.next();
      leastRecent.remove();
      stopping.put(victim, new ArrayDeque<>());
      effects.add(new Effect.Passivate<>(victim));
    }
  }
}
