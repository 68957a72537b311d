package dev.troupe.txn.entity;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.Operation;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.AdmissionPolicy;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.PsacSettings;
import dev.troupe.txn.DependencyEvaluator;
import dev.troupe.txn.Forward;
import dev.troupe.txn.Mutations;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnEvaluator;
import dev.troupe.txn.TurnLimits;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.coordinator.DecisionQueryCore;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The serial turn protocol of one entity, as a deterministic state machine: {@code handle(input)}
 * returns the effects for the shell (the entity actor) to run. No Pekko, storage, threads or clock.
 *
 * <p><b>Pipelining.</b> Turns run one at a time, each against the entity's <i>tentative</i> state:
 * the durable state plus the operations of commits submitted but not yet durable. A turn's commit
 * is submitted as soon as it is evaluated, so a hot entity places many turns in one group commit
 * instead of one turn per disk sync. This is safe because:
 *
 * <ul>
 *   <li>commits of one entity go to one journal partition, whose writer makes them durable in
 *       submission order, so a commit is durable only after every earlier one is;
 *   <li>no reply leaves before every commit it depends on is durable (replies are released in
 *       order), so no client ever observes state that a crash could still erase;
 *   <li>a commit refused before it was written (the partition queue is full) is always the newest
 *       one, so rolling the tentative state back to before it is exact; any other commit failure
 *       means the outcome is unknown, and the core fails every dependent turn and asks the shell to
 *       stop, so the next incarnation reloads the durable state.
 * </ul>
 *
 * <p><b>Invariants.</b> Commits succeed in serial order; {@code inFlight} holds at most {@code
 * maxInFlightCommitsPerEntity} commits; answers that depend on the entity's state are released in
 * the order the turns arrived (a refusal for overload depends on nothing and leaves at once).
 *
 * <p><b>Versions.</b> Operations applied to the tentative state get provisional timestamps (one
 * above its version); once nothing is in flight the tentative version is re-based to the real
 * commit timestamp. Versions reported to clients are always real commit timestamps.
 *
 * <p><b>Transactions (participant side of two-phase commit).</b> A multi-entity transaction sends
 * each entity a {@link Input.PrepareRequested} with its operations on that entity. The entity takes
 * the locks they need in its {@link LockTable} (strict two-phase locking with wait-die; the whole
 * entity under the serial policy, the touched keys under the keys policy), evaluates them against
 * the tentative state, persists them as a prepared record ({@link Effect.SubmitPrepare}) and votes
 * yes once that record is durable, or votes no (a failed precondition, a wait-die death, a store
 * refusal). It keeps its locks until the decision: a commit applies the prepared operations to the
 * tentative state and submits them as an ordinary commit that also resolves the prepared record; an
 * abort drops them. Locks are released when the commit is submitted, not when it is durable: a later
 * reader's answers and votes wait for durability anyway (replies are released in order, prepared
 * records are written in partition order), so early release exposes nothing a crash could erase.
 * Single-entity turns take no locks: a turn whose access conflicts with a lock holder waits in the
 * turn queue until the holder releases.
 *
 * <p>The vote is a {@link TurnResult}: {@code Done(version, stateAfter, wrote)} for yes, with the
 * entity's durable version when the vote was cast and the state the transaction will produce;
 * {@code Failed(error)} for no. The acknowledgement of a commit decision is {@code Done} with the
 * commit's own version, released once it is durable.
 *
 * <p><b>Over a network that loses, duplicates and reorders</b> (between nodes), the participant
 * side is idempotent and asks when it is in doubt:
 *
 * <ul>
 *   <li>A duplicate prepare of a part it already has is answered with the same vote if the part
 *       voted yes, and otherwise ignored (its vote is still to come). A prepare of a transaction
 *       it remembers as decided is refused (the coordinator is past voting and ignores it).
 *   <li>A duplicate decision never applies twice. A commit of a part it committed is acknowledged
 *       again with the same acknowledgement (once that is durable); a commit it cannot place
 *       (the memory of recent commits, {@code rememberedCommits} per entity, forgot it) is
 *       acknowledged as {@code outcome_unknown} rather than applied: a commit reaches a participant
 *       only after it voted yes, which needs a durable prepared record, and that record leaves
 *       this entity only by being committed or aborted here (or resolved by recovery), so a commit
 *       of a part unknown here was applied already. The memory is bounded by count because a
 *       resend only follows a lost acknowledgement, and it is acknowledged correctly (if less
 *       precisely) either way. An abort of a part unknown here is acknowledged and remembered
 *       (the prepare it overtook is then refused); an abort of a transaction remembered as
 *       committed means it was decided both ways, which must never happen (an invariant).
 *   <li>A part that voted yes and hears no decision within {@code inDoubtQueryIntervalMillis}
 *       asks the coordinator's node ({@link Effect.QueryDecision}, node {@link
 *       dev.troupe.model.time.TransactionIds#nodeOf}), and again every interval until a decision
 *       arrives. The answer comes back as an ordinary {@link Input.DecisionReceived} with nobody
 *       to acknowledge to (a live coordinator resends, and the resend is acknowledged); "undecided,
 *       ask later" is not fed at all. Under presumed abort the answering node says abort only for
 *       a transaction that can no longer commit ({@link DecisionQueryCore}).
 * </ul>
 *
 * @param <R> the shell's reply target (an actor reference in the server, anything in tests)
 */
public final class EntityTurnCore<R> {

  /** What the shell feeds in. */
  public sealed interface Input<R> {
    /** A turn for this entity, with the type to evaluate it against and a fresh transaction id. */
    record TurnRequested<R>(Turn turn, CompiledType type, long transactionId, R replyTo)
        implements Input<R> {}

    /** The commit with this serial is durable with this commit timestamp. */
    record CommitSucceeded<R>(long serial, long commitTimestamp) implements Input<R> {}

    /**
     * The commit with this serial failed. {@code refusedBeforeWrite}: the store refused it before
     * writing anything (it certainly did not commit), and the shell submitted no later commit of
     * this entity (it must drop the later {@code SubmitCommit} effects of the same batch); otherwise
     * the outcome is unknown.
     */
    record CommitFailed<R>(long serial, TroupeException error, boolean refusedBeforeWrite)
        implements Input<R> {}

    /**
     * Prepare this entity's part of a multi-entity transaction and vote.
     *
     * @param startTimestamp the transaction's age for wait-die (kept across its retries)
     * @param turns the operations on this entity, evaluated in order; empty for a pure read
     * @param readsState whether the transaction reads the whole state of this entity
     * @param planned a planned transaction: ordered before it runs, it waits for locks (or in the
     *     PSAC gate) whatever the ages and never dies
     */
    record PrepareRequested<R>(long transactionId, long startTimestamp, List<Turn> turns,
        boolean readsState, CompiledType type, R voteTo, boolean planned,
        List<Forward> forwards, java.util.Map<String, LockTable.Mode> reserved)
        implements Input<R> {
      public PrepareRequested(long transactionId, long startTimestamp, List<Turn> turns,
          boolean readsState, CompiledType type, R voteTo) {
        this(transactionId, startTimestamp, turns, readsState, type, voteTo, false);
      }

      public PrepareRequested(long transactionId, long startTimestamp, List<Turn> turns,
          boolean readsState, CompiledType type, R voteTo, boolean planned) {
        this(transactionId, startTimestamp, turns, readsState, type, voteTo, planned, List.of(),
            java.util.Map.of());
      }

      PrepareRequested<R> votingTo(R newVoteTo) {
        return new PrepareRequested<>(transactionId, startTimestamp, turns, readsState, type,
            newVoteTo, planned, forwards, reserved);
      }
    }

    /**
     * The operations other participants forward to this entity's part changed (declared
     * dependencies): take the locks they need, evaluate the part again with them (from the same
     * state: its locks keep it), persist the new prepared record and vote again to {@code
     * voteTo}. Sent only to a part that voted yes and has not been decided.
     *
     * @param forwards every forward to this part so far (replacing the earlier ones)
     * @param round the coordinator's round of this part ({@code CoordinatorCore}: 2 for the
     *     first forwards after the prepare); a round not newer than the part's is a duplicate or
     *     a late copy. 0: unnumbered (a shell whose messages are never duplicated or reordered)
     */
    record ForwardsReceived<R>(long transactionId, List<Forward> forwards, R voteTo, int round)
        implements Input<R> {
      public ForwardsReceived(long transactionId, List<Forward> forwards, R voteTo) {
        this(transactionId, forwards, voteTo, 0);
      }
    }

    /**
     * One step of an interactive transaction on this entity: take the locks {@code turn} needs (a
     * read of the whole state when {@code turn} is null), evaluate it after the transaction's
     * earlier steps here, and answer with the state the transaction now sees (not committed).
     * A failed step changes nothing and leaves the transaction open; a wait-die death answers
     * {@code aborted} and the transaction must be aborted.
     */
    record StepRequested<R>(long transactionId, long startTimestamp, Turn turn,
        CompiledType type, R replyTo) implements Input<R> {}

    /** The prepared record of this transaction is durable. */
    record PrepareSucceeded<R>(long transactionId) implements Input<R> {}

    /** The prepared record was not written (or its fate is unknown): vote no. */
    record PrepareFailed<R>(long transactionId, TroupeException error) implements Input<R> {}

    /**
     * The coordinator's decision. {@code acknowledgeTo} receives the commit's result; for an abort
     * it may be {@code null} (nobody waits for it).
     */
    record DecisionReceived<R>(long transactionId, boolean commit, R acknowledgeTo)
        implements Input<R> {}

    /**
     * The in-doubt interval of a part that voted yes elapsed: if no decision arrived yet, ask the
     * coordinator's node ({@link Effect.QueryDecision}) and schedule the next check.
     */
    record InDoubtQueryDue<R>(long transactionId) implements Input<R> {}

    /**
     * A prepared part recovery kept in doubt (its coordinator is on another node and may be
     * alive: {@code InDoubtResolution.toAsk}): fed before anything else reaches a new incarnation.
     * The part holds the whole entity until its decision (its record does not say which keys it
     * locked), asks the coordinator's node like any part in doubt, and its decision commits the
     * recorded operations or abandons them. Parts with operations only: a PSAC part that needs a
     * redo is not adopted this way.
     */
    record PreparedPartRecovered<R>(long transactionId, List<Operation> operations,
        CompiledType type) implements Input<R> {
      public PreparedPartRecovered {
        operations = List.copyOf(operations);
      }
    }

    /** The shell wants to stop this entity (idle, or to make room for others). */
    record PassivationRequested<R>() implements Input<R> {}

    /** A periodic idleness check (every {@code passivate-after-idle-millis}). */
    record IdleCheckElapsed<R>() implements Input<R> {}
  }

  /** What the shell must do. */
  public sealed interface Effect<R> {
    /**
     * Submit these operations as one journal record, and report back with the serial. {@code
     * resolvesPrepared}: the record is a transaction's decided commit, so the store removes its
     * prepared record in the same write and must not refuse it for load.
     */
    record SubmitCommit<R>(long serial, long transactionId, List<Operation> operations,
        boolean resolvesPrepared, boolean exemptFromQueueLimit) implements Effect<R> {
      public SubmitCommit(long serial, long transactionId, List<Operation> operations,
          boolean resolvesPrepared) {
        this(serial, transactionId, operations, resolvesPrepared, resolvesPrepared);
      }
    }

    /**
     * Persist the prepared record of a transaction; report with PrepareSucceeded/Failed. A part
     * admitted by PSAC has no operations yet: it persists its {@code redoTurns} and its {@code
     * arrival} rank instead, for recovery to re-evaluate in arrival order.
     */
    record SubmitPrepare<R>(long transactionId, List<Operation> operations, List<Turn> redoTurns,
        long arrival) implements Effect<R> {}

    /**
     * Remove the prepared record of an aborted transaction. Needs no reply and no sync: a prepared
     * record left behind by a crash is resolved as aborted at recovery (presumed abort).
     */
    record AbandonPrepared<R>(long transactionId) implements Effect<R> {}

    record Reply<R>(R replyTo, TurnResult result) implements Effect<R> {}

    /** Stop this incarnation; the next turn starts a fresh one from durable state. */
    record Stop<R>() implements Effect<R> {}

    /** Feed InDoubtQueryDue for this transaction after the delay. */
    record ScheduleInDoubtQuery<R>(long transactionId, long delayMillis) implements Effect<R> {}

    /**
     * Ask node {@code coordinatorNode} for the decision of this transaction, whose part here is in
     * doubt; a commit or abort answer is fed back as {@link Input.DecisionReceived} (with no
     * {@code acknowledgeTo}), an "undecided" answer is dropped.
     */
    record QueryDecision<R>(long transactionId, int coordinatorNode) implements Effect<R> {}

    /**
     * The entity has been idle for a whole check period (so between one and two periods): offer
     * to be passivated.
     */
    record OfferPassivation<R>() implements Effect<R> {}
  }

  /** @param resolvesPrepared a decided transaction's commit, which must never be rolled back */
  private record InFlight(long serial, EntityState stateBefore, boolean resolvesPrepared) {}

  /**
   * @param committedBySerial the reply is for the commit with serial {@code dependsOnSerial} itself
   *     (so what it read is the version before that commit)
   */
  private record PendingReply<R>(long dependsOnSerial, R replyTo, EntityState state, boolean wrote,
      TroupeException error, boolean committedBySerial,
      DependencyEvaluator.Forwarding forwarding, RememberedCommit<R> commit) {
    PendingReply(long dependsOnSerial, R replyTo, EntityState state, boolean wrote,
        TroupeException error, boolean committedBySerial) {
      this(dependsOnSerial, replyTo, state, wrote, error, committedBySerial,
          DependencyEvaluator.Forwarding.NONE);
    }

    PendingReply(long dependsOnSerial, R replyTo, EntityState state, boolean wrote,
        TroupeException error, boolean committedBySerial,
        DependencyEvaluator.Forwarding forwarding) {
      this(dependsOnSerial, replyTo, state, wrote, error, committedBySerial, forwarding, null);
    }
  }

  private record Waiting<R>(Turn turn, CompiledType type, long transactionId, R replyTo) {}

  private enum Phase {
    /** An interactive transaction's part: holds the locks of its steps so far, not yet prepared. */
    OPEN,
    WAITING_FOR_LOCKS,
    /** Evaluated, prepared record submitted, vote not yet cast. */
    PREPARING,
    /** Voted yes; waiting for the decision. */
    PREPARED
  }

  /**
   * The participant's own bounds over a network ({@code troupe.transactions} in reference.conf).
   *
   * @param inDoubtQueryIntervalMillis how long a part that voted yes waits for its decision
   *     before it asks the coordinator's node, and then between two questions
   * @param rememberedCommits most recently committed transactions an entity remembers with their
   *     acknowledgement, so that a duplicated or resent commit is acknowledged again, not applied
   */
  public record ParticipantLimits(long inDoubtQueryIntervalMillis, int rememberedCommits) {
    /** reference.conf's. */
    public static final ParticipantLimits DEFAULTS = new ParticipantLimits(5_000, 16);

    public ParticipantLimits {
      Invariants.check(inDoubtQueryIntervalMillis > 0 && rememberedCommits >= 0,
          "bad participant limits %d, %d", inDoubtQueryIntervalMillis, rememberedCommits);
    }
  }

  /**
   * A recently committed part: its acknowledgement once released (durable), the recipients of
   * duplicates that arrived before that, and (only under {@link
   * Mutations.Mutation#APPLY_DUPLICATE_DECISION}) its operations.
   */
  private static final class RememberedCommit<R> {
    TurnResult acknowledgement;
    final List<R> waiting = new ArrayList<>();
    List<Operation> operations = List.of();
  }

  /** This entity's part of one transaction, from its prepare request to its decision. */
  private static final class Participation<R> {
    /** The prepare request; for an interactive part, a placeholder until the commit's prepare. */
    Input.PrepareRequested<R> request;
    /** An interactive part's successful steps, in order (what its prepare evaluates). */
    final List<Turn> steps = new ArrayList<>();
    /** An interactive part's step waiting for its locks. */
    Input.StepRequested<R> waitingStep;
    Phase phase = Phase.WAITING_FOR_LOCKS;
    List<Operation> operations = List.of();
    EntityState stateAfter;
    /** An abort arrived while the prepared record was being written. */
    boolean abortedWhilePreparing;
    /** The operations forwarded to this part to keep declared dependencies. */
    List<Forward> forwards = List.of();
    /** What the last evaluation forwards to other participants. */
    DependencyEvaluator.Forwarding forwarding = DependencyEvaluator.Forwarding.NONE;
    /** A prepared record of this part was submitted (an amendment replaces it). */
    boolean recordSubmitted;
    /** Under PSAC: this part in the gate (null under locking). */
    GateItem<R> gateItem;
    /** Under PSAC: who waits for the commit to be applied, once decided. */
    R acknowledgeTo;
    /**
     * Under PSAC: the part keeps declared dependencies, so the gate admits it alone and its
     * operations (forwards included) are computed at admission, like a locking part's.
     */
    boolean exclusive;
    /** The yes vote's state and whether it announced a prepared record (to vote again). */
    EntityState votedState;
    boolean votedWrote;
    /** An in-doubt check is scheduled (one at a time). */
    boolean inDoubtCheckScheduled;
    /** Under PSAC: the commit arrived and waits in the gate to be applied. */
    boolean commitReceived;
    /** The coordinator's latest round this part evaluated (1: the prepare). */
    int round = 1;

    Participation(Input.PrepareRequested<R> request) {
      this.request = request;
      this.forwards = request.forwards();
    }
  }

  /** What the PSAC gate orders: a transaction's part or a single turn (compared by identity). */
  private sealed interface GateItem<R> {}

  private static final class GatedTurn<R> implements GateItem<R> {
    final Waiting<R> turn;

    GatedTurn(Waiting<R> turn) {
      this.turn = turn;
    }
  }

  private static final class GatedPart<R> implements GateItem<R> {
    final Participation<R> participation;

    GatedPart(Participation<R> participation) {
      this.participation = participation;
    }
  }

  private final EntityId entity;
  private final TurnLimits limits;
  private final int originDc;

  private EntityState tentative;
  private long lastDurableVersion;
  /** The durable version before the last durable commit: what that commit's turn read. */
  private long versionBeforeLastDurable;
  private long lastSubmittedSerial;
  private long lastDurableSerial;
  private final ArrayDeque<InFlight> inFlight = new ArrayDeque<>();
  private final ArrayDeque<PendingReply<R>> replies = new ArrayDeque<>();
  private final ArrayDeque<Waiting<R>> waiting = new ArrayDeque<>();
  private final LockTable<Long> locks = new LockTable<>();
  private final java.util.Map<Long, Participation<R>> participations = new java.util.HashMap<>();
  /**
   * Transactions whose abort arrived while they had no part here, newest last, at most {@code
   * limits.rememberedAborts()}: a prepare of one of them arrived late (its abort overtook it) and
   * is refused. Within one node mailboxes keep causal order, so only messages between nodes or a
   * reordering shell make this happen; the simulator's per-connection mailboxes do.
   */
  private final java.util.LinkedHashSet<Long> rememberedAborts = new java.util.LinkedHashSet<>();
  /**
   * Recently committed parts, oldest first, at most {@code participantLimits.rememberedCommits()}:
   * a duplicated or resent commit is acknowledged again from here instead of applied twice.
   */
  private final java.util.LinkedHashMap<Long, RememberedCommit<R>> rememberedCommits =
      new java.util.LinkedHashMap<>();
  private final ParticipantLimits participantLimits;
  private long lockWaits;
  private PsacGate<GateItem<R>> gate;
  private PsacSettings gateSettings;
  private long gateArrivals;
  private long psacDelays;
  private boolean gateChanged;
  private boolean drainingGate;
  private boolean passivationRequested;
  private boolean stopped;
  /** Whether any input other than an idle check arrived since the last idle check. */
  private boolean activeSinceIdleCheck = true;

  /** Deliberate breakages (empty outside the simulator's tests). */
  private final java.util.Set<Mutations.Mutation> mutations;

  /** @param durable the entity's latest durable state, read from the store at start */
  public EntityTurnCore(EntityId entity, EntityState durable, TurnLimits limits, int originDc) {
    this(entity, durable, limits, originDc, java.util.Set.of());
  }

  /**
   * A core with deliberate breakages: only the simulator's tests pass any (see {@link
   * Mutations}).
   */
  public EntityTurnCore(EntityId entity, EntityState durable, TurnLimits limits, int originDc,
      java.util.Set<Mutations.Mutation> mutations) {
    this(entity, durable, limits, ParticipantLimits.DEFAULTS, originDc, mutations);
  }

  /** A core with its participant bounds, and deliberate breakages in the simulator's tests. */
  public EntityTurnCore(EntityId entity, EntityState durable, TurnLimits limits,
      ParticipantLimits participantLimits, int originDc,
      java.util.Set<Mutations.Mutation> mutations) {
    this.participantLimits = participantLimits;
    this.mutations = java.util.Set.copyOf(mutations);
    this.entity = entity;
    this.limits = limits;
    this.originDc = originDc;
    this.tentative = durable;
    this.lastDurableVersion = durable.version();
  }

  public List<Effect<R>> handle(Input<R> input) {
    Invariants.check(!stopped, "%s received %s after it stopped", entity, input);
    List<Effect<R>> effects = new ArrayList<>();
    if (!(input instanceof Input.IdleCheckElapsed<R>)) {
      activeSinceIdleCheck = true;
    }
    switch (input) {
      case Input.TurnRequested<R> request -> {
        Invariants.check(!passivationRequested, "%s got a turn while passivating", entity);
        Waiting<R> turn =
            new Waiting<>(request.turn(), request.type(), request.transactionId(), request.replyTo());
        if (isPsac(request.type())) {
          offerTurn(turn, effects);
        } else if (waiting.isEmpty() && canRun(turn)) {
          run(turn, effects);
        } else if (waiting.size() < limits.maxQueuedTurnsPerEntity()) {
          waiting.add(turn);
        } else {
          effects.add(new Effect.Reply<>(request.replyTo(), new TurnResult.Failed(
              new TroupeException(ErrorCode.OVERLOADED,
                  "entity %s has %d turns waiting; retry later".formatted(entity, waiting.size())))));
        }
      }
      case Input.CommitSucceeded<R> success -> {
        InFlight head = inFlight.pollFirst();
        Invariants.check(head != null && head.serial() == success.serial(),
            "%s: commit %d succeeded out of order (expected %s)", entity, success.serial(), head);
        Invariants.check(success.commitTimestamp() > lastDurableVersion,
            "%s: commit timestamps must grow (%d after %d)", entity, success.commitTimestamp(),
            lastDurableVersion);
        lastDurableSerial = success.serial();
        versionBeforeLastDurable = lastDurableVersion;
        lastDurableVersion = success.commitTimestamp();
        releaseReplies(effects);
        rebaseWhenSettled();
        runWaitingTurns(effects);
        drainGate(effects);
      }
      case Input.CommitFailed<R> failure -> {
        if (failure.refusedBeforeWrite() && !rollbackLosesADecision(failure.serial())
            && (gate == null || gate.isEmpty())) {
          refuseFrom(failure.serial(), failure.error(), effects);
        } else {
          failEverything(failure.error(), effects);
        }
      }
      case Input.PrepareRequested<R> prepare -> prepare(prepare, effects);
      case Input.ForwardsReceived<R> forwarded -> forwardsReceived(forwarded, effects);
      case Input.StepRequested<R> step -> step(step, effects);
      case Input.PrepareSucceeded<R> prepared -> prepared(prepared.transactionId(), effects);
      case Input.PrepareFailed<R> failed -> prepareFailed(failed, effects);
      case Input.DecisionReceived<R> decision -> decide(decision, effects);
      case Input.InDoubtQueryDue<R> due -> inDoubtQueryDue(due.transactionId(), effects);
      case Input.PreparedPartRecovered<R> recovered -> adoptRecovered(recovered, effects);
      case Input.PassivationRequested<R> ignored -> passivationRequested = true;
      case Input.IdleCheckElapsed<R> ignored -> {
        if (!activeSinceIdleCheck && isIdle() && !passivationRequested) {
          effects.add(new Effect.OfferPassivation<>());
        }
        activeSinceIdleCheck = false;
      }
    }
    if (passivationRequested && isIdle() && !stopped) {
      stopped = true;
      effects.add(new Effect.Stop<>());
    }
    return effects;
  }

  /** Nothing in flight, nothing waiting, nobody waiting for a reply, no transaction open. */
  public boolean isIdle() {
    return inFlight.isEmpty() && waiting.isEmpty() && replies.isEmpty()
        && participations.isEmpty() && (gate == null || gate.isEmpty());
  }

  /** How many prepare requests waited for locks since this core started (for metrics). */
  public long lockWaits() {
    return lockWaits;
  }

  /** The transactions this entity takes part in and has not seen decided (for metrics, tests). */
  public int openTransactions() {
    return participations.size();
  }

  private boolean canRun(Waiting<R> turn) {
    // The lock set is only worked out when a transaction holds locks here (rarely): a turn's
    // access under key-level admission binds its arguments.
    return inFlight.size() < limits.maxInFlightCommitsPerEntity()
        && (locks.holderCount() == 0
            || !locks.conflictsWithHolders(AccessSets.forTurn(turn.type(), turn.turn())));
  }

  /** Runs queued turns in arrival order while the head may run. */
  private void runWaitingTurns(List<Effect<R>> effects) {
    while (!waiting.isEmpty() && canRun(waiting.peekFirst())) {
      run(waiting.pollFirst(), effects);
    }
  }

  // ------------------------------------------------------------------- transaction participant

  private void prepare(Input.PrepareRequested<R> request, List<Effect<R>> effects) {
    Invariants.check(!passivationRequested, "%s got a prepare while passivating", entity);
    long transactionId = request.transactionId();
    Participation<R> open = participations.get(transactionId);
    if (open != null && open.phase == Phase.OPEN) {
      // An interactive transaction commits: its locks are held; prepare the steps it took here.
      open.request = new Input.PrepareRequested<>(transactionId, request.startTimestamp(),
          List.copyOf(open.steps), open.request.readsState(), request.type(), request.voteTo(),
          false, request.forwards(), java.util.Map.of());
      open.forwards = request.forwards();
      if (request.forwards().isEmpty()) {
        evaluate(open, effects); // its steps took every lock it needs
        return;
      }
      open.phase = Phase.WAITING_FOR_LOCKS;
      requestLocks(open, AccessSets.forPart(request.type(), List.of(), false,
          request.forwards()), true, effects);
      return;
    }
    if (open != null) {
      // A duplicate of the prepare (or a late copy): vote yes again if it did; otherwise its vote
      // is still to come (or it voted no and was forgotten, and the coordinator aborts).
      if (open.phase == Phase.PREPARED && open.votedState != null) {
        replies.add(new PendingReply<>(lastSubmittedSerial, request.voteTo(), open.votedState,
            open.votedWrote, null, false, open.forwarding));
        releaseReplies(effects);
      }
      return;
    }
    if (rememberedCommits.containsKey(transactionId)) {
      effects.add(new Effect.Reply<>(request.voteTo(), new TurnResult.Failed(new TroupeException(
          ErrorCode.ABORTED, TransactionAbort.DECIDED,
          "transaction %d was already decided on %s".formatted(transactionId, entity)))));
      return;
    }
    if (rememberedAborts.contains(transactionId)
        && !mutations.contains(Mutations.Mutation.PREPARE_AFTER_ABORT)) {
      effects.add(new Effect.Reply<>(request.voteTo(), new TurnResult.Failed(new TroupeException(
          ErrorCode.ABORTED, TransactionAbort.DECIDED,
          "transaction %d was aborted before its prepare reached %s".formatted(transactionId,
              entity)))));
      return;
    }
    if (participations.size() >= limits.maxOpenTransactionsPerEntity()) {
      effects.add(new Effect.Reply<>(request.voteTo(), new TurnResult.Failed(new TroupeException(
          ErrorCode.OVERLOADED, "entity %s takes part in %d open transactions; retry later"
              .formatted(entity, participations.size())))));
      return;
    }
    Participation<R> participation = new Participation<>(request);
    if (isPsac(request.type())) {
      participations.put(transactionId, participation);
      participation.gateItem = new GatedPart<>(participation);
      handleGateDecision(gate(request.type()).offer(participation.gateItem,
          request.startTimestamp(), true, request.readsState(), request.planned(), tentative),
          effects);
      return;
    }
    LockTable.LockSet access = AccessSets.forPart(request.type(), request.turns(),
        request.readsState(), request.forwards())
        .merge(AccessSets.reservation(request.type(), request.reserved()));
    participations.put(transactionId, participation);
    requestLocks(participation, access, !request.planned(), effects);
  }

  /**
   * Asks for a part's locks (more of them, for an amended part): evaluates it once granted; a
   * wait-die death votes no (and forgets the part, releasing what it held).
   */
  private void requestLocks(Participation<R> participation, LockTable.LockSet access,
      boolean mayDie, List<Effect<R>> effects) {
    long transactionId = participation.request.transactionId();
    switch (locks.request(transactionId, participation.request.startTimestamp(), access,
        transactionId, mayDie)) {
      case LockTable.Outcome.Granted ignored -> evaluate(participation, effects);
      case LockTable.Outcome.Waiting ignored -> {
        lockWaits++;
        participation.phase = Phase.WAITING_FOR_LOCKS;
      }
      case LockTable.Outcome.Died died -> voteNo(participation, new TroupeException(
          ErrorCode.ABORTED, TransactionAbort.LOCK_CONFLICT,
          "%s is locked by an older transaction (%d)".formatted(entity,
              died.conflictingTransaction())), effects);
    }
  }

  private void forwardsReceived(Input.ForwardsReceived<R> forwarded, List<Effect<R>> effects) {
    Participation<R> participation = participations.get(forwarded.transactionId());
    if (participation != null && forwarded.round() != 0
        && forwarded.round() <= participation.round) {
      // A duplicate or late copy: vote again if it voted in this round (its vote may have been
      // lost); an older round's vote would be ignored, and a vote still to come will be sent.
      if (participation.phase == Phase.PREPARED && forwarded.round() == participation.round
          && participation.votedState != null) {
        replies.add(new PendingReply<>(lastSubmittedSerial, forwarded.voteTo(),
            participation.votedState, participation.votedWrote, null, false,
            participation.forwarding));
        releaseReplies(effects);
      }
      return;
    }
    if (participation == null || participation.phase != Phase.PREPARED) {
      effects.add(new Effect.Reply<>(forwarded.voteTo(), new TurnResult.Failed(new TroupeException(
          ErrorCode.ABORTED, TransactionAbort.DECIDED, "transaction %d has no prepared part on %s"
              .formatted(forwarded.transactionId(), entity)))));
      return;
    }
    if (forwarded.round() != 0) {
      participation.round = forwarded.round();
    }
    participation.votedState = null; // votes again once evaluated
    participation.request = participation.request.votingTo(forwarded.voteTo());
    participation.forwards = forwarded.forwards();
    if (participation.gateItem != null) {
      if (participation.exclusive) {
        evaluate(participation, effects); // alone in its gate: nothing else to wait for
      } else {
        voteNo(participation, TroupeException.invalid(("%s admits by psac and was admitted"
            + " beside other actions, so it cannot take operations forwarded to keep"
            + " dependencies; retry the transaction").formatted(entity)), effects);
      }
      return;
    }
    LockTable.LockSet access = AccessSets.forPart(participation.request.type(), List.of(), false,
        forwarded.forwards());
    if (participation.request.planned()) {
      // Planned parts never wait outside their order: the keys must have been reserved.
      if (locks.holds(forwarded.transactionId(), access)) {
        evaluate(participation, effects);
      } else {
        voteNo(participation, new TroupeException(ErrorCode.ABORTED,
            TransactionAbort.DEPENDENCIES_INVOLVED, ("%s was asked to apply forwards on keys its"
                + " planned part did not reserve").formatted(entity)), effects);
      }
      return;
    }
    requestLocks(participation, access, true, effects);
  }

  /** Evaluates turns in order on {@code state}, each seeing the ones before. */
  private TurnEvaluator.Sequence evaluateTurns(CompiledType type, List<Turn> turns,
      long transactionId, EntityState state) {
    return TurnEvaluator.evaluateSequence(entity, type, state, turns, transactionId, originDc,
        limits);
  }

  /** Locks held: evaluate the transaction's turns in order on the tentative state. */
  private void evaluate(Participation<R> participation, List<Effect<R>> effects) {
    Input.PrepareRequested<R> request = participation.request;
    DependencyEvaluator.Evaluation evaluated = DependencyEvaluator.evaluate(entity,
        request.type(), tentative, request.turns(), participation.forwards,
        request.transactionId(), originDc, limits);
    if (evaluated.error() != null) {
      voteNo(participation, evaluated.error(), effects);
      return;
    }
    participation.operations = evaluated.operations();
    participation.stateAfter = evaluated.after();
    participation.forwarding = mutations.contains(Mutations.Mutation.DROP_FORWARDS)
        ? DependencyEvaluator.Forwarding.NONE // a deliberate bug (simulator tests only)
        : evaluated.forwarding();
    if (evaluated.operations().isEmpty() && !participation.recordSubmitted) {
      // Nothing to redo after a crash: no prepared record. The vote still waits until everything
      // it observed is durable.
      voteYes(participation, evaluated.after(), false, effects);
      releaseKeyLocksEarly(request.transactionId(), effects);
    } else {
      // An amended part replaces its earlier prepared record (with no operations, if the
      // forwards took them all back).
      participation.phase = Phase.PREPARING;
      participation.recordSubmitted = true;
      effects.add(new Effect.SubmitPrepare<>(request.transactionId(), participation.operations,
          List.of(), 0));
    }
  }

  private void prepared(long transactionId, List<Effect<R>> effects) {
    Participation<R> participation = participations.get(transactionId);
    Invariants.check(participation != null && participation.phase == Phase.PREPARING,
        "%s: prepared record of transaction %d is durable but it was not preparing (%s)", entity,
        transactionId, participation == null ? null : participation.phase);
    if (participation.abortedWhilePreparing) {
      effects.add(new Effect.AbandonPrepared<>(transactionId));
      finish(transactionId, effects);
      return;
    }
    // "wrote": a prepared record exists (a PSAC part's holds turns, not operations), so the
    // coordinator must make its decision durable before anyone commits.
    voteYes(participation, participation.stateAfter, true, effects);
    if (mutations.contains(Mutations.Mutation.RELEASE_LOCKS_AT_VOTE)
        && participation.gateItem == null) {
      grant(locks.release(transactionId), effects); // a deliberate bug (simulator tests only)
    }
    if (participation.gateItem == null) {
      releaseKeyLocksEarly(transactionId, effects);
    }
  }

  /** {@link Mutations.Mutation#RELEASE_KEY_LOCK_EARLY}, a deliberate bug (simulator tests only). */
  private void releaseKeyLocksEarly(long transactionId, List<Effect<R>> effects) {
    if (mutations.contains(Mutations.Mutation.RELEASE_KEY_LOCK_EARLY)) {
      grant(locks.releaseReadKeys(transactionId), effects);
    }
  }

  /**
   * The part is prepared: vote yes (once everything it observed is durable) and watch for its
   * decision (see the class doc: a part in doubt asks).
   */
  private void voteYes(Participation<R> participation, EntityState state, boolean wrote,
      List<Effect<R>> effects) {
    participation.phase = Phase.PREPARED;
    participation.votedState = state;
    participation.votedWrote = wrote;
    replies.add(new PendingReply<>(lastSubmittedSerial, participation.request.voteTo(), state,
        wrote, null, false, participation.forwarding));
    releaseReplies(effects);
    scheduleInDoubtCheck(participation, effects);
  }

  private void scheduleInDoubtCheck(Participation<R> participation, List<Effect<R>> effects) {
    if (!participation.inDoubtCheckScheduled) {
      participation.inDoubtCheckScheduled = true;
      effects.add(new Effect.ScheduleInDoubtQuery<>(participation.request.transactionId(),
          participantLimits.inDoubtQueryIntervalMillis()));
    }
  }

  /** Adopts a part recovery kept in doubt (see {@link Input.PreparedPartRecovered}). */
  private void adoptRecovered(Input.PreparedPartRecovered<R> recovered, List<Effect<R>> effects) {
    long transactionId = recovered.transactionId();
    Invariants.check(!participations.containsKey(transactionId),
        "%s: recovered part of transaction %d twice", entity, transactionId);
    // PSAC turns pass the lock table by, so a lock could not hold them back.
    Invariants.check(!isPsac(recovered.type()), "%s admits by PSAC: a part recovered in doubt"
        + " cannot hold it (not supported yet)", entity);
    Participation<R> participation = new Participation<>(new Input.PrepareRequested<>(
        transactionId, transactionId, List.of(), false, recovered.type(), null));
    participation.operations = recovered.operations();
    participation.recordSubmitted = true;
    participation.phase = Phase.PREPARED;
    LockTable.Outcome outcome = locks.request(transactionId, transactionId,
        LockTable.LockSet.wholeEntity(LockTable.Mode.WRITE), transactionId, false);
    Invariants.check(outcome instanceof LockTable.Outcome.Granted,
        "%s: recovered part of transaction %d did not get the entity at once (%s): it must be"
            + " fed before anything else", entity, transactionId, outcome);
    participations.put(transactionId, participation);
    scheduleInDoubtCheck(participation, effects);
  }

  /** The in-doubt interval elapsed: a part still waiting for its decision asks for it. */
  private void inDoubtQueryDue(long transactionId, List<Effect<R>> effects) {
    Participation<R> participation = participations.get(transactionId);
    if (participation == null) {
      return; // decided meanwhile
    }
    participation.inDoubtCheckScheduled = false;
    if (participation.phase != Phase.PREPARED || participation.commitReceived) {
      return; // voting again (forwards), or committed and waiting in the PSAC gate
    }
    if (mutations.contains(Mutations.Mutation.PRESUME_COMMIT_IN_DOUBT)) {
      // A deliberate bug (simulator tests only): presumes the commit nobody decided.
      decide(new Input.DecisionReceived<>(transactionId, true, null), effects);
      return;
    }
    effects.add(new Effect.QueryDecision<>(transactionId,
        dev.troupe.model.time.TransactionIds.nodeOf(transactionId)));
    scheduleInDoubtCheck(participation, effects);
  }

  private void prepareFailed(Input.PrepareFailed<R> failed, List<Effect<R>> effects) {
    Participation<R> participation = participations.get(failed.transactionId());
    Invariants.check(participation != null && participation.phase == Phase.PREPARING,
        "%s: prepare of transaction %d failed but it was not preparing", entity,
        failed.transactionId());
    if (participation.abortedWhilePreparing) {
      finish(failed.transactionId(), effects);
      return;
    }
    voteNo(participation, failed.error(), effects);
  }

  private void voteNo(Participation<R> participation, TroupeException reason,
      List<Effect<R>> effects) {
    long transactionId = participation.request.transactionId();
    // A rejection read the tentative state, so it waits for what it observed, like a turn's.
    replies.add(new PendingReply<>(lastSubmittedSerial, participation.request.voteTo(), tentative,
        false, reason, false));
    releaseReplies(effects);
    if (participation.recordSubmitted) {
      effects.add(new Effect.AbandonPrepared<>(transactionId)); // an amended part's earlier one
    }
    // It voted no, so the transaction aborts: a duplicate of its prepare must not prepare it.
    rememberAbort(transactionId);
    finish(transactionId, effects);
  }

  private void step(Input.StepRequested<R> step, List<Effect<R>> effects) {
    Invariants.check(!passivationRequested, "%s got a step while passivating", entity);
    if (isPsac(step.type())) {
      effects.add(new Effect.Reply<>(step.replyTo(), new TurnResult.Failed(TroupeException.invalid(
          "type %s admits by PSAC; interactive transactions need the serial or keys policy"
              .formatted(step.type().name())))));
      return;
    }
    long transactionId = step.transactionId();
    Participation<R> participation = participations.get(transactionId);
    if (participation == null) {
      if (participations.size() >= limits.maxOpenTransactionsPerEntity()) {
        effects.add(new Effect.Reply<>(step.replyTo(), new TurnResult.Failed(new TroupeException(
            ErrorCode.OVERLOADED, "entity %s takes part in %d open transactions; retry later"
                .formatted(entity, participations.size())))));
        return;
      }
      participation = new Participation<>(new Input.PrepareRequested<>(transactionId,
          step.startTimestamp(), List.of(), false, step.type(), null));
      participation.phase = Phase.OPEN;
      participations.put(transactionId, participation);
    }
    Invariants.check(participation.phase == Phase.OPEN && participation.waitingStep == null,
        "%s: step of transaction %d while %s", entity, transactionId, participation.phase);
    LockTable.LockSet access = step.turn() == null
        ? LockTable.LockSet.wholeEntity(LockTable.Mode.READ)
        : AccessSets.forTurn(step.type(), step.turn());
    switch (locks.request(transactionId, step.startTimestamp(), access, transactionId)) {
      case LockTable.Outcome.Granted ignored -> runStep(participation, step, effects);
      case LockTable.Outcome.Waiting ignored -> {
        lockWaits++;
        participation.waitingStep = step;
      }
      case LockTable.Outcome.Died died -> effects.add(new Effect.Reply<>(step.replyTo(),
          new TurnResult.Failed(new TroupeException(ErrorCode.ABORTED,
              TransactionAbort.LOCK_CONFLICT, "%s is locked by an older transaction (%d)"
                  .formatted(entity, died.conflictingTransaction())))));
    }
  }

  /** Locks held: evaluate the step after the earlier ones and answer with what the txn sees. */
  private void runStep(Participation<R> participation, Input.StepRequested<R> step,
      List<Effect<R>> effects) {
    List<Turn> turns = new ArrayList<>(participation.steps);
    if (step.turn() != null) {
      turns.add(step.turn());
    } else if (!participation.request.readsState()) {
      Input.PrepareRequested<R> placeholder = participation.request;
      participation.request = new Input.PrepareRequested<>(placeholder.transactionId(),
          placeholder.startTimestamp(), List.of(), true, placeholder.type(), null);
    }
    TurnEvaluator.Sequence evaluated =
        evaluateTurns(step.type(), turns, step.transactionId(), tentative);
    if (evaluated.error() == null && step.turn() != null) {
      participation.steps.add(step.turn());
    }
    // Like a turn's answer, it waits until everything it observed is durable.
    replies.add(new PendingReply<>(lastSubmittedSerial, step.replyTo(), evaluated.after(),
        false, evaluated.error(), false));
    releaseReplies(effects);
  }

  private void decide(Input.DecisionReceived<R> decision, List<Effect<R>> effects) {
    long transactionId = decision.transactionId();
    Participation<R> participation = participations.get(transactionId);
    if (participation == null) {
      RememberedCommit<R> committed = rememberedCommits.get(transactionId);
      if (decision.commit()) {
        // A duplicated or resent commit of a part decided here (see the class doc).
        acknowledgeCommitAgain(transactionId, committed, decision.acknowledgeTo(), effects);
        return;
      }
      // Already voted no (and forgot it), a repeated abort, or an abort that overtook its
      // prepare: nothing is held, and a prepare arriving later must not hold anything either.
      Invariants.check(committed == null,
          "%s: abort of transaction %d, which committed here", entity, transactionId);
      rememberAbort(transactionId);
      acknowledgeAbort(decision, effects);
      return;
    }
    if (participation.commitReceived && decision.commit()) {
      return; // a duplicate while the commit waits in the PSAC gate: acknowledged once applied
    }
    if (participation.gateItem != null && decision.commit()) {
      Invariants.check(participation.phase == Phase.PREPARED,
          "%s: commit of transaction %d before it voted (%s)", entity, transactionId,
          participation.phase);
      participation.commitReceived = true;
      participation.acknowledgeTo = decision.acknowledgeTo();
      gate.commit(participation.gateItem);
      applyGate(effects);
      return;
    }
    if (!decision.commit()) {
      switch (participation.phase) {
        case OPEN -> {
          if (participation.waitingStep != null) {
            effects.add(new Effect.Reply<>(participation.waitingStep.replyTo(),
                new TurnResult.Failed(new TroupeException(ErrorCode.ABORTED,
                    TransactionAbort.DECIDED, "the transaction was aborted"))));
            participations.remove(transactionId);
            grant(locks.cancel(transactionId), effects);
            grant(locks.release(transactionId), effects);
          } else {
            finish(transactionId, effects);
          }
        }
        case WAITING_FOR_LOCKS -> {
          if (participation.gateItem != null) {
            finish(transactionId, effects); // withdraws it from the delayed list
          } else {
            participations.remove(transactionId);
            grant(locks.cancel(transactionId), effects);
            // An amended part waits for more locks while holding its first ones and its record.
            grant(locks.release(transactionId), effects);
            if (participation.recordSubmitted) {
              effects.add(new Effect.AbandonPrepared<>(transactionId));
            }
          }
        }
        case PREPARING -> participation.abortedWhilePreparing = true;
        case PREPARED -> {
          boolean hasPreparedRecord = participation.gateItem != null && !participation.exclusive
              ? !participation.request.turns().isEmpty() : participation.recordSubmitted;
          if (hasPreparedRecord) {
            effects.add(new Effect.AbandonPrepared<>(transactionId));
          }
          finish(transactionId, effects);
        }
      }
      // A duplicate of its prepare arriving later must not prepare it again.
      rememberAbort(transactionId);
      acknowledgeAbort(decision, effects);
      return;
    }
    Invariants.check(participation.phase == Phase.PREPARED,
        "%s: commit of transaction %d before it voted (%s)", entity, transactionId,
        participation.phase);
    RememberedCommit<R> remembered = rememberCommit(transactionId, participation.operations);
    if (participation.operations.isEmpty()) {
      if (participation.recordSubmitted) {
        // An amendment took every operation back: its empty record needs no commit (a crash
        // before this removal commits nothing at recovery either).
        effects.add(new Effect.AbandonPrepared<>(transactionId));
      }
      replies.add(new PendingReply<>(lastSubmittedSerial, decision.acknowledgeTo(), tentative,
          false, null, false, DependencyEvaluator.Forwarding.NONE, remembered));
    } else {
      EntityState before = tentative;
      tentative = tentative.apply(participation.operations, tentative.version() + 1, originDc);
      long serial = ++lastSubmittedSerial;
      inFlight.add(new InFlight(serial, before, true));
      replies.add(new PendingReply<>(serial, decision.acknowledgeTo(), tentative, true, null, true,
          DependencyEvaluator.Forwarding.NONE, remembered));
      effects.add(new Effect.SubmitCommit<>(serial, transactionId, participation.operations, true));
    }
    releaseReplies(effects);
    finish(transactionId, effects);
  }

  /** Remembers a commit applied here (bounded: the oldest is forgotten first). */
  private RememberedCommit<R> rememberCommit(long transactionId, List<Operation> operations) {
    if (participantLimits.rememberedCommits() == 0) {
      return null;
    }
    RememberedCommit<R> remembered = new RememberedCommit<>();
    if (mutations.contains(Mutations.Mutation.APPLY_DUPLICATE_DECISION)) {
      remembered.operations = List.copyOf(operations);
    }
    rememberedCommits.put(transactionId, remembered);
    if (rememberedCommits.size() > participantLimits.rememberedCommits()) {
      rememberedCommits.remove(rememberedCommits.keySet().iterator().next());
    }
    return remembered;
  }

  /**
   * A commit of a part already committed here (or forgotten: see the class doc): acknowledged
   * again, never applied again.
   */
  private void acknowledgeCommitAgain(long transactionId, RememberedCommit<R> committed,
      R acknowledgeTo, List<Effect<R>> effects) {
    if (committed != null && mutations.contains(Mutations.Mutation.APPLY_DUPLICATE_DECISION)
        && !committed.operations.isEmpty()) {
      // A deliberate bug (simulator tests only): the duplicate is applied once more.
      EntityState before = tentative;
      tentative = tentative.apply(committed.operations, tentative.version() + 1, originDc);
      long serial = ++lastSubmittedSerial;
      inFlight.add(new InFlight(serial, before, false));
      replies.add(new PendingReply<>(serial, acknowledgeTo, tentative, true, null, true));
      effects.add(new Effect.SubmitCommit<>(serial, transactionId, committed.operations, false,
          true));
      releaseReplies(effects);
      return;
    }
    if (acknowledgeTo == null) {
      return; // an answer to an in-doubt question, arriving after the decision itself
    }
    if (committed == null) {
      effects.add(new Effect.Reply<>(acknowledgeTo, new TurnResult.Failed(new TroupeException(
          ErrorCode.OUTCOME_UNKNOWN, ("transaction %d committed on %s, which no longer remembers"
              + " its result (troupe.transactions.remembered-commits)").formatted(transactionId,
              entity)))));
    } else if (committed.acknowledgement != null) {
      effects.add(new Effect.Reply<>(acknowledgeTo, committed.acknowledgement));
    } else {
      committed.waiting.add(acknowledgeTo); // answered with the first, once it is durable
    }
  }

  // ------------------------------------------------------------------------------- PSAC gate

  private static boolean isPsac(CompiledType type) {
    return type.spec().admission() == AdmissionPolicy.PSAC;
  }

  /** The entity's gate, with the type's bounds (new bounds apply once the gate is empty). */
  private PsacGate<GateItem<R>> gate(CompiledType type) {
    PsacSettings settings = type.spec().psac();
    if (gate == null || (gate.isEmpty() && !settings.equals(gateSettings))) {
      gateSettings = settings;
      gate = new PsacGate<>(
          new PsacGate.Limits(settings.maxInFlight(), settings.maxOvertakes()),
          (item, state) -> {
            TurnEvaluator.Sequence evaluated = switch (item) {
              case GatedTurn<R> turn -> evaluateTurns(turn.turn.type(), List.of(turn.turn.turn()),
                  turn.turn.transactionId(), state);
              case GatedPart<R> part -> evaluateTurns(part.participation.request.type(),
                  part.participation.request.turns(), part.participation.request.transactionId(),
                  state);
            };
            return evaluated.error() != null
                ? new PsacGate.Evaluation.Fails(evaluated.error())
                : new PsacGate.Evaluation.Holds(evaluated.after());
          },
          // A part that keeps dependencies is admitted alone, judged when it is admitted.
          (item, state) -> item instanceof GatedPart<R> part
              && (!part.participation.forwards.isEmpty()
                  || !part.participation.request.reserved().isEmpty()
                  || DependencyEvaluator.hasDependencies(state)
                  || DependencyEvaluator.mayForward(entity, part.participation.request.type(),
                      state, part.participation.request.turns(),
                      part.participation.request.readsState())));
    }
    return gate;
  }

  /** How many actions the PSAC gate delayed since this core started (for metrics). */
  public long psacDelays() {
    return psacDelays;
  }

  private void offerTurn(Waiting<R> turn, List<Effect<R>> effects) {
    if (DependencyEvaluator.mayForward(entity, turn.type(), tentative, List.of(turn.turn()),
        false)) {
      // It may forward to other entities: it runs as a transaction, admitted alone.
      effects.add(new Effect.Reply<>(turn.replyTo(), needsTransaction()));
      return;
    }
    PsacGate<GateItem<R>> psac = gate(turn.type());
    if (psac.delayedCount() >= limits.maxQueuedTurnsPerEntity()) {
      effects.add(new Effect.Reply<>(turn.replyTo(), new TurnResult.Failed(new TroupeException(
          ErrorCode.OVERLOADED, "entity %s has %d actions delayed; retry later".formatted(entity,
              psac.delayedCount())))));
      return;
    }
    handleGateDecision(psac.offer(new GatedTurn<>(turn), turn.transactionId(), false, false,
        tentative), effects);
  }

  private void handleGateDecision(PsacGate.Decision<GateItem<R>> decision,
      List<Effect<R>> effects) {
    switch (decision) {
      case PsacGate.Decision.Admitted<GateItem<R>> admitted -> {
        switch (admitted.item()) {
          case GatedTurn<R> turn -> {
            if (DependencyEvaluator.mayForward(entity, turn.turn.type(), tentative,
                List.of(turn.turn.turn()), false)) {
              // A dependency was recorded while it waited: it must run as a transaction. Checked
              // once at admission, not on every leaf of every outcome tree it is evaluated on.
              gate.abort(turn);
              effects.add(new Effect.Reply<>(turn.turn.replyTo(), needsTransaction()));
              applyGate(effects);
              return;
            }
            gate.commit(turn); // a single turn commits as soon as it is admitted
            applyGate(effects);
          }
          case GatedPart<R> part -> {
            Participation<R> participation = part.participation;
            List<Turn> turns = participation.request.turns();
            participation.exclusive = gate.isExclusive(part);
            if (participation.exclusive) {
              evaluate(participation, effects);
            } else if (turns.isEmpty()) {
              voteYes(participation, tentative, false, effects);
            } else {
              participation.phase = Phase.PREPARING;
              effects.add(new Effect.SubmitPrepare<>(participation.request.transactionId(),
                  List.of(), turns, ++gateArrivals));
            }
          }
        }
      }
      case PsacGate.Decision.Rejected<GateItem<R>> rejected -> {
        switch (rejected.item()) {
          case GatedTurn<R> turn -> {
            replies.add(new PendingReply<>(lastSubmittedSerial, turn.turn.replyTo(), tentative,
                false, rejected.error(), false));
            releaseReplies(effects);
          }
          case GatedPart<R> part -> voteNo(part.participation, rejected.error(), effects);
        }
      }
      case PsacGate.Decision.Delayed<GateItem<R>> ignored -> psacDelays++;
      case PsacGate.Decision.Died<GateItem<R>> died -> {
        GatedPart<R> part = (GatedPart<R>) died.item();
        voteNo(part.participation, new TroupeException(ErrorCode.ABORTED,
            TransactionAbort.LOCK_CONFLICT, "%s has an older transaction in progress (PSAC)"
                .formatted(entity)), effects);
      }
    }
  }

  /** The gate changed (an action committed, aborted or was withdrawn): apply and retry. */
  private void applyGate(List<Effect<R>> effects) {
    gateChanged = true;
    drainGate(effects);
  }

  /**
   * Applies, in arrival order, every committed action at the head of the gate (as far as the
   * in-flight commit bound allows), and re-offers the delayed actions whenever the actions in
   * progress changed, until nothing moves. Not re-entrant: a decision handled inside marks the gate
   * changed and the loop picks it up.
   */
  private void drainGate(List<Effect<R>> effects) {
    if (gate == null || drainingGate) {
      return;
    }
    drainingGate = true;
    try {
      while (true) {
        boolean applied = false;
        GateItem<R> item;
        while (inFlight.size() < limits.maxInFlightCommitsPerEntity()
            && (item = gate.pollApplicable()) != null) {
          applied = true;
          switch (item) {
            case GatedTurn<R> turn -> applyGated(turn.turn.type(), List.of(turn.turn.turn()),
                turn.turn.transactionId(), turn.turn.replyTo(), false, false, effects);
            case GatedPart<R> part -> {
              Participation<R> participation = part.participation;
              participations.remove(participation.request.transactionId());
              if (participation.exclusive) {
                applyOperations(participation.operations,
                    participation.request.transactionId(), participation.acknowledgeTo,
                    participation.recordSubmitted, rememberCommit(
                        participation.request.transactionId(), participation.operations),
                    effects);
              } else {
                applyGated(participation.request.type(), participation.request.turns(),
                    participation.request.transactionId(), participation.acknowledgeTo,
                    !participation.request.turns().isEmpty(), true, effects);
              }
            }
          }
        }
        if (applied) {
          releaseReplies(effects);
          gateChanged = true;
        }
        if (!gateChanged || gate.delayedCount() == 0) {
          gateChanged = false;
          return;
        }
        gateChanged = false;
        for (PsacGate.Decision<GateItem<R>> decision : gate.retryDelayed(tentative)) {
          handleGateDecision(decision, effects);
        }
      }
    } finally {
      drainingGate = false;
    }
  }

  /** Applies one committed action at the head of the gate to the tentative state. */
  private void applyGated(CompiledType type, List<Turn> turns, long transactionId, R replyTo,
      boolean prepared, boolean transactionPart, List<Effect<R>> effects) {
    TurnEvaluator.Sequence evaluated = evaluateTurns(type, turns, transactionId, tentative);
    Invariants.check(evaluated.error() == null,
        "%s: PSAC admitted %s, but it fails on the state it meets: %s", entity, turns,
        evaluated.error() == null ? "" : evaluated.error().getMessage());
    applyOperations(evaluated.operations(), transactionId, replyTo, prepared,
        transactionPart ? rememberCommit(transactionId, evaluated.operations()) : null, effects);
  }

  /**
   * Applies a committed action's operations to the tentative state and submits them (an
   * exclusive part's were computed at admission; nothing was applied since).
   */
  private void applyOperations(List<Operation> operations, long transactionId, R replyTo,
      boolean prepared, List<Effect<R>> effects) {
    applyOperations(operations, transactionId, replyTo, prepared, null, effects);
  }

  /** @param remembered the commit of a transaction's part, remembered for duplicates (or null) */
  private void applyOperations(List<Operation> operations, long transactionId, R replyTo,
      boolean prepared, RememberedCommit<R> remembered, List<Effect<R>> effects) {
    if (operations.isEmpty()) {
      if (prepared) {
        effects.add(new Effect.AbandonPrepared<>(transactionId));
      }
      replies.add(new PendingReply<>(lastSubmittedSerial, replyTo, tentative, false, null, false,
          DependencyEvaluator.Forwarding.NONE, remembered));
      return;
    }
    EntityState before = tentative;
    tentative = tentative.apply(operations, tentative.version() + 1, originDc);
    long serial = ++lastSubmittedSerial;
    inFlight.add(new InFlight(serial, before, prepared));
    replies.add(new PendingReply<>(serial, replyTo, tentative, true, null, true,
        DependencyEvaluator.Forwarding.NONE, remembered));
    // Never refused for load: rolling back an applied PSAC action would invalidate the outcome
    // trees of the actions admitted after it.
    effects.add(new Effect.SubmitCommit<>(serial, transactionId, operations, prepared, true));
  }

  private void rememberAbort(long transactionId) {
    rememberedAborts.remove(transactionId);
    rememberedAborts.add(transactionId);
    if (rememberedAborts.size() > limits.rememberedAborts()) {
      rememberedAborts.remove(rememberedAborts.iterator().next());
    }
  }

  private void acknowledgeAbort(Input.DecisionReceived<R> decision, List<Effect<R>> effects) {
    if (decision.acknowledgeTo() != null) {
      effects.add(new Effect.Reply<>(decision.acknowledgeTo(), new TurnResult.Failed(
          new TroupeException(ErrorCode.ABORTED, TransactionAbort.DECIDED,
              "transaction %d aborted".formatted(decision.transactionId())))));
    }
  }

  /** The transaction is over here: release its locks and let waiters and turns in. */
  private void finish(long transactionId, List<Effect<R>> effects) {
    Participation<R> participation = participations.remove(transactionId);
    if (participation != null && participation.gateItem != null) {
      gate.abort(participation.gateItem); // a no-op once it was applied
      applyGate(effects);
      return;
    }
    grant(locks.release(transactionId), effects);
  }

  private void grant(List<LockTable.Grant<Long>> granted, List<Effect<R>> effects) {
    for (LockTable.Grant<Long> grant : granted) {
      Participation<R> participation = participations.get(grant.transactionId());
      if (participation != null && participation.phase == Phase.OPEN
          && participation.waitingStep != null) {
        Input.StepRequested<R> step = participation.waitingStep;
        participation.waitingStep = null;
        runStep(participation, step, effects);
        continue;
      }
      Invariants.check(participation != null && participation.phase == Phase.WAITING_FOR_LOCKS,
          "%s: granted locks to transaction %d, which was not waiting", entity,
          grant.transactionId());
      evaluate(participation, effects);
    }
    runWaitingTurns(effects);
  }

  private void run(Waiting<R> turn, List<Effect<R>> effects) {
    TurnEvaluator.Decision decision = TurnEvaluator.evaluate(
        entity, turn.type(), tentative, turn.turn(), turn.transactionId(), originDc, limits);
    switch (decision) {
      case TurnEvaluator.Decision.Reject reject ->
          // A rejection read the tentative state, so it too waits for what it observed.
          replies.add(new PendingReply<>(lastSubmittedSerial, turn.replyTo(), tentative, false,
              reject.error(), false));
      case TurnEvaluator.Decision.Write write when write.operations().isEmpty() ->
          replies.add(new PendingReply<>(lastSubmittedSerial, turn.replyTo(), tentative, false,
              null, false));
      case TurnEvaluator.Decision.Write write
          when DependencyEvaluator.needsTransaction(entity, turn.type(), tentative, turn.turn(),
              write.operations()) ->
          // Its dependencies' other entities must join: changes nothing here, and the shell runs
          // it again as a transaction. Answered at once, like an overload refusal.
          effects.add(new Effect.Reply<>(turn.replyTo(), needsTransaction()));
      case TurnEvaluator.Decision.Write write -> {
        EntityState before = tentative;
        tentative = tentative.apply(write.operations(), tentative.version() + 1, originDc);
        long serial = ++lastSubmittedSerial;
        inFlight.add(new InFlight(serial, before, false));
        replies.add(new PendingReply<>(serial, turn.replyTo(), tentative, true, null, true));
        effects.add(
            new Effect.SubmitCommit<>(serial, turn.transactionId(), write.operations(), false));
      }
    }
    releaseReplies(effects);
  }

  private TurnResult needsTransaction() {
    return new TurnResult.Failed(new TroupeException(ErrorCode.ABORTED,
        TransactionAbort.NEEDS_TRANSACTION, entity + " has dependencies: run as a transaction"));
  }

  private void releaseReplies(List<Effect<R>> effects) {
    while (!replies.isEmpty() && replies.peekFirst().dependsOnSerial() <= lastDurableSerial) {
      PendingReply<R> reply = replies.pollFirst();
      boolean ownCommit = reply.committedBySerial() && reply.dependsOnSerial() == lastDurableSerial;
      TurnResult result = reply.error() != null
          ? new TurnResult.Failed(reply.error())
          : new TurnResult.Done(lastDurableVersion, reply.state(), reply.wrote(),
              ownCommit ? versionBeforeLastDurable : lastDurableVersion, reply.forwarding());
      if (reply.commit() != null) {
        // A commit's acknowledgement, kept for duplicates; those that came meanwhile get it too.
        reply.commit().acknowledgement = result;
        for (R waiting : reply.commit().waiting) {
          effects.add(new Effect.Reply<>(waiting, result));
        }
        reply.commit().waiting.clear();
      }
      if (reply.replyTo() != null) { // null: a commit learned by asking, which nobody awaits
        effects.add(new Effect.Reply<>(reply.replyTo(), result));
      }
    }
  }

  /**
   * The store refused commit {@code serial} before writing it, and the shell submitted none after
   * it. Roll the tentative state back to before it; every turn that observed it fails with the
   * refusal (it may be retried), since its result was computed on a state that never became real.
   */
  private void refuseFrom(long serial, TroupeException error, List<Effect<R>> effects) {
    Invariants.check(serial > lastDurableSerial && serial <= lastSubmittedSerial,
        "%s: refused commit %d is not in flight (durable %d, submitted %d)", entity, serial,
        lastDurableSerial, lastSubmittedSerial);
    while (!inFlight.isEmpty() && inFlight.peekLast().serial() >= serial) {
      tentative = inFlight.pollLast().stateBefore();
    }
    lastSubmittedSerial = serial - 1;
    ArrayDeque<PendingReply<R>> kept = new ArrayDeque<>();
    for (PendingReply<R> reply : replies) {
      boolean observedRefused = reply.dependsOnSerial() >= serial;
      if (observedRefused) {
        effects.add(new Effect.Reply<>(reply.replyTo(), new TurnResult.Failed(error)));
      } else {
        kept.add(reply);
      }
    }
    replies.clear();
    replies.addAll(kept);
    // The store is pushing back: turns queued behind the refused one are refused too rather than
    // piled onto a full queue.
    for (Waiting<R> turn : waiting) {
      effects.add(new Effect.Reply<>(turn.replyTo(), new TurnResult.Failed(error)));
    }
    waiting.clear();
    rebaseWhenSettled();
  }

  /**
   * Whether rolling back to before {@code serial} would drop a decided transaction's commit: that
   * cannot be redone here, so the entity fails instead and recovery applies the decision.
   */
  private boolean rollbackLosesADecision(long serial) {
    for (InFlight commit : inFlight) {
      if (commit.serial() >= serial && commit.resolvesPrepared()) {
        return true;
      }
    }
    return false;
  }

  /**
   * With nothing in flight the tentative state equals the durable one: give it the real version
   * instead of the provisional one.
   */
  private void rebaseWhenSettled() {
    if (inFlight.isEmpty()) {
      tentative = new EntityState(tentative.values(), lastDurableVersion, tentative.exists());
    }
  }

  private void failEverything(TroupeException cause, List<Effect<R>> effects) {
    for (PendingReply<R> reply : replies) {
      TroupeException error = reply.wrote()
          ? new TroupeException(ErrorCode.OUTCOME_UNKNOWN,
              "the write to %s may or may not have committed: %s".formatted(entity,
                  cause.getMessage()))
          : new TroupeException(ErrorCode.UNAVAILABLE,
              "storage failed while this turn waited: " + cause.getMessage());
      effects.add(new Effect.Reply<>(reply.replyTo(), new TurnResult.Failed(error)));
    }
    for (Waiting<R> turn : waiting) {
      effects.add(new Effect.Reply<>(turn.replyTo(), new TurnResult.Failed(
          new TroupeException(ErrorCode.UNAVAILABLE, "storage failed: " + cause.getMessage()))));
    }
    if (gate != null) {
      TroupeException unavailable =
          new TroupeException(ErrorCode.UNAVAILABLE, "storage failed: " + cause.getMessage());
      List<GateItem<R>> gated = new ArrayList<>(gate.inProgressItems());
      gated.addAll(gate.delayedItems());
      for (GateItem<R> item : gated) {
        if (item instanceof GatedTurn<R> turn) {
          effects.add(new Effect.Reply<>(turn.turn.replyTo(), new TurnResult.Failed(unavailable)));
        }
      }
    }
    for (Participation<R> participation : participations.values()) {
      if (participation.acknowledgeTo != null) {
        effects.add(new Effect.Reply<>(participation.acknowledgeTo, new TurnResult.Failed(
            new TroupeException(ErrorCode.UNAVAILABLE, "storage failed before the commit was"
                + " applied; it is applied when the node recovers: " + cause.getMessage()))));
      }
      if (participation.waitingStep != null) {
        effects.add(new Effect.Reply<>(participation.waitingStep.replyTo(), new TurnResult.Failed(
            new TroupeException(ErrorCode.UNAVAILABLE, "storage failed: " + cause.getMessage()))));
      }
      if (participation.phase != Phase.PREPARED && participation.phase != Phase.OPEN) {
        effects.add(new Effect.Reply<>(participation.request.voteTo(), new TurnResult.Failed(
            new TroupeException(ErrorCode.UNAVAILABLE, "storage failed: " + cause.getMessage()))));
      }
    }
    replies.clear();
    waiting.clear();
    inFlight.clear();
    participations.clear();
    gate = null;
    stopped = true;
    effects.add(new Effect.Stop<>());
  }
}
