package dev.troupe.txn.request;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.TroupeException;
import dev.troupe.model.ValueLimits;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.KeyReference;
import dev.troupe.model.spec.ActionSpec;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SyncInvocation;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.planned.DependencyPlanner;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * One client request on its way through a node, from arrival to answer: every protocol decision
 * between the API and the cores that do the work ({@link CoordinatorCore} per transaction, the
 * entity cores per turn). A deterministic state machine, one per request: the shell feeds inputs
 * (the request, then the answers of what it started) and runs the effects (run a turn, start a
 * coordinator, abort an interactive transaction, reply). Ids, time and storage come from outside;
 * types, cached states and registrations in progress are read through {@link Lookups}, which the
 * shell implements over its caches (the simulator over its own).
 *
 * <p><b>Sync expansion.</b> A transaction's parts are its operations plus, depth first, every
 * {@code sync} call they make, checked before anything runs: at most {@code maxOperations}
 * operations and {@code maxParticipants} entities ({@code too_large}), sync calls nested at most
 * {@code maxSyncDepth} deep ({@code invalid_request}); a sync argument that fails to evaluate or
 * builds too large a value aborts the transaction with that reason, as a failing effect would.
 * Nothing has run, so such a refusal changed nothing.
 *
 * <p><b>A single turn that must be a transaction.</b> A turn runs on its entity alone, unless it
 * invokes an action with sync calls, delivers a causal message to one (the same transaction as
 * the action's REST invocation, the receiver's delivered marker in it), or (de)registers a
 * dependency (all reach other entities: started as a transaction at once), or the entity answers that it touches declared dependencies
 * ({@code aborted}, {@code needs_transaction}: it changed nothing, and the followers must join).
 * Such a turn is answered like a turn: the entity's outcome, a failed precondition as {@code
 * precondition_failed}, a value past a limit as {@code too_large}, a failed evaluation as {@code
 * invalid_request}, whichever participant met it.
 *
 * <p><b>Planned, replanned, dynamic</b> (Calvin-style ordering, Thomson et al., SIGMOD 2012;
 * smsa.txt §3.1 for dependencies). A transaction runs planned unless the client asked for dynamic:
 * the {@link DependencyPlanner} predicts the followers its dependencies reach from cached states
 * (and the registrations in progress) and reserves their keys, and the sequencer orders it. On one
 * node a planned transaction never dies; in a cluster a planned part dies rather than wait for a
 * later planned one of another node's sequencer, so planned attempts are retried like dynamic ones,
 * at the same position. One the planner cannot predict runs dynamic (wait-die with retries). One whose forwards reach beyond its plan aborts
 * with {@code dependencies_involved} having changed nothing; it is planned again from fresher
 * states, at most {@code maxReplans} times, then run dynamic. So a request always ends: at most
 * {@code maxReplans + 2} coordinators run for it, one after the other, never two at once.
 *
 * <p><b>Interactive transactions.</b> A step runs on one entity under the transaction's id; an
 * action with sync calls is refused (its callees would take locks the client never asked for).
 * A step refused with {@code aborted} (wait-die killed the transaction) ends the transaction: it
 * is aborted everywhere before the client hears of it, so its locks never outlive the answer. A
 * step that gets no answer is aborted too and answered {@code outcome_unknown}: the entity may
 * still have applied it, but the transaction can no longer commit. The commit runs the coordinator
 * under the transaction's own id (its locks are held under it) and never retries.
 *
 * <p><b>Unknown outcomes.</b> A turn or coordinator that does not answer in time may still commit:
 * the answer is {@code outcome_unknown}, never a guess.
 *
 * <p><b>Dependencies registered in flight.</b> A transaction registering dependencies announces
 * them before its coordinator starts and withdraws them once it has its answer, so a concurrent
 * planned transaction writing their leader key plans their followers too (its reconnaissance
 * reads committed states only).
 *
 * <p>Not thread-safe: the shell feeds one request's inputs one at a time.
 */
public final class RequestCore {

  /**
   * The settings the request obeys (troupe.transactions in reference.conf).
   *
   * @param maxOperations most operations in one transaction, sync calls included
   * @param maxParticipants most entities a transaction's own parts reach, sync calls included
   * @param maxSyncDepth most levels of nested sync calls
   * @param maxReplans most times a planned transaction is planned again before it runs dynamic
   * @param values the limits on sync calls' evaluated arguments
   * @param maxDependencyChain the planner's bound on dependency chains it predicts
   * @param coordinator the limits of a dynamic transaction's coordinator (with its retries)
   * @param answerTimeoutMillis how long the shell waits for a turn or a coordinator (named in the
   *     {@code outcome_unknown} answers)
   */
  public record Limits(int maxOperations, int maxParticipants, int maxSyncDepth, int maxReplans,
      ValueLimits values, int maxDependencyChain, CoordinatorCore.Limits coordinator,
      long answerTimeoutMillis) {
    /**
     * An interactive transaction's commit already holds its locks (a conflict during its steps
     * ends it instead): it never retries.
     */
    public CoordinatorCore.Limits coordinatorWithoutRetries() {
      return new CoordinatorCore.Limits(coordinator.prepareTimeoutMillis(), 0,
          coordinator.retryBackoffMillis(), coordinator.maxParticipants(),
          coordinator.maxForwardRounds(), coordinator.maxDependencyChain());
    }
  }

  /**
   * What the core reads from the node; pure from the core's point of view (the answers may
   * change between inputs, never within one).
   */
  public interface Lookups {
    /** An entity's type; throws {@link TroupeException} for a reserved type. */
    CompiledType typeOf(EntityId entity);

    /**
     * An entity's latest durable state if at hand (the planner's reconnaissance). The planner
     * reads only its dependency keys, so a state without any may be answered as {@link
     * EntityState#ABSENT} (the node does, rather than decode a cached state).
     */
    Optional<EntityState> cachedState(EntityId entity);

    /** Dependencies on a leader key that transactions in progress register. */
    List<Dependency> pendingRegistrations(KeyReference leader);
  }

  /** How a transaction request asks to be scheduled (the API's mode). */
  public enum Scheduling {
    /** Planned (a static transaction declares every entity up front). */
    AUTO,
    PLANNED,
    DYNAMIC
  }

  /** How the shell starts a coordinator. */
  public enum Start {
    /** Under a new transaction id, now. */
    DYNAMIC,
    /**
     * Through the sequencer: with a new id and its position as its age, in position order with
     * every other planned start.
     */
    PLANNED,
    /** Under the interactive transaction's own id, now. */
    INTERACTIVE_COMMIT
  }

  /** One operation of a transaction request. */
  public record Operation(EntityId entity, Turn turn) {
    public Operation {
      Objects.requireNonNull(entity, "entity");
      Objects.requireNonNull(turn, "turn");
    }
  }

  /** What the shell feeds in: first one request, then the answers of what it started. */
  public sealed interface Input {
    /**
     * A write on one entity. {@code transactionId}: the id the turn must commit under (an
     * idempotent turn's record is attached to it), or 0 for any.
     */
    record TurnRequested(EntityId entity, Turn turn, long transactionId) implements Input {}

    record TransactionRequested(List<Operation> operations, List<EntityId> reads,
        Scheduling scheduling) implements Input {
      public TransactionRequested {
        operations = List.copyOf(operations);
        reads = List.copyOf(reads);
        Objects.requireNonNull(scheduling, "scheduling");
      }
    }

    /**
     * One step of an open interactive transaction ({@code turn} null: a read of the whole state).
     * The shell checked that the transaction is open.
     */
    record StepRequested(long transactionId, EntityId entity, Turn turn) implements Input {}

    /** The commit of an interactive transaction: its parts and their types, from its core. */
    record InteractiveCommitRequested(long transactionId, Map<EntityId, CoordinatorCore.Part> parts,
        Map<EntityId, CompiledType> types) implements Input {
      public InteractiveCommitRequested {
        parts = Collections.unmodifiableMap(new LinkedHashMap<>(parts));
        types = Collections.unmodifiableMap(new LinkedHashMap<>(types));
      }
    }

    /** The entity's answer to {@link Effect.RunTurn} or {@link Effect.RunStep}. */
    record TurnAnswered(TurnResult result) implements Input {}

    /**
     * No answer to {@link Effect.RunTurn} or {@link Effect.RunStep}: {@code timedOut}, or the ask
     * failed ({@code detail} says how).
     */
    record TurnUnanswered(boolean timedOut, String detail) implements Input {}

    /** The outcome of the coordinator {@link Effect.StartCoordinator} started. */
    record CoordinatorAnswered(CoordinatorCore.Outcome outcome) implements Input {}

    /** The coordinator gave no outcome within the answer timeout; it may still commit. */
    record CoordinatorUnanswered() implements Input {}
  }

  /** What the shell runs, in order. A request's last effect is exactly one reply. */
  public sealed interface Effect {
    /** Run one turn on its entity alone; answer with {@link Input.TurnAnswered}. */
    record RunTurn(EntityId entity, CompiledType type, Turn turn, long transactionId)
        implements Effect {}

    /** Run one step of an interactive transaction on its entity; answer as for a turn. */
    record RunStep(long transactionId, EntityId entity, CompiledType type, Turn turn)
        implements Effect {}

    /**
     * Start a coordinator over these parts; answer with {@link Input.CoordinatorAnswered}.
     * {@code types} is the plan's (the coordinator adds the followers it brings in);
     * {@code transactionId} is set for {@link Start#INTERACTIVE_COMMIT} only.
     */
    record StartCoordinator(Map<EntityId, CoordinatorCore.Part> parts,
        Map<EntityId, CompiledType> types, Start start, CoordinatorCore.Limits limits,
        long transactionId) implements Effect {
      public StartCoordinator {
        parts = Collections.unmodifiableMap(new LinkedHashMap<>(parts));
        types = Collections.unmodifiableMap(new LinkedHashMap<>(types));
      }

      public boolean planned() {
        return start == Start.PLANNED;
      }
    }

    /** Make these registrations visible to planners until {@link WithdrawRegistrations}. */
    record AnnounceRegistrations(List<Dependency> dependencies) implements Effect {}

    record WithdrawRegistrations(List<Dependency> dependencies) implements Effect {}

    /** Metrics: a planned transaction is planned again ({@code replanned}) or runs dynamic. */
    record CountPlanning(boolean replanned) implements Effect {}

    /** End the interactive transaction: abort its parts and release its locks. */
    record AbortInteractive(long transactionId) implements Effect {}

    /** Answer a single turn: its entity's outcome. */
    record ReplyTurn(long version, boolean wrote, EntityState state, CompiledType type)
        implements Effect {}

    /** Answer an interactive step: the entity as the transaction sees it. */
    record ReplyView(EntityId entity, CompiledType type, EntityState state, long version)
        implements Effect {}

    /** Answer a transaction (or an interactive commit) that committed. */
    record ReplyTransaction(CoordinatorCore.Outcome.Committed committed) implements Effect {}

    /** Answer with a failure: nothing changed, unless it is {@code outcome_unknown}. */
    record ReplyFailure(TroupeException error) implements Effect {}
  }

  private enum Phase {
    NEW, TURN, STEP, PLANNED, DYNAMIC, COMMIT, ANSWERED
  }

  private final Limits limits;
  private final Lookups lookups;
  private Phase phase = Phase.NEW;

  /** A single turn's entity, type and turn: its answer is mapped as a turn's. */
  private EntityId turnEntity;
  private CompiledType turnType;
  private Turn turn;
  /** Whether the single turn runs as a transaction (its answer still maps as a turn's). */
  private boolean answerAsTurn;
  private long stepTransactionId;

  /** A transaction's parts as expanded, and their types in plan order. */
  private Map<EntityId, CoordinatorCore.Part> parts;
  private Map<EntityId, CompiledType> types;
  private int replansLeft;
  private List<Dependency> registering = List.of();

  public RequestCore(Limits limits, Lookups lookups) {
    this.limits = limits;
    this.lookups = lookups;
  }

  /** Feeds one input; returns the effects to run, in order. */
  public List<Effect> handle(Input input) {
    Invariants.check(phase != Phase.ANSWERED, "request input %s after its answer", input);
    List<Effect> effects = new ArrayList<>();
    try {
      switch (input) {
        case Input.TurnRequested requested -> turnRequested(requested, effects);
        case Input.TransactionRequested requested -> transactionRequested(requested, effects);
        case Input.StepRequested requested -> stepRequested(requested, effects);
        case Input.InteractiveCommitRequested requested -> commitRequested(requested, effects);
        case Input.TurnAnswered answered -> turnAnswered(answered.result(), effects);
        case Input.TurnUnanswered unanswered -> turnUnanswered(unanswered, effects);
        case Input.CoordinatorAnswered answered -> coordinatorAnswered(answered.outcome(), effects);
        case Input.CoordinatorUnanswered ignored -> {
          Invariants.check(phase == Phase.PLANNED || phase == Phase.DYNAMIC
              || phase == Phase.COMMIT, "no coordinator runs for this request");
          fail(new TroupeException(ErrorCode.OUTCOME_UNKNOWN, "no outcome within "
              + limits.answerTimeoutMillis() + " ms; the transaction may still commit"), effects);
        }
      }
    } catch (TroupeException refused) {
      // A refusal before anything ran (a reserved type, a limit, a sync argument): it changed
      // nothing.
      fail(refused, effects);
    }
    return effects;
  }

  /** Whether the request has its answer (its last effect was the reply). */
  public boolean answered() {
    return phase == Phase.ANSWERED;
  }

  // ---------------------------------------------------------------- requests

  private void turnRequested(Input.TurnRequested requested, List<Effect> effects) {
    expect(Phase.NEW);
    turnEntity = requested.entity();
    turn = requested.turn();
    turnType = lookups.typeOf(turnEntity);
    if (reachesOtherEntities(turnType, turn)) {
      escalate(effects);
      return;
    }
    phase = Phase.TURN;
    effects.add(new Effect.RunTurn(turnEntity, turnType, turn, requested.transactionId()));
  }

  /**
   * Whether a turn reaches other entities by itself: an action's sync calls, a (de)registration
   * (the other end records it). A turn that reaches them through declared dependencies only
   * learns it from its entity ({@code needs_transaction}).
   */
  private static boolean reachesOtherEntities(CompiledType type, Turn turn) {
    return turn instanceof Turn.InvokeAction invoke && hasSync(type, invoke.action())
        || deliversToSync(type, turn)
        || turn instanceof Turn.RegisterDependency
        || turn instanceof Turn.DeregisterDependency;
  }

  /** The single turn runs as a transaction of its own, answered like a turn. */
  private void escalate(List<Effect> effects) {
    answerAsTurn = true;
    transactionRequested(new Input.TransactionRequested(
        List.of(new Operation(turnEntity, turn)), List.of(), Scheduling.AUTO), effects);
  }

  private void transactionRequested(Input.TransactionRequested requested, List<Effect> effects) {
    Invariants.check(phase == Phase.NEW || phase == Phase.TURN,
        "a transaction started in phase %s", phase);
    types = new LinkedHashMap<>();
    parts = expand(requested.operations(), requested.reads(), types);
    List<Dependency> registrations = new ArrayList<>();
    for (CoordinatorCore.Part part : parts.values()) {
      for (Turn partTurn : part.turns()) {
        if (partTurn instanceof Turn.RegisterDependency register) {
          registrations.add(register.dependency());
        }
      }
    }
    registering = List.copyOf(registrations);
    if (!registering.isEmpty()) {
      effects.add(new Effect.AnnounceRegistrations(registering));
    }
    if (requested.scheduling() == Scheduling.DYNAMIC) {
      startDynamic(effects);
    } else {
      replansLeft = limits.maxReplans();
      startPlannedOrDynamic(effects);
    }
  }

  private void stepRequested(Input.StepRequested requested, List<Effect> effects) {
    expect(Phase.NEW);
    stepTransactionId = requested.transactionId();
    turnEntity = requested.entity();
    turn = requested.turn();
    turnType = lookups.typeOf(turnEntity);
    if (turn instanceof Turn.InvokeAction invoke && hasSync(turnType, invoke.action())) {
      throw TroupeException.invalid("action %s.%s has sync calls; run it in a static"
          .formatted(turnType.name(), invoke.action()) + " transaction (POST /v1/transactions)");
    }
    phase = Phase.STEP;
    effects.add(new Effect.RunStep(stepTransactionId, turnEntity, turnType, turn));
  }

  private void commitRequested(Input.InteractiveCommitRequested requested, List<Effect> effects) {
    expect(Phase.NEW);
    types = new LinkedHashMap<>(requested.types());
    if (requested.parts().isEmpty()) {
      reply(new Effect.ReplyTransaction(
          new CoordinatorCore.Outcome.Committed(requested.transactionId(), Map.of())), effects);
      return;
    }
    phase = Phase.COMMIT;
    effects.add(new Effect.StartCoordinator(requested.parts(), types, Start.INTERACTIVE_COMMIT,
        limits.coordinatorWithoutRetries(), requested.transactionId()));
  }

  // ---------------------------------------------------------------- answers

  private void turnAnswered(TurnResult result, List<Effect> effects) {
    Invariants.check(phase == Phase.TURN || phase == Phase.STEP,
        "a turn's answer in phase %s", phase);
    if (phase == Phase.STEP) {
      switch (result) {
        case TurnResult.Done done -> reply(
            new Effect.ReplyView(turnEntity, turnType, done.state(), done.version()), effects);
        case TurnResult.Failed failed -> {
          if (failed.error().code() == ErrorCode.ABORTED) {
            // Wait-die killed the transaction: it ends before the client hears of it.
            effects.add(new Effect.AbortInteractive(stepTransactionId));
          }
          fail(failed.error(), effects);
        }
      }
      return;
    }
    switch (result) {
      case TurnResult.Done done ->
          reply(new Effect.ReplyTurn(done.version(), done.wrote(), done.state(), turnType),
              effects);
      case TurnResult.Failed failed -> {
        if (failed.error().code() == ErrorCode.ABORTED
            && TransactionAbort.NEEDS_TRANSACTION.equals(failed.error().reason())) {
          // Its dependencies' entities must join: planned with them when they can be predicted.
          escalate(effects);
        } else {
          fail(failed.error(), effects);
        }
      }
    }
  }

  private void turnUnanswered(Input.TurnUnanswered unanswered, List<Effect> effects) {
    Invariants.check(phase == Phase.TURN || phase == Phase.STEP,
        "a turn's answer in phase %s", phase);
    if (phase == Phase.STEP) {
      // The step may have applied; the transaction can no longer be trusted to commit it.
      effects.add(new Effect.AbortInteractive(stepTransactionId));
      fail(new TroupeException(ErrorCode.OUTCOME_UNKNOWN, "no answer within "
          + limits.answerTimeoutMillis() + " ms; the transaction was aborted"), effects);
      return;
    }
    fail(new TroupeException(ErrorCode.OUTCOME_UNKNOWN, unanswered.timedOut()
        ? "no answer within " + limits.answerTimeoutMillis() + " ms; the turn may still commit"
        : String.valueOf(unanswered.detail())), effects);
  }

  private void coordinatorAnswered(CoordinatorCore.Outcome outcome, List<Effect> effects) {
    Invariants.check(phase == Phase.PLANNED || phase == Phase.DYNAMIC || phase == Phase.COMMIT,
        "a coordinator's outcome in phase %s", phase);
    switch (outcome) {
      case CoordinatorCore.Outcome.Committed committed -> {
        if (answerAsTurn) {
          CoordinatorCore.ParticipantResult result = committed.results().get(turnEntity);
          Invariants.check(result != null, "%s committed without its entity %s",
              committed.transactionId(), turnEntity);
          reply(new Effect.ReplyTurn(result.version(), result.wrote(), result.state(), turnType),
              effects);
        } else {
          reply(new Effect.ReplyTransaction(committed), effects);
        }
      }
      case CoordinatorCore.Outcome.Failed failed -> {
        TroupeException error = failed.error();
        if (phase == Phase.PLANNED && error.code() == ErrorCode.ABORTED
            && TransactionAbort.DEPENDENCIES_INVOLVED.equals(error.reason())) {
          // Its forwards reached beyond its plan and it changed nothing: plan again from
          // fresher states, or run dynamic once the replans are spent.
          effects.add(new Effect.CountPlanning(replansLeft > 0));
          if (replansLeft > 0) {
            replansLeft--;
            startPlannedOrDynamic(effects);
          } else {
            startDynamic(effects);
          }
          return;
        }
        fail(error, effects);
      }
    }
  }

  // ---------------------------------------------------------------- scheduling

  private void startPlannedOrDynamic(List<Effect> effects) {
    Optional<Map<EntityId, CoordinatorCore.Part>> planned = DependencyPlanner.plan(parts, types,
        lookups::cachedState, lookups::pendingRegistrations, limits.maxDependencyChain());
    if (planned.isEmpty()) {
      effects.add(new Effect.CountPlanning(false));
      startDynamic(effects);
      return;
    }
    phase = Phase.PLANNED;
    // Retried like a dynamic one, keeping its position: in a cluster a planned part dies rather
    // than wait for a later planned one of another node's sequencer (the participant rule,
    // docs/design/multi-entity-transactions.md); on one node planned parts never die.
    effects.add(new Effect.StartCoordinator(planned.get(), types, Start.PLANNED,
        limits.coordinator(), 0));
  }

  private void startDynamic(List<Effect> effects) {
    phase = Phase.DYNAMIC;
    effects.add(new Effect.StartCoordinator(parts, types, Start.DYNAMIC, limits.coordinator(), 0));
  }

  // ---------------------------------------------------------------- replies

  private void fail(TroupeException error, List<Effect> effects) {
    reply(new Effect.ReplyFailure(answerAsTurn ? asTurnError(error) : error), effects);
  }

  /**
   * A single turn run as a transaction fails like a turn: an abort whose reason a turn reports as
   * its own error code is reported so.
   */
  static TroupeException asTurnError(TroupeException error) {
    if (error.code() != ErrorCode.ABORTED || error.reason() == null) {
      return error;
    }
    return switch (error.reason()) {
      case TransactionAbort.PRECONDITION_FAILED ->
          new TroupeException(ErrorCode.PRECONDITION_FAILED, error.getMessage());
      case TransactionAbort.TOO_LARGE ->
          new TroupeException(ErrorCode.TOO_LARGE, error.reason(), error.getMessage());
      case TransactionAbort.EVALUATION_FAILED ->
          new TroupeException(ErrorCode.INVALID_REQUEST, error.reason(), error.getMessage());
      default -> error;
    };
  }

  private void reply(Effect reply, List<Effect> effects) {
    if (!registering.isEmpty()) {
      effects.add(new Effect.WithdrawRegistrations(registering));
      registering = List.of();
    }
    effects.add(reply);
    phase = Phase.ANSWERED;
  }

  private void expect(Phase expected) {
    Invariants.check(phase == expected, "request in phase %s, expected %s", phase, expected);
  }

  // ---------------------------------------------------------------- sync expansion

  /**
   * Each participant's part: the operations plus, depth first, every sync call they make, checked
   * against the limits before anything runs; {@code types} receives each participant's type in
   * plan order.
   */
  private Map<EntityId, CoordinatorCore.Part> expand(List<Operation> operations,
      List<EntityId> reads, Map<EntityId, CompiledType> types) {
    if (operations.isEmpty() && reads.isEmpty()) {
      throw TroupeException.invalid("a transaction needs at least one operation or read");
    }
    Map<EntityId, List<Turn>> turns = new LinkedHashMap<>();
    int[] count = {0};
    for (Operation operation : operations) {
      addOperation(operation.entity(), operation.turn(), 0, turns, types, count);
    }
    Set<EntityId> readEntities = new HashSet<>();
    for (EntityId read : reads) {
      types.computeIfAbsent(read, lookups::typeOf);
      turns.computeIfAbsent(read, ignored -> new ArrayList<>());
      readEntities.add(read);
      checkParticipants(types);
    }
    Map<EntityId, CoordinatorCore.Part> expanded = new LinkedHashMap<>();
    turns.forEach((entity, entityTurns) ->
        expanded.put(entity, new CoordinatorCore.Part(entityTurns, readEntities.contains(entity))));
    return expanded;
  }

  private void addOperation(EntityId entity, Turn operation, int depth,
      Map<EntityId, List<Turn>> turns, Map<EntityId, CompiledType> types, int[] count) {
    if (++count[0] > limits.maxOperations()) {
      throw new TroupeException(ErrorCode.TOO_LARGE,
          "a transaction may carry at most %d operations, sync calls included"
              .formatted(limits.maxOperations()));
    }
    CompiledType type = types.computeIfAbsent(entity, lookups::typeOf);
    turns.computeIfAbsent(entity, ignored -> new ArrayList<>()).add(operation);
    checkParticipants(types);
    Turn.InvokeAction invoke = switch (operation) {
      case Turn.InvokeAction action -> action;
      // A causal message's delivery to an action with sync calls: the calls join its transaction,
      // as they do for the REST invocation of the action.
      case Turn.DeliverMessage delivery when deliversToSync(type, delivery) ->
          new Turn.InvokeAction(delivery.action(), delivery.args());
      default -> null;
    };
    if (invoke != null && hasSync(type, invoke.action())) {
      if (depth >= limits.maxSyncDepth()) {
        throw TroupeException.invalid("sync calls nest deeper than %d levels at %s.%s"
            .formatted(limits.maxSyncDepth(), entity, invoke.action()));
      }
      List<SyncInvocation> calls;
      try {
        calls = type.synchronizedCalls(invoke.action(), invoke.params(), limits.values());
      } catch (TroupeException e) {
        // An argument that fails to evaluate, or builds too much, fails the transaction like a
        // failing effect would: aborted with its reason.
        if (TransactionAbort.EVALUATION_FAILED.equals(e.reason())
            || TransactionAbort.TOO_LARGE.equals(e.reason())) {
          throw new TroupeException(ErrorCode.ABORTED, e.reason(), e.getMessage());
        }
        throw e;
      }
      for (SyncInvocation call : calls) {
        addOperation(call.entity(), new Turn.InvokeAction(call.action(), call.arguments()),
            depth + 1, turns, types, count);
      }
    }
  }

  private void checkParticipants(Map<EntityId, CompiledType> types) {
    if (types.size() > limits.maxParticipants()) {
      throw new TroupeException(ErrorCode.TOO_LARGE,
          "a transaction may touch at most %d entities, sync calls included"
              .formatted(limits.maxParticipants()));
    }
  }

  /** Whether a turn delivers a causal message to an action with sync calls (not a consumed one). */
  private static boolean deliversToSync(CompiledType type, Turn turn) {
    return turn instanceof Turn.DeliverMessage delivery && delivery.consumedOutcome() == null
        && hasSync(type, delivery.action());
  }

  /** Whether an action of the type makes sync calls (an unknown action has none). */
  private static boolean hasSync(CompiledType type, String action) {
    ActionSpec spec = type.spec().actions().get(action);
    return spec != null && !spec.sync().isEmpty();
  }
}
