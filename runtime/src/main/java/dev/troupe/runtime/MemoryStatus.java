package dev.troupe.runtime;

/**
 * The memory budget and what it holds now (see {@code docs/ARCHITECTURE.md}, "Memory"), for
 * {@code /metrics}. All sizes in bytes.
 *
 * @param budgetBytes what actors, caches and in-flight work may hold together
 * @param actorBytes the active actors' estimated weight
 * @param actorLimit the most active actors the budget allows now
 * @param cacheBytes the object cache's estimated weight
 * @param cacheMaximumBytes the object cache's maximum weight now
 * @param renderedBytes the rendered-state memo's weight
 * @param occupancyAfterCollectionBytes the old generation's occupancy right after its last
 *     collection; negative before the first
 * @param oldGenerationBytes the old generation's maximum size (the marks are shares of it)
 * @param refusing whether new work is refused
 * @param refusals how many requests were refused for memory since start
 * @param scalePermille the share of the budget in use, in thousandths (pressure lowers it)
 */
public record MemoryStatus(
    long budgetBytes,
    long actorBytes,
    int actorLimit,
    long cacheBytes,
    long cacheMaximumBytes,
    long renderedBytes,
    long occupancyAfterCollectionBytes,
    long oldGenerationBytes,
    boolean refusing,
    long refusals,
    int scalePermille) {

  /** The estimated bytes held within the budget (in-flight work is not estimated). */
  public long estimatedBytes() {
    return actorBytes + cacheBytes + renderedBytes;
  }
}
