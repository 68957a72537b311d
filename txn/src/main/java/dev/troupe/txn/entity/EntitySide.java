package dev.troupe.txn.entity;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.PsacSettings;
import dev.troupe.txn.DependencyEvaluator;
import dev.troupe.txn.Forward;
import dev.troupe.txn.Mutations;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnEvaluator;
import dev.troupe.txn.TurnLimits;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.entity.EntityTurnCore.Input;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The state of one incarnation of an entity, shared explicitly by the collaborators of {@link
 * EntityTurnCore}: the {@link TurnPipeline}, the {@link Participant} and the {@link
 * PsacAdmission}. The three protocols interleave on one tentative state, one queue of replies, one
 * lock table and one gate (a participant's commit is a pipelined commit; a PSAC part is a
 * participant's part), so the state is one object with package-private fields rather than three
 * private parts that would each need the others'. Only the core and its collaborators touch it,
 * one input at a time.
 *
 * @param <R> the shell's reply target
 */
final class EntitySide<R> {
  /**
   * @param resolvesPrepared a decided transaction's commit, which must never be rolled back
   * @param operations what it commits: applied to {@link #durable} at its real commit timestamp
   *     once durable
   */
  record InFlight(long serial, EntityState stateBefore, boolean resolvesPrepared,
      List<dev.troupe.model.Operation> operations) {}

  /**
   * @param committedBySerial the reply is for the commit with serial {@code dependsOnSerial} itself
   *     (so what it read is the version before that commit)
   */
  record PendingReply<R>(long dependsOnSerial, R replyTo, EntityState state, boolean wrote,
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

  /**
   * A single-entity turn, run or queued. Its locks ({@link AccessSets#forTurn}, a pure function of
   * its type and turn, both immutable) are worked out at most once, and only if a transaction holds
   * locks here when it is checked: a queued turn is checked again after every commit and release
   * (issue 20: SmallBank worked them out again at each check).
   */
  static final class Waiting<R> {
    private final Turn turn;
    private final CompiledType type;
    private final long transactionId;
    private final R replyTo;
    private LockTable.LockSet locks;

    Waiting(Turn turn, CompiledType type, long transactionId, R replyTo) {
      this.turn = turn;
      this.type = type;
      this.transactionId = transactionId;
      this.replyTo = replyTo;
    }

    Turn turn() {
      return turn;
    }

    CompiledType type() {
      return type;
    }

    long transactionId() {
      return transactionId;
    }

    R replyTo() {
      return replyTo;
    }

    /** The locks it would need, worked out the first time they are asked for. */
    LockTable.LockSet locks() {
      if (locks == null) {
        locks = AccessSets.forTurn(type, turn);
      }
      return locks;
    }

    @Override
    public String toString() {
      return "Waiting[turn=" + turn + ", type=" + type + ", transactionId=" + transactionId + "]";
    }
  }

  enum Phase {
    /** An interactive transaction's part: holds the locks of its steps so far, not yet prepared. */
    OPEN,
    WAITING_FOR_LOCKS,
    /** Evaluated, prepared record submitted, vote not yet cast. */
    PREPARING,
    /** Voted yes; waiting for the decision. */
    PREPARED
  }

  /**
   * A recently committed part: its acknowledgement once released (durable), the recipients of
   * duplicates that arrived before that, and (only under {@link
   * Mutations.Mutation#APPLY_DUPLICATE_DECISION}) its operations.
   */
  static final class RememberedCommit<R> {
    TurnResult acknowledgement;
    final List<R> waiting = new ArrayList<>();
    List<Operation> operations = List.of();
  }

  /** This entity's part of one transaction, from its prepare request to its decision. */
  static final class Participation<R> {
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
    /**
     * Prepared records of this part submitted and not yet reported durable or failed: an amended
     * part may submit its replacement while the first is still being written (forwards taken
     * while preparing), and it votes only once the last is durable.
     */
    int preparesInFlight;
    /** One of those records failed: the part votes no once none is in flight. */
    TroupeException prepareFailure;
    /** One of those records is durable (an aborted part abandons it). */
    boolean preparedRecordWritten;
    /**
     * Forwards of a later round that arrived while preparing and could not be evaluated at once
     * (a lock to take, a PSAC part): taken as after a vote, once no record is in flight.
     */
    Input.ForwardsReceived<R> forwardsAfterPrepared;

    Participation(Input.PrepareRequested<R> request) {
      this.request = request;
      this.forwards = request.forwards();
    }
  }

  /** What the PSAC gate orders: a transaction's part or a single turn (compared by identity). */
  sealed interface GateItem<R> {}

  static final class GatedTurn<R> implements GateItem<R> {
    final Waiting<R> turn;

    GatedTurn(Waiting<R> turn) {
      this.turn = turn;
    }
  }

  static final class GatedPart<R> implements GateItem<R> {
    final Participation<R> participation;

    GatedPart(Participation<R> participation) {
      this.participation = participation;
    }
  }

  // Who the entity is and its bounds (fixed for the incarnation).
  final EntityId entity;
  final TurnLimits limits;
  final int originDc;
  final EntityTurnCore.ParticipantLimits participantLimits;
  /** Deliberate breakages (empty outside the simulator's tests). */
  final java.util.Set<Mutations.Mutation> mutations;

  // The turn pipeline's: the tentative state, commits in flight, replies in order, queued turns.
  EntityState tentative;
  /**
   * The durable state as the journal materializes it: every durable commit applied at its real
   * commit timestamp. The tentative state applies commits in flight at provisional timestamps
   * (the real one is known once durable), so its register stamps are provisional and a
   * last-writer-wins merge against a remote write's stamp ({@code AssignReplicated}) may decide
   * differently there; once nothing is in flight the tentative state becomes this one again, so
   * the entity never keeps serving a merge the journal decided otherwise.
   */
  EntityState durable;
  long lastDurableVersion;
  /** The durable version before the last durable commit: what that commit's turn read. */
  long versionBeforeLastDurable;
  long lastSubmittedSerial;
  long lastDurableSerial;
  final ArrayDeque<InFlight> inFlight = new ArrayDeque<>();
  final ArrayDeque<PendingReply<R>> replies = new ArrayDeque<>();
  final ArrayDeque<Waiting<R>> waiting = new ArrayDeque<>();

  // The participant's: locks, open parts, and the memory of decided ones.
  final LockTable<Long> locks = new LockTable<>();
  final java.util.Map<Long, Participation<R>> participations = new java.util.HashMap<>();
  /**
   * Transactions whose abort arrived while they had no part here, newest last, at most {@code
   * limits.rememberedAborts()}: a prepare of one of them arrived late (its abort overtook it) and
   * is refused. Within one node mailboxes keep causal order, so only messages between nodes or a
   * reordering shell make this happen; the simulator's per-connection mailboxes do.
   */
  final java.util.LinkedHashSet<Long> rememberedAborts = new java.util.LinkedHashSet<>();
  /**
   * Recently committed parts, oldest first, at most {@code participantLimits.rememberedCommits()}:
   * a duplicated or resent commit is acknowledged again from here instead of applied twice.
   */
  final java.util.LinkedHashMap<Long, RememberedCommit<R>> rememberedCommits =
      new java.util.LinkedHashMap<>();
  long lockWaits;

  // The PSAC admission's: the gate (created with the type's bounds on first use).
  PsacGate<GateItem<R>> gate;
  PsacSettings gateSettings;
  long gateArrivals;
  long psacDelays;
  boolean gateChanged;
  boolean drainingGate;

  // The core's: passivation and idleness.
  boolean passivationRequested;
  boolean stopped;
  /** Whether any input other than an idle check arrived since the last idle check. */
  boolean activeSinceIdleCheck = true;

  EntitySide(EntityId entity, EntityState durable, TurnLimits limits,
      EntityTurnCore.ParticipantLimits participantLimits, int originDc,
      java.util.Set<Mutations.Mutation> mutations) {
    this.participantLimits = participantLimits;
    this.mutations = java.util.Set.copyOf(mutations);
    this.entity = entity;
    this.limits = limits;
    this.originDc = originDc;
    this.tentative = durable;
    this.durable = durable;
    this.lastDurableVersion = durable.version();
  }

  /** Evaluates turns in order on {@code state}, each seeing the ones before. */
  TurnEvaluator.Sequence evaluateTurns(CompiledType type, List<Turn> turns,
      long transactionId, EntityState state) {
    return TurnEvaluator.evaluateSequence(entity, type, state, turns, transactionId, originDc,
        limits);
  }
}
