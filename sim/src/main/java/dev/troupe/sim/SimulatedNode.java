package dev.troupe.sim;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Invariants;
import dev.troupe.model.Operation;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.storage.DecidedTransaction;
import dev.troupe.storage.InDoubtResolution;
import dev.troupe.storage.PreparedTransaction;
import dev.troupe.txn.entity.EntityTurnCore;
import dev.troupe.txn.Mutations;
import dev.troupe.txn.planned.SequencerCore;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnCodec;
import dev.troupe.txn.TurnLimits;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.request.RequestCore;
import dev.troupe.txn.wire.CoordinatorMessages;
import dev.troupe.txn.wire.Envelope;
import dev.troupe.txn.wire.ParticipantMessages;
import dev.troupe.txn.wire.TypeReference;
import dev.troupe.txn.wire.TypeRegistry;
import dev.troupe.txn.wire.WireMessage;
import dev.troupe.txn.wire.WireResults;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * One Troupe node in the simulator: the production cores ({@link EntityTurnCore} per entity,
 * {@link CoordinatorCore} per transaction, {@link SequencerCore}, {@code InteractiveCore}) with
 * simulated shells in place of Pekko actors. Messages between the cores of the node go through a
 * {@link SimulatedNetwork} that behaves like local mailboxes (never lost; each core receives
 * messages in the order they were sent to it, whoever sent them, as Pekko's mailboxes do;
 * interleaved across receivers). Durable state lives in a {@link NodeStorage}: by default the
 * production storage engine over a simulated disk ({@link StoreStorage}), or the simulator's
 * minimal journal ({@link SimulatedJournal}).
 *
 * <p><b>What a crash does.</b> {@link #crash} drops every core and every message, timer and
 * storage completion in flight (they belong to the dead incarnation and are ignored when they
 * fire), and the storage loses what it had not synced (or keeps a prefix of it). {@link #restart}
 * recovers the storage, which resolves in-doubt transactions as production does ({@code
 * InDoubtResolution}: a prepared part whose transaction has a decision commits, PSAC parts
 * re-evaluated in arrival order; every other one is abandoned, presumed abort).
 *
 * <p><b>A network inside the node.</b> With {@link Settings#lossyTransactionNetwork}, the messages
 * between coordinators and participants (prepares, forwards, votes, decisions, acknowledgements,
 * in-doubt questions and their answers) cross a network that loses, duplicates and reorders them,
 * as between nodes, until {@link #healTransactionNetwork}: the coordinator's resends and the
 * participants' in-doubt questions ({@code DecisionQueryCore}) must still decide every part. An
 * interactive transaction's commit stays on the node's mailboxes (its client releases its locks
 * through them). Parts in doubt ask only then: over the mailboxes no decision is lost, and the
 * node behaves as before (as the runtime, which asks only with a {@code DecisionDirectory}
 * wired). {@link #unresolvedTransactions} then says whether anything is left in doubt.
 *
 * <p>Not thread-safe: the simulation is single-threaded.
 */
final class SimulatedNode {
  /** Who a core's reply goes to. */
  sealed interface Recipient {
    record Client(Consumer<TurnResult> answer) implements Recipient {}

    /**
     * The answer to a single turn requested by node {@code node} (a {@code TurnRequest} that
     * crossed the network): goes back as a {@code TurnAnswer}.
     */
    record RemoteClient(int node, long transactionId) implements Recipient {}

    /**
     * The answer to one step of an interactive transaction; it goes to the transaction's node. On
     * a node that received the step from elsewhere, {@code turn} and {@code answer} are null (the
     * answer crosses the network as a {@code StepAnswer}).
     */
    record Step(long transactionId, EntityId entity, Turn turn, Consumer<TurnResult> answer)
        implements Recipient {}

    /**
     * A vote for attempt {@code transactionId} of a coordinator's transaction, in a round. {@code
     * coordinator} is the coordinator's key on its own node ({@link #REMOTE} on a participant's
     * node elsewhere: the vote crosses the network and its node finds the coordinator by the
     * attempt).
     */
    record Voter(long coordinator, EntityId participant, long transactionId, int round)
        implements Recipient {}

    record Acknowledger(long coordinator, EntityId participant, long transactionId)
        implements Recipient {}

    /** The coordinator key of a {@link Voter} or {@link Acknowledger} on another node. */
    long REMOTE = -1;
  }

  /**
   * Deliberate breakage of the simulated shell, for tests that prove the checkers catch it. Only
   * {@code NONE} is correct.
   */
  enum Mutation {
    NONE,
    /**
     * Report a commit durable before it is synced (the store under {@code async} durability; the
     * journal acknowledges as soon as it appends).
     */
    ACKNOWLEDGE_BEFORE_SYNC,
    /**
     * At restart, do not commit the prepared parts whose transaction decided commit (the store
     * leaves every part in doubt; the journal abandons them).
     */
    SKIP_IN_DOUBT_COMMITS,
    /**
     * At restart, do not advance the clock past the journal: after a backward clock jump,
     * timestamps would repeat or go back. Journal storage only (the store recovers its own clock).
     */
    SKIP_CLOCK_RECOVERY,
    /** Inside the production core: {@link Mutations.Mutation#RELEASE_LOCKS_AT_VOTE}. */
    RELEASE_LOCKS_AT_VOTE,
    /** Inside the production core: {@link Mutations.Mutation#PREPARE_AFTER_ABORT}. */
    PREPARE_AFTER_ABORT,
    /** Inside the production core: {@link Mutations.Mutation#DROP_FORWARDS}. */
    DROP_FORWARDS,
    /** Inside the production core: {@link Mutations.Mutation#COORDINATOR_SKIPS_DECISION_RESEND}. */
    COORDINATOR_SKIPS_DECISION_RESEND,
    /** Inside the production core: {@link Mutations.Mutation#APPLY_DUPLICATE_DECISION}. */
    APPLY_DUPLICATE_DECISION,
    /** Inside the production core: {@link Mutations.Mutation#PRESUME_COMMIT_IN_DOUBT}. */
    PRESUME_COMMIT_IN_DOUBT,
    /** Inside the production core: {@link Mutations.Mutation#RELEASE_KEY_LOCK_EARLY}. */
    RELEASE_KEY_LOCK_EARLY,
    /**
     * Shared-store mode: the nodes' views of the shared database drop every batch's fence ({@link
     * SharedDatabase}), as a writer that does not fence would: a zombie's writes are applied after
     * the partition's new owner acquired it.
     */
    UNFENCED_WRITES,
    /**
     * Shared-store mode, the coordinator fence broken: the survivors never end a removed member's
     * coordinators ({@code Store.endCoordinator}), and a question about its transaction (or an
     * acquisition meeting its part in doubt) is answered from the decision record alone, aborted
     * when there is none, without reading whether that node's coordinators are ended: a presumed
     * abort without any end, which a zombie coordinator can still contradict with a commit.
     */
    PRESUME_ABORT_WITHOUT_END,
    /**
     * The store's disk passes damage over in silence, as the engine did before it checked RocksDB's
     * iterator status: a cursor that meets a damaged key reports the end of its range, a point
     * read of one answers absent ({@code MemoryDisk.ignoreDamageAsUncheckedRocksDbDid}). Store
     * storage with the damage fault only.
     */
    IGNORE_DAMAGE
  }

  /**
   * Timings and bounds of the node.
   *
   * @param syncMillis how long a group commit's sync takes
   * @param internalMaxDelayMillis the longest a message between cores of the node takes
   * @param coordinatorLimits prepare timeout and wait-die retries
   * @param tornProbability chance that a crash keeps a prefix of what was not synced (a torn
   *     tail for the journal; whole unsynced batches for the store's disk)
   * @param corruptProbability chance that a crash corrupts a byte of what survives unsynced
   *     (journal only: RocksDB's own checksums are not simulated)
   * @param mailboxOrdering per receiver as Pekko's local mailboxes, or per connection only (a
   *     stress: what the cores will meet between nodes)
   * @param lossyTransactionNetwork whether coordinators and participants talk over a network
   *     that loses, duplicates and reorders (see the class doc) rather than the mailboxes
   * @param participantLimits the entity cores' in-doubt interval and memory of recent commits
   */
  record Settings(long syncMillis, long internalMaxDelayMillis,
      CoordinatorCore.Limits coordinatorLimits, double tornProbability,
      double corruptProbability, Mutation mutation, StorageKind storage,
      SimulatedNetwork.Ordering mailboxOrdering, boolean lossyTransactionNetwork,
      EntityTurnCore.ParticipantLimits participantLimits) {
    /** Settings with reliable mailboxes between coordinators and participants. */
    Settings(long syncMillis, long internalMaxDelayMillis,
        CoordinatorCore.Limits coordinatorLimits, double tornProbability,
        double corruptProbability, Mutation mutation, StorageKind storage,
        SimulatedNetwork.Ordering mailboxOrdering) {
      this(syncMillis, internalMaxDelayMillis, coordinatorLimits, tornProbability,
          corruptProbability, mutation, storage, mailboxOrdering, false,
          EntityTurnCore.ParticipantLimits.DEFAULTS);
    }
  }

  /** The faults of the lossy network between coordinators and participants, until it heals. */
  static final SimulatedNetwork.Faults LOSSY_TRANSACTION_NETWORK =
      new SimulatedNetwork.Faults(1, 4, 0.03, 0.03, true);
  /** After healing: nothing lost or duplicated, in order per connection. */
  static final SimulatedNetwork.Faults HEALED_TRANSACTION_NETWORK =
      new SimulatedNetwork.Faults(1, 2, 0, 0, false);

  /** Which {@link NodeStorage} the node keeps its durable state in. */
  enum StorageKind {
    /** The production engine, {@code RocksStore}, over a simulated disk ({@link StoreStorage}). */
    STORE,
    /** The simulator's own minimal journal ({@link SimulatedJournal}). */
    JOURNAL
  }

  private final Scheduler scheduler;
  private final Settings settings;
  /** This node's id in its cluster (0 to 63): the low bits of the ids it issues. */
  final int nodeId;
  /** The other nodes, where each entity lives, and the network between nodes. */
  private final SimulatedCluster cluster;
  private final Function<EntityId, CompiledType> typeOf;
  /**
   * This node's types by name and version, for messages from other nodes: a type travels as a
   * {@link TypeReference} and the receiver resolves it here (the workloads' types, fixed for a
   * run, at version {@link #TYPE_VERSION}).
   */
  private final TypeRegistry types;
  private final SimulatedNetwork mailboxes;
  /** Every client request's decisions: the request core's shell. */
  private final SimulatedRequests requests;
  /** The node's timers: a crashed incarnation's never fire. */
  private final SimulatedTimers timers;
  /** Between coordinators and participants when lossy (see the class doc); else the mailboxes. */
  private final SimulatedNetwork transactionNetwork;

  /** The node's durable state: survives crashes. */
  private final NodeStorage storage;

  // ---- the incarnation: lost on a crash
  private boolean up = true;
  private int incarnation;
  private final Map<EntityId, EntityTurnCore<Recipient>> entities = new HashMap<>();
  private final Map<Long, CoordinatorCore> coordinators = new HashMap<>();
  private final Map<Long, Consumer<CoordinatorCore.Outcome>> coordinatorAnswers = new HashMap<>();
  /** Every attempt id of a live coordinator, to the coordinator (for in-doubt questions). */
  private final Map<Long, Long> coordinatorOfAttempt = new HashMap<>();
  /** Coordinators whose messages cross the lossy network (not an interactive commit's). */
  private final Set<Long> lossyCoordinators = new java.util.HashSet<>();
  /** Answers in-doubt questions from the live coordinators and the decision records. */
  private dev.troupe.txn.coordinator.DecisionQueryCore decisionQueries = new dev.troupe.txn.coordinator.DecisionQueryCore();
  /** In-doubt questions asked and answered (commit or abort), for the run's summary. */
  private long inDoubtQuestions;
  private long inDoubtAnswers;
  /** Orders planned transactions; positions are this node's clock timestamps, as in Troupe. */
  private SequencerCore<Long> sequencer = new SequencerCore<>();
  private boolean drainScheduled;
  /** Open interactive transactions (idle timeout 300 simulated ms); lost on a crash. */
  private dev.troupe.txn.interactive.InteractiveCore interactive = newInteractiveCore();
  private final Map<Long, String> requestOfInteractive = new HashMap<>();
  private long nextCoordinator;
  private long crashes;
  /**
   * The simulator's own bookkeeping, not the node's (it survives crashes): which client request
   * each transaction id (every attempt) belongs to, so that histories can name what committed.
   */
  private final Map<Long, String> requestOfTransaction;
  private final Map<Long, String> requestOfCoordinator = new HashMap<>();
  /**
   * Ids issued while the store was failed (by damage). A failed store no longer raises its durable
   * clock ceiling (RocksStore.raiseClockCeiling: nothing more becomes durable under a new id), so
   * once its clock passes the ceiling, the ids it issues are issued again after the next restart,
   * whose clock starts at the ceiling. Nothing durable carries them, but an interactive client
   * holding one across the restart could act on another client's transaction (the hazard the
   * ceiling exists for). A finding of the damage fault, reported for the storage engine; the
   * simulator counts these reissues instead of failing the run.
   */
  private final Set<Long> issuedByFailedStore = new java.util.HashSet<>();
  private long reissuedIds;
  /** Requests the node answered {@code corrupt_data} (simulator's bookkeeping). */
  private final Set<String> answeredCorrupt = new java.util.LinkedHashSet<>();
  /** Entities whose final read answered {@code corrupt_data}, or all read while down. */
  private final Set<EntityId> unreadableAtEnd = new java.util.LinkedHashSet<>();

  /**
   * @param requestOfTransaction the simulator's record of which request each transaction id
   *     belongs to, shared by the cluster's nodes (a transaction's parts commit on several)
   */
  SimulatedNode(Scheduler scheduler, Settings settings, Function<EntityId, CompiledType> typeOf,
      TypeRegistry types, int nodeId, SimulatedCluster cluster,
      Map<Long, String> requestOfTransaction) {
    this.scheduler = scheduler;
    this.settings = settings;
    this.nodeId = nodeId;
    this.cluster = cluster;
    this.requestOfTransaction = requestOfTransaction;
    this.typeOf = typeOf;
    this.types = types;
    this.timers = new SimulatedTimers(scheduler, () -> up, () -> incarnation);
    // Plans from no cached state (the simulator's shell has no read cache), as before the core.
    this.requests = new SimulatedRequests(requestLimits(settings), typeOf,
        entity -> java.util.Optional.empty(), new RequestMachinery());
    this.mailboxes = new SimulatedNetwork(scheduler,
        new SimulatedNetwork.Faults(0, settings.internalMaxDelayMillis(), 0, 0, false),
        settings.mailboxOrdering());
    this.transactionNetwork = settings.lossyTransactionNetwork()
        ? new SimulatedNetwork(scheduler, LOSSY_TRANSACTION_NETWORK,
            SimulatedNetwork.Ordering.PER_CONNECTION)
        : mailboxes;
    NodeStorage.Timers timers = this::later;
    NodeStorage.Placement placement = new NodeStorage.Placement(
        transactionId -> cluster.nodeOfTransaction(transactionId) == nodeId,
        entity -> hostOf(entity) == nodeId);
    this.storage = switch (settings.storage()) {
      case STORE -> cluster.sharedDatabase() != null
          ? new StoreStorage(scheduler, timers, typeOf, settings.syncMillis(),
              settings.tornProbability(), settings.mutation(), nodeId, placement,
              cluster.sharedDatabase(), cluster.sharding().partitions(), this::partitionLost)
          : new StoreStorage(scheduler, timers, typeOf, settings.syncMillis(),
          settings.tornProbability(), settings.mutation(), nodeId, placement);
      case JOURNAL -> new SimulatedJournal(scheduler, timers, typeOf, settings.syncMillis(),
          settings.tornProbability(), settings.corruptProbability(), settings.mutation(), nodeId,
          placement);
    };
  }

  boolean isUp() {
    return up;
  }

  /** Which incarnation runs (or last ran): a crash starts a new one. */
  int incarnation() {
    return incarnation;
  }

  long crashes() {
    return crashes;
  }

  long resolvedInDoubt() {
    return storage.resolvedInDoubt();
  }

  /** Decided PSAC parts re-evaluated at recovery. */
  long redone() {
    return storage.redone();
  }

  /** What the storage engine's maintenance did. */
  NodeStorage.Counters storageCounters() {
    return storage.counters();
  }

  /** Writes an entity's initial state as a durable record (set-up, before faults). */
  void preload(EntityId entity, List<Operation> operations) {
    long id = newTransactionId();
    recordTransaction(id, "preload-" + entity);
    storage.preload(id, entity, operations);
  }

  /** The entity's latest durable state (absent if never written). */
  EntityState durable(EntityId entity) {
    return storage.durable(entity);
  }

  /**
   * Runs a multi-entity transaction; {@code answer} receives its outcome, unless the node crashes
   * first. Must be up. A planned transaction is ordered by this node's sequencer (a position
   * from this node's clock) and coordinated here, as in the runtime; another node's planned
   * requests may reach a participant out of position order, and the participant rule (a planned
   * request dies rather than wait for a later planned one; retried with the same position) keeps
   * waits acyclic (docs/design/multi-entity-transactions.md).
   */
  void transact(String request, Map<EntityId, CoordinatorCore.Part> parts, boolean planned,
      Consumer<CoordinatorCore.Outcome> answer) {
    Invariants.check(up, "transaction submitted to a node that is down");
    // The request core plans (planned, replanned, then dynamic) and picks each coordinator's
    // limits; planned ones it schedules AUTO, as the API's static transactions.
    requests.transact(request, parts,
        planned ? RequestCore.Scheduling.AUTO : RequestCore.Scheduling.DYNAMIC,
        reply -> answer.accept(asOutcome(request, reply)));
  }

  /**
   * Starts a coordinator as the request core says ({@link SimulatedRequests.Machinery}): a
   * dynamic one under a new id, an interactive commit under its transaction's id, a planned one
   * through this node's sequencer.
   */
  private void startCoordinator(String request, RequestCore.Effect.StartCoordinator start,
      Consumer<CoordinatorCore.Outcome> answer) {
    long key = nextCoordinator++;
    requestOfCoordinator.put(key, request);
    coordinators.put(key, new CoordinatorCore(start.parts(), start.limits(), start.planned(),
        coreMutations()));
    if (settings.lossyTransactionNetwork()
        && start.start() != RequestCore.Start.INTERACTIVE_COMMIT) {
      lossyCoordinators.add(key);
    }
    coordinatorAnswers.put(key, outcome -> {
      lastAnswerOf.put(request, outcome);
      noteCorrupt(request, outcome);
      answer.accept(outcome);
    });
    switch (start.start()) {
      case DYNAMIC -> {
        feedCoordinator(key, new CoordinatorCore.Input.Started(newTransactionId()));
        return;
      }
      case INTERACTIVE_COMMIT -> {
        feedCoordinator(key, new CoordinatorCore.Input.Started(start.transactionId()));
        return;
      }
      case PLANNED -> { }
    }
    sequencer.submit(key);
    if (!drainScheduled) {
      // Submissions that arrive meanwhile join the batch, as under the sequencer's lock.
      drainScheduled = true;
      later(0, "sequencer drains a batch", () -> {
        drainScheduled = false;
        // As PlannedSequencer: the starts of a batch, in position order, by one sender (the
        // thread holding the sequencer's lock), so every participant receives the planned
        // prepares in position order and planned transactions never wait for each other in a
        // cycle. Sent as each coordinator's own, they would interleave and deadlock until the
        // prepare timeout (the simulator's first model did that).
        for (SequencerCore.Positioned<Long> positioned : sequencer.drain(this::newTransactionId)) {
          feedCoordinator(positioned.transaction(), new CoordinatorCore.Input.Started(
              newTransactionId(), positioned.position()), "sequencer");
        }
      });
    }
  }

  /**
   * Runs a single-entity turn; {@code answer} receives its result, unless the node crashes first.
   * Must be up.
   */
  void turn(String request, EntityId entity, Turn turn, Consumer<TurnResult> answer) {
    Invariants.check(up, "turn submitted to a node that is down");
    // The request core decides: run it, or escalate it to a transaction when it reaches
    // declared dependencies.
    requests.turn(request, entity, turn, 0,
        reply -> answer.accept(asTurnResult(request, entity, reply)));
  }

  /** Runs one turn on its entity for the request core ({@link SimulatedRequests.Machinery}). */
  private void runTurn(String request, EntityId entity, Turn turn, long transactionId,
      Consumer<TurnResult> answer) {
    long id = transactionId == 0 ? newTransactionId() : transactionId;
    recordTransaction(id, request);
    Consumer<TurnResult> noted = result -> {
      lastAnswerOf.put(request, result);
      noteCorrupt(request, result);
      answer.accept(result);
    };
    int owner = hostOf(entity);
    if (owner != nodeId) {
      // The entity's node answers with a TurnAnswer; a crash of this node forgets the request.
      remoteTurns.put(id, noted);
      sendToOtherNode(new Envelope.Destination.ToEntity(entity),
          ParticipantMessages.turnRequest(id, entity, typeReferenceOf(entity), turn));
      return;
    }
    send("client-connection", entity.toString(), "turn tx " + id,
        () -> deliverToEntity(entity, new EntityTurnCore.Input.TurnRequested<>(turn,
            typeOf.apply(entity), id, new Recipient.Client(noted))));
  }

  // ------------------------------------------------------------------ interactive transactions

  /** Begins an interactive transaction for {@code request}; returns its id. Must be up. */
  long beginInteractive(String request) {
    Invariants.check(up, "interactive transaction begun on a node that is down");
    long id = newTransactionId();
    recordTransaction(id, request);
    cluster.markInteractive(id);
    requestOfInteractive.put(id, request);
    interactive.begin(id, scheduler.nowMillis());
    scheduleIdleCheck(id);
    return id;
  }

  /**
   * One step of an interactive transaction; {@code answer} receives the entity's answer (or the
   * refusal of the lifecycle core), unless the node crashes first.
   */
  void stepInteractive(long id, EntityId entity, Turn turn, Consumer<TurnResult> client) {
    String request = requestOfInteractive.get(id);
    // The request core ends the transaction when its step failed by an abort (wait-die).
    requests.step(request, id, entity, turn,
        reply -> client.accept(asTurnResult(request, entity, reply)));
  }

  /** Runs one step for the request core ({@link SimulatedRequests.Machinery}). */
  private void runStep(String request, long id, EntityId entity, CompiledType type, Turn turn,
      Consumer<TurnResult> client) {
    Consumer<TurnResult> answer = result -> {
      lastAnswerOf.put(request, result);
      noteCorrupt(request, result);
      client.accept(result);
    };
    try {
      interactive.stepStarted(id, entity, type, scheduler.nowMillis());
    } catch (dev.troupe.model.TroupeException refused) {
      answer.accept(new TurnResult.Failed(refused));
      return;
    }
    Recipient.Step replyTo = new Recipient.Step(id, entity, turn, answer);
    int owner = hostOf(entity);
    cluster.interactiveStepped(id, entity);
    if (owner != nodeId) {
      // As an ask to another node: if the entity's node crashed with the step (or its answer),
      // no answer ever comes; the step fails after the ask's timeout and the transaction aborts
      // (its other parts' locks are released). A late answer is then ignored.
      remoteSteps.add(replyTo);
      remoteStepsSent.add(replyTo);
      later(REMOTE_STEP_TIMEOUT_MILLIS, "step timeout tx " + id + " on " + entity, () -> {
        if (remoteSteps.contains(replyTo)) {
          stepAnswered(replyTo, new TurnResult.Failed(new dev.troupe.model.TroupeException(
              dev.troupe.model.ErrorCode.ABORTED, "the step's node did not answer in time")));
        }
      });
    }
    if (owner != nodeId) {
      sendToOtherNode(new Envelope.Destination.ToEntity(entity), ParticipantMessages.stepRequest(
          id, id, entity, typeReferenceOf(entity), turn));
      return;
    }
    send("interactive", entity.toString(), "step tx " + id, () -> deliverToEntity(entity,
        new EntityTurnCore.Input.StepRequested<>(id, id, turn, type, replyTo)));
  }

  /** Single turns sent to other nodes, by transaction id, waiting for their answer. */
  private final Map<Long, Consumer<TurnResult>> remoteTurns = new HashMap<>();

  /** How long a step on another node may take before it fails (as an ask's timeout). */
  private static final long REMOTE_STEP_TIMEOUT_MILLIS = 300;
  /** Steps sent to other nodes and not answered yet (lost on a crash). */
  private final Set<Recipient.Step> remoteSteps = new java.util.HashSet<>();
  /**
   * Every step this incarnation sent to another node: its answer counts only while it waits in
   * {@link #remoteSteps} (a local step is answered once; the entity's node may change meanwhile
   * in the shared-store mode, so where it lives now does not say how it was sent).
   */
  private final Set<Recipient.Step> remoteStepsSent = new java.util.HashSet<>();

  private void stepAnswered(Recipient.Step step, TurnResult result) {
    if (remoteStepsSent.contains(step) && !remoteSteps.remove(step)) {
      return; // answered after its timeout, or sent by an incarnation that crashed since
    }
    interactive.stepFinished(step.transactionId(), step.entity(), step.turn(),
        result instanceof TurnResult.Done, scheduler.nowMillis());
    scheduleIdleCheck(step.transactionId());
    step.answer().accept(result); // an abort ends the transaction: the request core says so

  }

  /** Commits an interactive transaction; {@code answer} receives the outcome. */
  void commitInteractive(long id, Consumer<CoordinatorCore.Outcome> client) {
    String request = requestOfInteractive.get(id);
    Consumer<CoordinatorCore.Outcome> answer = outcome -> {
      noteCorrupt(request, outcome);
      client.accept(outcome);
    };
    dev.troupe.txn.interactive.InteractiveCore.Commit commit;
    try {
      commit = interactive.commit(id);
    } catch (dev.troupe.model.TroupeException refused) {
      answer.accept(new CoordinatorCore.Outcome.Failed(refused));
      return;
    }
    // The request core answers an empty commit and picks the coordinator's limits.
    requests.commitInteractive(request, id, commit.parts(), commit.types(),
        reply -> client.accept(asOutcome(request, reply)));
  }

  // ------------------------------------------------------------------ the request core

  /**
   * The last answer a request's turn, step or coordinator gave, by request: the request core's
   * replies carry the entity's version and state but not the version the turn read, which the
   * simulator's histories need, so a reply is answered with the full result it came from.
   */
  private final Map<String, Object> lastAnswerOf = new HashMap<>();

  /** The request core's reply to a turn or a step as the entity's result. */
  private TurnResult asTurnResult(String request, EntityId entity, RequestCore.Effect reply) {
    Object last = lastAnswerOf.remove(request);
    return switch (reply) {
      case RequestCore.Effect.ReplyFailure failure -> new TurnResult.Failed(failure.error());
      case RequestCore.Effect.ReplyTurn turn -> fullResult(last, entity,
          new TurnResult.Done(turn.version(), turn.state(), turn.wrote()));
      case RequestCore.Effect.ReplyView view -> fullResult(last, entity,
          new TurnResult.Done(view.version(), view.state(), false));
      case RequestCore.Effect.ReplyTransaction transaction -> fullResult(transaction.committed(),
          entity, null);
      default -> throw new IllegalStateException("not a reply: " + reply);
    };
  }

  /** The entity's own result behind a reply: its turn's, or its part's in a transaction. */
  private static TurnResult fullResult(Object last, EntityId entity, TurnResult otherwise) {
    if (last instanceof TurnResult.Done done) {
      return done;
    }
    if (last instanceof CoordinatorCore.Outcome.Committed committed
        && committed.results().get(entity) != null) {
      CoordinatorCore.ParticipantResult result = committed.results().get(entity);
      return new TurnResult.Done(result.version(), result.state(), result.wrote(),
          result.readVersion());
    }
    Invariants.check(otherwise != null, "no result of %s behind the reply", entity);
    return otherwise;
  }

  /** The request core's reply to a transaction as the coordinator's outcome. */
  private CoordinatorCore.Outcome asOutcome(String request, RequestCore.Effect reply) {
    lastAnswerOf.remove(request);
    return switch (reply) {
      case RequestCore.Effect.ReplyTransaction transaction -> transaction.committed();
      case RequestCore.Effect.ReplyFailure failure ->
          new CoordinatorCore.Outcome.Failed(failure.error());
      default -> throw new IllegalStateException("not a transaction's reply: " + reply);
    };
  }

  /** The node's machinery as the request core's shell runs it. */
  private final class RequestMachinery implements SimulatedRequests.Machinery {
    @Override
    public void runTurn(String request, EntityId entity, CompiledType type, Turn turn,
        long transactionId, Consumer<TurnResult> answer) {
      SimulatedNode.this.runTurn(request, entity, turn, transactionId, answer);
    }

    @Override
    public void runStep(String request, long transactionId, EntityId entity, CompiledType type,
        Turn turn, Consumer<TurnResult> answer) {
      SimulatedNode.this.runStep(request, transactionId, entity, type, turn, answer);
    }

    @Override
    public void startCoordinator(String request, RequestCore.Effect.StartCoordinator start,
        Consumer<CoordinatorCore.Outcome> answer) {
      SimulatedNode.this.startCoordinator(request, start, answer);
    }

    @Override
    public void abortInteractive(long transactionId) {
      SimulatedNode.this.abortInteractive(transactionId);
    }
  }

  /**
   * The request core's limits: the runtime's defaults ({@code reference.conf}: 256 operations,
   * 64 participants, sync depth 4, 10 replans, the turn limits' value limits and dependency
   * chain, the 30 s turn timeout), with the simulation's coordinator limits.
   */
  private static RequestCore.Limits requestLimits(Settings settings) {
    return new RequestCore.Limits(256, 64, 4, 10, TurnLimits.DEFAULTS.values(),
        TurnLimits.DEFAULTS.maxDependencyChain(), settings.coordinatorLimits(), 30_000);
  }

  /** Aborts an interactive transaction: its parts are dropped and its locks released. */
  void abortInteractive(long id) {
    interactive.abort(id).ifPresent(entities -> release(id, entities));
  }

  private void release(long id, List<EntityId> entities) {
    for (EntityId entity : entities) {
      cluster.decidedAbort(id);
      if (hostOf(entity) != nodeId) {
        sendToOtherNode(new Envelope.Destination.ToEntity(entity),
            new WireMessage.Decision(id, entity, false));
        continue;
      }
      send("interactive", entity.toString(), "abort tx " + id, () -> deliverToEntity(entity,
          new EntityTurnCore.Input.DecisionReceived<>(id, false, null)));
    }
  }

  private void scheduleIdleCheck(long id) {
    interactive.idleDeadlineMillis(id).ifPresent(deadline -> later(
        deadline - scheduler.nowMillis(), "idle check tx " + id,
        () -> interactive.expireIfIdle(id, scheduler.nowMillis())
            .ifPresent(entities -> release(id, entities))));
  }

  /**
   * Another node's incarnation died (the cluster's membership says so, as Pekko's would): the
   * parts here of its interactive transactions that can no longer commit are released (an abort,
   * as its client's would be), since nobody else will ever end them (see {@link
   * SimulatedCluster#incarnationDied}).
   */
  void releaseOpenPartsOf(long transactionId, List<EntityId> entities) {
    for (EntityId entity : entities) {
      if (hostOf(entity) == nodeId) {
        send("membership", entity.toString(), "release tx " + transactionId
            + " of a dead incarnation", () -> deliverToEntity(entity,
                new EntityTurnCore.Input.DecisionReceived<>(transactionId, false, null)));
      }
    }
  }

  /** Crashes the node: everything in memory and in flight is lost, so is the unsynced journal. */
  void crash() {
    Invariants.check(up, "crash of a node that is down");
    up = false;
    incarnation++;
    crashes++;
    if (cluster.size() > 1) {
      cluster.incarnationDied(nodeId);
    }
    remoteSteps.clear();
    remoteStepsSent.clear();
    remoteTurns.clear();
    acquiredGeneration.clear();
    requests.crashed();
    lastAnswerOf.clear();
    entities.clear();
    recoveredInDoubt.clear();
    resolvingRecovered.clear();
    coordinators.clear();
    coordinatorAnswers.clear();
    coordinatorOfAttempt.clear();
    lossyCoordinators.clear();
    // Its view of the decision records is memory; recovery forgets every one of them on one node.
    decisionQueries = new dev.troupe.txn.coordinator.DecisionQueryCore();
    sequencer = new SequencerCore<>();
    drainScheduled = false;
    interactive = newInteractiveCore();
    storage.crash();
  }

  /**
   * Restarts: recovers the storage, resolves in-doubt transactions, and serves again. Returns
   * false if recovery met damage and the node could not start: it stays down (its supervisor may
   * try again).
   */
  boolean restart() {
    Invariants.check(!up, "restart of a node that is up");
    up = true; // before recovery: the storage's timers belong to this incarnation
    if (storage.restart()) {
      // Shared-store mode: every id a previous incarnation issued is below this one (the clock's
      // durable ceiling), which tells a coordinator that ended from one of this incarnation (see
      // acquireAssigned). Only there: the other modes draw exactly the ids they always did.
      if (cluster.sharding() != null) {
        incarnationStartId = storage.newTransactionId();
        cluster.nodeRestarted(nodeId);
      }
      InDoubtResolution resolution = storage.lastResolution();
      if (resolution != null) {
        resolution.toAbort().forEach(part ->
            cluster.abandoned(part.transactionId(), part.entity()));
        keepRecoveredInDoubt(resolution);
      }
      return true;
    }
    up = false;
    incarnation++; // the failed start's timers die with it
    return false;
  }

  /** Damages one stored key (the damage fault); returns what, for the trace, or null. */
  String damage() {
    return storage.damage();
  }

  /** Whether the storage refuses every commit until the next restart (damage failed it). */
  boolean storageFailed() {
    return up && storage.failed();
  }

  /** Whether the node was down on damage or its store failed at some time in the interval. */
  boolean degradedDuring(long fromMillis, long toMillis) {
    return storage.degradedDuring(fromMillis, toMillis);
  }

  /** Entities whose stored data was damaged so far. */
  Set<EntityId> damagedEntities() {
    return storage.damagedEntities();
  }

  /** Requests the node answered {@code corrupt_data}. */
  Set<String> answeredCorrupt() {
    return answeredCorrupt;
  }

  /** Entities excluded from the final-state checks: their final read answered corrupt_data. */
  Set<EntityId> unreadableAtEnd() {
    return unreadableAtEnd;
  }

  /** A bug the storage met (a failure not caused by damage), or null. */
  String storageBug() {
    return storage instanceof StoreStorage store && store.failureNotCausedByDamage() != null
        ? "the store failed for a reason other than damage: " + store.failureNotCausedByDamage()
        : null;
  }

  /**
   * The entity's final durable state for the checks, or null if it cannot be read: its data is
   * damaged (corrupt_data), or the node is down because its recovery met damage. Such an entity
   * is excluded from the final-state checks only (and counted).
   */
  EntityState finalState(EntityId entity) {
    if (!up) {
      unreadableAtEnd.add(entity);
      return null;
    }
    try {
      return durable(entity);
    } catch (dev.troupe.model.TroupeException unreadable) {
      Invariants.check(unreadable.code() == dev.troupe.model.ErrorCode.CORRUPT_DATA,
          "the final read of %s failed: %s", entity, unreadable.getMessage());
      unreadableAtEnd.add(entity);
      return null;
    }
  }

  private void noteCorrupt(String request, Object answer) {
    dev.troupe.model.TroupeException error = switch (answer) {
      case TurnResult.Failed failed -> failed.error();
      case CoordinatorCore.Outcome.Failed failed -> failed.error();
      default -> null;
    };
    if (error != null && error.code() == dev.troupe.model.ErrorCode.CORRUPT_DATA) {
      answeredCorrupt.add(request);
      scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
          "answered " + request + ": corrupt_data");
    }
  }

  /**
   * What the surviving journal says each client request wrote: request to entity to the version
   * (commit timestamp) its committed record produced, and the keys it touched. Requests that
   * never committed are absent.
   */
  Map<String, Map<EntityId, NodeStorage.CommittedWrite>> committedWrites() {
    Map<String, Map<EntityId, NodeStorage.CommittedWrite>> writes = new LinkedHashMap<>();
    storage.committedWrites().forEach((transactionId, versions) -> {
      String request = requestOfTransaction.get(transactionId);
      Invariants.check(request != null, "a journal record of an unknown transaction %d",
          transactionId);
      writes.computeIfAbsent(request, ignored -> new LinkedHashMap<>()).putAll(versions);
    });
    return writes;
  }

  /** Per transaction id, the entities whose parts this node's journal applied (ever durable). */
  Map<Long, Map<EntityId, NodeStorage.CommittedWrite>> appliedParts() {
    return storage.committedWrites();
  }

  /** Prepared parts stored now (see {@link NodeStorage#preparedParts}). */
  int preparedParts() {
    return up ? storage.preparedParts() : -1;
  }

  /** Whether the entity's type admits by key locks ({@code keys}) rather than whole-entity ones. */
  boolean locksPerKey(EntityId entity) {
    return typeOf.apply(entity).spec().admission()
        == dev.troupe.model.spec.AdmissionPolicy.KEYS;
  }

  // ------------------------------------------------------------------ entities

  private void deliverToEntity(EntityId entity, EntityTurnCore.Input<Recipient> input) {
    EntityTurnCore<Recipient> core = entities.get(entity);
    if (core == null) {
      if (fencedByRecovery(entity, input)) {
        return;
      }
      if (storage.failed()) {
        // As EntityActor: a failed store's new incarnations refuse; a predecessor may have
        // stopped with parts prepared whose commit decisions still arrive (recovery applies them).
        refuse(entity, input, new dev.troupe.model.TroupeException(
            dev.troupe.model.ErrorCode.UNAVAILABLE, "storage failed"));
        return;
      }
      EntityState state;
      try {
        state = durable(entity);
      } catch (dev.troupe.model.TroupeException unreadable) {
        // As EntityActor: an entity whose state cannot be read (damaged: corrupt_data) never
        // starts from "absent", or its first write would re-create it over its acknowledged
        // keys. It refuses the request; the next one reads the store again (production keeps
        // refusing until its idle check passivates it, then reads again: the same answers).
        refuse(entity, input, unreadable);
        return;
      }
      core = new EntityTurnCore<>(entity, state, TurnLimits.DEFAULTS,
          settings.participantLimits(), 0, coreMutations());
      entities.put(entity, core);
    }
    runEntityEffects(entity, core, core.handle(input));
  }

  /**
   * A storage completion for {@code core}: as pipeToSelf, it reaches that incarnation of the
   * entity only. One that stopped meanwhile (its storage failed) never hears of it: it would be a
   * dead letter in production, and a later incarnation knows nothing of what it submitted.
   */
  private void completeAt(EntityId entity, EntityTurnCore<Recipient> core,
      EntityTurnCore.Input<Recipient> input) {
    if (entities.get(entity) == core) {
      runEntityEffects(entity, core, core.handle(input));
    }
  }

  /** What {@code EntityActor}'s refusing incarnation answers ({@code Routed.refuse}). */
  private void refuse(EntityId entity, EntityTurnCore.Input<Recipient> input,
      dev.troupe.model.TroupeException reason) {
    TurnResult refusal = new TurnResult.Failed(reason);
    Recipient replyTo = switch (input) {
      case EntityTurnCore.Input.TurnRequested<Recipient> turn -> turn.replyTo();
      case EntityTurnCore.Input.PrepareRequested<Recipient> prepare -> prepare.voteTo();
      case EntityTurnCore.Input.ForwardsReceived<Recipient> forwards -> forwards.voteTo();
      case EntityTurnCore.Input.StepRequested<Recipient> step -> step.replyTo();
      // A commit reaches a refusing incarnation only after a failed store stopped the one that
      // voted: it answers that it could not apply it. An abort needs no answer.
      case EntityTurnCore.Input.DecisionReceived<Recipient> decision ->
          decision.commit() ? decision.acknowledgeTo() : null;
      // Completions belong to a core that existed; with none they are stale.
      default -> null;
    };
    if (replyTo != null) {
      reply(entity, new EntityTurnCore.Effect.Reply<>(replyTo, refusal));
    }
  }

  /**
   * Notes which request a transaction id belongs to. An id is a clock tick and must never be
   * issued twice, even across crashes and clock jumps (an interactive transaction's commit reuses
   * its own id, for the same request).
   */
  private void recordTransaction(long transactionId, String request) {
    String previous = requestOfTransaction.put(transactionId, request);
    if (previous != null && !previous.equals(request)
        && issuedByFailedStore.contains(transactionId)) {
      // A known gap, counted and reported rather than failed: see issuedByFailedStore.
      reissuedIds++;
      return;
    }
    Invariants.check(previous == null || previous.equals(request),
        "transaction id %d issued twice: to %s and to %s", transactionId, previous, request);
  }

  /** The breakage the node passes to its entity cores: none, unless it is a core mutation. */
  private Set<Mutations.Mutation> coreMutations() {
    for (Mutations.Mutation core : Mutations.Mutation.values()) {
      if (core.name().equals(settings.mutation().name())) {
        return Set.of(core);
      }
    }
    return Set.of();
  }

  private void runEntityEffects(EntityId entity, EntityTurnCore<Recipient> core,
      List<EntityTurnCore.Effect<Recipient>> effects) {
    boolean dropCommits = false;
    for (EntityTurnCore.Effect<Recipient> effect : effects) {
      switch (effect) {
        // Completions reach the entity as messages, in the order the storage completed them
        // (the production shells' pipeToSelf).
        case EntityTurnCore.Effect.SubmitCommit<Recipient> commit -> {
          if (dropCommits) {
            continue;
          }
          dev.troupe.model.TroupeException refusal = storage.commit(
              commit.transactionId(), entity, commit.operations(), commit.resolvesPrepared(),
              commit.exemptFromQueueLimit(), timestamp -> send("storage", entity.toString(),
                  "commit durable tx " + commit.transactionId(), () -> completeAt(entity, core,
                      new EntityTurnCore.Input.CommitSucceeded<>(commit.serial(), timestamp))),
              failure -> send("storage", entity.toString(),
                  "commit failed tx " + commit.transactionId(), () -> completeAt(entity, core,
                      new EntityTurnCore.Input.CommitFailed<>(commit.serial(),
                          dev.troupe.storage.Store.failureOf(failure), false))));
          if (refusal != null) {
            // As EntityActor: refused before anything was written; the core hears it before
            // any later effect runs, and the later commits of the same batch are dropped.
            dropCommits = true;
            runEntityEffects(entity, core, core.handle(
                new EntityTurnCore.Input.CommitFailed<>(commit.serial(), refusal, true)));
          }
        }
        case EntityTurnCore.Effect.SubmitPrepare<Recipient> prepare -> storage.prepare(
            new PreparedTransaction(prepare.transactionId(), entity, prepare.operations(),
                prepare.redoTurns().isEmpty() ? null : TurnCodec.encode(prepare.redoTurns()),
                prepare.arrival()),
            () -> send("storage", entity.toString(),
                "prepare durable tx " + prepare.transactionId(), () -> completeAt(entity, core,
                    new EntityTurnCore.Input.PrepareSucceeded<>(prepare.transactionId()))),
            failure -> send("storage", entity.toString(),
                "prepare failed tx " + prepare.transactionId(), () -> completeAt(entity, core,
                    new EntityTurnCore.Input.PrepareFailed<>(prepare.transactionId(),
                        dev.troupe.storage.Store.failureOf(failure)))));
        case EntityTurnCore.Effect.AbandonPrepared<Recipient> abandon -> {
          cluster.abandoned(abandon.transactionId(), entity);
          storage.abandonPrepared(abandon.transactionId(), entity);
        }
        case EntityTurnCore.Effect.Reply<Recipient> reply -> reply(entity, reply);
        case EntityTurnCore.Effect.ReportForwards<Recipient> report
            when report.voteTo() instanceof Recipient.Voter voter
                && voter.coordinator() != Recipient.REMOTE ->
            // A coordinator on this node takes the forwards before the vote (as the runtime
            // does); between nodes the report is dropped: the vote carries the same forwards.
            routeTransactional(voter.coordinator(), voter.transactionId(),
                cluster.nodeOfTransaction(voter.transactionId()), entity.toString(),
                "coordinator-" + voter.coordinator(), "forwards " + entity + " round "
                    + voter.round(),
                at -> at.feedCoordinator(voter.coordinator(),
                    new CoordinatorCore.Input.ForwardsReported(voter.participant(),
                        voter.transactionId(), report.forwards(), voter.round())));
        case EntityTurnCore.Effect.ReportForwards<Recipient> ignored -> {}
        case EntityTurnCore.Effect.Stop<Recipient> ignored -> entities.remove(entity, core);
        case EntityTurnCore.Effect.OfferPassivation<Recipient> ignored -> {}
        case EntityTurnCore.Effect.ScheduleInDoubtQuery<Recipient> check -> {
          // Only where a decision can be lost, as the runtime asks only with a DecisionDirectory
          // wired: over the mailboxes a single node behaves exactly as before. Between nodes a
          // decision can be lost too.
          if (transactionNetwork != mailboxes || cluster.size() > 1) {
            later(check.delayMillis(), "in-doubt check tx " + check.transactionId() + " on "
                + entity, () -> completeAt(entity, core,
                    new EntityTurnCore.Input.InDoubtQueryDue<>(check.transactionId())));
          }
        }
        case EntityTurnCore.Effect.QueryDecision<Recipient> query -> askDecision(entity, query);
      }
    }
  }

  private void reply(EntityId entity, EntityTurnCore.Effect.Reply<Recipient> reply) {
    if (reply.replyTo() == null) {
      // The answer to a decision nobody acknowledges (an in-doubt answer): e.g. its commit was
      // refused by a fence (the partition moved). Nobody waits for it; the new owner resolves it.
      return;
    }
    switch (reply.replyTo()) {
      case Recipient.Client client -> client.answer().accept(reply.result());
      case Recipient.RemoteClient client -> sendToOtherNode(
          new Envelope.Destination.ToNode(client.node()),
          ParticipantMessages.turnAnswer(client.transactionId(), entity, reply.result()));
      case Recipient.Step step when cluster.nodeOfTransaction(step.transactionId()) != nodeId ->
          sendToOtherNode(
              new Envelope.Destination.ToNode(cluster.nodeOfTransaction(step.transactionId())),
              ParticipantMessages.stepAnswer(step.transactionId(), entity, reply.result()));
      case Recipient.Step step -> send(entity.toString(), "interactive", "step answer " + entity,
          () -> stepAnswered(step, reply.result()));
      case Recipient.Voter voter when voter.coordinator() == Recipient.REMOTE -> sendToOtherNode(
          new Envelope.Destination.ToNode(cluster.nodeOfTransaction(voter.transactionId())),
          ParticipantMessages.vote(voter.transactionId(), voter.participant(), voter.round(),
              reply.result()));
      case Recipient.Acknowledger acknowledger
          when acknowledger.coordinator() == Recipient.REMOTE -> sendToOtherNode(
              new Envelope.Destination.ToNode(
                  cluster.nodeOfTransaction(acknowledger.transactionId())),
              ParticipantMessages.acknowledgement(acknowledger.transactionId(),
                  acknowledger.participant(), reply.result()));
      case Recipient.Voter voter -> routeTransactional(voter.coordinator(), voter.transactionId(),
          cluster.nodeOfTransaction(voter.transactionId()), entity.toString(),
          "coordinator-" + voter.coordinator(), "vote " + entity + " round " + voter.round(),
          at -> at.feedCoordinator(voter.coordinator(),
              new CoordinatorCore.Input.VoteReceived(voter.participant(),
                  voter.transactionId(), reply.result(), voter.round())));
      case Recipient.Acknowledger acknowledger -> routeTransactional(acknowledger.coordinator(),
          acknowledger.transactionId(),
          cluster.nodeOfTransaction(acknowledger.transactionId()), entity.toString(),
          "coordinator-" + acknowledger.coordinator(), "ack " + entity,
          at -> at.feedCoordinator(acknowledger.coordinator(),
              new CoordinatorCore.Input.Acknowledged(acknowledger.participant(),
                  acknowledger.transactionId(), reply.result())));
    }
  }

  // ------------------------------------------------------------------ coordinators

  private void feedCoordinator(long key, CoordinatorCore.Input input) {
    feedCoordinator(key, input, "coordinator-" + key);
  }

  /**
   * Persists a commit decision as the runtime's coordinator shell does ({@code TransactionRun}):
   * when every participant it names is hosted by this node on its own storage (not the shared
   * store), their synced commits make it durable and it is written without a sync of its own
   * ({@link NodeStorage#persistDecisionBeforeLocalCommits}). {@code durable} (the ledger's
   * record that the commit is decided) runs once it is durable: at once with a synced decision,
   * else once a later sync covered it.
   */
  private void persistDecision(DecidedTransaction decision, Runnable durable, Runnable written,
      java.util.function.Consumer<Throwable> failed) {
    boolean local = cluster.sharedDatabase() == null;
    for (EntityId participant : decision.participants()) {
      local &= hostOf(participant) == nodeId;
    }
    if (local) {
      storage.persistDecisionBeforeLocalCommits(decision, written, durable, failed);
    } else {
      storage.persistDecision(decision, () -> {
        durable.run();
        written.run();
      }, failed);
    }
  }

  /** {@code prepareSender}: whose mailbox order the prepares this input causes follow. */
  private void feedCoordinator(long key, CoordinatorCore.Input input, String prepareSender) {
    CoordinatorCore core = coordinators.get(key);
    if (core == null) {
      return; // finished: a late vote or acknowledgement
    }
    switch (input) {
      case CoordinatorCore.Input.Started started -> {
        recordTransaction(started.transactionId(), requestOfCoordinator.get(key));
        coordinatorOfAttempt.put(started.transactionId(), key);
      }
      case CoordinatorCore.Input.RetryDue retry -> {
        recordTransaction(retry.transactionId(), requestOfCoordinator.get(key));
        coordinatorOfAttempt.put(retry.transactionId(), key);
      }
      default -> {}
    }
    for (CoordinatorCore.Effect effect : core.handle(input)) {
      switch (effect) {
        case CoordinatorCore.Effect.SendPrepare prepare -> {
          Recipient voteTo =
              new Recipient.Voter(key, prepare.participant(), prepare.transactionId(), 1);
          if (hostOf(prepare.participant()) != nodeId) {
            sendToOtherNode(new Envelope.Destination.ToEntity(prepare.participant()),
                CoordinatorMessages.prepare(prepare, typeReferenceOf(prepare.participant())));
            continue;
          }
          CompiledType type = typeOf.apply(prepare.participant());
          routeTransactional(key, prepare.transactionId(), hostOf(prepare.participant()),
              prepareSender,
              prepare.participant().toString(), "prepare tx " + prepare.transactionId(),
              at -> at.deliverToEntity(prepare.participant(),
                  new EntityTurnCore.Input.PrepareRequested<>(prepare.transactionId(),
                      prepare.startTimestamp(), prepare.part().turns(),
                      prepare.part().readsState(), type, voteTo, prepare.planned(),
                      prepare.part().forwards(), prepare.part().reserved(),
                      prepare.part().knownLocks())));
        }
        case CoordinatorCore.Effect.SendForwards forwards -> {
          if (hostOf(forwards.participant()) != nodeId) {
            sendToOtherNode(new Envelope.Destination.ToEntity(forwards.participant()),
                CoordinatorMessages.forwardsChanged(forwards, forwards.round()));
            continue;
          }
          Recipient voteTo = new Recipient.Voter(key, forwards.participant(),
              forwards.transactionId(), forwards.round());
          routeTransactional(key, forwards.transactionId(),
              hostOf(forwards.participant()), "coordinator-" + key,
              forwards.participant().toString(),
              "forwards tx " + forwards.transactionId() + " round " + forwards.round(),
              at -> at.deliverToEntity(forwards.participant(),
                  new EntityTurnCore.Input.ForwardsReceived<>(forwards.transactionId(),
                      forwards.forwards(), voteTo, forwards.round())));
        }
        case CoordinatorCore.Effect.SchedulePrepareTimeout timeout -> later(
            timeout.delayMillis(), "prepare timeout tx " + timeout.transactionId(),
            () -> feedCoordinator(key,
                new CoordinatorCore.Input.PrepareTimedOut(timeout.transactionId())));
        case CoordinatorCore.Effect.ScheduleRetry retry -> later(retry.delayMillis(),
            "retry coordinator " + key,
            () -> feedCoordinator(key, new CoordinatorCore.Input.RetryDue(newTransactionId())));
        case CoordinatorCore.Effect.PersistDecision decision -> persistDecision(
            new DecidedTransaction(decision.transactionId(), decision.participants()),
            // Once durable, whatever becomes of this incarnation: the commit is decided.
            () -> cluster.decidedCommit(decision.transactionId()),
            () -> {
              send("storage", "coordinator-" + key,
                  "decision durable tx " + decision.transactionId(), () -> {
                    decisionQueries.handle(new dev.troupe.txn.coordinator.DecisionQueryCore.Input
                        .DecisionRecorded(decision.transactionId()));
                    feedCoordinator(key,
                        new CoordinatorCore.Input.DecisionPersisted(null, false));
                  });
            },
            failure -> send("storage", "coordinator-" + key,
                "decision failed tx " + decision.transactionId(), () -> {
                  CoordinatorCore.Input.DecisionPersisted persisted =
                      CoordinatorCore.Input.DecisionPersisted.ofStoreAnswer(failure);
                  if (persisted.unknown()) {
                    decisionQueries.handle(new dev.troupe.txn.coordinator.DecisionQueryCore.Input
                        .DecisionWriteUncertain(decision.transactionId()));
                  }
                  feedCoordinator(key, persisted);
                }));
        case CoordinatorCore.Effect.ScheduleDecisionResend resend -> later(resend.delayMillis(),
            "decision resend tx " + resend.transactionId(), () -> feedCoordinator(key,
                new CoordinatorCore.Input.DecisionResendDue(resend.transactionId())));
        case CoordinatorCore.Effect.SendDecision decision -> {
          Recipient acknowledgeTo = decision.commit()
              ? new Recipient.Acknowledger(key, decision.participant(), decision.transactionId())
              : null;
          if (!decision.commit()) {
            cluster.decidedAbort(decision.transactionId());
          }
          if (hostOf(decision.participant()) != nodeId) {
            sendToOtherNode(new Envelope.Destination.ToEntity(decision.participant()),
                CoordinatorMessages.decision(decision));
            continue;
          }
          routeTransactional(key, decision.transactionId(),
              hostOf(decision.participant()), "coordinator-" + key,
              decision.participant().toString(),
              (decision.commit() ? "commit" : "abort") + " tx " + decision.transactionId(),
              at -> at.deliverToEntity(decision.participant(),
                  new EntityTurnCore.Input.DecisionReceived<>(decision.transactionId(),
                      decision.commit(), acknowledgeTo)));
        }
        case CoordinatorCore.Effect.ForgetDecision forget -> {
          storage.forgetDecision(
              new DecidedTransaction(forget.transactionId(), forget.participants()));
          decisionQueries.handle(new dev.troupe.txn.coordinator.DecisionQueryCore.Input.DecisionForgotten(
              forget.transactionId()));
        }
        case CoordinatorCore.Effect.Reply reply -> {
          Consumer<CoordinatorCore.Outcome> answer = coordinatorAnswers.get(key);
          if (answer != null) {
            answer.accept(reply.outcome());
          }
        }
        case CoordinatorCore.Effect.Finished ignored -> {
          coordinators.remove(key);
          coordinatorAnswers.remove(key);
          coordinatorOfAttempt.values().removeIf(coordinator -> coordinator == key);
          lossyCoordinators.remove(key);
        }
      }
    }
  }

  // ------------------------------------------------------------------ in-doubt questions

  /**
   * A participant in doubt asks the coordinator's node (this one: a single node issues every id)
   * over the transaction network; the answer goes back the same way, a commit or an abort fed as
   * a decision nobody acknowledges, "undecided" dropped (the participant asks again).
   */
  private void askDecision(EntityId entity, EntityTurnCore.Effect.QueryDecision<Recipient> query) {
    long transactionId = query.transactionId();
    inDoubtQuestions++;
    int coordinatorNode = cluster.nodeOfTransaction(transactionId);
    if (coordinatorNode != nodeId) {
      askElsewhere(entity, transactionId, coordinatorNode);
      return;
    }
    Long coordinator = coordinatorOfAttempt.get(transactionId);
    // An interactive commit's part never crosses the lossy network: ask over the mailboxes.
    long route = coordinator != null && !lossyCoordinators.contains(coordinator) ? coordinator : -1;
    sendTransactional(route, entity.toString(), "decisions", "in-doubt question tx "
        + transactionId, () -> {
          Long live = coordinatorOfAttempt.get(transactionId);
          CoordinatorCore core = live == null ? null : coordinators.get(live);
          CoordinatorCore.Knowledge knowledge =
              core == null ? CoordinatorCore.Knowledge.NOT_MINE : core.knowledgeOf(transactionId);
          for (dev.troupe.txn.coordinator.DecisionQueryCore.Effect effect : decisionQueries.handle(
              new dev.troupe.txn.coordinator.DecisionQueryCore.Input.Asked(transactionId, knowledge))) {
            switch (effect) {
              case dev.troupe.txn.coordinator.DecisionQueryCore.Effect.Answered answered -> {
                if (answered.answer() == dev.troupe.txn.coordinator.DecisionQueryCore.Answer.UNDECIDED) {
                  continue;
                }
                boolean commit =
                    answered.answer() == dev.troupe.txn.coordinator.DecisionQueryCore.Answer.COMMITTED;
                sendTransactional(route, "decisions", entity.toString(),
                    "in-doubt answer " + (commit ? "commit" : "abort") + " tx " + transactionId,
                    () -> {
                      inDoubtAnswers++;
                      deliverAnswer(entity, transactionId, commit);
                    });
              }
            }
          }
        });
  }

  /**
   * Asks node {@code coordinatorNode} over the network between nodes what became of {@code
   * transactionId} (a {@code DecisionQuery}); a commit or abort answer comes back as a {@code
   * DecisionAnswer} and is fed to the entity as its decision (a part recovery kept in doubt takes
   * it through {@link #fencedByRecovery}); "undecided" is not answered (the asker asks again).
   */
  private void askElsewhere(EntityId entity, long transactionId, int coordinatorNode) {
    if (cluster.sharding() != null && !cluster.memberInViewOf(nodeId, coordinatorNode)) {
      answerForAnotherNode(entity, transactionId, coordinatorNode);
      return;
    }
    sendToOtherNode(new Envelope.Destination.ToNode(coordinatorNode),
        ParticipantMessages.decisionQuery(transactionId, nodeId, entity));
  }

  /**
   * Shared-store mode: a question about a transaction whose coordinator's node is no member in
   * this node's view goes to this node's own inbox (as the cluster transport hands it), where it
   * is answered from the shared store ({@code DecisionDirectory.askForAnotherNode}): whether that
   * node's coordinators are ended, read after the question arrived, then its decision record
   * ({@code DecisionQueryCore.Input.AskedForAnotherNode}); "undecided" (not ended yet) is not
   * answered, so the part asks again.
   */
  private void answerForAnotherNode(EntityId entity, long transactionId, int coordinatorNode) {
    send(entity.toString(), "decisions", "in-doubt question tx " + transactionId
        + " for removed " + SimulatedCluster.nameOf(coordinatorNode), () -> {
          dev.troupe.txn.coordinator.DecisionQueryCore.Answer answer =
              answerFromStore(transactionId, coordinatorNode);
          if (answer == dev.troupe.txn.coordinator.DecisionQueryCore.Answer.UNDECIDED) {
            return;
          }
          answeredForOtherNodes++;
          inDoubtAnswers++;
          deliverAnswer(entity, transactionId,
              answer == dev.troupe.txn.coordinator.DecisionQueryCore.Answer.COMMITTED);
        });
  }

  /**
   * What the shared store says of another node's transaction: reads whether that node's
   * coordinators are ended, then (only if so) whether its decision record exists, in that order
   * (a decision its coordinator still had in flight is then visible or refused). Under the
   * breakage {@link Mutation#PRESUME_ABORT_WITHOUT_END} "ended" is never read (nor ever done).
   */
  private dev.troupe.txn.coordinator.DecisionQueryCore.Answer answerFromStore(long transactionId,
      int coordinatorNode) {
    StoreStorage store = (StoreStorage) storage;
    boolean ended;
    boolean recorded;
    try {
      ended = settings.mutation() == Mutation.PRESUME_ABORT_WITHOUT_END
          || store.coordinatorEnded(coordinatorNode);
      recorded = ended && store.decisionRecorded(transactionId);
    } catch (dev.troupe.model.TroupeException unreadable) {
      return dev.troupe.txn.coordinator.DecisionQueryCore.Answer.UNDECIDED;
    }
    for (dev.troupe.txn.coordinator.DecisionQueryCore.Effect effect : decisionQueries.handle(
        new dev.troupe.txn.coordinator.DecisionQueryCore.Input.AskedForAnotherNode(
            transactionId, ended, recorded))) {
      switch (effect) {
        case dev.troupe.txn.coordinator.DecisionQueryCore.Effect.Answered answered -> {
          return answered.answer();
        }
      }
    }
    return dev.troupe.txn.coordinator.DecisionQueryCore.Answer.UNDECIDED;
  }

  /** In-doubt questions about removed nodes' transactions this node answered from the store. */
  private long answeredForOtherNodes;

  long answeredForOtherNodes() {
    return answeredForOtherNodes;
  }

  /**
   * Delivers the answer to an in-doubt question. A presumed abort is an abort decision for the
   * ledger only if it resolves a part still in doubt: a question that crossed the commit gets a
   * presumed abort from a coordinator that was acknowledged and forgot, which the part ignores
   * (EntityTurnCore.Input.DecisionAnswered), so it decided nothing.
   */
  private void deliverAnswer(EntityId entity, long transactionId, boolean commit) {
    EntityTurnCore<Recipient> core = entities.get(entity);
    if (!commit && core != null && core.awaitsDecision(transactionId)) {
      cluster.decidedAbort(transactionId);
    }
    deliverToEntity(entity, new EntityTurnCore.Input.DecisionAnswered<>(transactionId, commit));
  }

  /**
   * This node's answer about a transaction it issued: commit (true), abort (false, presumed when
   * no live coordinator knows it and no record commits it) or undecided (null).
   */
  private Boolean answerInDoubtQuestion(long transactionId) {
    Long live = coordinatorOfAttempt.get(transactionId);
    CoordinatorCore core = live == null ? null : coordinators.get(live);
    CoordinatorCore.Knowledge knowledge =
        core == null ? CoordinatorCore.Knowledge.NOT_MINE : core.knowledgeOf(transactionId);
    for (dev.troupe.txn.coordinator.DecisionQueryCore.Effect effect : decisionQueries.handle(
        new dev.troupe.txn.coordinator.DecisionQueryCore.Input.Asked(transactionId, knowledge))) {
      switch (effect) {
        case dev.troupe.txn.coordinator.DecisionQueryCore.Effect.Answered answered -> {
          if (answered.answer() == dev.troupe.txn.coordinator.DecisionQueryCore.Answer.UNDECIDED) {
            return null;
          }
          // A presumed abort counts in the ledger only where it resolves a part in doubt (see
          // deliverAnswer): it may cross the commit of a part that no longer asks.
          return answered.answer() == dev.troupe.txn.coordinator.DecisionQueryCore.Answer.COMMITTED;
        }
      }
    }
    return null;
  }

  // ------------------------------------------------------------------ recovery in a cluster

  /**
   * Per entity, the prepared parts this incarnation's recovery kept in doubt (their coordinator is
   * on another node: {@code InDoubtResolution.toAsk}), in arrival order. Until its queue is empty
   * the entity serves nothing (a core started from its durable state would not hold the parts'
   * locks): the node asks each part's coordinator's node, head first, and commits (redoing a PSAC
   * part on the state the previous one left) or abandons it as answered.
   */
  private final Map<EntityId, java.util.ArrayDeque<PreparedTransaction>> recoveredInDoubt =
      new HashMap<>();

  private void keepRecoveredInDoubt(InDoubtResolution resolution) {
    if (!resolution.decisionsToKeep().isEmpty()) {
      // Records of commits whose participants elsewhere may still ask: this node answers commit.
      decisionQueries.handle(new dev.troupe.txn.coordinator.DecisionQueryCore.Input.DecisionsRecovered(
          resolution.decisionsToKeep().stream().map(DecidedTransaction::transactionId).toList()));
    }
    List<PreparedTransaction> parts = new java.util.ArrayList<>(resolution.toAsk());
    parts.sort(java.util.Comparator.comparingLong(PreparedTransaction::arrival));
    for (PreparedTransaction part : parts) {
      recoveredInDoubt.computeIfAbsent(part.entity(), ignored -> new java.util.ArrayDeque<>())
          .addLast(part);
    }
    // Only the entities of these parts: those of earlier acquisitions are asked about already.
    List<EntityId> fenced = new java.util.ArrayList<>(
        new java.util.LinkedHashSet<>(parts.stream().map(PreparedTransaction::entity).toList()));
    fenced.sort(java.util.Comparator.comparing(EntityId::toString)); // a seed fixes the order
    fenced.forEach(this::askAboutRecovered);
  }

  /** Asks about the entity's first recovered part, and again every in-doubt interval. */
  private void askAboutRecovered(EntityId entity) {
    java.util.ArrayDeque<PreparedTransaction> parts = recoveredInDoubt.get(entity);
    if (parts == null) {
      return;
    }
    PreparedTransaction head = parts.peekFirst();
    inDoubtQuestions++;
    int coordinatorNode = cluster.nodeOfTransaction(head.transactionId());
    if (coordinatorNode == nodeId) {
      // A partition this node acquired holds a part one of its own live coordinators runs (a
      // hand-off in the middle of the transaction): asked over the mailboxes.
      long transactionId = head.transactionId();
      send("recovery", "decisions", "in-doubt question tx " + transactionId, () -> {
        Boolean commit = answerInDoubtQuestion(transactionId);
        if (commit != null) {
          inDoubtAnswers++;
          deliverAnswer(entity, transactionId, commit);
        }
      });
    } else {
      askElsewhere(entity, head.transactionId(), coordinatorNode);
    }
    later(settings.participantLimits().inDoubtQueryIntervalMillis(),
        "recovered in-doubt check tx " + head.transactionId() + " on " + entity, () -> {
          java.util.ArrayDeque<PreparedTransaction> now = recoveredInDoubt.get(entity);
          if (now != null && now.peekFirst() == head && !resolvingRecovered.contains(head)) {
            askAboutRecovered(entity);
          }
        });
  }

  /** Recovered parts being committed (between the answer and the durable commit). */
  private final Set<PreparedTransaction> resolvingRecovered = new java.util.HashSet<>();

  /** The decision of a recovered part: applied if it is still the entity's first. */
  private void recoveredDecided(EntityId entity, long transactionId, boolean commit) {
    java.util.ArrayDeque<PreparedTransaction> parts = recoveredInDoubt.get(entity);
    PreparedTransaction head = parts == null ? null : parts.peekFirst();
    if (head == null || head.transactionId() != transactionId
        || resolvingRecovered.contains(head)) {
      return; // a duplicate answer, or one about a part already resolved
    }
    if (!commit) {
      cluster.decidedAbort(transactionId); // it resolved a part in doubt
      cluster.abandoned(transactionId, entity);
      storage.abandonPrepared(transactionId, entity);
      recoveredResolved(entity);
      return;
    }
    List<Operation> operations = head.operations();
    if (head.needsRedo()) {
      operations = dev.troupe.txn.TurnEvaluator.redo(entity, typeOf.apply(entity),
          durable(entity), TurnCodec.decode(head.redo()), transactionId, 0, TurnLimits.DEFAULTS);
      if (operations.isEmpty()) {
        storage.abandonPrepared(transactionId, entity); // as recovery: nothing to write
        recoveredResolved(entity);
        return;
      }
    }
    resolvingRecovered.add(head);
    dev.troupe.model.TroupeException refusal = storage.commit(transactionId, entity, operations,
        true, true, timestamp -> send("storage", "recovery",
            "recovered commit durable tx " + transactionId, () -> {
              if (!resolvingRecovered.remove(head)) {
                return; // its partition was released meanwhile: the next owner resolved it
              }
              recoveredResolved(entity);
            }),
        failure -> send("storage", "recovery", "recovered commit failed tx " + transactionId,
            () -> resolvingRecovered.remove(head)));
    if (refusal != null) {
      resolvingRecovered.remove(head); // a failed store: the next restart recovers it again
    }
  }

  private void recoveredResolved(EntityId entity) {
    java.util.ArrayDeque<PreparedTransaction> parts = recoveredInDoubt.get(entity);
    parts.pollFirst();
    if (parts.isEmpty()) {
      recoveredInDoubt.remove(entity);
    } else {
      askAboutRecovered(entity);
    }
  }

  /**
   * An input for an entity whose recovered parts are still in doubt: a decision about one of
   * them resolves it; anything else is refused as by a store that cannot serve yet.
   */
  private boolean fencedByRecovery(EntityId entity, EntityTurnCore.Input<Recipient> input) {
    java.util.ArrayDeque<PreparedTransaction> parts = recoveredInDoubt.get(entity);
    if (parts == null) {
      return false;
    }
    if (input instanceof EntityTurnCore.Input.DecisionReceived<Recipient> decision
        && parts.peekFirst().transactionId() == decision.transactionId()) {
      recoveredDecided(entity, decision.transactionId(), decision.commit());
      return true; // acknowledged by the entity's core once unfenced (the coordinator resends)
    }
    if (input instanceof EntityTurnCore.Input.DecisionAnswered<Recipient> answer
        && parts.peekFirst().transactionId() == answer.transactionId()) {
      recoveredDecided(entity, answer.transactionId(), answer.commit());
      return true;
    }
    refuse(entity, input, new dev.troupe.model.TroupeException(
        dev.troupe.model.ErrorCode.UNAVAILABLE, "in doubt since recovery"));
    return true;
  }

  /** In-doubt questions asked, and answered with a decision (for the run's summary). */
  long inDoubtQuestions() {
    return inDoubtQuestions;
  }

  long inDoubtAnswers() {
    return inDoubtAnswers;
  }

  // ------------------------------------------------------------------ the shared-store mode

  /** The first transaction id of this incarnation: every earlier id of this node's is dead. */
  private long incarnationStartId;
  /**
   * Partitions this incarnation acquired, to the sharding generation it acquired them under
   * ({@link SimulatedSharding}): one whose view holds another generation is acquired anew.
   */
  private final Map<Integer, Long> acquiredGeneration = new java.util.TreeMap<>();
  /** Partitions this node acquired (hand-offs to it) and released, over the run. */
  private long partitionsAcquired;
  private long partitionsReleased;

  /** Where this node routes a message for {@code entity}: its own view of the placement. */
  private int hostOf(EntityId entity) {
    return cluster.nodeOf(entity, nodeId);
  }

  /** Writes of this node a fence refused (another node had acquired the partition). */
  long fencedPartitions() {
    return storage instanceof StoreStorage store ? store.fencedPartitions() : 0;
  }

  /** Decision writes of this node the coordinator fence refused (it was ended: a zombie). */
  long refusedDecisions() {
    return storage instanceof StoreStorage store ? store.refusedDecisions() : 0;
  }

  /** Ends of removed members' coordinators this node made that took their partition. */
  long coordinatorsEnded() {
    return storage instanceof StoreStorage store ? store.coordinatorsEnded() : 0;
  }

  long partitionsAcquired() {
    return partitionsAcquired;
  }

  long partitionsReleased() {
    return partitionsReleased;
  }

  /** The first id this incarnation issued (see {@link #incarnationStartId}). */
  long incarnationStartId() {
    return incarnationStartId;
  }

  /** Whether the storage writes {@code partition} now (shared-store mode). */
  boolean ownsPartition(int partition) {
    return up && storage instanceof StoreStorage store && store.owns(partition);
  }

  /**
   * After a rebalance, first step on each live node: gives up the partitions its view no longer
   * assigns to it, or assigns under a newer generation (the partition host stops: its entities'
   * cores and its recovered parts go, and the store drains and stops its writer).
   */
  void releaseUnassigned() {
    for (int partition : List.copyOf(acquiredGeneration.keySet())) {
      if (!cluster.sharding().assignedInView(nodeId, partition)
          || cluster.sharding().viewGeneration(nodeId, partition)
              != acquiredGeneration.get(partition)) {
        stopPartition(partition);
      }
    }
  }

  /**
   * After every live node released, second step: acquires the partitions its view assigns to it
   * that it does not hold under that generation, and resolves their two-phase-commit state ({@code
   * AcquiredPartition.resolution}): decided parts committed, parts of coordinators that ended
   * without a decision abandoned, and every other part kept in doubt here, asking its
   * coordinator's node (never aborted: that coordinator may still commit).
   */
  void acquireAssigned() {
    for (int partition = 0; partition < cluster.sharding().partitions(); partition++) {
      long generation = cluster.sharding().viewGeneration(nodeId, partition);
      if (!cluster.sharding().assignedInView(nodeId, partition)
          || Long.valueOf(generation).equals(acquiredGeneration.get(partition))) {
        continue;
      }
      dropPartitionState(partition);
      InDoubtResolution resolution = ((StoreStorage) storage).acquire(partition,
          this::coordinatorEnded, entity -> hostOf(entity) == nodeId);
      if (resolution == null) {
        continue; // refused: the next rebalance tries again
      }
      partitionsAcquired++;
      acquiredGeneration.put(partition, generation);
      scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(), SimulatedCluster.nameOf(
          nodeId) + " acquired partition " + partition + " (" + resolution.toCommit().size()
          + " parts committed, " + resolution.toAbort().size() + " abandoned, "
          + resolution.toAsk().size() + " in doubt)");
      resolution.toAbort().forEach(part -> cluster.abandoned(part.transactionId(), part.entity()));
      keepRecoveredInDoubt(resolution);
    }
  }

  /**
   * Whether the coordinator of {@code transactionId} ended without a decision it could still
   * record: its node is down, or restarted since it issued the id. A coordinator of a node that is
   * up (even cut off) may still decide commit: its parts are asked about, never aborted.
   */
  private boolean coordinatorEnded(long transactionId) {
    int coordinatorNode = cluster.nodeOfTransaction(transactionId);
    if (coordinatorNode == nodeId) {
      return transactionId < incarnationStartId; // an earlier incarnation of this node
    }
    // As StorePartitionOwner: another node's coordinator ended without a decision only if the
    // store says so (its coordinators ended, then no record), whatever its node does now.
    return answerFromStore(transactionId, coordinatorNode)
        == dev.troupe.txn.coordinator.DecisionQueryCore.Answer.ABORTED;
  }

  /** This incarnation's coordinator epoch (shared-store mode), for the membership's roles. */
  long coordinatorEpoch() {
    return ((StoreStorage) storage).coordinatorEpoch();
  }

  /**
   * As {@code RemovedCoordinators}: the membership removed the incarnation of node {@code node}
   * that joined with coordinator epoch {@code epoch}; this survivor ends its coordinators in the
   * store (conditional: a late or repeated end, or one after that node restarted, is a no-op).
   */
  void endCoordinatorOf(int node, long epoch) {
    if (settings.mutation() == Mutation.PRESUME_ABORT_WITHOUT_END) {
      return; // the breakage: nobody ends a removed member's coordinators
    }
    try {
      ((StoreStorage) storage).endCoordinator(node, epoch);
    } catch (dev.troupe.model.TroupeException unavailable) {
      // The store cannot do it now (failed); another survivor's end, or a later one, does.
    }
  }

  /** A fence refused a write of {@code partition}: another node acquired it. The host stops. */
  private void partitionLost(int partition) {
    if (up && !ownsPartition(partition)) {
      stopPartition(partition);
    }
  }

  private void stopPartition(int partition) {
    dropPartitionState(partition);
    ((StoreStorage) storage).release(partition);
    if (acquiredGeneration.remove(partition) != null) {
      partitionsReleased++;
      scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
          SimulatedCluster.nameOf(nodeId) + " released partition " + partition);
    }
  }

  /** Forgets the cores and recovered parts of the partition's entities (its host stopped). */
  private void dropPartitionState(int partition) {
    entities.keySet().removeIf(entity -> cluster.sharding().partitionOf(entity) == partition);
    recoveredInDoubt.keySet().removeIf(
        entity -> cluster.sharding().partitionOf(entity) == partition);
    resolvingRecovered.removeIf(part -> cluster.sharding().partitionOf(part.entity()) == partition);
  }

  /** Lets the network between coordinators and participants heal (no more loss or duplication). */
  void healTransactionNetwork() {
    if (transactionNetwork != mailboxes) {
      transactionNetwork.setFaults(HEALED_TRANSACTION_NETWORK);
    }
  }

  /**
   * What is still unresolved once the run is over (every message delivered, every timer fired):
   * a live coordinator (still waiting for votes or acknowledgements), or an entity with a part of
   * a transaction it has not seen decided. Null when nothing is: after healing, every in-doubt
   * part must be resolved and every decision acknowledged.
   */
  String unresolvedTransactions() {
    if (!up) {
      return null;
    }
    if (!recoveredInDoubt.isEmpty()) {
      return "parts kept in doubt by recovery are still unresolved at "
          + recoveredInDoubt.keySet();
    }
    if (!coordinators.isEmpty()) {
      long key = coordinators.keySet().iterator().next();
      return coordinators.size() + " coordinators never finished, e.g. of request "
          + requestOfCoordinator.get(key) + " (transaction "
          + coordinators.get(key).transactionId() + ")";
    }
    for (Map.Entry<EntityId, EntityTurnCore<Recipient>> entity : entities.entrySet()) {
      if (entity.getValue().openTransactions() > 0) {
        return entity.getKey() + " still holds " + entity.getValue().openTransactions()
            + " undecided transaction parts";
      }
    }
    return null;
  }

  // ------------------------------------------------------------------ between nodes

  /** The version every simulated type travels under: the workloads' types are fixed for a run. */
  static final long TYPE_VERSION = 0;

  private static TypeReference typeReferenceOf(EntityId entity) {
    return new TypeReference(entity.type(), TYPE_VERSION);
  }

  /**
   * Hands a message for another node to the {@link dev.troupe.txn.port.Transport}: it is encoded
   * there and decoded by the receiver's {@link #receive}.
   */
  private void sendToOtherNode(Envelope.Destination destination, WireMessage message) {
    cluster.transportOf(nodeId).send(new Envelope(nodeId, destination, message));
  }

  /**
   * A message from another node, decoded from its frame by the transport: it joins this node's
   * mailboxes (as Pekko enqueues a remote message on arrival) and is converted into the input of
   * the core it is for with the {@code txn.wire} converters. Types are resolved by this node's
   * {@link TypeRegistry}; a type it does not know answers {@code unknown_type} (a no vote).
   */
  void receive(Envelope envelope) {
    String link = SimulatedCluster.nameOf(envelope.senderNode());
    int sender = envelope.senderNode();
    switch (envelope.message()) {
      case WireMessage.Prepare prepare -> {
        Recipient voteTo = new Recipient.Voter(Recipient.REMOTE, prepare.participant(),
            prepare.transactionId(), 1);
        send(link, prepare.participant().toString(), "prepare tx " + prepare.transactionId(),
            () -> deliverResolving(prepare.participant(), voteTo,
                () -> ParticipantMessages.prepareRequested(prepare, types, voteTo)));
      }
      case WireMessage.ForwardsChanged changed -> send(link, changed.participant().toString(),
          "forwards tx " + changed.transactionId() + " round " + changed.round(),
          () -> deliverToEntity(changed.participant(), ParticipantMessages.forwardsReceived(
              changed, new Recipient.Voter(Recipient.REMOTE, changed.participant(),
                  changed.transactionId(), changed.round()))));
      case WireMessage.Decision decision -> send(link, decision.participant().toString(),
          (decision.commit() ? "commit" : "abort") + " tx " + decision.transactionId(),
          () -> deliverToEntity(decision.participant(), ParticipantMessages.decisionReceived(
              decision, decision.commit() ? new Recipient.Acknowledger(Recipient.REMOTE,
                  decision.participant(), decision.transactionId()) : null)));
      case WireMessage.TurnRequest request -> {
        Recipient replyTo = new Recipient.RemoteClient(sender, request.transactionId());
        send(link, request.entity().toString(), "turn tx " + request.transactionId(),
            () -> deliverResolving(request.entity(), replyTo,
                () -> ParticipantMessages.turnRequested(request, types, replyTo)));
      }
      case WireMessage.StepRequest step -> {
        Recipient replyTo = new Recipient.Step(step.transactionId(), step.entity(), null, null);
        send(link, step.entity().toString(), "step tx " + step.transactionId(),
            () -> deliverResolving(step.entity(), replyTo,
                () -> ParticipantMessages.stepRequested(step, types, replyTo)));
      }
      case WireMessage.Vote vote -> send(link, coordinatorName(vote.transactionId()),
          "vote " + vote.participant() + " round " + vote.round(),
          () -> feedCoordinatorOfAttempt(vote.transactionId(),
              CoordinatorMessages.voteReceived(vote)));
      case WireMessage.Acknowledgement acknowledgement -> send(link,
          coordinatorName(acknowledgement.transactionId()), "ack " + acknowledgement.participant(),
          () -> feedCoordinatorOfAttempt(acknowledgement.transactionId(),
              CoordinatorMessages.acknowledged(acknowledgement)));
      case WireMessage.TurnAnswer answer -> send(link, "client-connection",
          "turn answer tx " + answer.transactionId(), () -> {
            Consumer<TurnResult> client = remoteTurns.remove(answer.transactionId());
            if (client != null) {
              client.accept(WireResults.fromWire(answer.answer()));
            }
          });
      case WireMessage.StepAnswer answer -> send(link, "interactive",
          "step answer " + answer.entity(), () -> {
            for (Recipient.Step step : remoteSteps) {
              if (step.transactionId() == answer.transactionId()
                  && step.entity().equals(answer.entity())) {
                stepAnswered(step, WireResults.fromWire(answer.answer()));
                return;
              }
            }
          });
      case WireMessage.DecisionQuery query -> send(link, "decisions",
          "in-doubt question tx " + query.transactionId(), () -> {
            Boolean commit = answerInDoubtQuestion(query.transactionId());
            if (commit != null) {
              sendToOtherNode(new Envelope.Destination.ToNode(query.askingNode()),
                  CoordinatorMessages.decisionAnswer(query, commit
                      ? WireMessage.DecisionState.COMMITTED : WireMessage.DecisionState.ABORTED));
            }
          });
      case WireMessage.DecisionAnswer answer -> send(link, answer.participant().toString(),
          "in-doubt answer " + answer.state() + " tx " + answer.transactionId(),
          () -> ParticipantMessages.<Recipient>decisionAnswered(answer).ifPresent(answered -> {
            inDoubtAnswers++;
            deliverAnswer(answer.participant(), answered.transactionId(), answered.commit());
          }));
      // The simulated clients read each node's own store: no read crosses a node here.
      case WireMessage.ReadRequest read -> Invariants.check(false,
          "the simulator sends no reads between nodes: %s", read);
      case WireMessage.ReadAnswer answer -> Invariants.check(false,
          "the simulator sends no reads between nodes: %s", answer);
      case WireMessage.NodeStatusQuery query -> Invariants.check(false,
          "the simulator sends no status queries between nodes: %s", query);
      case WireMessage.NodeStatusAnswer answer -> Invariants.check(false,
          "the simulator sends no status queries between nodes: %s", answer);
    }
  }

  /**
   * Delivers an input whose type the message named: if this node does not know that type (at
   * that version), {@code replyTo} gets {@code unknown_type} instead.
   */
  private void deliverResolving(EntityId entity, Recipient replyTo,
      java.util.function.Supplier<EntityTurnCore.Input<Recipient>> input) {
    EntityTurnCore.Input<Recipient> resolved;
    try {
      resolved = input.get();
    } catch (dev.troupe.model.TroupeException unknownType) {
      reply(entity, new EntityTurnCore.Effect.Reply<>(replyTo, new TurnResult.Failed(unknownType)));
      return;
    }
    deliverToEntity(entity, resolved);
  }

  /** The mailbox of the coordinator running attempt {@code transactionId} here. */
  private String coordinatorName(long transactionId) {
    Long key = coordinatorOfAttempt.get(transactionId);
    return key == null ? "coordinator" : "coordinator-" + key;
  }

  /** Feeds the live coordinator of attempt {@code transactionId}; a late message finds none. */
  private void feedCoordinatorOfAttempt(long transactionId, CoordinatorCore.Input input) {
    Long key = coordinatorOfAttempt.get(transactionId);
    if (key != null) {
      feedCoordinator(key, input);
    }
  }

  // ------------------------------------------------------------------ plumbing

  /**
   * A message of the commit protocol between cores of this node: over the lossy transaction
   * network if coordinator {@code coordinator} uses it, else the mailboxes. (To another node it
   * is an {@link Envelope}: {@link #sendToOtherNode}.)
   */
  private void routeTransactional(long coordinator, long transactionId, int target, String from,
      String to, String what, Consumer<SimulatedNode> delivery) {
    Invariants.check(target == nodeId, "transaction %s: a core message for node %s routed"
        + " locally on node %s", transactionId, target, nodeId);
    sendTransactional(coordinator, from, to, what, () -> delivery.accept(this));
  }

  /**
   * A message between coordinator {@code coordinator}'s cores and its participants: over the lossy
   * transaction network if that coordinator uses it, else over the mailboxes.
   */
  private void sendTransactional(long coordinator, String from, String to, String what,
      Runnable delivery) {
    if (transactionNetwork == mailboxes
        || (coordinator >= 0 && !lossyCoordinators.contains(coordinator))) {
      send(from, to, what, delivery);
      return;
    }
    int sentBy = incarnation;
    transactionNetwork.send(from, to, what, ignored -> {
      if (up && incarnation == sentBy) {
        delivery.run();
      }
    });
  }

  /** Delivers between cores of this incarnation, as a local mailbox would. */
  private void send(String from, String to, String what, Runnable delivery) {
    int sentBy = incarnation;
    mailboxes.send(from, to, what, ignored -> {
      if (up && incarnation == sentBy) {
        delivery.run();
      }
    });
  }

  /** A timer of this incarnation (the {@link dev.troupe.txn.port.Timers} port). */
  private void later(long delayMillis, String what, Runnable action) {
    timers.schedule(delayMillis, what, action);
  }

  /** Moves this node's physical clock by {@code deltaMillis} (negative: backwards). */
  void jumpClock(long deltaMillis) {
    storage.jumpClock(deltaMillis);
  }

  /**
   * Ids grow with simulated time and never repeat within a run (ages for wait-die), except ids a
   * failed store issued (see {@link #issuedByFailedStore}).
   */
  long newTransactionId() {
    long id = storage.newTransactionId();
    if (storage.failed()) {
      issuedByFailedStore.add(id);
    }
    return id;
  }

  /** Ids a failed store issued again after a restart (see {@link #issuedByFailedStore}). */
  long reissuedIds() {
    return reissuedIds;
  }

  private static dev.troupe.txn.interactive.InteractiveCore newInteractiveCore() {
    return new dev.troupe.txn.interactive.InteractiveCore(
        new dev.troupe.txn.interactive.InteractiveCore.Limits(10_000, 64, 300));
  }
}
