package dev.troupe.txn.entity;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Invariants;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.txn.Forward;
import dev.troupe.txn.Mutations;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnLimits;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.coordinator.DecisionQueryCore;
import dev.troupe.txn.entity.EntitySide.Waiting;
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
 * <p><b>Forwards before the vote</b> (issue 20). A part that forwards something, or that reserved
 * keys for forwards it may receive, tells its coordinator its forwards as soon as it is evaluated
 * ({@link Effect.ReportForwards}), before its prepared record is durable; the vote then repeats
 * them. Forwards of a later round may therefore reach a part that is still preparing: it evaluates
 * again at once when it holds every lock they need (its new prepared record replaces the one in
 * flight, and it votes, for the latest round only, once no record of it is in flight), and
 * otherwise keeps them until its record is durable and takes them as after a vote.
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
 *       arrives. The answer comes back as an {@link Input.DecisionAnswered}, with nobody to
 *       acknowledge to (a live coordinator resends, and the resend is acknowledged); "undecided,
 *       ask later" is not fed at all. Under presumed abort the answering node says abort only for
 *       a transaction that can no longer commit ({@link DecisionQueryCore}), which is true only
 *       while the part is still in doubt: a question can cross the commit itself, and the
 *       coordinator forgets a commit once every participant acknowledged it, after which its
 *       node presumes abort. An answer about a part no longer in doubt here (decided, or
 *       committed and waiting in the PSAC gate) is therefore stale and ignored, whereas an abort
 *       {@link Input.DecisionReceived decision} of a part committed here stays an invariant.
 * </ul>
 *
 * <p><b>Structure.</b> This class is the one core the shell sees: its inputs, effects,
 * constructors and {@link #handle}. It dispatches each input to one of three package-private
 * collaborators, one per job, which share the entity's state ({@link EntitySide}) explicitly:
 * {@link TurnPipeline} (single turns, the tentative state, pipelined commits, in-order replies),
 * {@link Participant} (the two-phase commit parts and interactive steps) and {@link
 * PsacAdmission} (the PSAC gate's use).
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
     * @param knownLocks the locks of {@code turns} as the planner worked them out, or null; taken
     *     only if they were worked out from this very type and these turns ({@link
     *     AccessSets.KnownLocks})
     */
    record PrepareRequested<R>(long transactionId, long startTimestamp, List<Turn> turns,
        boolean readsState, CompiledType type, R voteTo, boolean planned,
        List<Forward> forwards, java.util.Map<String, LockTable.Mode> reserved,
        AccessSets.KnownLocks knownLocks)
        implements Input<R> {
      public PrepareRequested(long transactionId, long startTimestamp, List<Turn> turns,
          boolean readsState, CompiledType type, R voteTo, boolean planned,
          List<Forward> forwards, java.util.Map<String, LockTable.Mode> reserved) {
        this(transactionId, startTimestamp, turns, readsState, type, voteTo, planned, forwards,
            reserved, null);
      }

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
            newVoteTo, planned, forwards, reserved, knownLocks);
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
     * The coordinator's node answered this part's in-doubt question ({@link
     * Effect.QueryDecision}): applied as the decision if the part is still in doubt here, ignored
     * otherwise (a stale answer: see the class doc; a presumed abort may cross the commit).
     */
    record DecisionAnswered<R>(long transactionId, boolean commit) implements Input<R> {}

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

    /**
     * The shell asks whether this entity is idle now (it received only the message that
     * activated it, some seconds ago: {@code ActivationCore.sweep}): if so it offers its
     * passivation at once, without waiting for a whole idle-check period.
     */
    record IdlenessAsked<R>() implements Input<R> {}
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

    /**
     * Tell the coordinator waiting for this part's vote ({@code voteTo}) what the part forwards,
     * now that it is evaluated and before its prepared record is durable, so the coordinator can
     * send them on at once (issue 20: the followers' prepared records then join the leader's
     * group commit). Sent by a part that forwards something or reserved keys for forwards it may
     * receive (a planned follower). Only a head start: the vote carries the same forwards, so a
     * shell may drop it (the runtime does between nodes).
     */
    record ReportForwards<R>(R voteTo, List<Forward> forwards) implements Effect<R> {}

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
   * Everything one incarnation of the entity knows, shared explicitly by the three collaborators
   * below (one protocol each, one object of state: they interleave on the same tentative state,
   * replies and locks, so splitting the state would only hide that).
   */
  private final EntitySide<R> side;
  /** Single turns, the tentative state, pipelined commits and in-order replies. */
  private final TurnPipeline<R> pipeline;
  /** The participant side of two-phase commit (and interactive steps). */
  private final Participant<R> participant;
  /** Admission by PSAC (the gate) for types that admit by PSAC. */
  private final PsacAdmission<R> admission;

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
    this.side = new EntitySide<>(entity, durable, limits, participantLimits, originDc, mutations);
    this.pipeline = new TurnPipeline<>(side);
    this.participant = new Participant<>(side);
    this.admission = new PsacAdmission<>(side);
    participant.connect(pipeline, admission);
    admission.connect(pipeline, participant);
  }

  public List<Effect<R>> handle(Input<R> input) {
    Invariants.check(!side.stopped, "%s received %s after it stopped", side.entity, input);
    List<Effect<R>> effects = new ArrayList<>();
    if (!(input instanceof Input.IdleCheckElapsed<R>)
        && !(input instanceof Input.IdlenessAsked<R>)) {
      side.activeSinceIdleCheck = true;
    }
    switch (input) {
      case Input.TurnRequested<R> request -> {
        Invariants.check(!side.passivationRequested, "%s got a turn while passivating",
            side.entity);
        Waiting<R> turn = new Waiting<>(request.turn(), request.type(), request.transactionId(),
            request.replyTo());
        if (PsacAdmission.isPsac(request.type())) {
          admission.offerTurn(turn, effects);
        } else {
          pipeline.turnRequested(turn, effects);
        }
      }
      case Input.CommitSucceeded<R> success -> {
        pipeline.commitSucceeded(success, effects);
        admission.drainGate(effects);
      }
      case Input.CommitFailed<R> failure -> pipeline.commitFailed(failure, effects);
      case Input.PrepareRequested<R> prepare -> participant.prepare(prepare, effects);
      case Input.ForwardsReceived<R> forwarded -> participant.forwardsReceived(forwarded, effects);
      case Input.StepRequested<R> step -> participant.step(step, effects);
      case Input.PrepareSucceeded<R> prepared ->
          participant.prepared(prepared.transactionId(), effects);
      case Input.PrepareFailed<R> failed -> participant.prepareFailed(failed, effects);
      case Input.DecisionReceived<R> decision -> participant.decide(decision, effects);
      case Input.DecisionAnswered<R> answered -> participant.answered(answered, effects);
      case Input.InDoubtQueryDue<R> due ->
          participant.inDoubtQueryDue(due.transactionId(), effects);
      case Input.PreparedPartRecovered<R> recovered ->
          participant.adoptRecovered(recovered, effects);
      case Input.PassivationRequested<R> ignored -> side.passivationRequested = true;
      case Input.IdleCheckElapsed<R> ignored -> {
        if (!side.activeSinceIdleCheck && isIdle() && !side.passivationRequested) {
          effects.add(new Effect.OfferPassivation<>());
        }
        side.activeSinceIdleCheck = false;
      }
      case Input.IdlenessAsked<R> ignored -> {
        if (isIdle() && !side.passivationRequested) {
          effects.add(new Effect.OfferPassivation<>());
        }
      }
    }
    if (side.passivationRequested && isIdle() && !side.stopped) {
      side.stopped = true;
      effects.add(new Effect.Stop<>());
    }
    return effects;
  }

  /** Nothing in flight, nothing waiting, nobody waiting for a reply, no transaction open. */
  /**
   * Whether this entity holds a part of {@code transactionId} that waits for its decision (so an
   * answer to its in-doubt question would resolve it: see {@link Input.DecisionAnswered}).
   */
  public boolean awaitsDecision(long transactionId) {
    return participant.awaitsDecision(transactionId);
  }

  public boolean isIdle() {
    return side.inFlight.isEmpty() && side.waiting.isEmpty() && side.replies.isEmpty()
        && side.participations.isEmpty() && (side.gate == null || side.gate.isEmpty());
  }

  /** How many prepare requests waited for locks since this core started (for metrics). */
  public long lockWaits() {
    return side.lockWaits;
  }

  /** The transactions this entity takes part in and has not seen decided (for metrics, tests). */
  public int openTransactions() {
    return side.participations.size();
  }

  /** How many actions the PSAC gate delayed since this core started (for metrics). */
  public long psacDelays() {
    return side.psacDelays;
  }
}
