package dev.troupe.model;

/**
 * Deliberate breakages of the model's merge rules, which only the deterministic simulator's tests
 * switch on, to show that its convergence checker catches a materializer that is wrong (as {@code
 * txn}'s {@code Mutations} do for the cores). The materializer ({@link EntityState#apply}) is a
 * pure function with no constructor to pass a breakage through, hence a static switch; production
 * never sets it, so it behaves exactly as if this did not exist.
 *
 * <p>Not thread-safe to change while entities are applied: a test sets it before a run and clears
 * it after ({@link #clear}).
 */
public final class ModelMutations {
  private ModelMutations() {}

  /** One breakage. */
  public enum Mutation {
    /**
     * Two register writes with equal timestamps are resolved by arrival (the later applied wins)
     * instead of by data centre id: data centres that receive them in different orders diverge.
     */
    REGISTER_MERGE_WITHOUT_TIE_BREAK,
    /**
     * Deletions leave no tombstone (neither a key's nor the entity's): a register write older than
     * a deletion, arriving after it from another data centre, reappears there while the data
     * centres that applied the write first show the key deleted.
     */
    DELETE_WITHOUT_TOMBSTONE
  }

  static volatile boolean registerMergeWithoutTieBreak;
  static volatile boolean deleteWithoutTombstone;

  /** Switches one breakage on, for every entity applied from now on. */
  public static void enable(Mutation mutation) {
    switch (mutation) {
      case REGISTER_MERGE_WITHOUT_TIE_BREAK -> registerMergeWithoutTieBreak = true;
      case DELETE_WITHOUT_TOMBSTONE -> deleteWithoutTombstone = true;
    }
  }

  /** Switches every breakage off. */
  public static void clear() {
    registerMergeWithoutTieBreak = false;
    deleteWithoutTombstone = false;
  }
}
