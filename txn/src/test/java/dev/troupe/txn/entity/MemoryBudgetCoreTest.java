package dev.troupe.txn.entity;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.Invariants;
import dev.troupe.txn.entity.MemoryBudgetCore.Decision;
import dev.troupe.txn.entity.MemoryBudgetCore.Limits;
import dev.troupe.txn.entity.MemoryBudgetCore.Reading;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

/**
 * The memory budget's split (actors and cache within their parts, caps honoured) and its response
 * to the heap (shed, refuse, recover, ask for a collection when stuck), on examples and on many
 * random reading sequences.
 */
class MemoryBudgetCoreTest {
  private static final long MB = 1L << 20;
  /** About what a 512 MB ParallelGC heap gets: 40% of 455 MB, marks on a 341 MB old generation. */
  private static final Limits LIMITS = new Limits(182 * MB, 18 * MB, 9 * MB, 50, 2800, 0, 0,
      256 * MB, 290 * MB, 239 * MB, 2000);

  private static Reading calm(long nowMillis, long actorBytes, int actorCount, long cacheBytes) {
    return new Reading(nowMillis, actorBytes, actorCount, cacheBytes, 0, -1, true, 100 * MB);
  }

  @Test
  void withoutPressureActorsTakeAtMostTheirPartAndTheCacheTheRest() {
    MemoryBudgetCore core = new MemoryBudgetCore(LIMITS);
    long states = (182 - 18 - 9) * MB;
    // 10,000 actors of 5 KB each: 50 MB, within the actors' half.
    Decision decision = core.decide(calm(0, 10_000 * 5000L, 10_000, 40 * MB));
    assertEquals(states / 100 * 50 / 5000, decision.actorLimit());
    assertEquals(0, decision.passivations());
    assertEquals(states - 10_000 * 5000L, decision.cacheMaximumBytes());
    assertFalse(decision.refusing());
    assertFalse(decision.collectNow());
    // Twice as many: the actors are over their part; the cache keeps its own half.
    decision = core.decide(calm(1000, 20_000 * 5000L, 20_000, 40 * MB));
    assertEquals(20_000 - states / 100 * 50 / 5000, decision.passivations());
    assertEquals(states - states / 100 * 50, decision.cacheMaximumBytes());
  }

  @Test
  void theDefaultActorLimitFollowsTheHeapNotAFixedNumber() {
    Decision small = MemoryBudgetCore.initial(LIMITS);
    Limits fourTimes = new Limits(4 * 182 * MB, 4 * 18 * MB, 4 * 9 * MB, 50, 2800, 0, 0,
        4 * 256 * MB, 4 * 290 * MB, 4 * 239 * MB, 2000);
    Decision large = MemoryBudgetCore.initial(fourTimes);
    assertTrue(small.actorLimit() < 100_000, "512 MB cannot hold 100,000 actors: "
        + small.actorLimit());
    assertEquals(4.0, (double) large.actorLimit() / small.actorLimit(), 0.01);
  }

  @Test
  void absoluteSettingsStayCaps() {
    Limits capped = new Limits(182 * MB, 18 * MB, 9 * MB, 50, 2800, 500, 10 * MB,
        256 * MB, 290 * MB, 239 * MB, 2000);
    Decision decision = new MemoryBudgetCore(capped).decide(calm(0, 0, 0, 0));
    assertEquals(500, decision.actorLimit());
    assertEquals(10 * MB, decision.cacheMaximumBytes());
  }

  @Test
  void collectionsAboveTheShedMarkShrinkEverythingAndCalmOnesGrowItBack() {
    MemoryBudgetCore core = new MemoryBudgetCore(LIMITS);
    Decision before = core.decide(calm(0, 10_000 * 5000L, 10_000, 40 * MB));
    Decision shed = core.decide(new Reading(1000, 10_000 * 5000L, 10_000, 40 * MB, 1,
        270 * MB, true, 280 * MB));
    assertEquals(750, shed.scalePermille());
    assertTrue(shed.actorLimit() < before.actorLimit());
    assertTrue(shed.cacheMaximumBytes() < before.cacheMaximumBytes());
    assertTrue(shed.renderedMaximumBytes() < before.renderedMaximumBytes());
    assertFalse(shed.refusing(), "shedding first; refusing only past the high-water mark");
    // The same collection read again changes nothing.
    assertEquals(shed, core.decide(new Reading(1500, 10_000 * 5000L, 10_000, 40 * MB, 1,
        270 * MB, true, 280 * MB)));
    Decision calmer = core.decide(new Reading(2000, 10_000 * 5000L, 10_000, 40 * MB, 2,
        200 * MB, true, 210 * MB));
    assertEquals(850, calmer.scalePermille());
  }

  @Test
  void pastTheHighWaterMarkNewWorkIsRefusedUntilTheHeapIsBelowTheLowWaterMark() {
    MemoryBudgetCore core = new MemoryBudgetCore(LIMITS);
    assertTrue(core.decide(new Reading(0, 0, 0, 0, 1, 300 * MB, true, 310 * MB)).refusing());
    // Between the marks: still refusing.
    assertTrue(core.decide(new Reading(500, 0, 0, 0, 2, 260 * MB, true, 270 * MB)).refusing());
    Decision recovered = core.decide(new Reading(1000, 0, 0, 0, 3, 200 * MB, true, 205 * MB));
    assertFalse(recovered.refusing());
    assertFalse(core.refusing());
  }

  /**
   * G1's Remark pause reads the old generation with the garbage its marking found still in it:
   * past the high-water mark, the core asks for a full collection instead of refusing, and refuses
   * only when a full collection finds the live data there (issue 20: a 2 M-record load was
   * refused, every client at once, at a Remark reading of 3.5 GB; 0.43 GB had been live at a full
   * collection earlier in the load).
   */
  @Test
  void aPartialCollectionPastTheHighWaterMarkIsCheckedByAFullOneBeforeRefusing() {
    MemoryBudgetCore core = new MemoryBudgetCore(LIMITS);
    Decision remark = core.decide(new Reading(0, 0, 0, 0, 1, 300 * MB, false, 310 * MB));
    assertFalse(remark.refusing());
    assertTrue(remark.collectNow(), "a full collection tells what is live");
    assertEquals(750, remark.scalePermille(), "shedding does not wait for it");
    // Another partial reading past the mark within the period asks for nothing more.
    Decision mixed = core.decide(new Reading(1000, 0, 0, 0, 2, 295 * MB, false, 300 * MB));
    assertFalse(mixed.refusing());
    assertFalse(mixed.collectNow());
    // The full collection: little was live, nothing is refused.
    Decision full = core.decide(new Reading(1500, 0, 0, 0, 3, 60 * MB, true, 60 * MB));
    assertFalse(full.refusing());
    assertFalse(full.collectNow());
    // Past the period, a partial reading past the mark asks again.
    assertTrue(core.decide(new Reading(4000, 0, 0, 0, 4, 300 * MB, false, 310 * MB))
        .collectNow());
    // A full collection that finds the live data past the mark refuses.
    assertTrue(core.decide(new Reading(4500, 0, 0, 0, 5, 300 * MB, true, 310 * MB)).refusing());
  }

  /** A JVM that ignores the request (-XX:+DisableExplicitGC): the partial readings decide. */
  @Test
  void withoutTheFullCollectionAskedForAPartialReadingPastTheMarkRefusesAfterThePeriod() {
    MemoryBudgetCore core = new MemoryBudgetCore(LIMITS);
    assertTrue(core.decide(new Reading(0, 0, 0, 0, 1, 300 * MB, false, 310 * MB)).collectNow());
    assertFalse(core.decide(new Reading(1000, 0, 0, 0, 2, 300 * MB, false, 310 * MB))
        .refusing());
    Decision late = core.decide(new Reading(2500, 0, 0, 0, 3, 300 * MB, false, 310 * MB));
    assertTrue(late.refusing(), "no full collection within the period");
  }

  @Test
  void refusingWithoutACollectionAsksForOneOncePerPeriodAndRecoversOnTheOccupancyNow() {
    MemoryBudgetCore core = new MemoryBudgetCore(LIMITS);
    core.decide(new Reading(0, 0, 0, 0, 1, 300 * MB, true, 310 * MB));
    assertFalse(core.decide(new Reading(1000, 0, 0, 0, 1, 300 * MB, true, 300 * MB)).collectNow());
    assertTrue(core.decide(new Reading(2000, 0, 0, 0, 1, 300 * MB, true, 300 * MB)).collectNow());
    assertFalse(core.decide(new Reading(3000, 0, 0, 0, 1, 300 * MB, true, 300 * MB)).collectNow());
    assertTrue(core.decide(new Reading(4000, 0, 0, 0, 1, 300 * MB, true, 300 * MB)).collectNow());
    Decision recovered = core.decide(new Reading(4500, 0, 0, 0, 1, 300 * MB, true, 230 * MB));
    assertFalse(recovered.refusing(), "the occupancy now bounds the live data");
    assertFalse(recovered.collectNow());
  }

  @Test
  void theMarksFallAtTheSameBytesUnderEveryGenerationalCollector() {
    // ParallelGC with -Xmx512m: a 341 MB old generation of a 455 MB usable heap; the old
    // generation is what the marks are shares of.
    assertEquals(341 * MB, MemoryBudgetCore.markedSpaceBytes(341 * MB, 455 * MB));
    // G1 with -Xmx512m: its old generation may take the whole heap; the marks take two thirds.
    assertEquals(512 * MB / 3 * 2, MemoryBudgetCore.markedSpaceBytes(512 * MB, 512 * MB));
    // No old generation known (ZGC): the heap.
    assertEquals(512 * MB, MemoryBudgetCore.markedSpaceBytes(-1, 512 * MB));
    assertEquals(512 * MB, MemoryBudgetCore.markedSpaceBytes(0, 512 * MB));
  }

  @Test
  void inconsistentLimitsAreRefused() {
    assertThrows(Invariants.InvariantViolation.class, () -> new Limits(100, 60, 40, 50, 1, 0, 0,
        3, 4, 2, 1));
    assertThrows(Invariants.InvariantViolation.class, () -> new Limits(100, 10, 10, 50, 1, 0, 0,
        3, 2, 1, 1));
  }

  /**
   * Over random reading sequences: the split never exceeds its parts or caps, refusing starts only
   * at a fresh collection above the high-water mark and ends only below the low-water mark, the
   * scale stays within bounds and moves only on fresh collections, collections are asked for only
   * while refusing and at most once per period, and the same readings always decide the same.
   */
  @Property(tries = 300)
  void anyReadingSequenceKeepsTheInvariants(@ForAll long seed) {
    Random random = new Random(seed);
    long budget = (64 + random.nextInt(4096)) * MB;
    long reserve = budget / 100 * random.nextInt(30);
    long rendered = budget / 100 * random.nextInt(20);
    long old = budget * 2;
    long resume = old / 100 * (40 + random.nextInt(30));
    long shed = resume + old / 100 * random.nextInt(10);
    long refuse = shed + old / 100 * random.nextInt(10);
    Limits limits = new Limits(budget, reserve, rendered, 1 + random.nextInt(99),
        1 + random.nextInt(5000), random.nextBoolean() ? 0 : 1 + random.nextInt(100_000),
        random.nextBoolean() ? 0 : 1 + random.nextLong(budget), shed, refuse, resume,
        1 + random.nextInt(5000));
    List<Reading> readings = new ArrayList<>();
    long now = random.nextInt(1000);
    long collections = 0;
    long afterCollection = -1;
    boolean whole = true;
    for (int step = 0; step < 200; step++) {
      now += random.nextInt(2000);
      if (random.nextInt(3) == 0) {
        collections += 1 + random.nextInt(3);
        afterCollection = random.nextLong(old);
        whole = random.nextBoolean();
      }
      int actors = random.nextInt(200_000);
      long actorBytes = actors == 0 ? 0 : actors * (limits.actorOverheadBytes()
          + random.nextInt(20_000));
      long occupancy = Math.max(0, afterCollection) + random.nextLong(old / 2);
      readings.add(new Reading(now, actorBytes, actors, random.nextLong(budget), collections,
          afterCollection, whole, occupancy));
    }
    List<Decision> first = run(limits, readings);
    assertEquals(first, run(limits, readings), "deterministic");
    boolean refusing = false;
    long lastCollections = 0;
    long lastCollectMillis = Long.MIN_VALUE;
    long lastConfirmMillis = Long.MIN_VALUE;
    long confirmPendingSince = Long.MIN_VALUE;
    int scale = 1000;
    for (int i = 0; i < readings.size(); i++) {
      Reading reading = readings.get(i);
      Decision decision = first.get(i);
      boolean fresh = reading.collections() > lastCollections;
      lastCollections = reading.collections();
      long states = limits.statesBytes(decision.scalePermille());
      long actorPart = states / 100 * limits.actorBudgetPercent();
      assertTrue(decision.actorLimit() >= 1);
      assertTrue(decision.actorLimit() == 1
          || (long) decision.actorLimit() * limits.actorOverheadBytes() <= actorPart,
          "the actor limit fits the actors' part even for actors of bare overhead");
      if (limits.maximumActorsCap() > 0) {
        assertTrue(decision.actorLimit() <= limits.maximumActorsCap());
      }
      if (limits.cacheCapBytes() > 0) {
        assertTrue(decision.cacheMaximumBytes() <= limits.cacheCapBytes());
      }
      assertTrue(decision.cacheMaximumBytes() <= Math.max(1, states));
      assertTrue(decision.cacheMaximumBytes() >= Math.min(
          limits.cacheCapBytes() > 0 ? limits.cacheCapBytes() : Long.MAX_VALUE,
          Math.max(1, states - actorPart)), "the cache keeps its own part");
      assertTrue(decision.renderedMaximumBytes() <= Math.max(1, limits.renderedStatesBytes()));
      assertEquals(Math.max(0, reading.actorCount() - decision.actorLimit()),
          decision.passivations());
      assertTrue(decision.scalePermille() >= 250 && decision.scalePermille() <= 1000);
      if (!fresh) {
        assertEquals(scale, decision.scalePermille(), "the scale moves only on collections");
      } else if (reading.occupancyAfterCollectionBytes() > limits.shedAboveBytes()) {
        assertTrue(decision.scalePermille() <= scale);
      } else {
        assertTrue(decision.scalePermille() >= scale);
      }
      if (decision.refusing() && !refusing) {
        assertTrue(fresh && reading.occupancyAfterCollectionBytes() > limits.refuseAboveBytes()
                && (reading.wholeCollection() || (confirmPendingSince != Long.MIN_VALUE
                    && reading.nowMillis() - confirmPendingSince >= limits.collectAfterMillis())),
            "refusing starts only at a collection above the high-water mark: a whole one, or a"
                + " partial one when the full collection asked for did not come in time");
      }
      if (!decision.refusing() && refusing) {
        assertTrue(reading.occupancyBytes() < limits.resumeBelowBytes()
            || (fresh && reading.occupancyAfterCollectionBytes() < limits.resumeBelowBytes()),
            "refusing ends only below the low-water mark");
      }
      boolean confirming = fresh && !reading.wholeCollection() && !decision.refusing()
          && reading.occupancyAfterCollectionBytes() > limits.refuseAboveBytes();
      if (fresh && (reading.wholeCollection()
          || reading.occupancyAfterCollectionBytes() <= limits.refuseAboveBytes())) {
        confirmPendingSince = Long.MIN_VALUE;
      }
      if (decision.collectNow() && confirming) {
        // A partial collection past the mark: a full one is asked for to tell, once per period.
        assertTrue(confirmPendingSince == Long.MIN_VALUE && (lastConfirmMillis == Long.MIN_VALUE
            || reading.nowMillis() - lastConfirmMillis >= limits.collectAfterMillis()));
        lastConfirmMillis = reading.nowMillis();
        confirmPendingSince = reading.nowMillis();
      } else if (decision.collectNow()) {
        assertTrue(decision.refusing(), "a collection is asked for only while refusing, or to"
            + " check a partial collection past the high-water mark");
        assertTrue(lastCollectMillis == Long.MIN_VALUE
            || reading.nowMillis() - lastCollectMillis >= limits.collectAfterMillis());
        lastCollectMillis = reading.nowMillis();
      } else if (confirming) {
        assertTrue(confirmPendingSince != Long.MIN_VALUE || (lastConfirmMillis != Long.MIN_VALUE
            && reading.nowMillis() - lastConfirmMillis < limits.collectAfterMillis()),
            "a partial collection past the mark asks for a full one unless one is awaited or was"
                + " just asked for");
      }
      if (fresh) {
        lastCollectMillis = reading.nowMillis();
      }
      refusing = decision.refusing();
      scale = decision.scalePermille();
    }
  }

  private static List<Decision> run(Limits limits, List<Reading> readings) {
    MemoryBudgetCore core = new MemoryBudgetCore(limits);
    List<Decision> decisions = new ArrayList<>();
    for (Reading reading : readings) {
      decisions.add(core.decide(reading));
    }
    return decisions;
  }
}
