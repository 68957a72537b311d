package dev.troupe.sim;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityLocator;
import dev.troupe.model.EntityState;
import dev.troupe.model.Invariants;
import dev.troupe.model.Operation;
import dev.troupe.model.SingleNodeLocator;
import dev.troupe.model.codec.CorruptFrameException;
import dev.troupe.model.spec.CompiledType;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.function.Function;
import dev.troupe.txn.port.Transport;
import dev.troupe.txn.wire.Envelope;
import dev.troupe.txn.wire.TypeRegistry;
import dev.troupe.txn.wire.WireCodec;
import dev.troupe.txn.wire.WireMessage;

/**
 * Several {@link SimulatedNode}s, each with its own cores, its own storage (the production engine
 * on its own simulated disk, or the simulator's journal) and its own clock (skewed at the start,
 * jumping at crashes), over a {@link SimulatedNetwork} between nodes that delays, loses and
 * duplicates messages and is cut by partitions. Each connection (a pair of nodes) is FIFO, as TCP
 * and Pekko's Artery are; messages of different connections, and resent or duplicated ones,
 * arrive in any order. Every entity lives on one node, {@link EntityLocator#nodeOf} of the
 * cluster's {@link HashPlacement}: the placement hash of its id modulo the number of nodes. A
 * client reaches a random node, which coordinates its transaction,
 * so coordinators and participants are mostly on different nodes; each node's sequencer orders
 * the planned transactions it coordinates (positions from its own clock, the participant rule
 * keeping waits acyclic: docs/design/multi-entity-transactions.md). Inside a node,
 * messages keep the local-mailbox rules; a message to another node crosses this network and joins
 * the receiver's mailboxes when it arrives. A node that is down when a message arrives never
 * receives it.
 *
 * <p><b>Which messages may be lost.</b> Requests and their answers (a turn, a planned
 * transaction request) may be lost, never duplicated (the transport's
 * sessions drop copies): the client times out. The commit protocol's messages (prepares, forwards,
 * votes, decisions, acknowledgements, in-doubt questions and answers) may be lost and duplicated:
 * the coordinator resends its decision, participants in doubt ask the coordinator's node. An
 * interactive transaction's messages travel on a session that neither loses nor duplicates them
 * (see {@code SimulatedNode.routeSession}).
 *
 * <p><b>Recovery.</b> A restarting node commits the prepared parts its own decisions commit and
 * abandons those it coordinated without a decision; a part whose coordinator is on another node
 * stays prepared, its entity refuses everything, and the node asks that coordinator's node until
 * it answers ({@code InDoubtResolution.toAsk}). A decision naming a participant elsewhere is kept,
 * so the node can still answer commit after its own restart.
 *
 * <p>With one node (the default) nothing crosses this network and the cluster draws no random
 * number of its own: a run is exactly the single-node run it always was.
 *
 * <p><b>The ledger</b> (the simulator's own bookkeeping, not the nodes'): every commit decision
 * that became durable, every abort decision (sent by a coordinator, or answered to a question:
 * presumed abort), and every prepared part abandoned (by its entity, or by a recovery that
 * presumed abort). {@link #decidedBothWays} checks them against each other and against the parts
 * the nodes' journals applied.
 *
 * <p><b>Wire formats and ports.</b> Every core message that crosses nodes is an {@link Envelope}
 * handed to the sending node's {@link Transport} ({@link #transportOf}): encoded with {@link
 * WireCodec} at the sender, carried as bytes, decoded at the receiver ({@link
 * SimulatedNode#receive}), which resolves the types it names (by name and version) in its own
 * {@link TypeRegistry} and converts it into a core input with the {@code txn.wire} converters.
 * While faults last, a frame on the lossy channel may arrive with a byte flipped ({@link
 * #FRAME_DAMAGE_PROBABILITY}): the checksum refuses it and it is dropped, never decoded into
 * another message. Nothing else crosses nodes: a client's request runs on the node it reached.
 * Placement is an {@link EntityLocator} ({@link HashPlacement}).
 *
 * <p><b>The shared-store mode</b> ({@code sharedStore}): the nodes of one data centre share ONE
 * database ({@link SharedDatabase}: each node's production store, in the acquired-partitions mode,
 * over its own view of one simulated disk), and the placement is dynamic: {@link
 * SimulatedSharding} (the stand-in for Cluster Sharding) assigns the store's partitions to the live
 * nodes, each node routes by its own view of that assignment, and every membership change ({@link
 * #rebalance}, after a detection delay) hands partitions over: releases on the nodes that lose
 * them, acquisitions (a new owner epoch, which fences the previous owner) on those that gain them,
 * the parts in doubt resolved by the acquiring node. A node cut off from the majority keeps its
 * stale view and runs on as a zombie: its writes are fenced. The membership runs the coordinator
 * fence ({@link #updateMembership}): a removed member's coordinators are ended in the store by the
 * survivors, a removed zombie downs itself, and a question about a non-member's transaction is
 * answered by the asker from the store. Docs: ARCHITECTURE.md, "Failover in the simulator".
 *
 * <p>Not thread-safe: the simulation is single-threaded.
 */
final class SimulatedCluster {
  /**
   * The cluster's placement ({@link EntityLocator}): one partition per node, an entity's partition
   * the placement hash every store uses ({@link EntityLocator#partitionOf(EntityId, int)}), so the
   * same answer on every node and in every run. One node is {@link SingleNodeLocator}.
   */
  record HashPlacement(int nodes) implements EntityLocator {
    HashPlacement {
      Invariants.check(nodes >= 1 && nodes <= 64, "a cluster has 1 to 64 nodes, not %s", nodes);
    }

    /** The placement of a cluster of {@code nodes}: {@link SingleNodeLocator} for one. */
    static EntityLocator of(int nodes) {
      return nodes == 1 ? new SingleNodeLocator(1, 0) : new HashPlacement(nodes);
    }

    @Override
    public int partitions() {
      return nodes;
    }

    @Override
    public int partitionOf(EntityId entity) {
      return EntityLocator.partitionOf(entity, nodes);
    }

    @Override
    public int nodeOf(EntityId entity) {
      return partitionOf(entity);
    }
  }

  private final Scheduler scheduler;
  private final EntityLocator locator;
  private final SimulatedNetwork network;
  private final List<SimulatedNode> nodes = new ArrayList<>();
  /** Which client request each transaction id belongs to (all nodes issue ids). */
  private final Map<Long, String> requestOfTransaction = new HashMap<>();
  private final Set<Long> commitDecided = new LinkedHashSet<>();
  private final Set<Long> interactiveTransactions = new java.util.HashSet<>();
  private final Set<Long> abortDecided = new LinkedHashSet<>();
  /** Per transaction, the entities whose prepared part was abandoned. */
  private final Map<Long, Set<EntityId>> abandonedParts = new HashMap<>();

  /**
   * @param faults of the network between nodes (unused with one node)
   * @param clockSkewMillis the most a node's clock is ahead of simulated time at the start (each
   *     node's skew is drawn in [0, this]; node 0 has none)
   */
  SimulatedCluster(Scheduler scheduler, int size, SimulatedNode.Settings settings,
      Map<String, CompiledType> types, SimulatedNetwork.Faults faults, long clockSkewMillis) {
    this(scheduler, size, settings, types, faults, clockSkewMillis, false);
  }

  /**
   * @param sharedStore whether the nodes share one database ({@link SharedDatabase}) and the
   *     partitions move between them ({@link SimulatedSharding}); else each node has its own store
   *     and the static {@link HashPlacement}
   */
  SimulatedCluster(Scheduler scheduler, int size, SimulatedNode.Settings settings,
      Map<String, CompiledType> types, SimulatedNetwork.Faults faults, long clockSkewMillis,
      boolean sharedStore) {
    Invariants.check(size >= 1 && size <= 64, "a cluster has 1 to 64 nodes, not %s", size);
    Invariants.check(!sharedStore || (size >= 2 && settings.storage() == SimulatedNode.StorageKind.STORE),
        "a shared store needs 2+ nodes on the production store");
    this.scheduler = scheduler;
    this.sharding = sharedStore ? new SimulatedSharding(size, PARTITIONS_PER_NODE * size) : null;
    this.database = sharedStore
        ? new SharedDatabase(settings.mutation() == SimulatedNode.Mutation.UNFENCED_WRITES) : null;
    for (int node = 0; sharding != null && node < size; node++) {
      views.add(sharding.viewOf(node));
    }
    this.memberIncarnation = new int[size];
    java.util.Arrays.fill(memberIncarnation, -1);
    this.memberEpoch = new long[size];
    this.removed = new boolean[size];
    this.removedInView = new boolean[size][size];
    this.locator = HashPlacement.of(size);
    this.network = new SimulatedNetwork(scheduler, faults, SimulatedNetwork.Ordering.PER_CONNECTION);
    Function<EntityId, CompiledType> typeOf = entity -> {
      CompiledType type = types.get(entity.type());
      Invariants.check(type != null, "no workload has the type of %s", entity);
      return type;
    };
    this.frameDamageProbability = size == 1 ? 0 : FRAME_DAMAGE_PROBABILITY;
    for (int node = 0; node < size; node++) {
      // Each node resolves the types messages name in its own registry (by name and version);
      // the workloads compiled them once for the run, so every node knows the same ones.
      Map<String, CompiledType> known = Map.copyOf(types);
      TypeRegistry registry = (name, version) -> version == SimulatedNode.TYPE_VERSION
          ? java.util.Optional.ofNullable(known.get(name)) : java.util.Optional.empty();
      transports.add(new NodeTransport(node));
      nodes.add(new SimulatedNode(scheduler, settings, typeOf, registry, node, this,
          requestOfTransaction));
      if (node > 0 && clockSkewMillis > 0) {
        nodes.get(node).jumpClock(scheduler.random().nextLong(clockSkewMillis + 1));
      }
    }
    if (sharding != null) {
      rebalance(); // every node live: each acquires its home partitions before the set-up
    }
  }

  // ------------------------------------------------------------------ the shared-store mode

  /** Partitions of the shared store per node (each node is the home of this many). */
  static final int PARTITIONS_PER_NODE = 2;
  /** How long the membership takes to notice a node crashed or was cut off (seeded in this range). */
  static final int MIN_DETECTION_MILLIS = 20;
  static final int MAX_DETECTION_MILLIS = 60;
  /** How long a node that restarted or reconnected takes to be live again. */
  static final int MAX_JOIN_MILLIS = 15;

  private final SimulatedSharding sharding;
  private final SharedDatabase database;
  private long rebalances;

  /** The placement of partitions (shared-store mode), or null. */
  SimulatedSharding sharding() {
    return sharding;
  }

  /** The data centre's database (shared-store mode), or null. */
  SharedDatabase sharedDatabase() {
    return database;
  }

  /**
   * Whether the membership counts node {@code node} live: up, and on the majority side of any cut
   * between nodes (keep-majority: the side with more than half of the nodes, or exactly half with
   * node 0 in it).
   */
  private boolean live(int node) {
    if (!nodes.get(node).isUp() || removedIncarnationRuns(node)) {
      return false;
    }
    int side = 0;
    boolean withFirst = false;
    for (int other = 0; other < nodes.size(); other++) {
      if (other == node || !network.separated(nameOf(node), nameOf(other))) {
        side++;
        withFirst |= other == 0;
      }
    }
    return 2 * side > nodes.size() || (2 * side == nodes.size() && withFirst);
  }

  /**
   * The sharding's reaction to a change of membership: the assignment recomputed for the live
   * nodes and handed to their views; every live node first releases what its view no longer gives
   * it, then acquires what it does (a graceful hand-off between two live nodes; from a node that
   * is down or cut off, the new owner's acquisition fences it).
   */
  void rebalance() {
    rebalances++;
    boolean[] liveNow = new boolean[nodes.size()];
    for (int node = 0; node < nodes.size(); node++) {
      liveNow[node] = live(node);
    }
    updateMembership(liveNow);
    if (!sharding.rebalance(node -> liveNow[node])) {
      // Nothing moved; a node that restarted may still have to acquire what its view gives it.
      scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(), "rebalance: no move");
    } else {
      StringBuilder hosts = new StringBuilder();
      for (int partition = 0; partition < sharding.partitions(); partition++) {
        hosts.append(partition == 0 ? "" : " ").append(partition).append("->")
            .append(sharding.hostOf(partition));
      }
      scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(), "rebalance: " + hosts);
    }
    for (int node = 0; node < nodes.size(); node++) {
      if (liveNow[node]) {
        nodes.get(node).releaseUnassigned();
      }
    }
    for (int node = 0; node < nodes.size(); node++) {
      if (liveNow[node]) {
        nodes.get(node).acquireAssigned();
      }
    }
  }

  /** A rebalance after the membership notices a crash or a cut (a seeded detection delay). */
  void scheduleDetection() {
    long delay = MIN_DETECTION_MILLIS
        + scheduler.random().nextInt(MAX_DETECTION_MILLIS - MIN_DETECTION_MILLIS + 1);
    scheduler.schedule(delay, "membership notices a change", this::rebalance);
  }

  /** A rebalance once a node that restarted, or a cut that healed, is noticed. */
  void scheduleJoin(long afterMillis) {
    scheduler.schedule(afterMillis + 1 + scheduler.random().nextInt(MAX_JOIN_MILLIS),
        "membership notices a join", this::rebalance);
  }

  /** Node {@code node} restarted: it joins, and gets its partitions at the next rebalance. */
  void nodeRestarted(int node) {
    // A joining node learns the membership from the members it contacts.
    System.arraycopy(removed, 0, removedInView[node], 0, removed.length);
    scheduleJoin(0);
  }

  // ------------------------------------------------------------------ the membership and the fence

  /**
   * Longest a survivor's end of a removed member's coordinators comes after the removal (when it
   * does not come before the hand-offs): each survivor's {@code RemovedCoordinators} hears of the
   * removal at its own time.
   */
  static final int MAX_LATE_END_MILLIS = 10;
  /**
   * Longest a removed member that is still up (cut off on the minority side) keeps running after
   * the majority's detection before it downs itself (Pekko's split brain resolver on its side).
   */
  static final int MAX_SELF_DOWN_MILLIS = 80;

  /** Per node, the incarnation the membership knows as a member (it joined), or -1. */
  private final int[] memberIncarnation;
  /** Per node, that incarnation's coordinator epoch, learned from its member roles. */
  private final long[] memberEpoch;
  /** Per node, whether that member was removed (a detection found it not live) and not rejoined. */
  private final boolean[] removed;
  /** Per node, which nodes its own view of the membership holds removed (a zombie's is stale). */
  private final boolean[][] removedInView;
  /** Restarts a node that downed itself (the simulation's supervisor), after its downtime. */
  private java.util.function.IntConsumer restarter = ignored -> { };
  private long removals;
  private long selfDowns;

  /** Who restarts a node that downed itself (the simulation's supervisor). */
  void onSelfDown(java.util.function.IntConsumer restarter) {
    this.restarter = restarter;
  }

  /** Whether node {@code node} runs the very incarnation the membership removed (a zombie). */
  private boolean removedIncarnationRuns(int node) {
    return removed[node] && memberIncarnation[node] == nodes.get(node).incarnation()
        && nodes.get(node).isUp();
  }

  /**
   * Whether node {@code asking}'s view of the membership holds node {@code node} as a member (not
   * removed, or rejoined since). A question for a node that is no member is answered by the asker
   * itself from the shared store, as the cluster transport hands it to the asker's own inbox.
   */
  boolean memberInViewOf(int asking, int node) {
    return !removedInView[asking][node];
  }

  /**
   * The membership's side of a rebalance: a live node in a new incarnation joins (its coordinator
   * epoch learned from its roles); a member found not live is removed: every live node ends its
   * coordinators in the store ({@code Store.endCoordinator} under the epoch it joined with; the
   * first end takes the coordinator partition, the others and any late one change nothing, and
   * one after its restart never fences the new incarnation), either before the hand-offs (the
   * usual order) or each survivor on its own a little later, and a removed node still up downs
   * itself after a seeded delay. Every live node's view follows the membership.
   */
  private void updateMembership(boolean[] liveNow) {
    for (int node = 0; node < nodes.size(); node++) {
      SimulatedNode member = nodes.get(node);
      if (liveNow[node] && memberIncarnation[node] != member.incarnation()) {
        memberIncarnation[node] = member.incarnation();
        memberEpoch[node] = member.coordinatorEpoch();
        removed[node] = false;
        scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(), nameOf(node)
            + " is a member (coordinator epoch " + memberEpoch[node] + ")");
      }
    }
    for (int node = 0; node < nodes.size(); node++) {
      if (liveNow[node] || memberIncarnation[node] < 0 || removed[node]) {
        continue;
      }
      removed[node] = true;
      removals++;
      int removedNode = node;
      long epoch = memberEpoch[node];
      int incarnation = memberIncarnation[node];
      boolean endsFirst = scheduler.random().nextBoolean();
      scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(), nameOf(node)
          + " removed from the membership (coordinator epoch " + epoch + "; ends "
          + (endsFirst ? "before the hand-offs" : "late") + ")");
      for (int survivor = 0; survivor < nodes.size(); survivor++) {
        if (!liveNow[survivor]) {
          continue;
        }
        SimulatedNode ender = nodes.get(survivor);
        if (endsFirst) {
          ender.endCoordinatorOf(removedNode, epoch);
        } else {
          int enderIncarnation = ender.incarnation();
          scheduler.schedule(1 + scheduler.random().nextInt(MAX_LATE_END_MILLIS),
              nameOf(survivor) + " ends the coordinators of " + nameOf(removedNode), () -> {
                if (ender.isUp() && ender.incarnation() == enderIncarnation) {
                  ender.endCoordinatorOf(removedNode, epoch);
                }
              });
        }
      }
      SimulatedNode zombie = nodes.get(node);
      if (zombie.isUp() && zombie.incarnation() == incarnation) {
        scheduler.schedule(scheduler.random().nextInt(MAX_SELF_DOWN_MILLIS + 1),
            nameOf(node) + " downs itself", () -> {
              if (zombie.isUp() && zombie.incarnation() == incarnation) {
                selfDowns++;
                scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(), nameOf(
                    removedNode) + " downs itself (removed by the majority)");
                zombie.crash();
                restarter.accept(removedNode);
              }
            });
      }
    }
    for (int node = 0; node < nodes.size(); node++) {
      if (liveNow[node]) {
        System.arraycopy(removed, 0, removedInView[node], 0, removed.length);
      }
    }
  }

  /** Members removed over the run (a detection found them crashed or cut off). */
  long removals() {
    return removals;
  }

  /** Removed members that were still up and downed themselves. */
  long selfDowns() {
    return selfDowns;
  }

  /** Rebalances over the run (each a change of membership noticed). */
  long rebalances() {
    return rebalances;
  }

  /**
   * After the run (every node up, the network healed, the last rebalance done): the first
   * partition that no node serves, or that its assigned node does not own, or null.
   */
  String unservedPartition() {
    for (int partition = 0; partition < sharding.partitions(); partition++) {
      int host = sharding.hostOf(partition);
      if (host == SimulatedSharding.NOBODY || !nodes.get(host).ownsPartition(partition)) {
        return "partition " + partition + " is not served at the end (assigned to node " + host
            + ")";
      }
    }
    return null;
  }

  /** A node's name on the network between nodes and, with several nodes, on the clients'. */
  static String nameOf(int node) {
    return "node-" + node;
  }

  int size() {
    return nodes.size();
  }

  SimulatedNode node(int node) {
    return nodes.get(node);
  }

  List<SimulatedNode> nodes() {
    return List.copyOf(nodes);
  }

  /** The entity's node: the placement's (shared-store mode: the current assignment). */
  int nodeOf(EntityId entity) {
    return sharding == null ? locator.nodeOf(entity) : sharding.nodeOf(entity);
  }

  /**
   * Where node {@code asking} sends a message for the entity: the placement, or in the shared-store
   * mode that node's own view of it; itself if its view knows no host (the message is then
   * refused there: its store does not own the partition).
   */
  int nodeOf(EntityId entity, int asking) {
    return sharding == null ? locator.nodeOf(entity) : views.get(asking).nodeOf(entity);
  }

  /** Per node, its view of the placement (shared-store mode: {@link SimulatedSharding#viewOf}). */
  private final List<EntityLocator> views = new ArrayList<>();

  /**
   * Where entities live: the cluster's {@link EntityLocator} (shared-store mode: the current
   * assignment, {@link SimulatedSharding}).
   */
  EntityLocator locator() {
    return sharding == null ? locator : sharding;
  }

  /**
   * The node that issued {@code transactionId}, where its coordinator (or interactive session)
   * runs: the id's low 6 bits (the shared decision of issue 16, {@code TransactionIds.nodeOf}).
   */
  int nodeOfTransaction(long transactionId) {
    return nodes.size() == 1 ? 0 : dev.troupe.model.time.TransactionIds.nodeOf(transactionId);
  }

  SimulatedNetwork network() {
    return network;
  }

  /** Chance that a frame crossing the lossy network arrives with one byte flipped, while faults last. */
  static final double FRAME_DAMAGE_PROBABILITY = 0.002;

  private final List<NodeTransport> transports = new ArrayList<>();
  private double frameDamageProbability;
  private long damagedFrames;

  /** Node {@code node}'s {@link Transport}: what its cores send to other nodes goes through it. */
  Transport transportOf(int node) {
    return transports.get(node);
  }

  /** Sets the chance a frame on the lossy network arrives damaged (0 once faults stop). */
  void setFrameDamageProbability(double probability) {
    this.frameDamageProbability = probability;
  }

  /** Frames that arrived damaged and were dropped (the checksum refused them). */
  long damagedFrames() {
    return damagedFrames;
  }

  /**
   * The {@link Transport} of one node: encodes each {@link Envelope} with {@link WireCodec}, sends
   * the frame over the network between nodes to the node of its destination ({@link #locator} for
   * an entity), and the receiving node decodes it ({@link SimulatedNode#receive}). Which channel
   * carries it is the transport's choice by message, as a real transport's sessions are: an
   * interactive transaction's messages on a session that neither loses nor duplicates; a single
   * turn and its answer at most once; the commit protocol's messages may be lost and duplicated.
   */
  private final class NodeTransport implements Transport {
    private final int node;

    NodeTransport(int node) {
      this.node = node;
    }

    @Override
    public void send(Envelope envelope) {
      int to = switch (envelope.destination()) {
        case Envelope.Destination.ToEntity entity -> nodeOf(entity.entity(), node);
        case Envelope.Destination.ToNode named -> named.nodeId();
      };
      Invariants.check(to != node && to < nodes.size(),
          "node %s sent %s to node %s over the network", node, envelope, to);
      byte[] frame = WireCodec.encode(envelope);
      String what = describe(envelope.message());
      WireMessage message = envelope.message();
      boolean session = switch (message) {
        case WireMessage.StepRequest ignored -> true;
        case WireMessage.StepAnswer ignored -> true;
        case WireMessage.DecisionQuery ignored -> false;
        case WireMessage.DecisionAnswer ignored -> false;
        case WireMessage.TurnRequest ignored -> false;
        case WireMessage.TurnAnswer ignored -> false;
        // An interactive transaction's commit protocol and release travel on its session.
        default -> isInteractive(transactionIdOf(message));
      };
      if (session) {
        sendReliably(node, to, what, frame);
      } else {
        boolean duplicable = !(message instanceof WireMessage.TurnRequest
            || message instanceof WireMessage.TurnAnswer);
        sendBetweenNodes(node, to, what, duplicable, frame);
      }
    }

    @Override
    public int localNode() {
      return node;
    }
  }

  private static long transactionIdOf(WireMessage message) {
    return switch (message) {
      case WireMessage.Prepare prepare -> prepare.transactionId();
      case WireMessage.Vote vote -> vote.transactionId();
      case WireMessage.ForwardsChanged changed -> changed.transactionId();
      case WireMessage.Decision decision -> decision.transactionId();
      case WireMessage.Acknowledgement acknowledgement -> acknowledgement.transactionId();
      case WireMessage.StepRequest step -> step.transactionId();
      case WireMessage.StepAnswer answer -> answer.transactionId();
      case WireMessage.TurnRequest request -> request.transactionId();
      case WireMessage.TurnAnswer answer -> answer.transactionId();
      case WireMessage.DecisionQuery query -> query.transactionId();
      case WireMessage.DecisionAnswer answer -> answer.transactionId();
      // The simulated nodes serve reads from their own stores; no read crosses a node.
      case WireMessage.ReadRequest read -> read.readId();
      case WireMessage.ReadAnswer answer -> answer.readId();
      // Nor does a status query (operations; the simulator asks its nodes directly).
      case WireMessage.NodeStatusQuery query -> query.queryId();
      case WireMessage.NodeStatusAnswer answer -> answer.queryId();
    };
  }

  /** What the trace calls a message. */
  private static String describe(WireMessage message) {
    return message.getClass().getSimpleName() + " tx " + transactionIdOf(message);
  }

  /**
   * Sends a frame from node {@code from} to node {@code to}; each copy that arrives while {@code
   * to} is up is decoded there (a damaged one is dropped). A frame already sent survives its
   * sender's crash (it is on the wire). Only the commit protocol's messages ({@code duplicable})
   * may arrive twice.
   */
  private void sendBetweenNodes(int from, int to, String what, boolean duplicable, byte[] frame) {
    network.send(nameOf(from), nameOf(to), what, duplicable, ignored -> {
      SimulatedNode receiver = nodes.get(to);
      if (receiver.isUp()) {
        arrive(receiver, maybeDamaged(frame), what);
      }
    });
  }

  /**
   * As {@link #sendBetweenNodes}, never lost, duplicated or damaged: a frame that meets a partition
   * is delivered once it heals (a session that retransmits). Still only while {@code to} is up,
   * and only if the incarnation of {@code from} that sent it is still alive (the session dies with
   * it).
   */
  private void sendReliably(int from, int to, String what, byte[] frame) {
    int sentBy = nodes.get(from).incarnation();
    network.sendReliably(nameOf(from), nameOf(to), what, ignored -> {
      SimulatedNode receiver = nodes.get(to);
      if (receiver.isUp() && nodes.get(from).incarnation() == sentBy) {
        arrive(receiver, frame, what);
      }
    });
  }

  /** A copy of the frame with one byte flipped, by chance (the same frame otherwise). */
  private byte[] maybeDamaged(byte[] frame) {
    if (frameDamageProbability <= 0
        || scheduler.random().nextDouble() >= frameDamageProbability) {
      return frame;
    }
    byte[] damaged = frame.clone();
    damaged[scheduler.random().nextInt(damaged.length)] ^= (byte) (1 + scheduler.random().nextInt(255));
    return damaged;
  }

  /** Decodes a frame on its receiver; a damaged one is dropped, never decoded into another. */
  private void arrive(SimulatedNode receiver, byte[] frame, String what) {
    Envelope envelope;
    try {
      envelope = WireCodec.decode(frame);
    } catch (CorruptFrameException damaged) {
      damagedFrames++;
      scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(), "damaged frame dropped at "
          + nameOf(receiver.nodeId) + " (" + what + "): " + damaged.damage());
      return;
    }
    receiver.receive(envelope);
  }

  /** Per interactive transaction not yet ended, the entities its steps reached. */
  private final Map<Long, Set<EntityId>> openInteractive = new java.util.LinkedHashMap<>();

  void interactiveStepped(long transactionId, EntityId entity) {
    openInteractive.computeIfAbsent(transactionId, ignored -> new LinkedHashSet<>()).add(entity);
  }

  /**
   * Node {@code node} crashed: its interactive transactions without a durable commit decision can
   * never commit (their session and coordinator died with it; presumed abort), and every other
   * node that is up releases their parts (see {@code SimulatedNode.releaseOpenPartsOf}). One with
   * a commit decision is left to its parts, which voted yes and ask for it. The ledger counts each
   * released transaction as decided abort.
   */
  void incarnationDied(int node) {
    if (sharding != null) {
      scheduleDetection();
    }
    List<Long> dead = new ArrayList<>();
    for (Map.Entry<Long, Set<EntityId>> open : openInteractive.entrySet()) {
      if (nodeOfTransaction(open.getKey()) == node) {
        dead.add(open.getKey());
      }
    }
    dead.removeIf(commitDecided::contains);
    for (long transaction : dead) {
      List<EntityId> entities = List.copyOf(openInteractive.remove(transaction));
      decidedAbort(transaction);
      for (SimulatedNode other : nodes) {
        if (other.nodeId != node && other.isUp()) {
          other.releaseOpenPartsOf(transaction, entities);
        }
      }
    }
  }

  /** Notes that {@code transactionId} is an interactive transaction's (see the node's routing). */
  void markInteractive(long transactionId) {
    interactiveTransactions.add(transactionId);
  }

  boolean isInteractive(long transactionId) {
    return interactiveTransactions.contains(transactionId);
  }

  // ------------------------------------------------------------------ the ledger

  void decidedCommit(long transactionId) {
    commitDecided.add(transactionId);
  }

  void decidedAbort(long transactionId) {
    abortDecided.add(transactionId);
  }

  void abandoned(long transactionId, EntityId entity) {
    abandonedParts.computeIfAbsent(transactionId, ignored -> new LinkedHashSet<>()).add(entity);
  }

  /**
   * The first transaction decided both ways, or null: a commit decision and an abort decision for
   * one id; a part abandoned of a transaction decided commit; a part applied (a durable commit
   * record in any node's journal) of a transaction decided abort.
   */
  String decidedBothWays() {
    for (long transaction : commitDecided) {
      if (abortDecided.contains(transaction)) {
        return "transaction " + transaction + " (" + requestOfTransaction.get(transaction)
            + ") was decided commit and abort";
      }
      Set<EntityId> abandoned = abandonedParts.get(transaction);
      if (abandoned != null) {
        return "transaction " + transaction + " (" + requestOfTransaction.get(transaction)
            + ") was decided commit but its parts at " + abandoned + " were abandoned";
      }
    }
    for (SimulatedNode node : nodes) {
      for (Map.Entry<Long, Map<EntityId, NodeStorage.CommittedWrite>> applied
          : node.appliedParts().entrySet()) {
        if (abortDecided.contains(applied.getKey())) {
          return "transaction " + applied.getKey() + " ("
              + requestOfTransaction.get(applied.getKey()) + ") was decided abort but node "
              + node.nodeId + " applied its parts at " + applied.getValue().keySet();
        }
      }
    }
    return null;
  }

  /** Commit decisions the ledger holds (reported). */
  int commitDecisions() {
    return commitDecided.size();
  }

  // ------------------------------------------------------------------ views over every node

  /** Writes an entity's opening state on its node (set-up, before faults). */
  void preload(EntityId entity, List<Operation> operations) {
    nodes.get(nodeOf(entity)).preload(entity, operations);
  }

  /** The entity's final durable state on its node, or null if unreadable (see the node's). */
  EntityState finalState(EntityId entity) {
    return nodes.get(nodeOf(entity)).finalState(entity);
  }

  /** What every node's journal says each request wrote (see the node's), merged. */
  Map<String, Map<EntityId, NodeStorage.CommittedWrite>> committedWrites() {
    Map<String, Map<EntityId, NodeStorage.CommittedWrite>> writes = new LinkedHashMap<>();
    for (SimulatedNode node : nodes) {
      node.committedWrites().forEach((request, versions) ->
          writes.computeIfAbsent(request, ignored -> new LinkedHashMap<>()).putAll(versions));
    }
    return writes;
  }

  /** Whether the entity's type admits by key locks (the same types on every node). */
  boolean locksPerKey(EntityId entity) {
    return nodes.get(0).locksPerKey(entity); // every node knows the same types
  }

  /** Entities excluded from the final-state checks, over every node. */
  Set<EntityId> unreadableAtEnd() {
    Set<EntityId> unreadable = new LinkedHashSet<>();
    nodes.forEach(node -> unreadable.addAll(node.unreadableAtEnd()));
    return unreadable;
  }

  /**
   * After the run, with the network healed and every node up: the nodes holding prepared parts
   * nobody resolved (node to how many), empty if none. Storage that cannot tell counts none.
   */
  Map<Integer, Integer> unresolvedInDoubt() {
    Map<Integer, Integer> left = new TreeMap<>();
    if (database != null) {
      // One database: every node would count the same prepared parts; the first node reports them.
      int prepared = nodes.get(0).preparedParts();
      if (prepared > 0) {
        left.put(0, prepared);
      }
      return left;
    }
    for (SimulatedNode node : nodes) {
      int prepared = node.preparedParts();
      if (prepared > 0) {
        left.put(node.nodeId, prepared);
      }
    }
    return left;
  }
}
