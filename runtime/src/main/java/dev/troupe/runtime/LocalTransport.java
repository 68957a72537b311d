package dev.troupe.runtime;

import dev.troupe.model.EntityLocator;
import dev.troupe.model.codec.CorruptFrameException;
import dev.troupe.txn.port.Transport;
import dev.troupe.txn.wire.Envelope;
import dev.troupe.txn.wire.WireCodec;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The runtime's {@link Transport} for one node: an envelope addressed to this node, or to an
 * entity this node hosts (by the {@link EntityLocator}), is handed to the node's {@link NodeInbox}
 * in process; one for any other node is dropped with a warning and counted ({@link
 * #droppedForOtherNodes}), because this node cannot reach another one until the cluster
 * transport (issue 18). The cores tolerate the loss the port's contract allows (a participant in
 * doubt asks again, a coordinator resends).
 *
 * <p><b>Delivery.</b> On the sender's thread, before {@link #send} returns: ordered per sender and
 * receiver and never lost, like the actors' mailboxes. The inbox only tells actors and asks the
 * node's decision directory (monitors held briefly), so sending never blocks; the sender must hold
 * no monitor the inbox may take (the entity actors, the only senders today, hold none). With
 * {@code troupe.transport.encode-local-messages} on, every envelope is encoded with {@link
 * WireCodec} and decoded again before delivery, so a test proves that the wire formats carry what
 * the in-process path carries; an envelope that does not survive it is dropped and counted.
 *
 * <p>Thread-safe.
 */
public final class LocalTransport implements Transport {
  private static final Logger log = LoggerFactory.getLogger(LocalTransport.class);

  private final int localNode;
  private final EntityLocator locator;
  private final boolean encodeLocalMessages;
  private final NodeInbox inbox;
  private final LongAdder delivered = new LongAdder();
  private final LongAdder encoded = new LongAdder();
  private final LongAdder droppedForOtherNodes = new LongAdder();
  private final LongAdder droppedUndeliverable = new LongAdder();

  LocalTransport(int localNode, EntityLocator locator, boolean encodeLocalMessages,
      NodeInbox inbox) {
    this.localNode = localNode;
    this.locator = locator;
    this.encodeLocalMessages = encodeLocalMessages;
    this.inbox = inbox;
  }

  @Override
  public int localNode() {
    return localNode;
  }

  @Override
  public void send(Envelope envelope) {
    int destinationNode = switch (envelope.destination()) {
      case Envelope.Destination.ToNode node -> node.nodeId();
      case Envelope.Destination.ToEntity entity -> locator.nodeOf(entity.entity());
    };
    if (destinationNode != localNode) {
      droppedForOtherNodes.increment();
      log.warn("dropped a {} for node {}: this node ({}) has no transport to other nodes",
          envelope.message().getClass().getSimpleName(), destinationNode, localNode);
      return;
    }
    Envelope arrived = envelope;
    try {
      if (encodeLocalMessages) {
        arrived = WireCodec.decode(WireCodec.encode(envelope));
        encoded.increment();
      }
      delivered.increment();
      inbox.receive(arrived, this);
    } catch (CorruptFrameException damaged) {
      droppedUndeliverable.increment();
      log.warn("dropped a {} its wire format did not carry",
          envelope.message().getClass().getSimpleName(), damaged);
    } catch (RuntimeException undeliverable) {
      // The port never fails its caller: the cores ask again or resend.
      droppedUndeliverable.increment();
      log.warn("dropped an undeliverable {}", envelope.message().getClass().getSimpleName(),
          undeliverable);
    }
  }

  /** Envelopes handed to this node's inbox so far. */
  public long delivered() {
    return delivered.sum();
  }

  /** Of those, how many went through their wire format (encode-local-messages). */
  public long encoded() {
    return encoded.sum();
  }

  /** Envelopes dropped because they were addressed to another node. */
  public long droppedForOtherNodes() {
    return droppedForOtherNodes.sum();
  }

  /** Envelopes dropped because they failed their codec or their delivery. */
  public long droppedUndeliverable() {
    return droppedUndeliverable.sum();
  }
}
