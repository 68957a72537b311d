package dev.troupe.model;

import dev.troupe.model.time.TransactionIds;

/**
 * The {@link EntityLocator} of a node that hosts every entity itself: partitions by {@link
 * EntityLocator#partitionOf(EntityId, int)} (what the store has always used) and every entity on
 * this node.
 *
 * @param partitions the partition count (the store's, {@code troupe.storage.partitions})
 * @param nodeId this node's id ({@code troupe.node.id})
 */
public record SingleNodeLocator(int partitions, int nodeId) implements EntityLocator {
  public SingleNodeLocator {
    if (partitions < 1) {
      throw new IllegalArgumentException("partitions must be positive: " + partitions);
    }
    TransactionIds.requireValidNodeId(nodeId);
  }

  @Override
  public int partitionOf(EntityId entity) {
    return EntityLocator.partitionOf(entity, partitions);
  }

  @Override
  public int nodeOf(EntityId entity) {
    return nodeId;
  }
}
