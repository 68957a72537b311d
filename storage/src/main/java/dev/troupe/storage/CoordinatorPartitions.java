package dev.troupe.storage;

/**
 * The <b>coordinator partitions</b>: one pseudo-partition per node id, numbered {@link #BASE} +
 * node id, far outside every storage partition number (a store has at most 65 536 partitions: its
 * keys carry a partition in two bytes). They hold no data: only their owner rows in the disk's
 * owner table ({@link KeyValueDisk#acquirePartition}), which fence the decision records (two-phase
 * commit) that node writes.
 *
 * <p>Why (issue 18, docs/ARCHITECTURE.md "On the shared store"): a decision record is keyed by its
 * transaction id and belongs to no partition, so before this fence it was written unfenced, and a
 * zombie node (cut off from the cluster, not yet exited) could still write a commit decision. So
 * only the coordinator's own node could answer a participant in doubt with presumed abort, and a
 * dead member's in-doubt parts waited for it to restart. Now a node of several acquires its own
 * coordinator partition when its store opens, fences every decision record with that epoch, and
 * another node that acquires it ({@link Store#endCoordinator}) <i>ends</i> that node's coordinators:
 * from then on none of its decisions can be written, and whether a transaction of it committed is
 * exactly whether its decision record is in the store ({@link Store#decisionRecorded}).
 */
public final class CoordinatorPartitions {
  /** The coordinator partition of node 0; node {@code n}'s is {@code BASE + n}. */
  public static final int BASE = 1_000_000;

  private CoordinatorPartitions() {}

  /** The coordinator partition of {@code nodeId}. */
  public static int of(int nodeId) {
    return BASE + nodeId;
  }
}
