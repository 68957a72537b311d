package dev.troupe.sim;

import dev.troupe.model.EntityId;
import dev.troupe.model.Invariants;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.txn.coordinator.CoordinatorCore;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A seeded simulation run: one {@link SimulatedNode}, composable {@link Workload}s whose clients
 * reach the node over a client network that loses and reorders messages and is cut off from the
 * node by transient partitions, and faults: the node crashes and restarts (losing, tearing or
 * corrupting what it had not synced) and its clock jumps, mostly backwards; with {@code
 * meanMillisBetweenDamage}, stored keys of the production engine's disk fail their checksum too
 * (detected, never served: see {@link StoreStorage}). The last part of the run is fault-free, so
 * every request issued then must be answered (liveness). After the run each workload checks the
 * node's durable state and its history; an entity whose final read answers {@code corrupt_data}
 * is excluded from the final-state checks only.
 *
 * <p>Workloads: {@code bank} ({@link BankWorkload}: transfers, credits, audits, interactive
 * transfers; durability, atomicity, money, conflict serializability from reported versions),
 * {@code list-append} ({@link ListAppendWorkload}: appends to and reads of lists; the version order
 * read off the data, so duplicates, losses, G1a, G1b and dependency cycles are caught from what
 * clients saw), {@code dependencies} ({@link DependencyWorkload}: declared dependencies kept
 * through crashes), {@code counters} ({@link CounterSetWorkload}: counter and set kinds changed
 * together, single and two-entity, checked for all-or-nothing and durability) and {@code
 * registers} ({@link RegisterWorkload}: unique values written to and read from registers, the
 * version a read saw identified by its value). List-append and registers keep several lists or
 * registers per entity, so under {@code keys} admission disjoint keys of one entity run
 * concurrently under checks that derive what was read from the data.
 *
 * <p>With {@code nodes} above 1 the node is a {@link SimulatedCluster}: entities spread over the
 * nodes, clients on random nodes, a lossy network between nodes with partitions, crashes of any
 * node, and the cluster's checks (no transaction decided both ways, nothing left in doubt after
 * healing, progress after healing).
 *
 * <p>A failure names the seed and carries the last steps of the trace; the same seed and options
 * reproduce it exactly. Single-threaded; all nondeterminism comes from the scheduler's seeded
 * random generator.
 */
public final class Simulation {
  /** The workloads a run can compose, by name. */
  public static final List<String> WORKLOADS =
      List.of("bank", "list-append", "counters", "dependencies", "registers");

  /**
   * What a run does.
   *
   * @param admission the workloads' admission policy: {@code serial}, {@code keys} or {@code psac}
   *     (with {@code maxInFlight} 4)
   * @param storage {@code store}: the production storage engine over a simulated disk; {@code
   *     journal}: the simulator's minimal journal (torn and corrupted records, shell mutations)
   * @param mailboxes order of messages between the node's cores: {@code per-receiver} (Pekko's
   *     local mailboxes) or {@code per-connection} (only per sender and receiver, as between nodes:
   *     a stress the cores must survive before they are spread over several nodes)
   * @param planned whether multi-entity transactions are planned (ordered by the sequencer, never
   *     dying) rather than dynamic (wait-die, retried)
   * @param workloads the workloads that share the run (see {@link #WORKLOADS}); each request picks
   *     one at random
   * @param accounts bank accounts (few means contention)
   * @param lists entities of the list-append and registers workloads (two lists or registers
   *     each), tallies of the counters workload, and
   *     products and carts of the dependencies workload (at least 2)
   * @param clients concurrent clients, each with one request at a time
   * @param openingBalance each account's opening balance
   * @param durationMillis simulated time during which clients issue requests
   * @param faultFreeShare the final share of the duration without faults
   * @param meanMillisBetweenCrashes mean simulated time between crashes (0: no crashes)
   * @param clientLossProbability chance a client request or answer is lost
   * @param clientTimeoutMillis how long a client waits for an answer before it calls the
   *     outcome unknown
   * @param traceLines how many of the last steps a failure's trace shows
   * @param meanMillisBetweenDamage mean simulated time between damaged keys during the faulty part
   *     (0: no damage; store storage only). Off by default, a mode of its own: damage is
   *     permanent (the simulator repairs nothing) and most of it soon fails the store, which then
   *     refuses every commit until a restart, and after restarts again, so a run with damage
   *     checks much less of everything else. The default runs keep their full power over
   *     transactions and recovery; the damage runs check detection.
   * @param internalNetwork {@code reliable}: coordinators and participants talk over the node's
   *     mailboxes; {@code lossy}: over a network that loses, duplicates and reorders their
   *     messages until the faults stop, as between nodes ({@link SimulatedNode})
   * @param nodes nodes of the simulated cluster (1: the single node, exactly as before there was
   *     a cluster; see {@link SimulatedCluster})
   * @param nodeLossProbability chance a message between nodes is lost (faulty part only)
   * @param nodeDuplicateProbability chance a commit-protocol message between nodes arrives twice
   *     (faulty part only)
   * @param sharedStore whether the nodes share one database and partitions move between them on
   *     crashes, restarts and cuts (see {@link SimulatedCluster}); 2+ nodes, store storage
   */
  public record Options(String admission, String storage, String mailboxes, boolean planned,
      List<String> workloads, int accounts,
      int lists, int clients, long openingBalance, long durationMillis, double faultFreeShare,
      long meanMillisBetweenCrashes, double clientLossProbability, long clientTimeoutMillis,
      int traceLines, long meanMillisBetweenDamage, String internalNetwork, int nodes,
      double nodeLossProbability, double nodeDuplicateProbability, boolean sharedStore) {
    public static final Options DEFAULTS = new Options("serial", "store", "per-receiver", false,
        WORKLOADS, 4, 3, 8, 100, 3_000, 0.3, 400, 0.02, 2_000, 400, 0, "reliable", 1, 0, 0,
        false);

    /** Options where every node has its own store (not {@code sharedStore}). */
    public Options(String admission, String storage, String mailboxes, boolean planned,
        List<String> workloads, int accounts, int lists, int clients, long openingBalance,
        long durationMillis, double faultFreeShare, long meanMillisBetweenCrashes,
        double clientLossProbability, long clientTimeoutMillis, int traceLines,
        long meanMillisBetweenDamage, String internalNetwork, int nodes,
        double nodeLossProbability, double nodeDuplicateProbability) {
      this(admission, storage, mailboxes, planned, workloads, accounts, lists, clients,
          openingBalance, durationMillis, faultFreeShare, meanMillisBetweenCrashes,
          clientLossProbability, clientTimeoutMillis, traceLines, meanMillisBetweenDamage,
          internalNetwork, nodes, nodeLossProbability, nodeDuplicateProbability, false);
    }

    /** Options of one node with reliable mailboxes between coordinators and participants. */
    public Options(String admission, String storage, String mailboxes, boolean planned,
        List<String> workloads, int accounts, int lists, int clients, long openingBalance,
        long durationMillis, double faultFreeShare, long meanMillisBetweenCrashes,
        double clientLossProbability, long clientTimeoutMillis, int traceLines,
        long meanMillisBetweenDamage) {
      this(admission, storage, mailboxes, planned, workloads, accounts, lists, clients,
          openingBalance, durationMillis, faultFreeShare, meanMillisBetweenCrashes,
          clientLossProbability, clientTimeoutMillis, traceLines, meanMillisBetweenDamage,
          "reliable", 1, 0, 0);
    }

    public Options {
      workloads = List.copyOf(workloads);
      if (!List.of("serial", "keys", "psac").contains(admission)) {
        throw new IllegalArgumentException("admission must be serial, keys or psac");
      }
      if (!List.of("per-receiver", "per-connection").contains(mailboxes)) {
        throw new IllegalArgumentException("mailboxes must be per-receiver or per-connection");
      }
      if (!List.of("reliable", "lossy").contains(internalNetwork)) {
        throw new IllegalArgumentException("internal network must be reliable or lossy");
      }
      if (!List.of("store", "journal").contains(storage)) {
        throw new IllegalArgumentException("storage must be store or journal");
      }
      if (workloads.isEmpty() || !WORKLOADS.containsAll(workloads)) {
        throw new IllegalArgumentException("workloads must be some of " + WORKLOADS);
      }
      if (meanMillisBetweenDamage < 0
          || (meanMillisBetweenDamage > 0 && !storage.equals("store"))) {
        throw new IllegalArgumentException("damage needs store storage and a mean >= 0");
      }
      if (nodes < 1 || nodes > 64) {
        throw new IllegalArgumentException("nodes must be 1 to 64");
      }
      if (!(nodeLossProbability >= 0 && nodeLossProbability < 1)
          || !(nodeDuplicateProbability >= 0 && nodeDuplicateProbability <= 1)) {
        throw new IllegalArgumentException("between-node loss is in [0, 1), duplication in [0, 1]");
      }
      if (sharedStore && (nodes < 2 || !storage.equals("store") || meanMillisBetweenDamage > 0)) {
        throw new IllegalArgumentException(
            "a shared store needs 2+ nodes, store storage and no damage");
      }
      if (accounts < 2 || lists < 1 || clients < 1 || durationMillis < 1 || traceLines < 1) {
        throw new IllegalArgumentException("accounts >= 2, lists >= 1, clients >= 1,"
            + " durationMillis >= 1 and traceLines >= 1 are required");
      }
    }

    public Options withAdmission(String value, boolean plannedValue) {
      return new Options(value, storage, mailboxes, plannedValue, workloads, accounts, lists, clients,
          openingBalance, durationMillis, faultFreeShare, meanMillisBetweenCrashes,
          clientLossProbability, clientTimeoutMillis, traceLines, meanMillisBetweenDamage,
          internalNetwork, nodes, nodeLossProbability, nodeDuplicateProbability, sharedStore);
    }

    public Options withMailboxes(String value) {
      return new Options(admission, storage, value, planned, workloads, accounts, lists, clients,
          openingBalance, durationMillis, faultFreeShare, meanMillisBetweenCrashes,
          clientLossProbability, clientTimeoutMillis, traceLines, meanMillisBetweenDamage,
          internalNetwork, nodes, nodeLossProbability, nodeDuplicateProbability, sharedStore);
    }

    public Options withStorage(String value) {
      return new Options(admission, value, mailboxes, planned, workloads, accounts, lists, clients,
          openingBalance, durationMillis, faultFreeShare, meanMillisBetweenCrashes,
          clientLossProbability, clientTimeoutMillis, traceLines, meanMillisBetweenDamage,
          internalNetwork, nodes, nodeLossProbability, nodeDuplicateProbability, sharedStore);
    }

    public Options withDamage(long value) {
      return new Options(admission, storage, mailboxes, planned, workloads, accounts, lists, clients,
          openingBalance, durationMillis, faultFreeShare, meanMillisBetweenCrashes,
          clientLossProbability, clientTimeoutMillis, traceLines, value, internalNetwork,
          nodes, nodeLossProbability, nodeDuplicateProbability, sharedStore);
    }

    public Options withInternalNetwork(String value) {
      return new Options(admission, storage, mailboxes, planned, workloads, accounts, lists,
          clients, openingBalance, durationMillis, faultFreeShare, meanMillisBetweenCrashes,
          clientLossProbability, clientTimeoutMillis, traceLines, meanMillisBetweenDamage, value,
          nodes, nodeLossProbability, nodeDuplicateProbability, sharedStore);
    }

    /** With a crash (and partitions) every {@code meanMillis} on average; 0: none. */
    public Options withCrashes(long meanMillis) {
      return new Options(admission, storage, mailboxes, planned, workloads, accounts, lists,
          clients, openingBalance, durationMillis, faultFreeShare, meanMillis,
          clientLossProbability, clientTimeoutMillis, traceLines, meanMillisBetweenDamage,
          internalNetwork, nodes, nodeLossProbability, nodeDuplicateProbability, sharedStore);
    }

    /**
     * With the nodes on one shared database, partitions moving between them (see {@link
     * SimulatedCluster}'s shared-store mode).
     */
    public Options withSharedStore(boolean value) {
      return new Options(admission, storage, mailboxes, planned, workloads, accounts, lists,
          clients, openingBalance, durationMillis, faultFreeShare, meanMillisBetweenCrashes,
          clientLossProbability, clientTimeoutMillis, traceLines, meanMillisBetweenDamage,
          internalNetwork, nodes, nodeLossProbability, nodeDuplicateProbability, value);
    }

    /** With {@code count} nodes and these faults between them. */
    public Options withNodes(int count, double lossProbability, double duplicateProbability) {
      return new Options(admission, storage, mailboxes, planned, workloads, accounts, lists,
          clients, openingBalance, durationMillis, faultFreeShare, meanMillisBetweenCrashes,
          clientLossProbability, clientTimeoutMillis, traceLines, meanMillisBetweenDamage,
          internalNetwork, count, lossProbability, duplicateProbability, sharedStore);
    }

    /** The admission lines of a type spec for {@link #admission}. */
    String admissionSpec() {
      return admission.equals("psac")
          ? "admission: psac\npsac: {maxInFlight: 4, maxOvertakes: 16}"
          : "admission: " + admission;
    }
  }

  /**
   * A run's verdict and what it did.
   *
   * @param answeredCorrupt requests the node answered {@code corrupt_data} (allowed: they
   *     touched damaged data; reported)
   * @param unreadableAtEnd entities whose final read answered {@code corrupt_data} (or all of them
   *     when recovery met damage and left the node down): excluded from the final-state checks
   * @param livenessExempted requests without an answer that liveness excused because the store
   *     had failed on damage, or the node was down on it, while they waited
   * @param reissuedIds transaction ids a store failed by damage issued that were issued again
   *     after a restart (a known gap, see {@code SimulatedNode.issuedByFailedStore})
   * @param cluster what happened between nodes (empty with one node)
   * @param traceFingerprint a hash of every step of the trace, in order
   * @param journalFingerprint a hash of every commit record every node's journal held (ever
   *     durable), in order: a replay of the seed has the same
   */
  public record Result(long seed, String failure, long steps, long simulatedMillis,
      int committed, int aborted, int unknown, long crashes, long resolvedInDoubt, long redone,
      int serializationEdges, int livenessChecked, NodeStorage.Counters storage, String trace,
      int answeredCorrupt, int unreadableAtEnd, int livenessExempted, long reissuedIds,
      long inDoubtQuestions, long inDoubtAnswers, String cluster, long traceFingerprint,
      long journalFingerprint) {
    public boolean passed() {
      return failure == null;
    }

    /** One line for a sweep's output. */
    public String summary() {
      return "seed " + seed + ": " + (passed() ? "ok" : "FAILED") + " (" + steps + " steps, "
          + simulatedMillis + " simulated ms, " + committed + " committed, " + aborted
          + " aborted, " + unknown + " unknown, " + crashes + " crashes, " + resolvedInDoubt
          + " in-doubt parts resolved, " + redone + " PSAC parts redone, " + serializationEdges
          + " serialization-graph edges checked, " + livenessChecked + " requests held to liveness; "
          + (inDoubtQuestions == 0 ? "" : inDoubtQuestions + " in-doubt questions, "
              + inDoubtAnswers + " answered with a decision; ")
          + storage + (storage.damagedKeys() == 0 ? "" : "; DAMAGE: " + answeredCorrupt
              + " requests answered corrupt_data, " + unreadableAtEnd
              + " entities unreadable at the end (excluded from final-state checks), "
              + livenessExempted + " unanswered requests excused from liveness, " + reissuedIds
              + " transaction ids of a failed store issued again")
          + (cluster.isEmpty() ? "" : "; " + cluster) + ")";
    }
  }

  /** Longest a crashed node stays down (it restarts 5 to this many ms after the crash). */
  private static final int MAX_DOWNTIME_MILLIS = 105;
  /** Most a node's clock is ahead of simulated time at the start (several nodes only). */
  private static final long MAX_CLOCK_SKEW_MILLIS = 50;
  /** Delays of messages between nodes (several nodes only): independent, so they reorder. */
  private static final long MIN_DELAY_BETWEEN_NODES_MILLIS = 1;
  private static final long MAX_DELAY_BETWEEN_NODES_MILLIS = 8;

  final long seed;
  final Options options;
  final Scheduler scheduler;
  final SimulatedNetwork clientNetwork;
  final SimulatedCluster cluster;
  /** When faults stop: the fault-free tail starts here. */
  final long faultsEndMillis;
  private final List<Workload> workloads = new ArrayList<>();
  /** The node each client's current request goes to (drawn per request with several nodes). */
  private final Map<String, Integer> attachedNode = new HashMap<>();

  private Simulation(long seed, Options options, SimulatedNode.Mutation mutation) {
    this.seed = seed;
    this.options = options;
    this.scheduler = new Scheduler(seed, options.traceLines());
    this.clientNetwork = new SimulatedNetwork(scheduler,
        new SimulatedNetwork.Faults(1, 5, options.clientLossProbability(), 0, true));
    this.faultsEndMillis =
        Math.round(options.durationMillis() * (1 - options.faultFreeShare()));
    Map<String, CompiledType> types = new HashMap<>();
    for (String name : options.workloads()) {
      Workload workload = switch (name) {
        case "bank" -> new BankWorkload(this);
        case "list-append" -> new ListAppendWorkload(this);
        case "counters" -> new CounterSetWorkload(this);
        case "dependencies" -> new DependencyWorkload(this);
        case "registers" -> new RegisterWorkload(this);
        default -> throw new IllegalArgumentException("unknown workload " + name);
      };
      workloads.add(workload);
      workload.types().forEach((type, compiled) -> Invariants.check(
          types.put(type, compiled) == null, "two workloads use the type %s", type));
    }
    // Decisions resent every 50 simulated ms, parts in doubt ask every 100: both well inside the
    // clients' timeout, so a lost decision delays its transaction but does not lose its answer.
    this.cluster = new SimulatedCluster(scheduler, options.nodes(), new SimulatedNode.Settings(2,
        1, new CoordinatorCore.Limits(500, 20, 2).withDecisionResendIntervalMillis(50), 0.5, 0.2,
        mutation,
        options.storage().equals("store")
            ? SimulatedNode.StorageKind.STORE : SimulatedNode.StorageKind.JOURNAL,
        options.mailboxes().equals("per-receiver")
            ? SimulatedNetwork.Ordering.PER_RECEIVER : SimulatedNetwork.Ordering.PER_CONNECTION,
        options.internalNetwork().equals("lossy"),
        new dev.troupe.txn.entity.EntityTurnCore.ParticipantLimits(100, 64)),
        types, betweenNodes(options.nodeLossProbability(), options.nodeDuplicateProbability()),
        MAX_CLOCK_SKEW_MILLIS, options.sharedStore());
  }

  /**
   * The faults of the network between nodes: delays, loss, copies. Each connection (a pair of
   * nodes) is FIFO, as TCP and Pekko's Artery are; messages of different connections, and a
   * resent or duplicated message, arrive in any order.
   */
  private static SimulatedNetwork.Faults betweenNodes(double loss, double duplication) {
    return new SimulatedNetwork.Faults(MIN_DELAY_BETWEEN_NODES_MILLIS,
        MAX_DELAY_BETWEEN_NODES_MILLIS, loss, duplication, false);
  }

  /** Runs one seed; at most {@code maxSteps} scheduler steps. */
  public static Result run(long seed, Options options, long maxSteps) {
    return new Simulation(seed, options, SimulatedNode.Mutation.NONE).run(maxSteps);
  }

  /** Runs one seed with a deliberately broken node or core (tests of the checkers). */
  static Result runMutated(long seed, Options options, long maxSteps,
      SimulatedNode.Mutation mutation) {
    return new Simulation(seed, options, mutation).run(maxSteps);
  }

  private boolean clustered() {
    return cluster.size() > 1;
  }

  private Result run(long maxSteps) {
    workloads.forEach(Workload::preload);
    for (int client = 0; client < options.clients(); client++) {
      int id = client;
      scheduler.schedule(scheduler.random().nextInt(5), "client " + id + " starts",
          () -> issue(id, 0));
    }
    if (options.meanMillisBetweenCrashes() > 0) {
      scheduleCrash();
      schedulePartition();
      if (clustered()) {
        scheduleNodePartition();
      }
      if (cluster.sharding() != null) {
        scheduleZombie();
        scheduleDatabaseCrash();
      }
    }
    if (cluster.sharding() != null) {
      // A removed member that downed itself (SimulatedCluster) is restarted by its supervisor.
      cluster.onSelfDown(downed -> scheduler.schedule(
          5 + scheduler.random().nextInt(MAX_DOWNTIME_MILLIS - 5 + 1),
          "restart " + nameForTrace(downed), () -> restartNode(downed)));
    }
    if (options.meanMillisBetweenDamage() > 0) {
      scheduleDamage();
    }
    scheduler.schedule(faultsEndMillis, "faults stop", () -> {
      clientNetwork.setFaults(SimulatedNetwork.Faults.NONE);
      // The network between nodes heals: nothing is lost or duplicated any more.
      cluster.network().setFaults(betweenNodes(0, 0));
      cluster.setFrameDamageProbability(0);
      cluster.nodes().forEach(SimulatedNode::healTransactionNetwork);
    });
    String failure;
    try {
      scheduler.run(maxSteps);
      failure = scheduler.pending() > 0
          ? "the run did not finish within " + maxSteps + " steps (" + scheduler.pending()
              + " events pending at " + scheduler.nowMillis() + " ms)"
          : check();
    } catch (Invariants.InvariantViolation violation) {
      // A core found itself in a state it must never reach: the node would halt. That is a bug.
      failure = violation.getMessage();
    }
    int edges = 0;
    for (Workload workload : workloads) {
      edges += workload.serializationEdges();
    }
    long crashes = 0;
    long resolved = 0;
    long redone = 0;
    long reissued = 0;
    long questions = 0;
    long answers = 0;
    int answeredCorrupt = 0;
    NodeStorage.Counters storage = null;
    for (SimulatedNode node : cluster.nodes()) {
      crashes += node.crashes();
      resolved += node.resolvedInDoubt();
      redone += node.redone();
      reissued += node.reissuedIds();
      questions += node.inDoubtQuestions();
      answers += node.inDoubtAnswers();
      answeredCorrupt += node.answeredCorrupt().size();
      storage = storage == null ? node.storageCounters() : sum(storage, node.storageCounters());
    }
    String clusterSummary = !clustered() ? "" : cluster.size() + " nodes: "
        + cluster.network().delivered() + " messages between nodes delivered, "
        + cluster.network().dropped() + " lost, " + cluster.network().duplicated()
        + " duplicated, " + cluster.damagedFrames() + " damaged frames dropped, "
        + cluster.commitDecisions() + " commit decisions" + sharedStoreSummary();
    return new Result(seed, failure, scheduler.steps(), scheduler.nowMillis(),
        count(ClientCall.Outcome.COMMITTED), count(ClientCall.Outcome.ABORTED),
        count(ClientCall.Outcome.UNKNOWN), crashes, resolved, redone, edges, livenessChecked(),
        storage, failure == null ? "" : scheduler.trace().toString(), answeredCorrupt,
        cluster.unreadableAtEnd().size(), livenessExempted, reissued, questions, answers,
        clusterSummary,
        scheduler.trace().fingerprint(), journalFingerprint());
  }

  /** What the shared-store mode did (empty otherwise). */
  private String sharedStoreSummary() {
    if (cluster.sharedDatabase() == null) {
      return "";
    }
    long acquired = 0;
    long released = 0;
    long fenced = 0;
    long ended = 0;
    long refusedDecisions = 0;
    long answeredFromStore = 0;
    for (SimulatedNode node : cluster.nodes()) {
      ended += node.coordinatorsEnded();
      refusedDecisions += node.refusedDecisions();
      answeredFromStore += node.answeredForOtherNodes();
      fenced += node.fencedPartitions();
      acquired += node.partitionsAcquired();
      released += node.partitionsReleased();
    }
    return "; shared store: " + cluster.sharedDatabase().crashes() + " database crashes, "
        + cluster.rebalances() + " rebalances, "
        + cluster.sharding().moves() + " partition moves, " + acquired + " acquisitions, "
        + released + " releases, " + fenced + " zombie writes fenced, "
        + cluster.sharedDatabase().auditedJournalRecords()
        + " journal records audited for their owner epoch; coordinator fence: "
        + cluster.removals() + " members removed, " + cluster.selfDowns() + " downed themselves, "
        + ended + " coordinator partitions ended, " + refusedDecisions
        + " zombie decisions refused, " + answeredFromStore
        + " in-doubt questions answered from the store";
  }

  /** See {@link Result#journalFingerprint}. */
  private long journalFingerprint() {
    long hash = 1;
    for (SimulatedNode node : cluster.nodes()) {
      for (Map.Entry<Long, Map<EntityId, NodeStorage.CommittedWrite>> record
          : node.appliedParts().entrySet()) {
        hash = 31 * hash + Long.hashCode(record.getKey());
        for (Map.Entry<EntityId, NodeStorage.CommittedWrite> write
            : record.getValue().entrySet()) {
          hash = 31 * (31 * hash + write.getKey().hashCode()) + write.getValue().hashCode();
        }
      }
      hash = 31 * hash + node.nodeId;
    }
    return hash;
  }

  private static NodeStorage.Counters sum(NodeStorage.Counters a, NodeStorage.Counters b) {
    return new NodeStorage.Counters(a.checkpointRounds() + b.checkpointRounds(),
        a.objectCheckpoints() + b.objectCheckpoints(),
        a.truncatedRecords() + b.truncatedRecords(), a.damagedKeys() + b.damagedKeys(),
        a.corruptionsDetected() + b.corruptionsDetected(), a.storeFailures() + b.storeFailures(),
        a.refusedStarts() + b.refusedStarts());
  }

  /** A node's name on the client network. */
  private String clientSideNameOf(int node) {
    return clustered() ? SimulatedCluster.nameOf(node) : "node";
  }

  /**
   * A client's request to the node its current request is attached to: {@code atNode} runs when
   * it arrives, if the node is up (a node that is down refuses the connection, and the client
   * waits for its timeout).
   */
  void toNode(String client, String what, java.util.function.Consumer<SimulatedNode> atNode) {
    int attached = attachedNode.getOrDefault(client, 0);
    SimulatedNode node = cluster.node(attached);
    clientNetwork.send(client, clientSideNameOf(attached), what, ignored -> {
      if (node.isUp()) {
        atNode.accept(node);
      }
    });
  }

  /** The node's message to a client: {@code atClient} runs when it arrives. */
  void toClient(String client, String what, Runnable atClient) {
    clientNetwork.send(clientSideNameOf(attachedNode.getOrDefault(client, 0)), client, what,
        ignored -> atClient.run());
  }

  /**
   * A client's next request, from a workload picked at random, with the client's timeout; with
   * several nodes, sent to a node drawn at random (every step of it, for an interactive one).
   */
  /**
   * Clients that issued a request held to liveness. A client stops at the end of the run's
   * duration only once it did: one whose request issued during the faults was lost would
   * otherwise wait out its timeout past the end and issue nothing after healing, and a run where
   * every client did so would hold nothing to liveness (vacuous: seen on one node, seed 2 psac
   * dynamic). So each client issues one more request after the end if it has to.
   */
  private final Set<Integer> heldClients = new HashSet<>();

  private void issue(int client, int sequence) {
    if (scheduler.nowMillis() >= options.durationMillis() && heldClients.contains(client)) {
      return;
    }
    if (scheduler.nowMillis() > settledMillis()) {
      heldClients.add(client);
    }
    if (clustered()) {
      attachedNode.put("client-" + client, scheduler.random().nextInt(cluster.size()));
    }
    Workload workload = workloads.get(scheduler.random().nextInt(workloads.size()));
    Runnable next = () -> scheduler.schedule(scheduler.random().nextInt(3),
        "client " + client + " thinks", () -> issue(client, sequence + 1));
    ClientCall call = workload.issue("client-" + client, sequence, next);
    scheduler.schedule(options.clientTimeoutMillis(),
        "client " + client + " timeout " + call.id,
        () -> call.decide(ClientCall.Outcome.UNKNOWN));
  }

  /** With several nodes, one drawn at random; else the only one. */
  private int anyNode() {
    return clustered() ? scheduler.random().nextInt(cluster.size()) : 0;
  }

  private String nameForTrace(int node) {
    return clustered() ? SimulatedCluster.nameOf(node) : "node";
  }

  private void scheduleCrash() {
    long after = 1 + Math.round(-Math.log(1 - scheduler.random().nextDouble())
        * options.meanMillisBetweenCrashes());
    scheduler.schedule(after, "crash node", () -> {
      if (scheduler.nowMillis() >= faultsEndMillis) {
        return;
      }
      int crashed = anyNode();
      SimulatedNode node = cluster.node(crashed);
      if (node.isUp()) {
        if (clustered()) {
          scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
              "crash " + nameForTrace(crashed));
        }
        node.crash();
        long downtime = 5 + scheduler.random().nextInt(MAX_DOWNTIME_MILLIS - 5 + 1);
        scheduler.schedule(downtime, "restart " + nameForTrace(crashed),
            () -> restartNode(crashed));
      }
      // The node's clock jumps too, often backwards (an NTP step), up to half a second.
      if (scheduler.random().nextBoolean()) {
        long jump = scheduler.random().nextLong(-500, 200);
        scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
            nameForTrace(crashed) + " clock jumps " + jump + " ms");
        node.jumpClock(jump);
      }
      scheduleCrash();
    });
  }

  /**
   * Restarts a crashed node. If its recovery meets damage it stays down, and its supervisor
   * (systemd, Kubernetes) starts it again after another downtime, while clients still come: the
   * first attempt may have resolved part of what was in doubt, so a later one can succeed.
   */
  private void restartNode(int restarted) {
    if (cluster.node(restarted).restart() || scheduler.nowMillis() >= options.durationMillis()) {
      return;
    }
    long downtime = 5 + scheduler.random().nextInt(MAX_DOWNTIME_MILLIS - 5 + 1);
    scheduler.schedule(downtime, "restart " + nameForTrace(restarted) + " again",
        () -> restartNode(restarted));
  }

  /**
   * The damage fault: now and then, during the faulty part only, a stored key's bytes fail their
   * checksum (see {@link StoreStorage#damage}), as often as {@code meanMillisBetweenDamage} says
   * (exponential), on a node drawn at random. The damage stays on the disk: the simulator repairs
   * nothing.
   */
  private void scheduleDamage() {
    long after = 1 + Math.round(-Math.log(1 - scheduler.random().nextDouble())
        * options.meanMillisBetweenDamage());
    scheduler.schedule(after, "damage", () -> {
      if (scheduler.nowMillis() >= faultsEndMillis) {
        return;
      }
      int damagedNode = anyNode();
      SimulatedNode node = cluster.node(damagedNode);
      String damaged = node.isUp() || !clustered() ? node.damage() : null;
      scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
          damaged == null ? "nothing stored to damage"
              : "DAMAGE" + (clustered() ? " on " + nameForTrace(damagedNode) : "") + ": "
                  + damaged);
      scheduleDamage();
    });
  }

  /**
   * Transient partitions between a node and its clients (a network blip: every message across is
   * lost while it lasts), as often as crashes, 10 to 200 ms long.
   */
  private void schedulePartition() {
    long after = 1 + Math.round(-Math.log(1 - scheduler.random().nextDouble())
        * options.meanMillisBetweenCrashes());
    scheduler.schedule(after, "partition", () -> {
      if (scheduler.nowMillis() >= faultsEndMillis) {
        return;
      }
      // Over by the time faults stop, so the fault-free tail is free of it.
      long duration = Math.min(10 + scheduler.random().nextInt(191),
          faultsEndMillis - scheduler.nowMillis());
      int cut = anyNode();
      scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
          "clients cut off from " + (clustered() ? nameForTrace(cut) : "the node") + " for "
              + duration + " ms");
      clientNetwork.partition(java.util.Set.of(clientSideNameOf(cut)), duration);
      schedulePartition();
    });
  }

  /**
   * Transient partitions between nodes (several nodes only): a random side of at least one node
   * and at most all but one is cut off from the others, as often as crashes, 10 to 200 ms long.
   */
  private void scheduleNodePartition() {
    long after = 1 + Math.round(-Math.log(1 - scheduler.random().nextDouble())
        * options.meanMillisBetweenCrashes());
    scheduler.schedule(after, "partition between nodes", () -> {
      if (scheduler.nowMillis() >= faultsEndMillis) {
        return;
      }
      long duration = Math.min(10 + scheduler.random().nextInt(191),
          faultsEndMillis - scheduler.nowMillis());
      java.util.Set<String> side = new java.util.TreeSet<>();
      side.add(SimulatedCluster.nameOf(scheduler.random().nextInt(cluster.size())));
      for (int node = 0; node < cluster.size(); node++) {
        if (side.size() < cluster.size() - 1 && scheduler.random().nextInt(3) == 0) {
          side.add(SimulatedCluster.nameOf(node));
        }
      }
      scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
          side + " cut off from the other nodes for " + duration + " ms");
      cluster.network().partition(side, duration);
      if (cluster.sharding() != null) {
        // The membership notices the cut (the minority's partitions move: its nodes run on as
        // zombies, fenced), and notices it heal.
        cluster.scheduleDetection();
        cluster.scheduleJoin(duration);
      }
      scheduleNodePartition();
    });
  }

  /**
   * The zombie fault (shared-store mode): now and then, as often as crashes, one node is cut off
   * from the other nodes (not from its clients) for longer than the membership takes to notice
   * (80 to 280 ms): its partitions move to the majority while it keeps running, serving its
   * clients from its stale view and writing, and every such write must be fenced ({@code
   * not_owner}), never applied. It replaces any cut between nodes in progress (one at a time).
   */
  private void scheduleZombie() {
    long after = 1 + Math.round(-Math.log(1 - scheduler.random().nextDouble())
        * options.meanMillisBetweenCrashes());
    scheduler.schedule(after, "zombie", () -> {
      if (scheduler.nowMillis() >= faultsEndMillis) {
        return;
      }
      long duration = Math.min(80 + scheduler.random().nextInt(201),
          faultsEndMillis - scheduler.nowMillis());
      int zombie = scheduler.random().nextInt(cluster.size());
      scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
          "[" + SimulatedCluster.nameOf(zombie) + "] cut off from the other nodes for " + duration
              + " ms (a zombie once noticed)");
      cluster.network().partition(java.util.Set.of(SimulatedCluster.nameOf(zombie)), duration);
      cluster.scheduleDetection();
      cluster.scheduleJoin(duration);
      scheduleZombie();
    });
  }

  /**
   * The database crash (shared-store mode), rarer than a node's ({@link
   * #DATABASE_CRASH_RARITY} times the mean between crashes): the database server loses power, so
   * every node's store loses its connection mid-flight; modelled as every node that is up crashing
   * with it (a store whose database died fails; its node restarts) while the database loses what
   * it had not synced (or keeps a prefix of it). Each node restarts after its own downtime.
   */
  private void scheduleDatabaseCrash() {
    long after = 1 + Math.round(-Math.log(1 - scheduler.random().nextDouble())
        * options.meanMillisBetweenCrashes() * DATABASE_CRASH_RARITY);
    scheduler.schedule(after, "database crash", () -> {
      if (scheduler.nowMillis() >= faultsEndMillis) {
        return;
      }
      scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
          "the database crashes; every node that is up crashes with it");
      for (SimulatedNode node : cluster.nodes()) {
        if (node.isUp()) {
          node.crash();
          long downtime = 5 + scheduler.random().nextInt(MAX_DOWNTIME_MILLIS - 5 + 1);
          int restarted = node.nodeId;
          scheduler.schedule(downtime, "restart " + nameForTrace(restarted),
              () -> restartNode(restarted));
        }
      }
      cluster.sharedDatabase().crash(scheduler.random(), DATABASE_KEEP_UNSYNCED_PREFIX_PROBABILITY);
      scheduleDatabaseCrash();
    });
  }

  /** How much rarer a database crash is than a node crash (shared-store mode). */
  private static final int DATABASE_CRASH_RARITY = 4;
  /** Chance a database crash keeps a prefix of what it had not synced (as a node's disk). */
  private static final double DATABASE_KEEP_UNSYNCED_PREFIX_PROBABILITY = 0.5;

  /** Unanswered requests liveness excused because damage degraded a node while they waited. */
  private int livenessExempted;

  private boolean degradedDuring(long fromMillis, long toMillis) {
    for (SimulatedNode node : cluster.nodes()) {
      if (node.degradedDuring(fromMillis, toMillis)) {
        return true;
      }
    }
    return false;
  }

  private String check() {
    // First: a zombie's write applied to the shared database is the root of what follows from it.
    if (cluster.sharedDatabase() != null && cluster.sharedDatabase().violation() != null) {
      return cluster.sharedDatabase().violation();
    }
    for (SimulatedNode node : cluster.nodes()) {
      String bug = node.storageBug();
      if (bug != null) {
        return bug;
      }
    }
    for (SimulatedNode node : cluster.nodes()) {
      boolean downOnDamage = !node.isUp()
          && node.degradedDuring(scheduler.nowMillis(), scheduler.nowMillis());
      if (!node.isUp() && !downOnDamage) {
        return (clustered() ? nameForTrace(node.nodeId) : "the node")
            + " is down at the end of the run";
      }
    }
    int committedAfterHealing = 0;
    for (Workload workload : workloads) {
      for (ClientCall call : workload.calls()) {
        if (call.isPending()) {
          return "request " + call.id + " never ended";
        }
        if (call.outcome() == ClientCall.Outcome.COMMITTED && heldToLiveness(call)) {
          committedAfterHealing++;
        }
        // Once faults stopped and the nodes are back, every request must be answered (nothing is
        // lost any more, so a timeout means the engine stalled). Unless damage had failed a
        // store, or kept a node down, while it waited: then no answer may be possible.
        if (call.outcome() == ClientCall.Outcome.UNKNOWN && heldToLiveness(call)) {
          if (degradedDuring(call.issuedMillis,
              call.issuedMillis + options.clientTimeoutMillis())) {
            livenessExempted++;
            continue;
          }
          return "request " + call.id + ", issued at " + call.issuedMillis
              + " ms after the faults stopped, got no answer (liveness)";
        }
      }
    }
    if (livenessChecked() == 0) {
      return "no request was held to liveness (a vacuous run: see heldClients)";
    }
    // Clients make progress after healing: answers alone could all be refusals. Unless damage
    // failed a store or kept a node down after healing: then every answer may be a refusal.
    if (committedAfterHealing == 0 && livenessChecked() > livenessExempted
        && !degradedDuring(faultsEndMillis + MAX_DOWNTIME_MILLIS, scheduler.nowMillis())) {
      return "no request issued after the faults stopped committed (" + livenessChecked()
          + " held to liveness)";
    }
    // Every message was delivered and every timer fired: nothing may be left in doubt (a part
    // waiting for its decision, a coordinator waiting for an acknowledgement), unless damage
    // stopped the store (its decided commits wait for the restart's recovery).
    for (SimulatedNode node : cluster.nodes()) {
      String unresolved = node.unresolvedTransactions();
      if (unresolved != null && !node.storageFailed()) {
        return "after healing, " + (clustered() ? nameForTrace(node.nodeId) + ": " : "")
            + unresolved;
      }
    }
    for (SimulatedNode node : cluster.nodes()) {
      if (node.storageFailed()) {
        // Damage failed the store: it refuses writes until the node restarts, and decided
        // commits it could not apply wait for that restart's recovery (as the coordinator told
        // their clients). The final durable state is what the node serves after it; a restart is
        // not a repair.
        node.crash();
        restartNode(node.nodeId);
        if (!node.isUp()) {
          scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
              "the final restart met damage: every final-state check is skipped");
        }
      }
    }
    String bothWays = cluster.decidedBothWays();
    if (bothWays != null) {
      return bothWays;
    }
    if (cluster.sharedDatabase() != null) {
      String interleaved = cluster.sharedDatabase().violation();
      if (interleaved != null) {
        return interleaved;
      }
      String unserved = cluster.unservedPartition();
      if (unserved != null) {
        return unserved;
      }
    }
    Map<Integer, Integer> inDoubt = cluster.unresolvedInDoubt();
    if (!inDoubt.isEmpty()) {
      return "prepared parts left in doubt after the network healed and every node was up"
          + " (node: parts): " + inDoubt;
    }
    for (Workload workload : workloads) {
      String failure = workload.check();
      if (failure != null) {
        return failure;
      }
    }
    return null;
  }

  /** Requests issued once faults stopped and the nodes were back: each must be answered. */
  private boolean heldToLiveness(ClientCall call) {
    return call.issuedMillis > settledMillis();
  }

  /**
   * When the last fault's consequences are over: a node that crashed before the faults stopped
   * restarted. In the shared-store mode, also a member removed by a detection that came after a
   * cut near the end downed itself (SimulatedCluster), restarted and joined.
   */
  private long settledMillis() {
    return faultsEndMillis + MAX_DOWNTIME_MILLIS + (cluster.sharding() == null ? 0
        : SimulatedCluster.MAX_DETECTION_MILLIS + SimulatedCluster.MAX_SELF_DOWN_MILLIS
            + SimulatedCluster.MAX_JOIN_MILLIS);
  }

  private int livenessChecked() {
    int count = 0;
    for (Workload workload : workloads) {
      for (ClientCall call : workload.calls()) {
        if (heldToLiveness(call)) {
          count++;
        }
      }
    }
    return count;
  }

  private int count(ClientCall.Outcome outcome) {
    int count = 0;
    for (Workload workload : workloads) {
      for (ClientCall call : workload.calls()) {
        if (call.outcome() == outcome) {
          count++;
        }
      }
    }
    return count;
  }
}
