package dev.troupe.runtime.cluster;

import dev.troupe.model.EntityLocator;
import dev.troupe.model.codec.CorruptFrameException;
import dev.troupe.txn.port.Transport;
import dev.troupe.txn.wire.Envelope;
import dev.troupe.txn.wire.WireCodec;
import dev.troupe.txn.wire.WireMessage;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BiConsumer;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.sharding.typed.ShardingEnvelope;
import org.apache.pekko.cluster.typed.Cluster;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link Transport} between the nodes of a cluster (docs/ARCHITECTURE.md, "Pekko Cluster and
 * sharding"). Every envelope is encoded with {@link WireCodec} into a {@link WireFrame}:
 *
 * <ul>
 *   <li>a {@code ToEntity} envelope goes to the entity's partition through the sharding region,
 *       which delivers it to the partition's host on whichever member hosts it now (buffering it
 *       while the partition moves);
 *   <li>a {@code ToNode} envelope goes to the target node's inbox actor ({@value #INBOX_NAME}
 *       under {@code /system}), found at the address of the member whose role is {@code
 *       troupe-node-<id>}; one for a node that is not an up member is dropped, except a {@code
 *       DecisionQuery}, which this node's own inbox answers instead (see {@link #sendToNode}).
 * </ul>
 *
 * On arrival ({@link #deliverArrived}) the frame is decoded and handed to the node's inbox. Every
 * hop is a tell: {@link #send} never blocks and never fails its caller; what cannot be sent or
 * decoded is dropped and counted (the cores resend or ask again, the port's contract). Unlike
 * the in-process transport, nothing here is ordered or reliable across a move of a partition or
 * a lost connection.
 *
 * <p>Thread-safe.
 */
public final class ClusterTransport implements Transport {
  private static final Logger log = LoggerFactory.getLogger(ClusterTransport.class);

  /** The name of every node's inbox actor (under {@code /system}). */
  public static final String INBOX_NAME = "troupe-node-inbox";

  private final int localNode;
  private final EntityLocator locator;
  private final BiConsumer<Envelope, Transport> inbox;
  private final ActorSystem<?> system;
  private volatile ActorRef<ShardingEnvelope<PartitionHost.Command>> region;
  private volatile ActorRef<WireFrame> localInbox;
  /** Other members' inbox actors by incarnation ({@link #inboxAt}). */
  private final java.util.concurrent.ConcurrentHashMap<org.apache.pekko.cluster.UniqueAddress,
      org.apache.pekko.actor.ActorRef> inboxes = new java.util.concurrent.ConcurrentHashMap<>();

  private final LongAdder sentToPartitions = new LongAdder();
  private final LongAdder sentToNodes = new LongAdder();
  private final LongAdder delivered = new LongAdder();
  private final LongAdder droppedNoMember = new LongAdder();
  private final LongAdder droppedDamaged = new LongAdder();
  private final LongAdder droppedUndeliverable = new LongAdder();
  private final LongAdder droppedMoving = new LongAdder();
  private final LongAdder questionsAnsweredHere = new LongAdder();
  private final LongAdder refusedHandingOff = new LongAdder();

  /**
   * @param inbox what a decoded envelope is handed to (the node's {@code NodeInbox}), with this
   *     transport for its answers
   */
  ClusterTransport(int localNode, EntityLocator locator, ActorSystem<?> system,
      BiConsumer<Envelope, Transport> inbox) {
    this.localNode = localNode;
    this.locator = locator;
    this.system = system;
    this.inbox = inbox;
  }

  void useRegion(ActorRef<ShardingEnvelope<PartitionHost.Command>> region) {
    this.region = region;
  }

  void useLocalInbox(ActorRef<WireFrame> localInbox) {
    this.localInbox = localInbox;
  }

  @Override
  public int localNode() {
    return localNode;
  }

  @Override
  public void send(Envelope envelope) {
    try {
      WireFrame frame = new WireFrame(WireCodec.encode(envelope));
      switch (envelope.destination()) {
        case Envelope.Destination.ToEntity to -> {
          int partition = locator.partitionOf(to.entity());
          region.tell(new ShardingEnvelope<>(Integer.toString(partition), frame));
          sentToPartitions.increment();
        }
        case Envelope.Destination.ToNode to -> sendToNode(to.nodeId(), frame, envelope);
      }
    } catch (RuntimeException unsendable) {
      // The port never fails its caller: the cores ask again or resend.
      droppedUndeliverable.increment();
      log.warn("dropped an unsendable {}", envelope.message().getClass().getSimpleName(),
          unsendable);
    }
  }

  private void sendToNode(int nodeId, WireFrame frame, Envelope envelope) {
    if (nodeId == localNode) {
      localInbox.tell(frame);
      sentToNodes.increment();
      return;
    }
    org.apache.pekko.cluster.UniqueAddress member = upMemberOf(nodeId);
    if (member == null && envelope.message() instanceof WireMessage.DecisionQuery) {
      // A participant in doubt asks a node that is no member (dead, or left): its own node answers
      // instead, from the shared store, once that node's coordinators are ended (NodeInbox,
      // DecisionQueryCore.AskedForAnotherNode). The simplest correct path: the asker's node reads
      // the same shared store every node would, so no survivor needs to be chosen or to
      // broadcast; until the end is recorded it answers undecided and the participant asks again.
      localInbox.tell(frame);
      questionsAnsweredHere.increment();
      return;
    }
    if (member == null) {
      droppedNoMember.increment();
      log.warn("dropped a {} for node {}: no up member has that node id",
          envelope.message().getClass().getSimpleName(), nodeId);
      return;
    }
    inboxAt(member).tell(frame, org.apache.pekko.actor.ActorRef.noSender());
    sentToNodes.increment();
  }

  /**
   * The inbox actor of a member, resolved once per incarnation. Every answer to another
   * node goes here, so it is worth keeping: an {@code ActorSelection} per message (what this did
   * first) parsed the path as a URI, wrapped the frame in a selection envelope (one more
   * serialization layer) and walked the path on arrival, about a tenth of the CPU a hop cost in
   * the profile (docs/BENCHMARKS.md); a resolved reference is sent as a plain message, which
   * Artery's recipient cache and compression tables make cheap on both ends. Resolving a remote
   * path asks nothing of the network. Kept per incarnation (address and uid), not per address: a
   * member restarted at its old address is a new incarnation, and a full test run with references
   * kept per address saw a restarted member's remote reads go unanswered for more than 30 s (the
   * reference resolved while the old incarnation ran is the suspect; a fresh one per incarnation
   * costs one resolution per restart). An old incarnation's entry is dropped when the new one's
   * is made.
   */
  private org.apache.pekko.actor.ActorRef inboxAt(org.apache.pekko.cluster.UniqueAddress member) {
    org.apache.pekko.actor.ActorRef known = inboxes.get(member);
    if (known != null) {
      return known;
    }
    inboxes.keySet().removeIf(other -> other.address().equals(member.address()));
    return inboxes.computeIfAbsent(member, at ->
        ((org.apache.pekko.actor.ExtendedActorSystem) system.classicSystem()).provider()
            .resolveActorRef(at.address() + "/system/" + INBOX_NAME));
  }

  /** The up member (its incarnation) whose role carries {@code nodeId}, or null. */
  private org.apache.pekko.cluster.UniqueAddress upMemberOf(int nodeId) {
    String role = ClusterSettings.nodeRole(nodeId);
    for (Member member : Cluster.get(system).state().getMembers()) {
      if ((member.status() == MemberStatus.up() || member.status() == MemberStatus.weaklyUp())
          && member.hasRole(role)) {
        return member.uniqueAddress();
      }
    }
    return null;
  }

  /**
   * A frame arrived at this node (at a partition's host or the node's inbox actor): decodes it
   * and hands the envelope to the node's inbox. Damaged or undeliverable frames are dropped and
   * counted.
   */
  public void deliverArrived(WireFrame frame) {
    Envelope envelope;
    try {
      envelope = WireCodec.decode(frame.bytes());
    } catch (CorruptFrameException damaged) {
      droppedDamaged.increment();
      log.warn("dropped a damaged frame from another node: {}", damaged.getMessage());
      return;
    }
    try {
      delivered.increment();
      inbox.accept(envelope, this);
    } catch (RuntimeException undeliverable) {
      droppedUndeliverable.increment();
      log.warn("dropped an undeliverable {}", envelope.message().getClass().getSimpleName(),
          undeliverable);
    }
  }

  void droppedWhileAcquiring() {
    droppedMoving.increment();
  }

  /**
   * A frame reached a partition's host while it hands the partition off: a turn, step or read
   * request is delivered (the inbox refuses it {@code not_owner}, so its caller learns at once);
   * anything else is dropped and counted, as before.
   */
  void deliverWhileHandingOff(WireFrame frame) {
    WireMessage message;
    try {
      message = WireCodec.decode(frame.bytes()).message();
    } catch (CorruptFrameException damaged) {
      droppedDamaged.increment();
      return;
    }
    if (message instanceof WireMessage.TurnRequest || message instanceof WireMessage.StepRequest
        || message instanceof WireMessage.ReadRequest) {
      refusedHandingOff.increment();
      deliverArrived(frame);
    } else {
      droppedMoving.increment();
    }
  }

  /** Envelopes sent towards a partition's host (through sharding). */
  public long sentToPartitions() {
    return sentToPartitions.sum();
  }

  /** Envelopes sent towards a node's inbox actor. */
  public long sentToNodes() {
    return sentToNodes.sum();
  }

  /** Envelopes that arrived here, were decoded and handed to the node's inbox. */
  public long delivered() {
    return delivered.sum();
  }

  /**
   * Decision questions for a node id no up member carries, handed to this node's own inbox
   * instead (answered from the shared store once that node's coordinators are ended).
   */
  public long questionsAnsweredHere() {
    return questionsAnsweredHere.sum();
  }

  /** Envelopes for a node id no up member carries. */
  public long droppedNoMember() {
    return droppedNoMember.sum();
  }

  /** Frames that arrived damaged (refused by WireCodec). */
  public long droppedDamaged() {
    return droppedDamaged.sum();
  }

  /** Envelopes that could not be encoded, sent or delivered. */
  public long droppedUndeliverable() {
    return droppedUndeliverable.sum();
  }

  /**
   * Turn, step and read requests that reached a partition's host while it handed the partition
   * off: delivered to the inbox, which refuses them with {@code not_owner}.
   */
  public long refusedWhileHandingOff() {
    return refusedHandingOff.sum();
  }

  /**
   * Frames that reached a partition's host while it was moving and were dropped (acquiring with
   * a full stash; a coordinator's message while handing off).
   */
  public long droppedMoving() {
    return droppedMoving.sum();
  }
}
