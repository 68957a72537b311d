package dev.troupe.txn.port;

import dev.troupe.txn.wire.Envelope;

/**
 * The port through which cores talk to cores on other nodes: hand it an {@link Envelope} and it
 * delivers the message to the node that hosts the destination entity (resolved with the {@link
 * dev.troupe.model.EntityLocator}) or to the named node, where the receiving shell decodes it and
 * feeds the core it is for.
 *
 * <p><b>Contract.</b> {@link #send} never blocks and never fails the caller: a message that cannot
 * be delivered is dropped. Between nodes a message may be lost, delayed, duplicated or reordered,
 * but never altered without detection ({@link dev.troupe.txn.wire.WireCodec}'s checksum; a damaged
 * frame is dropped). The cores tolerate all of that: a coordinator resends its decision until it is
 * acknowledged, participants recognize duplicates, and a participant in doubt asks again (docs/
 * ARCHITECTURE.md, "Two-phase commit over a network"). Inside one node a transport may deliver
 * in-memory without encoding, with the local mailboxes' guarantees (never lost, ordered per
 * sender and receiver). Implemented by the simulator's network between nodes ({@code
 * sim.SimulatedCluster}) and, once a data centre has several nodes, by the Pekko cluster
 * (issue 18); replication between data centres is a stream, not this port.
 */
public interface Transport {
  /** Sends one message; returns at once. */
  void send(Envelope envelope);

  /** The id of the node this transport sends from (an envelope's {@code senderNode}). */
  int localNode();
}
