package dev.troupe.model.time;

import dev.troupe.model.Invariants;

/**
 * What a transaction id says beyond its order: the node that issued it.
 *
 * <p>A transaction id is a {@link HybridLogicalClock} timestamp (48 bits of physical milliseconds,
 * 16 logical bits) whose low {@value #NODE_BITS} bits are the id of the node whose clock issued it:
 * a node's clock ticks in steps of {@value #NODE_COUNT}, and every timestamp it issues is congruent
 * to its node id modulo {@value #NODE_COUNT}. So, with no coordination between nodes:
 *
 * <ul>
 *   <li>ids are unique across nodes (two nodes' timestamps differ in their low bits) and across a
 *       node's restarts (its clock restarts above its durable clock ceiling);
 *   <li>ids are still ordered by time and still comparable with commit timestamps (the same clock
 *       issues both; nothing about the high bits changed);
 *   <li>the coordinator's node of a transaction is {@link #nodeOf} its id (in-doubt resolution asks
 *       that node), and the same holds for every other timestamp a node issues (commit timestamps,
 *       planned transaction positions).
 * </ul>
 *
 * <p><b>Ids issued before node ids existed</b> (ticks in steps of one) have arbitrary low bits and
 * stay valid: they are unique and ordered as before, recovery advances the clock past every one it
 * finds ({@link Clock#advancePast} then {@link Clock#tick} is greater whatever their low bits),
 * and a new id can never equal an old one because it is greater. Only their {@link #nodeOf} is
 * meaningless; they exist only in a store written by a single node, which was the coordinator of
 * all of them and resolves their in-doubt parts itself at recovery, before it serves anything.
 */
public final class TransactionIds {
  /** Low bits of a timestamp that carry the issuing node's id. */
  public static final int NODE_BITS = 6;

  /** How many node ids there are (and the step of a node's clock). */
  public static final int NODE_COUNT = 1 << NODE_BITS;

  /** The greatest node id. */
  public static final int MAX_NODE_ID = NODE_COUNT - 1;

  private static final long NODE_MASK = NODE_COUNT - 1;

  private TransactionIds() {}

  /** The node whose clock issued {@code transactionId} (or any other timestamp it issued). */
  public static int nodeOf(long transactionId) {
    return (int) (transactionId & NODE_MASK);
  }

  /** Whether {@code nodeId} is a valid node id, 0..{@value #MAX_NODE_ID}. */
  public static boolean isValidNodeId(int nodeId) {
    return nodeId >= 0 && nodeId <= MAX_NODE_ID;
  }

  /** Refuses a node id outside 0..{@value #MAX_NODE_ID}. */
  public static int requireValidNodeId(int nodeId) {
    if (!isValidNodeId(nodeId)) {
      throw new IllegalArgumentException("node id must be in 0.." + MAX_NODE_ID + ": " + nodeId);
    }
    return nodeId;
  }

  /**
   * The smallest timestamp at or above {@code timestamp} that {@code nodeId} may issue (that ends
   * in its node id). Pure.
   */
  public static long atOrAbove(long timestamp, int nodeId) {
    Invariants.check(isValidNodeId(nodeId), "node id in range");
    long aligned = ((timestamp - nodeId + NODE_MASK) & ~NODE_MASK) + nodeId;
    Invariants.check(aligned >= timestamp && nodeOf(aligned) == nodeId,
        "aligned timestamp carries the node id");
    return aligned;
  }
}
