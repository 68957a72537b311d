package dev.troupe.txn;

import dev.troupe.model.ValueLimits;

/**
 * Limits enforced by the turn core, parsed once from {@code troupe.limits}, {@code troupe.entity}
 * and {@code troupe.dependencies} in reference.conf.
 *
 * @param maxKeysPerEntity most keys one entity may hold ({@code
 *     troupe.limits.max-keys-per-entity}); a turn that would exceed it is rejected
 * @param maxSetElements most elements one set key may hold ({@code troupe.limits.max-set-elements})
 * @param maxInFlightCommitsPerEntity most commits of one entity submitted and not yet durable; later
 *     turns wait in the entity's queue (this is what pipelines a hot entity through group commit)
 * @param maxQueuedTurnsPerEntity most turns waiting behind the in-flight commits (and PSAC actions
 *     delayed in its gate); past it turns are rejected with {@code overloaded}
 * @param maxOpenTransactionsPerEntity most multi-entity transactions with a part open on one entity
 *     (each holds locks and its evaluated state until its decision); past it new prepares and
 *     steps are refused with {@code overloaded}
 * @param rememberedAborts most aborts of transactions with no part on the entity that it remembers,
 *     newest first, so that a prepare arriving after its own abort (reordered on the way) is
 *     refused instead of holding the entity for a transaction that is over
 * @param maxDependenciesPerKey most dependencies one key may lead, and most it may follow
 *     ({@code troupe.dependencies.max-per-key}): a registration past it is {@code too_large}
 * @param maxDependencyChain most dependencies of one kind in a row ({@code
 *     troupe.dependencies.max-chain-length}): a registration that would make a longer chain is
 *     {@code too_large}
 * @param values the limits on each value a turn writes, computed or not, and on the CEL
 *     evaluations that compute them ({@code troupe.limits})
 */
public record TurnLimits(
    int maxKeysPerEntity,
    int maxSetElements,
    int maxInFlightCommitsPerEntity,
    int maxQueuedTurnsPerEntity,
    int maxOpenTransactionsPerEntity,
    int rememberedAborts,
    int maxDependenciesPerKey,
    int maxDependencyChain,
    ValueLimits values) {
  public static final TurnLimits DEFAULTS =
      new TurnLimits(1024, 10_000, 256, 10_000, 10_000, 1024, 10_000, 8, ValueLimits.DEFAULTS);

  /** Limits with the default value limits. */
  public TurnLimits(int maxKeysPerEntity, int maxSetElements, int maxInFlightCommitsPerEntity,
      int maxQueuedTurnsPerEntity, int maxOpenTransactionsPerEntity, int rememberedAborts,
      int maxDependenciesPerKey, int maxDependencyChain) {
    this(maxKeysPerEntity, maxSetElements, maxInFlightCommitsPerEntity, maxQueuedTurnsPerEntity,
        maxOpenTransactionsPerEntity, rememberedAborts, maxDependenciesPerKey, maxDependencyChain,
        ValueLimits.DEFAULTS);
  }

  /** Limits with the default dependency bounds. */
  public TurnLimits(int maxKeysPerEntity, int maxSetElements, int maxInFlightCommitsPerEntity,
      int maxQueuedTurnsPerEntity, int maxOpenTransactionsPerEntity, int rememberedAborts) {
    this(maxKeysPerEntity, maxSetElements, maxInFlightCommitsPerEntity, maxQueuedTurnsPerEntity,
        maxOpenTransactionsPerEntity, rememberedAborts, DEFAULTS.maxDependenciesPerKey(),
        DEFAULTS.maxDependencyChain());
  }

  /** Limits with the default transaction bounds (for tests of the turn limits). */
  public TurnLimits(int maxKeysPerEntity, int maxSetElements, int maxInFlightCommitsPerEntity,
      int maxQueuedTurnsPerEntity) {
    this(maxKeysPerEntity, maxSetElements, maxInFlightCommitsPerEntity, maxQueuedTurnsPerEntity,
        DEFAULTS.maxOpenTransactionsPerEntity(), DEFAULTS.rememberedAborts());
  }
}
