package dev.troupe.txn.entity;

import dev.troupe.model.Invariants;

/**
 * Keeps one node's entity actors, object cache and rendered states within one memory budget, as a
 * deterministic state machine: each {@link Reading} (estimates and the heap's real state) yields a
 * {@link Decision} for the shell to apply.
 *
 * <p><b>Split.</b> The budget is a share of the maximum heap. A fixed part of it is left to
 * in-flight work (request bodies, queued commits, open transactions), which is not estimated, and
 * a part to the rendered-state memo; the rest holds entity states, of which actors may take at
 * most {@code actorBudgetPercent} (counted by their estimated weight: their state plus a fixed
 * overhead per actor) and the object cache takes whatever the actors leave. The actor limit is a
 * count (the activation cores bound counts, least recently used first): the actors' part divided
 * by the average actor weight now.
 *
 * <p><b>Pressure.</b> Estimates can be wrong and in-flight work can grow, so the heap itself
 * decides too: the old generation's occupancy right after a collection (what survives, the live
 * data). Each collection that leaves it above the shed mark scales the budget down by a quarter
 * (to at most a quarter of itself), passivating actors and shrinking the caches; each one below
 * the resume mark scales it back up by a tenth. One above the refuse mark makes the engine refuse
 * new work until a collection (or the occupancy even before one) is below the resume mark, if it
 * collected the whole old generation; after a partial one (G1's young, mixed, Remark and Cleanup
 * pauses, which leave garbage behind) the core first asks for a full collection, at most once per
 * {@code collectAfterMillis}, and refuses only if that one finds the live data past the mark (or,
 * if none came within {@code collectAfterMillis}, at the next partial reading past it). While
 * refusing with no collection for {@code collectAfterMillis}, the core asks for one: garbage that
 * no collection cleared would otherwise keep the node refusing with nothing to do.
 *
 * <p>Pure: no threads, clocks or management beans; the shell passes readings in.
 */
public final class MemoryBudgetCore {

  /** The scale of the budget, in thousandths: 1000 is the whole budget. */
  static final int FULL_SCALE_PERMILLE = 1000;
  /** Pressure never scales the budget below a quarter of itself. */
  static final int MINIMUM_SCALE_PERMILLE = 250;

  /**
   * The budget and the marks, all in bytes.
   *
   * @param budgetBytes what actors, caches and in-flight work may hold together
   * @param inFlightReserveBytes the part of the budget left to in-flight work
   * @param renderedStatesBytes the rendered-state memo's part (at full scale)
   * @param actorBudgetPercent the most of the entity-state part actors may hold
   * @param actorOverheadBytes the memory of an idle actor beyond its state
   * @param maximumActorsCap the most actors whatever the budget; 0 for no cap
   * @param cacheCapBytes the most the object cache may hold whatever the budget; 0 for no cap
   * @param shedAboveBytes old-generation occupancy after a collection above which memory is shed
   * @param refuseAboveBytes occupancy after a collection above which new work is refused
   * @param resumeBelowBytes occupancy below which refusing stops
   * @param collectAfterMillis while refusing, how long without a collection before asking for one
   */
  public record Limits(
      long budgetBytes,
      long inFlightReserveBytes,
      long renderedStatesBytes,
      int actorBudgetPercent,
      long actorOverheadBytes,
      int maximumActorsCap,
      long cacheCapBytes,
      long shedAboveBytes,
      long refuseAboveBytes,
      long resumeBelowBytes,
      long collectAfterMillis) {
    public Limits {
      Invariants.check(budgetBytes > 0, "the memory budget must be positive, was %d", budgetBytes);
      Invariants.check(inFlightReserveBytes >= 0 && renderedStatesBytes >= 0
              && inFlightReserveBytes + renderedStatesBytes < budgetBytes,
          "reserve %d and rendered states %d must leave part of the budget %d to entity states",
          inFlightReserveBytes, renderedStatesBytes, budgetBytes);
      Invariants.check(actorBudgetPercent >= 1 && actorBudgetPercent <= 99,
          "actorBudgetPercent must be 1 to 99, was %d", actorBudgetPercent);
      Invariants.check(actorOverheadBytes > 0, "actorOverheadBytes must be positive");
      Invariants.check(maximumActorsCap >= 0 && cacheCapBytes >= 0, "caps must be >= 0");
      Invariants.check(0 < resumeBelowBytes && resumeBelowBytes <= shedAboveBytes
              && shedAboveBytes <= refuseAboveBytes,
          "marks must satisfy 0 < resume %d <= shed %d <= refuse %d", resumeBelowBytes,
          shedAboveBytes, refuseAboveBytes);
      Invariants.check(collectAfterMillis > 0, "collectAfterMillis must be positive");
    }

    /** The entity-state part at a scale: what actors and the object cache share. */
    long statesBytes(int scalePermille) {
      return scaled(budgetBytes - inFlightReserveBytes - renderedStatesBytes, scalePermille);
    }
  }

  /**
   * What the shell measured.
   *
   * @param nowMillis a monotonic clock
   * @param actorBytes the estimated weight of the active actors (states plus overheads)
   * @param actorCount the active actors
   * @param cacheBytes the object cache's estimated weight
   * @param collections how many collections of the old generation have happened so far: a reading
   *     with more than the last one carries a fresh {@code occupancyAfterCollectionBytes}
   * @param occupancyAfterCollectionBytes the old generation's occupancy right after its last
   *     collection; negative when there was none yet
   * @param wholeCollection whether that collection collected the whole old generation (a full
   *     collection; every old-generation collection of ParallelGC and SerialGC), so that its
   *     occupancy is the live data; false for G1's young and mixed collections and its Remark and
   *     Cleanup pauses, after which the old generation may still hold the garbage its marking
   *     found, which only the mixed collections that follow free
   * @param occupancyBytes the old generation's occupancy now (live data plus garbage)
   */
  public record Reading(
      long nowMillis,
      long actorBytes,
      int actorCount,
      long cacheBytes,
      long collections,
      long occupancyAfterCollectionBytes,
      boolean wholeCollection,
      long occupancyBytes) {}

  /**
   * What the shell must do.
   *
   * @param actorLimit the most active actors: the registries passivate the least recently used
   *     ones past it ({@link #passivations} of them now)
   * @param passivations how many active actors are past the limit
   * @param cacheMaximumBytes the object cache's new maximum weight (it evicts down to it)
   * @param renderedMaximumBytes the rendered-state memo's new maximum weight
   * @param refusing whether the engine refuses new work (false after true: recovered)
   * @param collectNow ask the JVM for a full collection: refusing with no fresh reading, or to
   *     find out whether a partial collection's occupancy past the high-water mark is live data
   * @param scalePermille the share of the budget in use, in thousandths (pressure lowers it)
   */
  public record Decision(
      int actorLimit,
      int passivations,
      long cacheMaximumBytes,
      long renderedMaximumBytes,
      boolean refusing,
      boolean collectNow,
      int scalePermille) {}

  private final Limits limits;
  private int scalePermille = FULL_SCALE_PERMILLE;
  private boolean refusing;
  private long lastCollections;
  /** When the last fresh reading (or request for a collection) was seen. */
  private long lastCollectionMillis = Long.MIN_VALUE;
  /** When a full collection was last asked for to check a partial one; MIN_VALUE: never. */
  private long lastConfirmationMillis = Long.MIN_VALUE;
  /**
   * When the full collection asked for to check a partial one was asked for, until a whole
   * collection is read; MIN_VALUE: none waited for.
   */
  private long confirmationPendingSinceMillis = Long.MIN_VALUE;

  public MemoryBudgetCore(Limits limits) {
    this.limits = limits;
  }

  /**
   * The space the memory marks are percentages of: where what survives collections lives, less
   * what the collector needs beside it. Under ParallelGC and SerialGC that is the old generation
   * (two thirds of the heap by default). G1's old generation may grow to the whole heap, but long-
   * lived data that fills it leaves no room for the young regions, G1's reserve and the garbage old
   * regions hold until a mixed collection reclaims them, so G1 gets the same two thirds of the heap:
   * the marks fall at the same bytes under every generational collector and the sizing arithmetic
   * of docs/ARCHITECTURE.md ("Memory") holds under each. A collector with no old generation known
   * (ZGC, Shenandoah) gives the heap, whose occupancy is then the only reading.
   *
   * @param oldGenerationMaximumBytes the old generation pool's maximum size; 0 or less when there
   *     is no such pool or it has no maximum
   * @param maxHeapBytes the heap's maximum size ({@code Runtime.maxMemory()})
   */
  public static long markedSpaceBytes(long oldGenerationMaximumBytes, long maxHeapBytes) {
    Invariants.check(maxHeapBytes > 0, "the heap's maximum must be positive, was %d",
        maxHeapBytes);
    if (oldGenerationMaximumBytes <= 0) {
      return maxHeapBytes;
    }
    if (oldGenerationMaximumBytes >= maxHeapBytes) {
      return maxHeapBytes / 3 * 2;
    }
    return oldGenerationMaximumBytes;
  }

  /** The split before anything is measured: no actors yet, the whole budget. */
  public static Decision initial(Limits limits) {
    return new MemoryBudgetCore(limits).split(0, 0, false, false);
  }

  /** Takes one reading and decides. */
  public Decision decide(Reading reading) {
    Invariants.check(reading.actorBytes() >= 0 && reading.actorCount() >= 0
        && reading.cacheBytes() >= 0 && reading.collections() >= lastCollections,
        "memory readings must be non-negative and collections must not go back: %s", reading);
    if (lastCollectionMillis == Long.MIN_VALUE) {
      lastCollectionMillis = reading.nowMillis();
    }
    boolean fresh = reading.collections() > lastCollections
        && reading.occupancyAfterCollectionBytes() >= 0;
    boolean confirm = false;
    long afterCollection = reading.occupancyAfterCollectionBytes();
    if (fresh) {
      lastCollections = reading.collections();
      lastCollectionMillis = reading.nowMillis();
      if (afterCollection > limits.shedAboveBytes()) {
        scalePermille = Math.max(MINIMUM_SCALE_PERMILLE, scalePermille * 3 / 4);
      } else if (afterCollection < limits.resumeBelowBytes()) {
        scalePermille = Math.min(FULL_SCALE_PERMILLE, scalePermille + FULL_SCALE_PERMILLE / 10);
      }
      if (afterCollection > limits.refuseAboveBytes()) {
        if (reading.wholeCollection()) {
          refusing = true;
        } else if (confirmationPendingSinceMillis != Long.MIN_VALUE
            && reading.nowMillis() - confirmationPendingSinceMillis
                >= limits.collectAfterMillis()) {
          // The full collection asked for did not come (a JVM that ignores the request): the
          // partial readings are all there is.
          refusing = true;
        } else {
          // A partial collection's occupancy bounds the live data from above only: G1's Remark
          // reads the old generation with every object its marking found dead still in it
          // (issue 20: a 2 M-record load was refused at a Remark reading of 3.5 GB; a full
          // collection earlier in the load had found 0.43 GB live). A full collection tells.
          confirm = true;
        }
      }
      if (reading.wholeCollection() || afterCollection <= limits.refuseAboveBytes()) {
        confirmationPendingSinceMillis = Long.MIN_VALUE; // answered, or no longer a question
      }
    }
    if (refusing && ((fresh && afterCollection < limits.resumeBelowBytes())
        || reading.occupancyBytes() < limits.resumeBelowBytes())) {
      // The occupancy now bounds the live data from above: below the mark, so is the live data.
      refusing = false;
    }
    boolean collectNow = false;
    if (confirm && !refusing && confirmationPendingSinceMillis == Long.MIN_VALUE
        && (lastConfirmationMillis == Long.MIN_VALUE
            || reading.nowMillis() - lastConfirmationMillis >= limits.collectAfterMillis())) {
      collectNow = true;
      lastConfirmationMillis = reading.nowMillis();
      confirmationPendingSinceMillis = reading.nowMillis();
    } else if (refusing
        && reading.nowMillis() - lastCollectionMillis >= limits.collectAfterMillis()) {
      collectNow = true;
      lastCollectionMillis = reading.nowMillis();
    }
    return split(reading.actorBytes(), reading.actorCount(), refusing, collectNow);
  }

  private Decision split(long actorBytes, int actorCount, boolean refusing, boolean collectNow) {
    long states = limits.statesBytes(scalePermille);
    long actorPart = states / 100 * limits.actorBudgetPercent();
    // An actor weighs at least its overhead; with none active, assume a state as large again.
    long averageActorBytes = actorCount == 0 ? 2 * limits.actorOverheadBytes()
        : Math.max(limits.actorOverheadBytes(), actorBytes / actorCount);
    long actorLimit = Math.max(1, actorPart / averageActorBytes);
    if (limits.maximumActorsCap() > 0) {
      actorLimit = Math.min(actorLimit, limits.maximumActorsCap());
    }
    actorLimit = Math.min(actorLimit, Integer.MAX_VALUE);
    // The cache takes what actors leave, and never less than its own part.
    long cacheMaximum = Math.max(1, states - Math.min(actorBytes, actorPart));
    if (limits.cacheCapBytes() > 0) {
      cacheMaximum = Math.min(cacheMaximum, limits.cacheCapBytes());
    }
    return new Decision((int) actorLimit, (int) Math.max(0, actorCount - actorLimit),
        cacheMaximum, Math.max(1, scaled(limits.renderedStatesBytes(), scalePermille)), refusing,
        collectNow, scalePermille);
  }

  public boolean refusing() {
    return refusing;
  }

  private static long scaled(long bytes, int scalePermille) {
    return bytes / FULL_SCALE_PERMILLE * scalePermille
        + bytes % FULL_SCALE_PERMILLE * scalePermille / FULL_SCALE_PERMILLE;
  }
}
