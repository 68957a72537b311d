package dev.troupe.sim;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Invariants;
import dev.troupe.model.Operation;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.time.HybridLogicalClock;
import dev.troupe.txn.CoordinatorCore;
import dev.troupe.storage.DecidedTransaction;
import dev.troupe.storage.InDoubtResolution;
import dev.troupe.storage.PreparedTransaction;
import dev.troupe.txn.EntityTurnCore;
import dev.troupe.txn.Mutations;
import dev.troupe.txn.SequencerCore;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnCodec;
import dev.troupe.txn.TurnEvaluator;
import dev.troupe.txn.TurnLimits;
import dev.troupe.txn.TurnResult;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * One Troupe node in the simulator: the production cores ({@link EntityTurnCore} per entity,
 * {@link CoordinatorCore} per transaction) with simulated shells in place of Pekko actors and
 * RocksDB. Messages between the cores of the node go through a {@link SimulatedNetwork} that
 * behaves like local mailboxes (never lost; each core receives messages in the order they were
 * sent to it, whoever sent them, as Pekko's mailboxes do; interleaved across receivers); durable
 * state is a journal on a {@link SimulatedLog}, synced in group commits.
 *
 * <p><b>What a crash does.</b> {@link #crash} drops every core and every message, timer and sync
 * in flight (they belong to the dead incarnation and are ignored when they fire), and loses the
 * journal's unsynced tail (or tears it). {@link #restart} replays the surviving journal and
 * resolves in-doubt transactions as the real store does ({@code InDoubtResolution}): a prepared
 * part whose transaction has a decision commits, every other one is abandoned (presumed abort).
 *
 * <p><b>Journal records</b> (in the order written): {@code Committed(tx, entity, operations,
 * timestamp, resolvesPrepared)}, {@code Prepared(tx, entity, operations)}, {@code
 * Abandoned(tx, entity)}, {@code Decided(tx)}, {@code Forgotten(tx)}. Records are kept as objects;
 * the log holds their sequence numbers, so torn and corrupted tails cut the record list exactly
 * where the real log's checksums would.
 *
 * <p><b>Same logic as production where it counts.</b> Recovery decides with the store's pure
 * {@link InDoubtResolution} and re-evaluates PSAC parts as {@code Troupe} does ({@link
 * TurnEvaluator#evaluateSequence} on their {@link TurnCodec}-encoded turns, per entity in arrival
 * order); planned transactions are ordered by {@link SequencerCore}.
 *
 * <p>Not thread-safe: the simulation is single-threaded.
 */
final class SimulatedNode {
  /** Who a core's reply goes to. */
  sealed interface Recipient {
    record Client(Consumer<TurnResult> answer) implements Recipient {}

    /** The answer to one step of an interactive transaction. */
    record Step(long transactionId, EntityId entity, Turn turn, Consumer<TurnResult> answer)
        implements Recipient {}

    /** A vote for attempt {@code transactionId} of a coordinator's transaction. */
    record Voter(long coordinator, EntityId participant, long transactionId)
        implements Recipient {}

    record Acknowledger(long coordinator, EntityId participant, long transactionId)
        implements Recipient {}
  }

  private sealed interface JournalRecord {}

  private record Committed(long transactionId, EntityId entity, List<Operation> operations,
      long commitTimestamp, boolean resolvesPrepared) implements JournalRecord {}

  /** A prepared part, as the real store keeps it (operations, or PSAC redo turns and rank). */
  private record Prepared(PreparedTransaction part) implements JournalRecord {}

  private record Abandoned(long transactionId, EntityId entity) implements JournalRecord {}

  private record Decided(DecidedTransaction decision) implements JournalRecord {}

  private record Forgotten(long transactionId) implements JournalRecord {}

  private record Part(long transactionId, EntityId entity) {}

  /**
   * Deliberate breakage of the simulated shell, for tests that prove the checkers catch it. Only
   * {@code NONE} is correct.
   */
  enum Mutation {
    NONE,
    /** Report a commit durable as soon as it is written, before the sync. */
    ACKNOWLEDGE_BEFORE_SYNC,
    /** At restart, abandon every prepared part, even those whose transaction decided commit. */
    SKIP_IN_DOUBT_COMMITS,
    /**
     * At restart, do not advance the clock past the journal: after a backward clock jump,
     * timestamps would repeat or go back.
     */
    SKIP_CLOCK_RECOVERY,
    /** Inside the production core: {@link Mutations.Mutation#RELEASE_LOCKS_AT_VOTE}. */
    RELEASE_LOCKS_AT_VOTE
  }

  /**
   * Timings and bounds of the node.
   *
   * @param syncMillis how long a group commit's sync takes
   * @param internalMaxDelayMillis the longest a message between cores of the node takes
   * @param coordinatorLimits prepare timeout and wait-die retries
   * @param tornProbability chance that a crash leaves a torn prefix of the unsynced tail
   * @param corruptProbability chance that a crash corrupts a byte of what survives unsynced
   */
  record Settings(long syncMillis, long internalMaxDelayMillis,
      CoordinatorCore.Limits coordinatorLimits, double tornProbability,
      double corruptProbability, Mutation mutation) {}

  private final Scheduler scheduler;
  private final Settings settings;
  private final Function<EntityId, CompiledType> typeOf;
  private final SimulatedNetwork mailboxes;

  // ---- the disk: survives crashes
  private final SimulatedLog log = new SimulatedLog();
  private final List<JournalRecord> written = new ArrayList<>();

  // ---- the incarnation: lost on a crash
  private boolean up = true;
  private int incarnation;
  private final Map<EntityId, EntityState> durable = new HashMap<>();
  private final Map<EntityId, EntityTurnCore<Recipient>> entities = new HashMap<>();
  private final Map<Long, CoordinatorCore> coordinators = new HashMap<>();
  private final Map<Long, Consumer<CoordinatorCore.Outcome>> coordinatorAnswers = new HashMap<>();
  /** Orders planned transactions; positions restart with each incarnation, as in Troupe. */
  private SequencerCore<Long> sequencer = new SequencerCore<>();
  private boolean drainScheduled;
  /** Open interactive transactions (idle timeout 300 simulated ms); lost on a crash. */
  private dev.troupe.txn.InteractiveCore interactive = newInteractiveCore();
  private final Map<Long, String> requestOfInteractive = new HashMap<>();
  private List<Runnable> awaitingSync = new ArrayList<>();
  private final List<Runnable> acknowledgedUnsynced = new ArrayList<>();
  private boolean syncScheduled;
  /**
   * The node's clock: the production hybrid logical clock over this node's physical clock, which
   * is simulated time plus an offset that clock jumps move (backwards too). Transaction ids and
   * commit timestamps are its ticks, as in the real store. A new one per incarnation; recovery
   * advances it past everything the journal holds.
   */
  private HybridLogicalClock clock;
  private long clockOffsetMillis;
  private long nextCoordinator;
  private long crashes;
  private long resolvedInDoubt;
  private long redone;
  /**
   * The simulator's own bookkeeping, not the node's (it survives crashes): which client request
   * each transaction id (every attempt) belongs to, so that histories can name what committed.
   */
  private final Map<Long, String> requestOfTransaction = new HashMap<>();
  private final Map<Long, String> requestOfCoordinator = new HashMap<>();

  SimulatedNode(Scheduler scheduler, Settings settings, Function<EntityId, CompiledType> typeOf) {
    this.scheduler = scheduler;
    this.settings = settings;
    this.typeOf = typeOf;
    this.mailboxes = new SimulatedNetwork(scheduler,
        new SimulatedNetwork.Faults(0, settings.internalMaxDelayMillis(), 0, 0, false),
        SimulatedNetwork.Ordering.PER_RECEIVER);
    this.clock = newClock();
  }

  boolean isUp() {
    return up;
  }

  long crashes() {
    return crashes;
  }

  long resolvedInDoubt() {
    return resolvedInDoubt;
  }

  /** Decided PSAC parts re-evaluated at recovery. */
  long redone() {
    return redone;
  }

  /** Writes an entity's initial state as a durable record (set-up, before faults). */
  void preload(EntityId entity, List<Operation> operations) {
    long id = newTransactionId();
    requestOfTransaction.put(id, "preload-" + entity);
    long timestamp = nextCommitTimestamp();
    append(new Committed(id, entity, operations, timestamp, false));
    log.sync();
    durable.put(entity, durable(entity).apply(operations, timestamp, 0));
  }

  /** The entity's latest durable state (absent if never written). */
  EntityState durable(EntityId entity) {
    return durable.getOrDefault(entity, EntityState.ABSENT);
  }

  /**
   * Runs a multi-entity transaction; {@code answer} receives its outcome, unless the node crashes
   * first. Must be up.
   */
  void transact(String request, Map<EntityId, CoordinatorCore.Part> parts, boolean planned,
      Consumer<CoordinatorCore.Outcome> answer) {
    Invariants.check(up, "transaction submitted to a node that is down");
    long key = nextCoordinator++;
    requestOfCoordinator.put(key, request);
    // Planned transactions never die, so they are never retried (as in Troupe).
    CoordinatorCore.Limits limits = planned
        ? new CoordinatorCore.Limits(settings.coordinatorLimits().prepareTimeoutMillis(), 0,
            settings.coordinatorLimits().retryBackoffMillis())
        : settings.coordinatorLimits();
    coordinators.put(key, new CoordinatorCore(parts, limits, planned));
    coordinatorAnswers.put(key, answer);
    if (!planned) {
      feedCoordinator(key, new CoordinatorCore.Input.Started(newTransactionId()));
      return;
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
        for (SequencerCore.Positioned<Long> positioned : sequencer.drain()) {
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
    long id = newTransactionId();
    requestOfTransaction.put(id, request);
    send("client-connection", entity.toString(), "turn tx " + id,
        () -> deliverToEntity(entity, new EntityTurnCore.Input.TurnRequested<>(turn,
            typeOf.apply(entity), id, new Recipient.Client(answer))));
  }

  // ------------------------------------------------------------------ interactive transactions

  /** Begins an interactive transaction for {@code request}; returns its id. Must be up. */
  long beginInteractive(String request) {
    Invariants.check(up, "interactive transaction begun on a node that is down");
    long id = newTransactionId();
    requestOfTransaction.put(id, request);
    requestOfInteractive.put(id, request);
    interactive.begin(id, scheduler.nowMillis());
    scheduleIdleCheck(id);
    return id;
  }

  /**
   * One step of an interactive transaction; {@code answer} receives the entity's answer (or the
   * refusal of the lifecycle core), unless the node crashes first.
   */
  void stepInteractive(long id, EntityId entity, Turn turn, Consumer<TurnResult> answer) {
    CompiledType type = typeOf.apply(entity);
    try {
      interactive.stepStarted(id, entity, type, scheduler.nowMillis());
    } catch (dev.troupe.model.TroupeException refused) {
      answer.accept(new TurnResult.Failed(refused));
      return;
    }
    Recipient replyTo = new Recipient.Step(id, entity, turn, answer);
    send("interactive", entity.toString(), "step tx " + id,
        () -> deliverToEntity(entity,
            new EntityTurnCore.Input.StepRequested<>(id, id, turn, type, replyTo)));
  }

  private void stepAnswered(Recipient.Step step, TurnResult result) {
    interactive.stepFinished(step.transactionId(), step.entity(), step.turn(),
        result instanceof TurnResult.Done, scheduler.nowMillis());
    scheduleIdleCheck(step.transactionId());
    if (result instanceof TurnResult.Failed failed
        && failed.error().code() == dev.troupe.model.ErrorCode.ABORTED) {
      abortInteractive(step.transactionId()); // wait-die killed it
    }
    step.answer().accept(result);
  }

  /** Commits an interactive transaction; {@code answer} receives the outcome. */
  void commitInteractive(long id, Consumer<CoordinatorCore.Outcome> answer) {
    dev.troupe.txn.InteractiveCore.Commit commit;
    try {
      commit = interactive.commit(id);
    } catch (dev.troupe.model.TroupeException refused) {
      answer.accept(new CoordinatorCore.Outcome.Failed(refused));
      return;
    }
    if (commit.parts().isEmpty()) {
      answer.accept(new CoordinatorCore.Outcome.Committed(id, Map.of()));
      return;
    }
    long key = nextCoordinator++;
    requestOfCoordinator.put(key, requestOfInteractive.get(id));
    // Its locks are held under its id already: no retries (as in Troupe).
    coordinators.put(key, new CoordinatorCore(commit.parts(), new CoordinatorCore.Limits(
        settings.coordinatorLimits().prepareTimeoutMillis(), 0,
        settings.coordinatorLimits().retryBackoffMillis())));
    coordinatorAnswers.put(key, answer);
    feedCoordinator(key, new CoordinatorCore.Input.Started(id));
  }

  /** Aborts an interactive transaction: its parts are dropped and its locks released. */
  void abortInteractive(long id) {
    interactive.abort(id).ifPresent(entities -> release(id, entities));
  }

  private void release(long id, List<EntityId> entities) {
    for (EntityId entity : entities) {
      send("interactive", entity.toString(), "abort tx " + id,
          () -> deliverToEntity(entity,
              new EntityTurnCore.Input.DecisionReceived<>(id, false, null)));
    }
  }

  private void scheduleIdleCheck(long id) {
    interactive.idleDeadlineMillis(id).ifPresent(deadline -> later(
        deadline - scheduler.nowMillis(), "idle check tx " + id,
        () -> interactive.expireIfIdle(id, scheduler.nowMillis())
            .ifPresent(entities -> release(id, entities))));
  }

  /** Crashes the node: everything in memory and in flight is lost, so is the unsynced journal. */
  void crash() {
    Invariants.check(up, "crash of a node that is down");
    up = false;
    incarnation++;
    crashes++;
    entities.clear();
    coordinators.clear();
    coordinatorAnswers.clear();
    sequencer = new SequencerCore<>();
    drainScheduled = false;
    interactive = newInteractiveCore();
    durable.clear();
    awaitingSync = new ArrayList<>();
    acknowledgedUnsynced.clear();
    syncScheduled = false;
    log.crash(scheduler.random(), settings.tornProbability(), settings.corruptProbability());
  }

  /** Restarts: replays the journal, resolves in-doubt transactions, and serves again. */
  void restart() {
    Invariants.check(!up, "restart of a node that is up");
    clock = newClock();
    int surviving = log.recover().size();
    written.subList(surviving, written.size()).clear();
    Map<Part, PreparedTransaction> prepared = new LinkedHashMap<>();
    Map<Long, DecidedTransaction> decided = new LinkedHashMap<>();
    for (JournalRecord record : written) {
      switch (record) {
        case Committed committed -> {
          advanceClockPast(committed.commitTimestamp());
          durable.put(committed.entity(), durable(committed.entity())
              .apply(committed.operations(), committed.commitTimestamp(), 0));
          if (committed.resolvesPrepared()) {
            prepared.remove(new Part(committed.transactionId(), committed.entity()));
          }
        }
        case Prepared part -> prepared.put(
            new Part(part.part().transactionId(), part.part().entity()), part.part());
        case Abandoned abandoned ->
            prepared.remove(new Part(abandoned.transactionId(), abandoned.entity()));
        case Decided decision ->
            decided.put(decision.decision().transactionId(), decision.decision());
        case Forgotten forgotten -> decided.remove(forgotten.transactionId());
      }
      advanceClockPast(transactionIdOf(record));
    }
    InDoubtResolution resolution = InDoubtResolution.of(
        new ArrayList<>(prepared.values()), new ArrayList<>(decided.values()));
    // In the resolution's order, one at a time, as the real store applies it.
    for (PreparedTransaction part : resolution.toCommit()) {
      resolvedInDoubt++;
      if (settings.mutation() == Mutation.SKIP_IN_DOUBT_COMMITS) {
        append(new Abandoned(part.transactionId(), part.entity()));
        continue;
      }
      List<Operation> operations = part.operations();
      if (part.needsRedo()) {
        redone++;
        operations = TurnEvaluator.redo(part.entity(), typeOf.apply(part.entity()),
            durable(part.entity()), TurnCodec.decode(part.redo()), part.transactionId(), 0,
            TurnLimits.DEFAULTS);
      }
      if (part.needsRedo() && operations.isEmpty()) {
        // As the real store: a redo that changes nothing only removes its prepared record.
        append(new Abandoned(part.transactionId(), part.entity()));
      } else {
        commitRecovered(part, operations);
      }
    }
    for (PreparedTransaction part : resolution.toAbort()) {
      resolvedInDoubt++;
      append(new Abandoned(part.transactionId(), part.entity()));
    }
    for (DecidedTransaction decision : resolution.decisionsToForget()) {
      append(new Forgotten(decision.transactionId()));
    }
    log.sync();
    up = true;
  }

  private void commitRecovered(PreparedTransaction part, List<Operation> operations) {
    long timestamp = nextCommitTimestamp();
    append(new Committed(part.transactionId(), part.entity(), operations, timestamp, true));
    durable.put(part.entity(), durable(part.entity()).apply(operations, timestamp, 0));
  }

  /**
   * What the surviving journal says each client request wrote: request to entity to the version
   * (commit timestamp) its committed record produced. Requests that never committed are absent.
   */
  Map<String, Map<EntityId, Long>> committedWrites() {
    Map<String, Map<EntityId, Long>> writes = new LinkedHashMap<>();
    for (JournalRecord record : written) {
      if (record instanceof Committed committed) {
        String request = requestOfTransaction.get(committed.transactionId());
        Invariants.check(request != null, "a journal record of an unknown transaction %d",
            committed.transactionId());
        writes.computeIfAbsent(request, ignored -> new LinkedHashMap<>())
            .put(committed.entity(), committed.commitTimestamp());
      }
    }
    return writes;
  }

  // ------------------------------------------------------------------ entities

  private void deliverToEntity(EntityId entity, EntityTurnCore.Input<Recipient> input) {
    EntityTurnCore<Recipient> core = entities.computeIfAbsent(entity,
        ignored -> new EntityTurnCore<>(entity, durable(entity), TurnLimits.DEFAULTS, 0,
            settings.mutation() == Mutation.RELEASE_LOCKS_AT_VOTE
                ? Set.of(Mutations.Mutation.RELEASE_LOCKS_AT_VOTE)
                : Set.of()));
    runEntityEffects(entity, core.handle(input));
  }

  private void runEntityEffects(EntityId entity, List<EntityTurnCore.Effect<Recipient>> effects) {
    for (EntityTurnCore.Effect<Recipient> effect : effects) {
      switch (effect) {
        case EntityTurnCore.Effect.SubmitCommit<Recipient> commit -> {
          long timestamp = nextCommitTimestamp();
          append(new Committed(commit.transactionId(), entity, commit.operations(), timestamp,
              commit.resolvesPrepared()));
          Runnable durableNow = () -> {
            durable.put(entity, durable(entity).apply(commit.operations(), timestamp, 0));
            deliverToEntity(entity,
                new EntityTurnCore.Input.CommitSucceeded<>(commit.serial(), timestamp));
          };
          if (settings.mutation() == Mutation.ACKNOWLEDGE_BEFORE_SYNC) {
            acknowledgeUnsynced(durableNow);
          } else {
            awaitSync(durableNow);
          }
        }
        case EntityTurnCore.Effect.SubmitPrepare<Recipient> prepare -> {
          append(new Prepared(new PreparedTransaction(prepare.transactionId(), entity,
              prepare.operations(),
              prepare.redoTurns().isEmpty() ? null : TurnCodec.encode(prepare.redoTurns()),
              prepare.arrival())));
          awaitSync(() -> deliverToEntity(entity,
              new EntityTurnCore.Input.PrepareSucceeded<>(prepare.transactionId())));
        }
        case EntityTurnCore.Effect.AbandonPrepared<Recipient> abandon ->
            append(new Abandoned(abandon.transactionId(), entity));
        case EntityTurnCore.Effect.Reply<Recipient> reply -> reply(entity, reply);
        case EntityTurnCore.Effect.Stop<Recipient> ignored -> entities.remove(entity);
        case EntityTurnCore.Effect.OfferPassivation<Recipient> ignored -> {}
      }
    }
  }

  private void reply(EntityId entity, EntityTurnCore.Effect.Reply<Recipient> reply) {
    switch (reply.replyTo()) {
      case Recipient.Client client -> client.answer().accept(reply.result());
      case Recipient.Step step -> send(entity.toString(), "interactive", "step answer " + entity,
          () -> stepAnswered(step, reply.result()));
      case Recipient.Voter voter -> send(entity.toString(), "coordinator-" + voter.coordinator(),
          "vote " + entity, () -> feedCoordinator(voter.coordinator(),
              new CoordinatorCore.Input.VoteReceived(voter.participant(),
                  voter.transactionId(), reply.result())));
      case Recipient.Acknowledger acknowledger -> send(entity.toString(),
          "coordinator-" + acknowledger.coordinator(), "ack " + entity,
          () -> feedCoordinator(acknowledger.coordinator(),
              new CoordinatorCore.Input.Acknowledged(acknowledger.participant(),
                  acknowledger.transactionId(), reply.result())));
    }
  }

  // ------------------------------------------------------------------ coordinators

  private void feedCoordinator(long key, CoordinatorCore.Input input) {
    feedCoordinator(key, input, "coordinator-" + key);
  }

  /** {@code prepareSender}: whose mailbox order the prepares this input causes follow. */
  private void feedCoordinator(long key, CoordinatorCore.Input input, String prepareSender) {
    CoordinatorCore core = coordinators.get(key);
    if (core == null) {
      return; // finished: a late vote or acknowledgement
    }
    switch (input) {
      case CoordinatorCore.Input.Started started ->
          requestOfTransaction.put(started.transactionId(), requestOfCoordinator.get(key));
      case CoordinatorCore.Input.RetryDue retry ->
          requestOfTransaction.put(retry.transactionId(), requestOfCoordinator.get(key));
      default -> {}
    }
    for (CoordinatorCore.Effect effect : core.handle(input)) {
      switch (effect) {
        case CoordinatorCore.Effect.SendPrepare prepare -> {
          Recipient voteTo =
              new Recipient.Voter(key, prepare.participant(), prepare.transactionId());
          CompiledType type = typeOf.apply(prepare.participant());
          send(prepareSender, prepare.participant().toString(),
              "prepare tx " + prepare.transactionId(),
              () -> deliverToEntity(prepare.participant(),
                  new EntityTurnCore.Input.PrepareRequested<>(prepare.transactionId(),
                      prepare.startTimestamp(), prepare.part().turns(),
                      prepare.part().readsState(), type, voteTo, prepare.planned())));
        }
        case CoordinatorCore.Effect.SchedulePrepareTimeout timeout -> later(
            timeout.delayMillis(), "prepare timeout tx " + timeout.transactionId(),
            () -> feedCoordinator(key,
                new CoordinatorCore.Input.PrepareTimedOut(timeout.transactionId())));
        case CoordinatorCore.Effect.ScheduleRetry retry -> later(retry.delayMillis(),
            "retry coordinator " + key,
            () -> feedCoordinator(key, new CoordinatorCore.Input.RetryDue(newTransactionId())));
        case CoordinatorCore.Effect.PersistDecision decision -> {
          append(new Decided(
              new DecidedTransaction(decision.transactionId(), decision.participants())));
          awaitSync(() -> feedCoordinator(key,
              new CoordinatorCore.Input.DecisionPersisted(null, false)));
        }
        case CoordinatorCore.Effect.SendDecision decision -> {
          Recipient acknowledgeTo = decision.commit()
              ? new Recipient.Acknowledger(key, decision.participant(), decision.transactionId())
              : null;
          send("coordinator-" + key, decision.participant().toString(),
              (decision.commit() ? "commit" : "abort") + " tx " + decision.transactionId(),
              () -> deliverToEntity(decision.participant(),
                  new EntityTurnCore.Input.DecisionReceived<>(decision.transactionId(),
                      decision.commit(), acknowledgeTo)));
        }
        case CoordinatorCore.Effect.ForgetDecision forget ->
            append(new Forgotten(forget.transactionId()));
        case CoordinatorCore.Effect.Reply reply -> {
          Consumer<CoordinatorCore.Outcome> answer = coordinatorAnswers.get(key);
          if (answer != null) {
            answer.accept(reply.outcome());
          }
        }
        case CoordinatorCore.Effect.Finished ignored -> {
          coordinators.remove(key);
          coordinatorAnswers.remove(key);
        }
      }
    }
  }

  // ------------------------------------------------------------------ plumbing

  /** Delivers between cores of this incarnation, as a local mailbox would. */
  private void send(String from, String to, String what, Runnable delivery) {
    int sentBy = incarnation;
    mailboxes.send(from, to, what, ignored -> {
      if (up && incarnation == sentBy) {
        delivery.run();
      }
    });
  }

  /** A timer of this incarnation. */
  private void later(long delayMillis, String what, Runnable action) {
    int setBy = incarnation;
    scheduler.schedule(delayMillis, what, () -> {
      if (up && incarnation == setBy) {
        action.run();
      }
    });
  }

  private void append(JournalRecord record) {
    written.add(record);
    log.append(Long.toString(written.size()).getBytes(java.nio.charset.StandardCharsets.UTF_8));
  }

  /** Runs {@code then} once everything appended so far is synced (a group commit). */
  private void awaitSync(Runnable then) {
    awaitingSync.add(then);
    if (syncScheduled) {
      return;
    }
    syncScheduled = true;
    later(settings.syncMillis(), "fsync", () -> {
      syncScheduled = false;
      log.sync();
      List<Runnable> done = awaitingSync;
      awaitingSync = new ArrayList<>();
      done.forEach(Runnable::run);
    });
  }

  /** The {@link Mutation#ACKNOWLEDGE_BEFORE_SYNC} path: in order, at once, without a sync. */
  private void acknowledgeUnsynced(Runnable then) {
    acknowledgedUnsynced.add(then);
    if (acknowledgedUnsynced.size() == 1) {
      later(0, "commits acknowledged before sync", () -> {
        List<Runnable> done = new ArrayList<>(acknowledgedUnsynced);
        acknowledgedUnsynced.clear();
        done.forEach(Runnable::run);
      });
    }
  }

  private long nextCommitTimestamp() {
    return clock.tick();
  }

  /** Moves this node's physical clock by {@code deltaMillis} (negative: backwards). */
  void jumpClock(long deltaMillis) {
    clockOffsetMillis += deltaMillis;
  }

  /** Ids grow with simulated time and never repeat within a run (ages for wait-die). */
  long newTransactionId() {
    return clock.tick();
  }

  private static dev.troupe.txn.InteractiveCore newInteractiveCore() {
    return new dev.troupe.txn.InteractiveCore(
        new dev.troupe.txn.InteractiveCore.Limits(10_000, 64, 300));
  }

  private void advanceClockPast(long timestamp) {
    if (settings.mutation() != Mutation.SKIP_CLOCK_RECOVERY) {
      clock.advancePast(timestamp);
    }
  }

  private HybridLogicalClock newClock() {
    return new HybridLogicalClock(
        () -> Math.max(0, scheduler.nowMillis() + clockOffsetMillis));
  }

  private static long transactionIdOf(JournalRecord record) {
    return switch (record) {
      case Committed committed -> committed.transactionId();
      case Prepared prepared -> prepared.part().transactionId();
      case Abandoned abandoned -> abandoned.transactionId();
      case Decided decided -> decided.decision().transactionId();
      case Forgotten forgotten -> forgotten.transactionId();
    };
  }
}
