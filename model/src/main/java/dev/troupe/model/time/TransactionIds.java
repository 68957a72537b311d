package dev.troupe.model.time;

/**
 * What a transaction id says beyond its age: ids are hybrid-logical-clock timestamps whose low 6
 * bits are the id of the node that issued them, so ids are unique across nodes and restarts and
 * anyone holding one knows its coordinator's node.
 */
public final class TransactionIds {
  private TransactionIds() {}

  /** The node (0..63) that issued {@code transactionId}: its coordinator's node. */
  public static int nodeOf(long transactionId) {
    return (int) (transactionId & 63);
  }
}
