package dev.troupe.txn.entity;

import dev.troupe.model.EntityId;
import dev.troupe.model.Invariants;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
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
 * <p><b>Once used.</b> An entity activated by a message and sent nothing since (a load's insert, a
 * write to a key never written again soon) is "once used": it is kept apart, in activation order.
 * A {@link #sweep} finds the once-used entities activated at least {@code onceUsedIdleMillis} ago
 * and asks each to offer its passivation if it is idle ({@link Effect.AskIfIdle}: the actor then
 * answers as its own idle check would, through {@link #passivationWanted}). Why: an actor with its
 * decoded state stays until the periodic idle check has seen it idle for a whole period (two
 * minutes by default), so loading 200,000 records kept 200,000 actors and 1.09 GB of heap
 * (docs/BENCHMARKS.md, "Issue 20: the growth curve towards 2 M records"), where the object cache
 * already holds what a later read or write needs. A second message (delivered here or directly,
 * {@link #touched}) makes the entity an ordinary active one, under the idle check alone. The sweep
 * only asks: an actor with work in flight (a prepared part awaiting its decision) is never told to
 * stop by it.
 *
 * <p><b>Remembered.</b> An entity the sweep passivated is remembered (at most {@code
 * maxRemembered}, the oldest forgotten first, and for at most {@code rememberedForMillis}): if a
 * message activates it again meanwhile, it is an ordinary active entity at once, not once used a
 * second time. Why: with a short once-used period, entities written again some seconds apart (YCSB
 * A's) started an actor at most of their writes (0.32 activations per operation at 500 ms against
 * 0.13 at 5 s, docs/BENCHMARKS.md, "Issue 20: once-used actors and the young generation (eighth
 * session)"); remembered, such an entity pays one extra activation, then stays as it would have
 * (0.022-0.049 at either period: "Issue 20: remembered once-used entities (ninth session)").
 * {@code rememberedForMillis} is the ordinary idle period: an entity used again later would have
 * been passivated by then anyway.
 *
 * <p>Pure: no Pekko, no threads, no clock (the shell passes the time in). The registry actor runs
 * the effects.
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

    /**
     * Ask the active entity to offer its passivation ({@link #passivationWanted}) if it is idle
     * now; a busy one answers nothing and stays (once used entities only: see {@link #sweep}).
     */
    record AskIfIdle<M>(EntityId entity) implements Effect<M> {}
  }

  private int maxActive;
  private final int maxBufferedPerEntity;
  /** How long a once-used entity stays before it is asked to passivate; 0: never asked. */
  private final long onceUsedIdleMillis;
  /** Most entities {@link #remembered}; 0: none (every activation of a new entity is once used). */
  private final int maxRemembered;
  /** How long an entity stays {@link #remembered} after its passivation. */
  private final long rememberedForMillis;
  /** Active entities in least-recently-used order. */
  private final LinkedHashMap<EntityId, Boolean> active = new LinkedHashMap<>(16, 0.75f, true);
  /**
   * The once-used entities (a subset of {@link #active}), in activation order, with the time each
   * was activated: insertion-ordered, so the oldest are first and a sweep stops at the first
   * younger one.
   */
  private final LinkedHashMap<EntityId, Long> onceUsed = new LinkedHashMap<>();
  /**
   * Entities the sweep asked and that have not been used since (a subset of {@link #active}): if
   * one offers to stop, it is remembered.
   */
  private final HashSet<EntityId> askedIfIdle = new HashSet<>();
  /**
   * Once-used entities the sweep passivated, with the time each offered to stop: insertion-ordered,
   * so the oldest are first (forgotten first, and a sweep stops forgetting at the first younger).
   */
  private final LinkedHashMap<EntityId, Long> remembered = new LinkedHashMap<>();
  /** Entities stopping, with the messages that arrived meanwhile. */
  private final Map<EntityId, ArrayDeque<M>> stopping = new HashMap<>();

  /** A core without the once-used rule (every active entity waits for its own idle check). */
  public ActivationCore(int maxActive, int maxBufferedPerEntity) {
    this(maxActive, maxBufferedPerEntity, 0, 0, 0);
  }

  /**
   * @param onceUsedIdleMillis how long after its activation a once-used entity is asked to
   *     passivate if idle ({@link #sweep}); 0: never
   * @param maxRemembered most entities the sweep passivated that are remembered, so that their
   *     next activation makes them ordinary at once; 0: none
   * @param rememberedForMillis how long such an entity is remembered after it offered to stop
   */
  public ActivationCore(int maxActive, int maxBufferedPerEntity, long onceUsedIdleMillis,
      int maxRemembered, long rememberedForMillis) {
    Invariants.check(maxActive > 0 && maxBufferedPerEntity > 0, "limits must be positive");
    Invariants.check(onceUsedIdleMillis >= 0, "onceUsedIdleMillis must be >= 0, was %d",
        onceUsedIdleMillis);
    Invariants.check(maxRemembered >= 0 && rememberedForMillis >= 0,
        "maxRemembered and rememberedForMillis must be >= 0, were %d and %d", maxRemembered,
        rememberedForMillis);
    this.maxActive = maxActive;
    this.maxBufferedPerEntity = maxBufferedPerEntity;
    this.onceUsedIdleMillis = onceUsedIdleMillis;
    this.maxRemembered = maxRemembered;
    this.rememberedForMillis = rememberedForMillis;
  }

  /** A message for an entity arrived (at {@code nowMillis}, a monotonic clock). */
  public List<Effect<M>> deliver(EntityId entity, M message, long nowMillis) {
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
      Long rememberedSince = remembered.remove(entity);
      boolean usedAgain = rememberedSince != null
          && nowMillis - rememberedSince < rememberedForMillis;
      if (onceUsedIdleMillis > 0 && !usedAgain) {
        onceUsed.put(entity, nowMillis);
      }
      effects.add(new Effect.Activate<>(entity));
    } else {
      // A second message: an ordinary active entity from now on.
      onceUsed.remove(entity);
      askedIfIdle.remove(entity);
    }
    effects.add(new Effect.Deliver<>(entity, message));
    return effects;
  }

  /**
   * The periodic look at the once-used entities: each activated at least {@code
   * onceUsedIdleMillis} before {@code nowMillis} leaves the once-used set and is asked to offer
   * its passivation if idle. Nothing when the rule is off. Also forgets the remembered entities
   * older than {@code rememberedForMillis}.
   */
  public List<Effect<M>> sweep(long nowMillis) {
    Iterator<Long> rememberedOldest = remembered.values().iterator();
    while (rememberedOldest.hasNext()
        && nowMillis - rememberedOldest.next() >= rememberedForMillis) {
      rememberedOldest.remove();
    }
    List<Effect<M>> effects = new ArrayList<>();
    Iterator<Map.Entry<EntityId, Long>> oldest = onceUsed.entrySet().iterator();
    while (oldest.hasNext()) {
      Map.Entry<EntityId, Long> next = oldest.next();
      if (nowMillis - next.getValue() < onceUsedIdleMillis) {
        break;
      }
      oldest.remove();
      Invariants.check(active.containsKey(next.getKey()),
          "once-used entity %s is not active", next.getKey());
      if (maxRemembered > 0) {
        askedIfIdle.add(next.getKey());
      }
      effects.add(new Effect.AskIfIdle<>(next.getKey()));
    }
    return effects;
  }

  /** The entity has been idle and offers to stop (at {@code nowMillis}). */
  public List<Effect<M>> passivationWanted(EntityId entity, long nowMillis) {
    List<Effect<M>> effects = new ArrayList<>(1);
    if (active.remove(entity) != null) {
      onceUsed.remove(entity);
      if (askedIfIdle.remove(entity)) {
        remember(entity, nowMillis);
      }
      stopping.put(entity, new ArrayDeque<>());
      effects.add(new Effect.Passivate<>(entity));
    }
    return effects;
  }

  /** The entity's incarnation stopped (passivated or failed). */
  public List<Effect<M>> stopped(EntityId entity) {
    List<Effect<M>> effects = new ArrayList<>();
    active.remove(entity);
    onceUsed.remove(entity);
    askedIfIdle.remove(entity);
    ArrayDeque<M> buffer = stopping.remove(entity);
    if (buffer != null && !buffer.isEmpty()) {
      makeRoom(effects);
      active.put(entity, Boolean.TRUE);
      remembered.remove(entity); // used again: not once used, nothing to remember
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
    onceUsed.remove(entity);
    askedIfIdle.remove(entity);
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

  /** How many active entities are once used (for tests). */
  int onceUsedCount() {
    return onceUsed.size();
  }

  /** How many passivated entities are remembered (for tests). */
  int rememberedCount() {
    return remembered.size();
  }

  private void remember(EntityId entity, long nowMillis) {
    remembered.remove(entity); // re-inserted at the newest end: the map stays oldest first
    remembered.put(entity, nowMillis);
    Iterator<EntityId> oldest = remembered.keySet().iterator();
    while (remembered.size() > maxRemembered) {
      oldest.next();
      oldest.remove();
    }
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
      onceUsed.remove(victim);
      askedIfIdle.remove(victim);
      stopping.put(victim, new ArrayDeque<>());
      effects.add(new Effect.Passivate<>(victim));
    }
  }
}
