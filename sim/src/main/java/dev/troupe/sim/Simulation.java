package dev.troupe.sim;

import dev.troupe.model.EntityId;
import dev.troupe.model.Invariants;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.txn.coordinator.CoordinatorCore;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

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
   */
  public record Options(String admission, String storage, String mailboxes, boolean planned,
      List<String> workloads, int accounts,
      int lists, int clients, long openingBalance, long durationMillis, double faultFreeShare,
      long meanMillisBetweenCrashes, double clientLossProbability, long clientTimeoutMillis,
      int traceLines, long meanMillisBetweenDamage, String internalNetwork) {
    public static final Options DEFAULTS = new Options("serial", "store", "per-receiver", false,
        WORKLOADS, 4, 3, 8, 100, 3_000, 0.3, 400, 0.02, 2_000, 400, 0, "reliable");

    /** Options with reliable mailboxes between coordinators and participants. */
    public Options(String admission, String storage, String mailboxes, boolean planned,
        List<String> workloads, int accounts, int lists, int clients, long openingBalance,
        long durationMillis, double faultFreeShare, long meanMillisBetweenCrashes,
        double clientLossProbability, long clientTimeoutMillis, int traceLines,
        long meanMillisBetweenDamage) {
      this(admission, storage, mailboxes, planned, workloads, accounts, lists, clients,
          openingBalance, durationMillis, faultFreeShare, meanMillisBetweenCrashes,
          clientLossProbability, clientTimeoutMillis, traceLines, meanMillisBetweenDamage,
          "reliable");
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
      if (accounts < 2 || lists < 1 || clients < 1 || durationMillis < 1 || traceLines < 1) {
        throw new IllegalArgumentException("accounts >= 2, lists >= 1, clients >= 1,"
            + " durationMillis >= 1 and traceLines >= 1 are required");
      }
    }

    public Options withAdmission(String value, boolean plannedValue) {
      return new Options(value, storage, mailboxes, plannedValue, workloads, accounts, lists, clients,
          openingBalance, durationMillis, faultFreeShare, meanMillisBetweenCrashes,
          clientLossProbability, clientTimeoutMillis, traceLines, meanMillisBetweenDamage,
          internalNetwork);
    }

    public Options withMailboxes(String value) {
      return new Options(admission, storage, value, planned, workloads, accounts, lists, clients,
          openingBalance, durationMillis, faultFreeShare, meanMillisBetweenCrashes,
          clientLossProbability, clientTimeoutMillis, traceLines, meanMillisBetweenDamage,
          internalNetwork);
    }

    public Options withStorage(String value) {
      return new Options(admission, value, mailboxes, planned, workloads, accounts, lists, clients,
          openingBalance, durationMillis, faultFreeShare, meanMillisBetweenCrashes,
          clientLossProbability, clientTimeoutMillis, traceLines, meanMillisBetweenDamage,
          internalNetwork);
    }

    public Options withDamage(long value) {
      return new Options(admission, storage, mailboxes, planned, workloads, accounts, lists, clients,
          openingBalance, durationMillis, faultFreeShare, meanMillisBetweenCrashes,
          clientLossProbability, clientTimeoutMillis, traceLines, value, internalNetwork);
    }

    public Options withInternalNetwork(String value) {
      return new Options(admission, storage, mailboxes, planned, workloads, accounts, lists, clients,
          openingBalance, durationMillis, faultFreeShare, meanMillisBetweenCrashes,
          clientLossProbability, clientTimeoutMillis, traceLines, meanMillisBetweenDamage, value);
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
   */
  public record Result(long seed, String failure, long steps, long simulatedMillis,
      int committed, int aborted, int unknown, long crashes, long resolvedInDoubt, long redone,
      int serializationEdges, int livenessChecked, NodeStorage.Counters storage, String trace,
      int answeredCorrupt, int unreadableAtEnd, int livenessExempted, long reissuedIds,
      long inDoubtQuestions, long inDoubtAnswers) {
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
              + " transaction ids of a failed store issued again") + ")";
    }
  }

  /** Longest a crashed node stays down (it restarts 5 to this many ms after the crash). */
  private static final int MAX_DOWNTIME_MILLIS = 105;

  final long seed;
  final Options options;
  final Scheduler scheduler;
  final SimulatedNetwork clientNetwork;
  final SimulatedNode node;
  /** When faults stop: the fault-free tail starts here. */
  final long faultsEndMillis;
  private final List<Workload> workloads = new ArrayList<>();

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
    this.node = new SimulatedNode(scheduler, new SimulatedNode.Settings(2, 1,
        new CoordinatorCore.Limits(500, 20, 2).withDecisionResendIntervalMillis(50), 0.5, 0.2,
        mutation,
        options.storage().equals("store")
            ? SimulatedNode.StorageKind.STORE : SimulatedNode.StorageKind.JOURNAL,
        options.mailboxes().equals("per-receiver")
            ? SimulatedNetwork.Ordering.PER_RECEIVER : SimulatedNetwork.Ordering.PER_CONNECTION,
        options.internalNetwork().equals("lossy"),
        new dev.troupe.txn.entity.EntityTurnCore.ParticipantLimits(100, 64)),
        (EntityId entity) -> {
          CompiledType type = types.get(entity.type());
          Invariants.check(type != null, "no workload has the type of %s", entity);
          return type;
        });
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
    }
    if (options.meanMillisBetweenDamage() > 0) {
      scheduleDamage();
    }
    scheduler.schedule(faultsEndMillis, "faults stop", () -> {
      clientNetwork.setFaults(SimulatedNetwork.Faults.NONE);
      node.healTransactionNetwork();
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
    return new Result(seed, failure, scheduler.steps(), scheduler.nowMillis(),
        count(ClientCall.Outcome.COMMITTED), count(ClientCall.Outcome.ABORTED),
        count(ClientCall.Outcome.UNKNOWN), node.crashes(), node.resolvedInDoubt(),
        node.redone(), edges, livenessChecked(), node.storageCounters(),
        failure == null ? "" : scheduler.trace().toString(), node.answeredCorrupt().size(),
        node.unreadableAtEnd().size(), livenessExempted, node.reissuedIds(),
        node.inDoubtQuestions(), node.inDoubtAnswers());
  }

  /**
   * A client's request to the node: {@code atNode} runs when it arrives, if the node is up (a node
   * that is down refuses the connection, and the client waits for its timeout).
   */
  void toNode(String client, String what, java.util.function.Consumer<SimulatedNode> atNode) {
    clientNetwork.send(client, "node", what, ignored -> {
      if (node.isUp()) {
        atNode.accept(node);
      }
    });
  }

  /** The node's message to a client: {@code atClient} runs when it arrives. */
  void toClient(String client, String what, Runnable atClient) {
    clientNetwork.send("node", client, what, ignored -> atClient.run());
  }

  /** A client's next request, from a workload picked at random, with the client's timeout. */
  private void issue(int client, int sequence) {
    if (scheduler.nowMillis() >= options.durationMillis()) {
      return;
    }
    Workload workload = workloads.get(scheduler.random().nextInt(workloads.size()));
    Runnable next = () -> scheduler.schedule(scheduler.random().nextInt(3),
        "client " + client + " thinks", () -> issue(client, sequence + 1));
    ClientCall call = workload.issue("client-" + client, sequence, next);
    scheduler.schedule(options.clientTimeoutMillis(),
        "client " + client + " timeout " + call.id,
        () -> call.decide(ClientCall.Outcome.UNKNOWN));
  }

  private void scheduleCrash() {
    long after = 1 + Math.round(-Math.log(1 - scheduler.random().nextDouble())
        * options.meanMillisBetweenCrashes());
    scheduler.schedule(after, "crash node", () -> {
      if (scheduler.nowMillis() >= faultsEndMillis) {
        return;
      }
      if (node.isUp()) {
        node.crash();
        long downtime = 5 + scheduler.random().nextInt(MAX_DOWNTIME_MILLIS - 5 + 1);
        scheduler.schedule(downtime, "restart node", this::restartNode);
      }
      // The node's clock jumps too, often backwards (an NTP step), up to half a second.
      if (scheduler.random().nextBoolean()) {
        long jump = scheduler.random().nextLong(-500, 200);
        scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
            "node clock jumps " + jump + " ms");
        node.jumpClock(jump);
      }
      scheduleCrash();
    });
  }

  /**
   * Restarts the crashed node. If its recovery meets damage it stays down, and its supervisor
   * (systemd, Kubernetes) starts it again after another downtime, while clients still come: the
   * first attempt may have resolved part of what was in doubt, so a later one can succeed.
   */
  private void restartNode() {
    if (node.restart() || scheduler.nowMillis() >= options.durationMillis()) {
      return;
    }
    long downtime = 5 + scheduler.random().nextInt(MAX_DOWNTIME_MILLIS - 5 + 1);
    scheduler.schedule(downtime, "restart node again", this::restartNode);
  }

  /**
   * The damage fault: now and then, during the faulty part only, a stored key's bytes fail their
   * checksum (see {@link StoreStorage#damage}), as often as {@code meanMillisBetweenDamage} says
   * (exponential). The damage stays on the disk: the simulator repairs nothing.
   */
  private void scheduleDamage() {
    long after = 1 + Math.round(-Math.log(1 - scheduler.random().nextDouble())
        * options.meanMillisBetweenDamage());
    scheduler.schedule(after, "damage", () -> {
      if (scheduler.nowMillis() >= faultsEndMillis) {
        return;
      }
      String damaged = node.damage();
      scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
          damaged == null ? "nothing stored to damage" : "DAMAGE: " + damaged);
      scheduleDamage();
    });
  }

  /**
   * Transient partitions between the node and its clients (a network blip: every message across
   * is lost while it lasts), as often as crashes, 10 to 200 ms long.
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
      scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
          "clients cut off from the node for " + duration + " ms");
      clientNetwork.partition(java.util.Set.of("node"), duration);
      schedulePartition();
    });
  }

  /** Unanswered requests liveness excused because damage degraded the node while they waited. */
  private int livenessExempted;

  private String check() {
    String bug = node.storageBug();
    if (bug != null) {
      return bug;
    }
    boolean downOnDamage = !node.isUp()
        && node.degradedDuring(scheduler.nowMillis(), scheduler.nowMillis());
    if (!node.isUp() && !downOnDamage) {
      return "the node is down at the end of the run";
    }
    for (Workload workload : workloads) {
      for (ClientCall call : workload.calls()) {
        if (call.isPending()) {
          return "request " + call.id + " never ended";
        }
        // Once faults stopped and the node is back, every request must be answered (nothing is
        // lost any more, so a timeout means the engine stalled). Unless damage had failed the
        // store, or kept the node down, while it waited: then no answer may be possible.
        if (call.outcome() == ClientCall.Outcome.UNKNOWN && heldToLiveness(call)) {
          if (node.degradedDuring(call.issuedMillis,
              call.issuedMillis + options.clientTimeoutMillis())) {
            livenessExempted++;
            continue;
          }
          return "request " + call.id + ", issued at " + call.issuedMillis
              + " ms after the faults stopped, got no answer (liveness)";
        }
      }
    }
    // Every message was delivered and every timer fired: nothing may be left in doubt (a part
    // waiting for its decision, a coordinator waiting for an acknowledgement), unless damage
    // stopped the store (its decided commits wait for the restart's recovery).
    String unresolved = node.unresolvedTransactions();
    if (unresolved != null && !node.storageFailed()) {
      return "after healing, " + unresolved;
    }
    if (node.storageFailed()) {
      // Damage failed the store: it refuses writes until the node restarts, and decided commits it
      // could not apply wait for that restart's recovery (as the coordinator told their clients).
      // The final durable state is what the node serves after it; a restart is not a repair.
      node.crash();
      restartNode();
      if (!node.isUp()) {
        scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
            "the final restart met damage: every final-state check is skipped");
      }
    }
    for (Workload workload : workloads) {
      String failure = workload.check();
      if (failure != null) {
        return failure;
      }
    }
    return null;
  }

  /** Requests issued once faults stopped and the node was back: each must be answered. */
  private boolean heldToLiveness(ClientCall call) {
    return call.issuedMillis > faultsEndMillis + MAX_DOWNTIME_MILLIS;
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
