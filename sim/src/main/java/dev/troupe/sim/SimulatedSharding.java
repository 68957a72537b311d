package dev.troupe.sim;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityLocator;
import dev.troupe.model.Invariants;
import java.util.Arrays;
import java.util.function.IntPredicate;

/**
 * The shared-store mode's stand-in for Pekko Cluster Sharding: a deterministic placement of the
 * store's partitions on the live nodes, and each node's own, possibly stale, view of it.
 *
 * <p><b>The assignment</b> (the shard coordinator's): partition {@code p}'s home is node {@code p
 * mod n}; it is assigned to its home while that node is live, else to the next live node after it
 * (in id order, wrapping), else to nobody. "Live" is the membership's verdict at the last {@link
 * #rebalance}: up, and on the majority side of any cut between nodes (keep-majority). Each
 * assignment of a partition to a node carries a new <b>generation</b>, so a node can tell a fresh
 * assignment from one it already acted on (a zombie whose stale acquisition was fenced gets the
 * same partition back under a new generation and acquires it anew).
 *
 * <p><b>Views.</b> A rebalance hands the new assignment to every live node at once (Pekko's
 * coordinator tells the regions); a node that is not live keeps the view it had, which is how a
 * zombie (cut off, still running) keeps serving partitions that moved: its writes are fenced by
 * the new owner's epoch. Routing on a node follows that node's view ({@link #nodeOf(EntityId,
 * int)}); the checks and the set-up read the assignment itself ({@link #nodeOf(EntityId)}).
 *
 * <p>Pure bookkeeping: it never acquires or releases a partition itself; the cluster does, from the
 * views (see {@code SimulatedCluster.rebalance}). Not thread-safe: the simulation is
 * single-threaded.
 */
final class SimulatedSharding implements EntityLocator {
  /** No node: every node of a partition's candidates is down or cut off. */
  static final int NOBODY = -1;

  private final int nodes;
  private final int partitions;
  private final int[] assignment;
  private final long[] generation;
  private final int[][] views;
  private final long[][] viewGenerations;
  private long nextGeneration = 1;
  private long moves;

  SimulatedSharding(int nodes, int partitions) {
    Invariants.check(nodes >= 2 && partitions >= nodes,
        "sharding needs 2+ nodes and at least a partition per node, not %s and %s", nodes,
        partitions);
    this.nodes = nodes;
    this.partitions = partitions;
    this.assignment = new int[partitions];
    this.generation = new long[partitions];
    Arrays.fill(assignment, NOBODY);
    this.views = new int[nodes][partitions];
    this.viewGenerations = new long[nodes][partitions];
    for (int[] view : views) {
      Arrays.fill(view, NOBODY);
    }
  }

  @Override
  public int partitions() {
    return partitions;
  }

  /** The store's partition of an entity: the placement hash every store uses. */
  @Override
  public int partitionOf(EntityId entity) {
    return EntityLocator.partitionOf(entity, partitions);
  }

  /**
   * The node the coordinator assigned the entity's partition to ({@link #NOBODY} if none). Unlike
   * a static placement this answer changes with the membership (the {@link EntityLocator} contract
   * of one answer everywhere holds only between rebalances, and only on the live nodes' views).
   */
  @Override
  public int nodeOf(EntityId entity) {
    return assignment[partitionOf(entity)];
  }

  /**
   * Node {@code asking}'s view as an {@link EntityLocator}: where that node routes an entity's
   * messages ({@code asking} itself if its view knows no host: there its store refuses them).
   */
  EntityLocator viewOf(int asking) {
    SimulatedSharding sharding = this;
    return new EntityLocator() {
      @Override
      public int partitions() {
        return partitions;
      }

      @Override
      public int partitionOf(EntityId entity) {
        return sharding.partitionOf(entity);
      }

      @Override
      public int nodeOf(EntityId entity) {
        int host = views[asking][partitionOf(entity)];
        return host == NOBODY ? asking : host;
      }
    };
  }

  /** Where node {@code asking} believes the entity's partition is hosted (its view). */
  int nodeOf(EntityId entity, int asking) {
    return views[asking][partitionOf(entity)];
  }

  /** The partition's current assignment. */
  int hostOf(int partition) {
    return assignment[partition];
  }

  /** Whether node {@code node}'s view assigns {@code partition} to it. */
  boolean assignedInView(int node, int partition) {
    return views[node][partition] == node;
  }

  /** The generation of the assignment node {@code node}'s view holds for {@code partition}. */
  long viewGeneration(int node, int partition) {
    return viewGenerations[node][partition];
  }

  /** Partitions that changed node over the run (the first assignments not counted). */
  long moves() {
    return moves;
  }

  /**
   * Recomputes the assignment for the nodes {@code live} says are live and hands it to their views;
   * returns whether anything moved.
   */
  boolean rebalance(IntPredicate live) {
    boolean changed = false;
    for (int partition = 0; partition < partitions; partition++) {
      int host = NOBODY;
      for (int step = 0; step < nodes; step++) {
        int candidate = (partition + step) % nodes;
        if (live.test(candidate)) {
          host = candidate;
          break;
        }
      }
      if (host != assignment[partition]) {
        if (assignment[partition] != NOBODY && host != NOBODY) {
          moves++;
        }
        assignment[partition] = host;
        generation[partition] = nextGeneration++;
        changed = true;
      }
    }
    for (int node = 0; node < nodes; node++) {
      if (live.test(node)) {
        System.arraycopy(assignment, 0, views[node], 0, partitions);
        System.arraycopy(generation, 0, viewGenerations[node], 0, partitions);
      }
    }
    return changed;
  }
}
