package dev.troupe.txn.wire;

import dev.troupe.model.EntityId;

/**
 * One message with what a transport needs to route it: who sent it and where it goes. The unit
 * {@link WireCodec} encodes.
 *
 * @param senderNode the sending node's id (0..63); answers go back to it
 * @param destination the entity whose node must receive it, or a named node
 */
public record Envelope(int senderNode, Destination destination, WireMessage message) {
  /** Largest node id ({@code troupe.node.id} is 0..63: a transaction id carries it in 6 bits). */
  public static final int MAX_NODE_ID = 63;

  public Envelope {
    if (senderNode < 0 || senderNode > MAX_NODE_ID) {
      throw new IllegalArgumentException("node ids are 0.." + MAX_NODE_ID + ": " + senderNode);
    }
    if (destination == null || message == null) {
      throw new IllegalArgumentException("an envelope needs a destination and a message");
    }
  }

  /** Where a message goes. */
  public sealed interface Destination {
    /** To the node that hosts this entity (the transport resolves it with its locator). */
    record ToEntity(EntityId entity) implements Destination {}

    /** To this node (a coordinator, a sequencer, a node asked about a decision). */
    record ToNode(int nodeId) implements Destination {
      public ToNode {
        if (nodeId < 0 || nodeId > MAX_NODE_ID) {
          throw new IllegalArgumentException("node ids are 0.." + MAX_NODE_ID + ": " + nodeId);
        }
      }
    }
  }
}
