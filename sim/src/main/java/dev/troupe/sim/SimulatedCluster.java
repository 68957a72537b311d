package dev.troupe.sim;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Invariants;
import dev.troupe.model.Operation;
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

/**
 * Several {@link SimulatedNode}s, each with its own cores, its own storage (the production engine
 * on its own simulated disk, or the simulator's journal) and its own clock (skewed at the start,
 * jumping at crashes), over a {@link SimulatedNetwork} between nodes that delays, loses and
 * duplicates messages and is cut by partitions. Each connection (a pair of nodes) is FIFO, as TCP
 * and Pekko's Artery are; messages of different connections, and resent or duplicated ones,
 * arrive in any order. Every entity lives on one node, {@link Locator#nodeOf}: a hash of its id
 * modulo the number of nodes. A client reaches a random node, which coordinates its transaction,
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
 * <p><b>Wire seam.</b> Messages between nodes are the closures of the node's shells, not bytes:
 * {@link #sendBetweenNodes} and {@link #sendReliably} are where each would be encoded to its
 * wire record and decoded on arrival (package {@code dev.troupe.txn.wire}).
 *
 * <p>Not thread-safe: the simulation is single-threaded.
 */
final class SimulatedCluster {
  /** Where an entity lives: the simulator's stand-in for the {@code EntityLocator} port. */
  @FunctionalInterface
  interface Locator {
    /** The node (0 to nodes - 1) hosting {@code entity}; the same answer on every node. */
    int nodeOf(EntityId entity);

    /** A hash of the entity id (type and id) modulo {@code nodes}. */
    static Locator hashing(int nodes) {
      return entity -> {
        int hash = 0;
        for (byte each : entity.toBytes()) {
          hash = 31 * hash + each;
        }
        hash ^= hash >>> 16; // the low bits of a string hash alone spread few ids poorly
        hash *= 0x45d9f3b;
        hash ^= hash >>> 16;
        return Math.floorMod(hash, nodes);
      };
    }
  }

  private final Scheduler scheduler;
  private final Locator locator;
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
      Function<EntityId, CompiledType> typeOf, SimulatedNetwork.Faults faults,
      long clockSkewMillis) {
    Invariants.check(size >= 1 && size <= 64, "a cluster has 1 to 64 nodes, not %s", size);
    this.scheduler = scheduler;
    this.locator = size == 1 ? entity -> 0 : Locator.hashing(size);
    this.network = new SimulatedNetwork(scheduler, faults, SimulatedNetwork.Ordering.PER_CONNECTION);
    for (int node = 0; node < size; node++) {
      nodes.add(new SimulatedNode(scheduler, settings, typeOf, node, this, requestOfTransaction));
      if (node > 0 && clockSkewMillis > 0) {
        nodes.get(node).jumpClock(scheduler.random().nextLong(clockSkewMillis + 1));
      }
    }
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

  int nodeOf(EntityId entity) {
    return locator.nodeOf(entity);
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

  /**
   * Sends a message from node {@code from} to node {@code to}; {@code atArrival} runs on each copy
   * that arrives while {@code to} is up. A message already sent survives its sender's crash (it is
   * on the wire). Only the commit protocol's messages ({@code duplicable}) may arrive twice.
   */
  void sendBetweenNodes(int from, int to, String what, boolean duplicable,
      Consumer<SimulatedNode> atArrival) {
    // WIRE SEAM: encode the message to its wire record here and decode it on arrival.
    network.send(nameOf(from), nameOf(to), what, duplicable, ignored -> {
      SimulatedNode receiver = nodes.get(to);
      if (receiver.isUp()) {
        atArrival.accept(receiver);
      }
    });
  }

  /**
   * As {@link #sendBetweenNodes}, never lost or duplicated: a message that meets a partition is
   * delivered once it heals (a session that retransmits). Still only while {@code to} is up, and
   * only if the incarnation of {@code from} that sent it is still alive (the session dies with it).
   */
  void sendReliably(int from, int to, String what, Consumer<SimulatedNode> atArrival) {
    // WIRE SEAM, as in sendBetweenNodes.
    // A session dies with its process: what its sender's crashed incarnation sent never arrives.
    int sentBy = nodes.get(from).incarnation();
    network.sendReliably(nameOf(from), nameOf(to), what, ignored -> {
      SimulatedNode receiver = nodes.get(to);
      if (receiver.isUp() && nodes.get(from).incarnation() == sentBy) {
        atArrival.accept(receiver);
      }
    });
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
    return nodes.get(nodeOf(entity)).locksPerKey(entity);
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
    for (SimulatedNode node : nodes) {
      int prepared = node.preparedParts();
      if (prepared > 0) {
        left.put(node.nodeId, prepared);
      }
    }
    return left;
  }
}
