package dev.troupe.txn.entity;

import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnel;
import dev.troupe.model.EntityId;
import dev.troupe.model.Invariants;
import java.nio.charset.StandardCharsets;

/**
 * The entities {@link ActivationCore}'s sweep passivated lately, in memory fixed at construction:
 * two generations of a Bloom filter (Guava's), the current one taking new entities and the
 * previous one still answering. The current generation becomes the previous one (and the previous
 * one is dropped) when it is {@code generationMillis} old or holds {@code entitiesPerGeneration}
 * entities, whichever comes first.
 *
 * <p>Why a filter and not a map: a map entry per entity (its {@link EntityId}, a time, the links)
 * takes about 150 bytes, so the ninth session's 32,768 per node were all a node could afford, and
 * under YCSB A over 2 M zipfian keys 0.334 actors were still started per operation
 * (docs/BENCHMARKS.md, "Issue 20: remembered once-used entities (ninth session)"). A filter takes
 * about 1.2 bytes per entity and generation at a 1 % false-positive rate.
 *
 * <p>What it promises: an entity remembered at {@code t} is reported remembered until its
 * generation is dropped: at least until {@code t + generationMillis} unless more than {@code
 * entitiesPerGeneration} others are remembered after it, never after {@code t + 2 *
 * generationMillis}. No false negatives before that; false positives at about 1 % when both
 * generations are full (fewer when not). A false positive costs memory, not correctness: that
 * entity becomes an ordinary actor, passivated by its own idle check, as every entity was before
 * the once-used rule. An entity cannot be forgotten one by one (a Bloom filter cannot remove);
 * its generation's end forgets it.
 *
 * <p>Pure and single-threaded (its owner's): the time is passed in, a monotonic clock's.
 */
final class RememberedEntities {
  /** The false-positive rate of a full generation: a small share of actors kept too long. */
  private static final double FALSE_POSITIVE_RATE = 0.01;

  /** Type, a separator no name may contain, id: distinct entities feed distinct bytes. */
  private static final Funnel<EntityId> ENTITY_FUNNEL = (entity, sink) -> sink
      .putString(entity.type(), StandardCharsets.UTF_8)
      .putByte((byte) 0)
      .putString(entity.id(), StandardCharsets.UTF_8);

  private final int entitiesPerGeneration;
  private final long generationMillis;
  private BloomFilter<EntityId> current;
  private BloomFilter<EntityId> previous;
  /** Entities put into {@link #current} (not distinct ones: a repeat is rare and costs little). */
  private int currentCount;
  private int previousCount;
  /** When {@link #current} started; meaningless until the first call ({@link #started}). */
  private long currentSinceMillis;
  private boolean started;

  /**
   * @param entitiesPerGeneration most entities a generation takes before the next one starts
   * @param generationMillis how long a generation takes new entities
   */
  RememberedEntities(int entitiesPerGeneration, long generationMillis) {
    Invariants.check(entitiesPerGeneration > 0 && generationMillis > 0,
        "entitiesPerGeneration and generationMillis must be positive, were %d and %d",
        entitiesPerGeneration, generationMillis);
    this.entitiesPerGeneration = entitiesPerGeneration;
    this.generationMillis = generationMillis;
    this.current = newGeneration();
    this.previous = newGeneration();
  }

  /** Remembers {@code entity} from {@code nowMillis} on. */
  void remember(EntityId entity, long nowMillis) {
    advance(nowMillis);
    if (currentCount >= entitiesPerGeneration) {
      rotate(nowMillis);
    }
    current.put(entity);
    currentCount++;
  }

  /** Whether {@code entity} is remembered at {@code nowMillis} (rarely true of one that is not). */
  boolean remembers(EntityId entity, long nowMillis) {
    advance(nowMillis);
    return current.mightContain(entity) || previous.mightContain(entity);
  }

  /** Entities put into the generations that still answer (an upper bound, for tests). */
  int rememberedCount() {
    return currentCount + previousCount;
  }

  private void advance(long nowMillis) {
    if (!started) {
      started = true;
      currentSinceMillis = nowMillis;
      return;
    }
    long age = nowMillis - currentSinceMillis;
    if (age >= 2 * generationMillis) {
      // Both generations are too old: start afresh.
      rotate(nowMillis);
      rotate(nowMillis);
    } else if (age >= generationMillis) {
      rotate(nowMillis);
    }
  }

  /** The current generation becomes the previous one; the previous one is dropped. */
  private void rotate(long nowMillis) {
    currentSinceMillis = nowMillis;
    if (currentCount == 0 && previousCount == 0) {
      return; // both empty: nothing to drop, nothing to allocate
    }
    previous = current;
    previousCount = currentCount;
    current = newGeneration();
    currentCount = 0;
  }

  private BloomFilter<EntityId> newGeneration() {
    return BloomFilter.create(ENTITY_FUNNEL, entitiesPerGeneration, FALSE_POSITIVE_RATE);
  }
}
