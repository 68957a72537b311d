package dev.troupe.txn.coordinator;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.TroupeException;
import dev.troupe.txn.DependencyEvaluator;
import dev.troupe.txn.Forward;
import dev.troupe.txn.Mutations;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.entity.AccessSets;
import dev.troupe.txn.entity.EntityTurnCore;
import dev.troupe.txn.entity.LockTable;
import dev.troupe.txn.planned.DependencyPlanner;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The coordinator of one multi-entity transaction: two-phase commit with presumed abort, over
 * participants that lock with wait-die ({@link LockTable}) and prepare durably ({@link
 * EntityTurnCore}). A deterministic state machine: the shell feeds inputs and runs effects; ids,
 * time and storage come from outside.
 *
 * <p><b>Protocol.</b> Phase one sends every participant its part ({@link Effect.SendPrepare}) and
 * collects votes. A no vote or a timeout aborts: abort decisions are never persisted (presumed
 * abort: a participant that finds no decision record after a crash aborts), so the abort is sent
 * and the client answered at once. When every participant voted yes, the commit decision is
 * persisted ({@link Effect.PersistDecision}); only once it is durable is it sent ({@link
 * Effect.SendDecision}), so no participant commits a transaction whose decision a crash could
 * erase. (When every participant commits on the coordinator's own store, its shell may report the
 * decision persisted once written, without a sync of its own: the participants' synced commits
 * come after it in that store's one write-ahead log, so none is durable before the decision is,
 * and the answer below waits for them; {@code DurableStore#persistDecisionBeforeLocalCommits},
 * issue 20. The core is the same either way.) The client is answered once every participant
 * acknowledged that its commit is durable,
 * so a read after the answer sees the transaction everywhere; then the decision record is
 * forgotten. A transaction that wrote nothing skips the decision record.
 *
 * <p><b>A network that loses, duplicates and reorders.</b> Between nodes any message may be lost,
 * arrive twice or overtake another, so the protocol is built to survive it:
 *
 * <ul>
 *   <li>The commit decision is resent ({@link Effect.ScheduleDecisionResend}, every {@code
 *       decisionResendIntervalMillis}) to every participant that has not acknowledged it, until
 *       all have: only then is the decision record forgotten and the client answered. A
 *       participant acknowledges a decision it already applied again without applying it twice
 *       ({@link EntityTurnCore}), so resending is always safe.
 *   <li>An abort is sent once and never resent. Presumed abort makes resending unnecessary: a
 *       participant that voted yes and hears nothing asks the coordinator's node after {@code
 *       in-doubt-query-interval-millis} ({@link DecisionQueryCore}), which answers abort for any
 *       transaction it neither coordinates nor holds a commit record of. A part that never voted
 *       yes holds nothing that outlives the transaction's locks: when its prepare arrives late
 *       it prepares, votes (ignored), and then asks like any other.
 *   <li>Votes and acknowledgements are matched to what they answer: a vote names its attempt
 *       ({@code transactionId}) and its round (1 for the prepare, one more for each {@link
 *       Effect.SendForwards}), so a duplicated or late vote of an earlier round never counts as
 *       the vote of a later one; a second copy of a counted vote is ignored; an acknowledgement
 *       counts once per participant.
 *   <li>A live coordinator answers what it knows of an attempt ({@link #knowledgeOf}): undecided
 *       while it collects votes or writes the decision (it may still commit), committed once the
 *       commit decision is durable, aborted for an earlier attempt or after an abort.
 * </ul>
 *
 * <p><b>Dependencies.</b> A yes vote carries what the participant forwards to other entities to
 * keep declared dependencies ({@link Forward}, computed by {@link DependencyEvaluator}). Phase one
 * ends only when the forwards settle: a follower not yet in the transaction joins with a prepare
 * of the forwards ({@link Effect.SendPrepare}); a participant whose forwards changed after it
 * voted evaluates its part again ({@link Effect.SendForwards}) and votes again, and only its
 * latest vote counts. Each participant is asked at most {@code maxForwardRounds} times, and the
 * transaction reaches at most {@code maxParticipants} entities. Every chain through a dependency
 * registered in the transaction is checked against {@code maxDependencyChain} before the
 * decision. A planned transaction's followers were predicted and ordered with it ({@link
 * DependencyPlanner}); one that forwards to an entity it was not planned with aborts ({@code
 * dependencies_involved}) so the runtime can plan it again or run it as a dynamic one.
 *
 * <p><b>Forwards reported before the vote (issue 20).</b> A participant may report its forwards
 * as soon as it has evaluated its part, while its prepared record is still being written ({@link
 * Input.ForwardsReported}): the coordinator then sends them on at once (a prepare to a follower
 * not yet in the transaction, {@link Effect.SendForwards} to one that reported its own evaluation
 * of its current round or voted), so a follower's prepared record joins the same or the next
 * group commit as its leader's instead of waiting for the leader's durable vote. Nothing else
 * moves: the decision still waits for every participant's durable vote of its latest round, and a
 * vote whose forwards differ from what the same round reported is an invariant violation
 * (forwards are pure values of the evaluation). A report is only a head start: a lost, late or
 * duplicated one changes nothing, since the vote carries the same forwards.
 *
 * <p><b>Retries.</b> Wait-die kills the younger of two conflicting transactions. A transaction
 * killed that way is aborted everywhere and retried under a new transaction id (a new attempt) but
 * with its first attempt's start timestamp as its age, so it grows older than every newcomer and
 * eventually wins. Votes and acknowledgements name their attempt's id; stale ones are ignored.
 *
 * <p><b>Outcomes reported.</b> Committed with per-entity versions and states; aborted with a
 * reason; {@code outcome_unknown} only when the decision record's write failed with an unknown
 * outcome (the store failed mid-write): recovery then decides, and the core never guesses.
 */
public final class CoordinatorCore {

  /**
   * The settings the coordinator obeys (troupe.transactions and troupe.dependencies in
   * reference.conf).
   *
   * @param maxParticipants most entities the transaction may reach, the followers its
   *     dependencies bring in included (the client's own parts were checked when planned)
   * @param maxForwardRounds most times one participant is asked to evaluate its part again
   *     because the operations forwarded to it changed
   * @param maxDependencyChain most dependencies of one kind in a row, checked for every chain
   *     through a dependency the transaction registers
   * @param decisionResendIntervalMillis how long the coordinator waits for every acknowledgement
   *     of its commit decision before it sends the decision again to the participants that have
   *     not acknowledged it
   */
  public record Limits(long prepareTimeoutMillis, int maxLockConflictRetries,
      long retryBackoffMillis, int maxParticipants, int maxForwardRounds,
      int maxDependencyChain, long decisionResendIntervalMillis) {
    /** reference.conf's {@code troupe.transactions.decision-resend-interval-millis}. */
    public static final long DEFAULT_DECISION_RESEND_INTERVAL_MILLIS = 1000;

    public Limits {
      Invariants.check(decisionResendIntervalMillis > 0,
          "the decision resend interval must be positive, was %d", decisionResendIntervalMillis);
    }

    /** Limits with the default decision resend interval (reference.conf's). */
    public Limits(long prepareTimeoutMillis, int maxLockConflictRetries,
        long retryBackoffMillis, int maxParticipants, int maxForwardRounds,
        int maxDependencyChain) {
      this(prepareTimeoutMillis, maxLockConflictRetries, retryBackoffMillis, maxParticipants,
          maxForwardRounds, maxDependencyChain, DEFAULT_DECISION_RESEND_INTERVAL_MILLIS);
    }

    /** Limits with the default dependency bounds (reference.conf's). */
    public Limits(long prepareTimeoutMillis, int maxLockConflictRetries, long retryBackoffMillis) {
      this(prepareTimeoutMillis, maxLockConflictRetries, retryBackoffMillis, 64, 32, 8);
    }

    /** These limits without retries after a lock conflict. */
    public Limits withoutRetries() {
      return new Limits(prepareTimeoutMillis, 0, retryBackoffMillis, maxParticipants,
          maxForwardRounds, maxDependencyChain, decisionResendIntervalMillis);
    }

    /** These limits with another decision resend interval. */
    public Limits withDecisionResendIntervalMillis(long intervalMillis) {
      return new Limits(prepareTimeoutMillis, maxLockConflictRetries, retryBackoffMillis,
          maxParticipants, maxForwardRounds, maxDependencyChain, intervalMillis);
    }
  }

  /**
   * One participant's part.
   *
   * @param turns its operations, in request order
   * @param readsState whether the transaction reads its whole state
   * @param forwards what other participants forwarded to it (a follower brought in)
   * @param reserved keys it locks for forwards it may receive (a planned transaction's
   *     reconnaissance, {@link DependencyPlanner}): a planned part cannot take locks later
   * @param knownLocks the locks of its turns as the reconnaissance worked them out, carried to
   *     the participant so it need not work them out again (used only if they still apply: {@link
   *     AccessSets.KnownLocks}); null when nobody worked them out. A cache of a pure function of
   *     the other components: it changes no outcome
   */
  public record Part(List<Turn> turns, boolean readsState, List<Forward> forwards,
      Map<String, LockTable.Mode> reserved, AccessSets.KnownLocks knownLocks) {
    public Part {
      turns = List.copyOf(turns);
      forwards = List.copyOf(forwards);
      reserved = Map.copyOf(reserved);
    }

    public Part(List<Turn> turns, boolean readsState, List<Forward> forwards,
        Map<String, LockTable.Mode> reserved) {
      this(turns, readsState, forwards, reserved, null);
    }

    public Part(List<Turn> turns, boolean readsState) {
      this(turns, readsState, List.of(), Map.of());
    }

    public Part(List<Turn> turns, boolean readsState, List<Forward> forwards) {
      this(turns, readsState, forwards, Map.of());
    }

    /** This part also holding the locks of {@code keys} (a planned part's predicted forwards). */
    public Part reserving(Map<String, LockTable.Mode> keys) {
      if (keys.isEmpty()) {
        return this;
      }
      Map<String, LockTable.Mode> merged = new LinkedHashMap<>(reserved);
      keys.forEach((key, mode) -> merged.merge(key, mode, (a, b) ->
          a == LockTable.Mode.WRITE || b == LockTable.Mode.WRITE ? LockTable.Mode.WRITE : a));
      return new Part(turns, readsState, forwards, merged, knownLocks);
    }

    /** This part carrying the locks of its turns as worked out ahead (null: none). */
    public Part knowing(AccessSets.KnownLocks locks) {
      return new Part(turns, readsState, forwards, reserved, locks);
    }
  }

  /** What one participant reports in a committed transaction. */
  public record ParticipantResult(long readVersion, long version, dev.troupe.model.EntityState state,
      boolean wrote) {}

  /** The transaction's outcome as the client sees it. */
  public sealed interface Outcome {
    /** Committed; per entity, in first-mention order. */
    record Committed(long transactionId, Map<EntityId, ParticipantResult> results)
        implements Outcome {}

    /** Aborted (or failed) and changed nothing, or its outcome is unknown (see the class doc). */
    record Failed(TroupeException error) implements Outcome {}
  }

  /** What the shell feeds in. */
  public sealed interface Input {
    /**
     * Start, with the first attempt's transaction id and the transaction's age (by default the
     * id; a planned transaction's age is its position in the sequencer's order).
     */
    record Started(long transactionId, long startTimestamp) implements Input {
      public Started(long transactionId) {
        this(transactionId, transactionId);
      }
    }

    /**
     * A participant's vote.
     *
     * @param round what it answers: 1 for the prepare, {@code n} for the {@link
     *     Effect.SendForwards} of that round
     */
    record VoteReceived(EntityId participant, long transactionId, TurnResult vote, int round)
        implements Input {
      /** The vote that answers the prepare (round 1). */
      public VoteReceived(EntityId participant, long transactionId, TurnResult vote) {
        this(participant, transactionId, vote, 1);
      }
    }

    /**
     * A participant's forwards, reported once it evaluated its part of round {@code round} and
     * before its vote (its prepared record is still being written). Counts only while that
     * round's vote is still to come; its vote must carry the same forwards.
     */
    record ForwardsReported(EntityId participant, long transactionId, List<Forward> forwards,
        int round) implements Input {
      public ForwardsReported {
        forwards = List.copyOf(forwards);
      }
    }

    record PrepareTimedOut(long transactionId) implements Input {}

    /** Retry after a lock conflict, under this new transaction id. */
    record RetryDue(long transactionId) implements Input {}

    /**
     * The commit decision's record is durable ({@code error == null}), was certainly not written
     * ({@code error != null, unknown == false}), or its fate is unknown.
     */
    record DecisionPersisted(TroupeException error, boolean unknown) implements Input {
      /**
       * What the store's answer to the decision's write means: none is durable; a {@link
       * TroupeException} is a refusal (closed, failed before, queue full: not written); anything
       * else (a failed write) leaves its fate unknown.
       */
      public static DecisionPersisted ofStoreAnswer(Throwable failure) {
        if (failure == null) {
          return new DecisionPersisted(null, false);
        }
        Throwable cause = failure instanceof java.util.concurrent.CompletionException
            && failure.getCause() != null ? failure.getCause() : failure;
        if (cause instanceof TroupeException refused) {
          return new DecisionPersisted(refused, false);
        }
        return new DecisionPersisted(new TroupeException(ErrorCode.OUTCOME_UNKNOWN,
            String.valueOf(cause.getMessage())), true);
      }
    }

    record Acknowledged(EntityId participant, long transactionId, TurnResult acknowledgement)
        implements Input {}

    /** The resend interval of this attempt's commit decision elapsed. */
    record DecisionResendDue(long transactionId) implements Input {}
  }

  /** What the shell must do. */
  public sealed interface Effect {
    /**
     * Send this part to the participant; its vote comes back as VoteReceived.
     *
     * @param startTimestamp the transaction's age for wait-die
     */
    record SendPrepare(EntityId participant, long transactionId, long startTimestamp, Part part,
        boolean planned) implements Effect {
      public SendPrepare(EntityId participant, long transactionId, long startTimestamp,
          Part part) {
        this(participant, transactionId, startTimestamp, part, false);
      }
    }

    /**
     * The operations forwarded to a participant that already voted yes changed: it evaluates its
     * part again with these (all of them) and votes again (as VoteReceived).
     */
    record SendForwards(EntityId participant, long transactionId, List<Forward> forwards,
        int round) implements Effect {}

    /** Feed PrepareTimedOut for this attempt after the delay. */
    record SchedulePrepareTimeout(long transactionId, long delayMillis) implements Effect {}

    /** Feed RetryDue with a fresh transaction id after the delay. */
    record ScheduleRetry(long delayMillis) implements Effect {}

    /**
     * Durably record the commit decision, naming the participants that hold a prepared record;
     * report with DecisionPersisted.
     */
    record PersistDecision(long transactionId, List<EntityId> participants) implements Effect {}

    /** Send the decision; a commit's acknowledgement comes back as Acknowledged. */
    record SendDecision(EntityId participant, long transactionId, boolean commit)
        implements Effect {}

    /**
     * Feed DecisionResendDue for this attempt after the delay (it resends the commit decision to
     * every participant that has not acknowledged it yet).
     */
    record ScheduleDecisionResend(long transactionId, long delayMillis) implements Effect {}

    /**
     * Every participant applied the commit: drop the decision record (needs no sync); the same
     * participants as the PersistDecision.
     */
    record ForgetDecision(long transactionId, List<EntityId> participants) implements Effect {}

    record Reply(Outcome outcome) implements Effect {}

    /** Nothing more will happen: stop. */
    record Finished() implements Effect {}
  }

  private enum Phase {
    NOT_STARTED,
    COLLECTING_VOTES,
    WAITING_TO_RETRY,
    PERSISTING_DECISION,
    COMMITTING,
    FINISHED
  }

  /** The client's parts, in first-mention order (each attempt starts from them). */
  private final Map<EntityId, Part> requestedParts;
  /** This attempt's parts: the client's, then the followers its dependencies reached. */
  private final Map<EntityId, Part> parts = new LinkedHashMap<>();
  private final Limits limits;
  private final boolean planned;
  private Phase phase = Phase.NOT_STARTED;
  private long startTimestamp;
  private long transactionId;
  private int lockConflicts;
  private final Map<EntityId, TurnResult.Done> votes = new LinkedHashMap<>();
  /** Per participant, how many of its votes are still to come (0 or 1). */
  private final Map<EntityId, Integer> votesToCome = new HashMap<>();
  /** Per participant, what its latest evaluation forwards to others. */
  private final Map<EntityId, List<Forward>> forwardedBy = new HashMap<>();
  /** Per participant, the forwards it was last sent (its part is evaluated with these). */
  private final Map<EntityId, List<Forward>> forwardedTo = new HashMap<>();
  /** Per participant, how many times it was asked to evaluate its part. */
  private final Map<EntityId, Integer> rounds = new HashMap<>();
  /**
   * Per participant, the latest round whose forwards it reported before voting ({@link
   * Input.ForwardsReported}): it is preparing that round, so it takes changed forwards at once.
   */
  private final Map<EntityId, Integer> reportedRounds = new HashMap<>();
  /**
   * The last {@link #sendForwards} found every target sent what the sources forward (it sent and
   * deferred nothing), and no source's forwards, part or sent forwards changed since: the next
   * pass would find the same, whatever else (votes, rounds, reports) changed.
   */
  private boolean forwardsSettled;
  private final Map<EntityId, TurnResult> acknowledgements = new LinkedHashMap<>();
  private boolean decisionPersisted;
  /** Deliberate breakages (empty outside the simulator's tests). */
  private final Set<Mutations.Mutation> mutations;
  /** The attempt ids this coordinator used so far, the current one last. */
  private final List<Long> attempts = new ArrayList<>();
  /** The commit decision was sent (it is durable, or the transaction wrote nothing). */
  private boolean commitSent;
  /** The decision's write failed with an unknown outcome. */
  private boolean decisionUnknown;

  /** What a live coordinator knows of one attempt's decision (see {@link #knowledgeOf}). */
  public enum Knowledge {
    /** Not decided yet: it may still commit, so nobody may presume abort. */
    UNDECIDED,
    /** The commit decision is durable (or the transaction wrote nothing and committed). */
    COMMITTED,
    /** Aborted: an earlier attempt, or this one after its abort. */
    ABORTED,
    /** Not an attempt of this coordinator. */
    NOT_MINE
  }

  /** @param parts every participant's part, in first-mention order; at least one */
  public CoordinatorCore(Map<EntityId, Part> parts, Limits limits) {
    this(parts, limits, false);
  }

  /**
   * @param planned a planned transaction: its prepares never die (see {@link
   *     LockTable#request(long, long, LockTable.LockSet, Object, boolean)}), so it is never
   *     retried
   */
  public CoordinatorCore(Map<EntityId, Part> parts, Limits limits, boolean planned) {
    this(parts, limits, planned, Set.of());
  }

  /**
   * A coordinator with deliberate breakages: only the simulator's tests pass any (see {@link
   * Mutations}).
   */
  public CoordinatorCore(Map<EntityId, Part> parts, Limits limits, boolean planned,
      Set<Mutations.Mutation> mutations) {
    Invariants.check(!parts.isEmpty(), "a transaction needs at least one participant");
    this.requestedParts = new LinkedHashMap<>(parts);
    this.limits = limits;
    this.planned = planned;
    this.mutations = Set.copyOf(mutations);
  }

  /**
   * What this coordinator knows of attempt {@code transactionId}'s decision, for a participant in
   * doubt that asks ({@link DecisionQueryCore}). Never ABORTED for an attempt that may still
   * commit, never COMMITTED before the commit decision is durable.
   */
  public Knowledge knowledgeOf(long transactionId) {
    if (!attempts.contains(transactionId)) {
      return Knowledge.NOT_MINE;
    }
    if (transactionId != this.transactionId) {
      return Knowledge.ABORTED; // an earlier attempt, aborted before this one started
    }
    return switch (phase) {
      case NOT_STARTED, COLLECTING_VOTES, PERSISTING_DECISION -> Knowledge.UNDECIDED;
      case WAITING_TO_RETRY -> Knowledge.ABORTED;
      case COMMITTING -> Knowledge.COMMITTED;
      // Finished: committed if the commit was sent (answered, or answered outcome_unknown after
      // a participant's store failed: the decision is durable); aborted otherwise. An unknown
      // decision write is reported as undecided: only the recovery of that store can tell.
      case FINISHED -> commitSent ? Knowledge.COMMITTED
          : decisionUnknown ? Knowledge.UNDECIDED : Knowledge.ABORTED;
    };
  }



  /** The current attempt's transaction id (0 before the start). */
  public long transactionId() {
    return transactionId;
  }

  /** How many attempts wait-die killed so far. */
  public int lockConflicts() {
    return lockConflicts;
  }

  public List<Effect> handle(Input input) {
    List<Effect> effects = new ArrayList<>();
    switch (input) {
      case Input.Started started -> {
        Invariants.check(phase == Phase.NOT_STARTED, "transaction started twice");
        startTimestamp = started.startTimestamp();
        startAttempt(started.transactionId(), effects);
      }
      case Input.RetryDue retry -> {
        Invariants.check(phase == Phase.WAITING_TO_RETRY, "retry of transaction %d while %s",
            transactionId, phase);
        Invariants.check(retry.transactionId() > transactionId,
            "retry id %d is not newer than %d", retry.transactionId(), transactionId);
        startAttempt(retry.transactionId(), effects);
      }
      case Input.VoteReceived received -> {
        if (phase != Phase.COLLECTING_VOTES || received.transactionId() != transactionId) {
          break; // a vote of an earlier attempt, or after the decision
        }
        EntityId participant = received.participant();
        if (!parts.containsKey(participant) || votesToCome.getOrDefault(participant, 0) != 1
            || received.round() != rounds.getOrDefault(participant, 0)) {
          break; // a duplicate, or the vote of an earlier round: only the latest round counts
        }
        votesToCome.put(participant, 0);
        switch (received.vote()) {
          case TurnResult.Failed no -> abort(no.error(), effects);
          case TurnResult.Done yes -> {
            votes.put(participant, yes);
            List<Forward> forwards = yes.forwarding().forwards();
            if (reportedRounds.getOrDefault(participant, 0) == received.round()) {
              // What was sent on at the report must be what the participant votes for.
              Invariants.check(forwards.equals(forwardedBy.get(participant)),
                  "%s voted round %d of transaction %d forwarding %s, but reported %s",
                  participant, received.round(), transactionId, forwards,
                  forwardedBy.get(participant));
            }
            if (planned && reachesBeyondParticipants(forwards)) {
              // Planned order needs every participant up front: plan it again, or run it dynamic.
              abort(new TroupeException(ErrorCode.ABORTED, TransactionAbort.DEPENDENCIES_INVOLVED,
                  "a planned transaction forwards to an entity it was not planned with"), effects);
              break;
            }
            forwardedBy(participant, forwards);
            if (sendForwards(effects) && votes.size() == parts.size()) {
              decideCommit(effects);
            }
          }
        }
      }
      case Input.ForwardsReported reported -> {
        EntityId participant = reported.participant();
        if (phase != Phase.COLLECTING_VOTES || reported.transactionId() != transactionId
            || !parts.containsKey(participant) || votesToCome.getOrDefault(participant, 0) != 1
            || reported.round() != rounds.getOrDefault(participant, 0)
            || reportedRounds.getOrDefault(participant, 0) == reported.round()) {
          break; // late (its vote counted, or a later round is asked), stale or a duplicate
        }
        if (planned && reachesBeyondParticipants(reported.forwards())) {
          abort(new TroupeException(ErrorCode.ABORTED, TransactionAbort.DEPENDENCIES_INVOLVED,
              "a planned transaction forwards to an entity it was not planned with"), effects);
          break;
        }
        reportedRounds.put(participant, reported.round());
        forwardedBy(participant, reported.forwards());
        sendForwards(effects); // its own vote is still to come: nothing to decide yet
      }
      case Input.PrepareTimedOut timedOut -> {
        if (phase == Phase.COLLECTING_VOTES && timedOut.transactionId() == transactionId) {
          abort(new TroupeException(ErrorCode.ABORTED, TransactionAbort.TIMEOUT,
              "not every participant voted within %d ms (%d of %d did)".formatted(
                  limits.prepareTimeoutMillis(), votes.size(), parts.size())), effects);
        }
      }
      case Input.DecisionPersisted persisted -> {
        Invariants.check(phase == Phase.PERSISTING_DECISION, "decision persisted while %s", phase);
        if (persisted.error() == null) {
          decisionPersisted = true;
          sendCommit(effects);
        } else if (!persisted.unknown()) {
          abortAll(effects);
          finish(new Outcome.Failed(new TroupeException(ErrorCode.ABORTED,
              TransactionAbort.PARTICIPANT_UNAVAILABLE,
              "the commit decision could not be recorded: " + persisted.error().getMessage())),
              effects);
        } else {
          // The decision may be durable: only recovery can tell. Participants stay prepared.
          decisionUnknown = true;
          finish(new Outcome.Failed(new TroupeException(ErrorCode.OUTCOME_UNKNOWN,
              "transaction %d: the commit decision may or may not be durable: %s".formatted(
                  transactionId, persisted.error().getMessage()))), effects);
        }
      }
      case Input.Acknowledged acknowledged -> {
        if (phase != Phase.COMMITTING || acknowledged.transactionId() != transactionId
            || !parts.containsKey(acknowledged.participant())
            || acknowledgements.containsKey(acknowledged.participant())) {
          break; // late, stale or a duplicate: each participant's first acknowledgement counts
        }
        acknowledgements.put(acknowledged.participant(), acknowledged.acknowledgement());
        if (acknowledgements.size() == parts.size()) {
          completeCommit(effects);
        }
      }
      case Input.DecisionResendDue due -> {
        if (phase != Phase.COMMITTING || due.transactionId() != transactionId) {
          break; // every participant acknowledged meanwhile, or a crash's leftover
        }
        for (EntityId participant : parts.keySet()) {
          if (!acknowledgements.containsKey(participant)) {
            effects.add(new Effect.SendDecision(participant, transactionId, true));
          }
        }
        effects.add(new Effect.ScheduleDecisionResend(transactionId,
            limits.decisionResendIntervalMillis()));
      }
    }
    return effects;
  }

  private void startAttempt(long id, List<Effect> effects) {
    transactionId = id;
    attempts.add(id);
    votes.clear();
    votesToCome.clear();
    forwardedBy.clear();
    forwardedTo.clear();
    forwardsSettled = false;
    rounds.clear();
    reportedRounds.clear();
    parts.clear();
    parts.putAll(requestedParts);
    phase = Phase.COLLECTING_VOTES;
    parts.forEach((participant, part) -> {
      votesToCome.put(participant, 1);
      rounds.put(participant, 1);
      effects.add(new Effect.SendPrepare(participant, id, startTimestamp, part, planned));
    });
    effects.add(new Effect.SchedulePrepareTimeout(id, limits.prepareTimeoutMillis()));
  }

  /**
   * Sends every participant whose forwards changed its new forwards: a follower not yet in the
   * transaction joins with a prepare, one that voted or reported its evaluation of its current
   * round is asked to evaluate again (and its vote of that round no longer counts), one whose
   * vote is still to come and that has not reported gets them after it. Returns whether the
   * forwards are settled (nothing sent, nothing deferred); aborts (and returns false) past a
   * limit.
   */
  private boolean sendForwards(List<Effect> effects) {
    if (forwardsSettled) {
      // Nothing it reads changed since it found every target sent what it wants: the pass below
      // would send nothing again (it ran on every vote: 4 % of the declared marketplace's CPU).
      return true;
    }
    Map<EntityId, List<Forward>> wanted = new LinkedHashMap<>();
    for (EntityId source : parts.keySet()) {
      for (Forward forward : forwardedBy.getOrDefault(source, List.of())) {
        wanted.computeIfAbsent(forward.target(), ignored -> new ArrayList<>()).add(forward);
      }
    }
    Set<EntityId> targets = new LinkedHashSet<>(wanted.keySet());
    targets.addAll(forwardedTo.keySet());
    boolean settled = true;
    for (EntityId target : targets) {
      List<Forward> forwards = wanted.getOrDefault(target, List.of());
      if (forwards.equals(forwardedTo.getOrDefault(target, List.of()))) {
        continue;
      }
      settled = false;
      if (!parts.containsKey(target)) {
        if (parts.size() >= limits.maxParticipants()) {
          abort(new TroupeException(ErrorCode.TOO_LARGE, ("the transaction's dependencies reach"
              + " more than %d entities (troupe.dependencies.max-participants)")
              .formatted(limits.maxParticipants())), effects);
          return false;
        }
        Part part = new Part(List.of(), false, forwards);
        parts.put(target, part);
        forwardedTo.put(target, forwards);
        votesToCome.put(target, 1);
        rounds.put(target, 1);
        effects.add(new Effect.SendPrepare(target, transactionId, startTimestamp, part, planned));
      } else if (votesToCome.getOrDefault(target, 0) == 0
          || reportedRounds.getOrDefault(target, 0).equals(rounds.get(target))) {
        int round = rounds.merge(target, 1, Integer::sum);
        if (round > limits.maxForwardRounds()) {
          abort(new TroupeException(ErrorCode.TOO_LARGE, ("the operations forwarded to %s did not"
              + " settle within %d rounds (troupe.dependencies.max-forward-rounds)")
              .formatted(target, limits.maxForwardRounds())), effects);
          return false;
        }
        forwardedTo.put(target, forwards);
        votes.remove(target);
        votesToCome.put(target, 1);
        effects.add(new Effect.SendForwards(target, transactionId, forwards, round));
      }
    }
    forwardsSettled = settled;
    return settled;
  }

  /**
   * Records what {@code participant}'s latest evaluation forwards; a change means the forwards
   * must be looked over again ({@link #sendForwards}).
   */
  private void forwardedBy(EntityId participant, List<Forward> forwards) {
    if (!forwards.equals(forwardedBy.getOrDefault(participant, List.of()))) {
      forwardsSettled = false;
    }
    forwardedBy.put(participant, forwards);
  }

  private boolean reachesBeyondParticipants(List<Forward> forwards) {
    for (Forward forward : forwards) {
      if (!parts.containsKey(forward.target())) {
        return true;
      }
    }
    return false;
  }

  /**
   * Every chain through a dependency this transaction registers (the deepest walk up from its
   * leader, the dependency, the deepest walk down from its follower) within the limit; else the
   * rejection.
   */
  private TroupeException chainTooLong() {
    Map<String, Integer> upstream = new HashMap<>();
    Map<String, Integer> downstream = new HashMap<>();
    for (TurnResult.Done vote : votes.values()) {
      vote.forwarding().deepestUpstream().forEach((id, depth) ->
          upstream.merge(id, depth, Math::max));
      vote.forwarding().deepestDownstream().forEach((id, depth) ->
          downstream.merge(id, depth, Math::max));
    }
    Set<String> registered = new HashSet<>(upstream.keySet());
    registered.addAll(downstream.keySet());
    for (String id : registered) {
      int length = upstream.getOrDefault(id, 0) + 1 + downstream.getOrDefault(id, 0);
      if (length > limits.maxDependencyChain()) {
        return new TroupeException(ErrorCode.TOO_LARGE, ("registering dependency %s would make a"
            + " chain of %d dependencies, more than troupe.dependencies.max-chain-length (%d)")
            .formatted(id, length, limits.maxDependencyChain()));
      }
    }
    return null;
  }

  private void abort(TroupeException reason, List<Effect> effects) {
    abortAll(effects);
    boolean lockConflict = reason.code() == ErrorCode.ABORTED
        && TransactionAbort.LOCK_CONFLICT.equals(reason.reason());
    if (lockConflict) {
      lockConflicts++;
      if (lockConflicts <= limits.maxLockConflictRetries()) {
        phase = Phase.WAITING_TO_RETRY;
        effects.add(new Effect.ScheduleRetry(
            Math.min(limits.retryBackoffMillis() * lockConflicts, limits.prepareTimeoutMillis())));
        return;
      }
    }
    // A participant's value past a limit, or an evaluation that failed on the state it met: the
    // transaction aborts with that reason (a single turn answers the code itself).
    boolean abortReason = reason.code() != ErrorCode.ABORTED
        && (TransactionAbort.TOO_LARGE.equals(reason.reason())
            || TransactionAbort.EVALUATION_FAILED.equals(reason.reason()));
    TroupeException reported = abortReason
        ? new TroupeException(ErrorCode.ABORTED, reason.reason(), reason.getMessage())
        : switch (reason.code()) {
      case ABORTED, INVALID_REQUEST, NOT_FOUND, UNKNOWN_TYPE, UNKNOWN_ACTION, TOO_LARGE, CONFLICT,
          CORRUPT_DATA -> reason;
      case PRECONDITION_FAILED -> new TroupeException(ErrorCode.ABORTED,
          TransactionAbort.PRECONDITION_FAILED, reason.getMessage());
      default -> new TroupeException(ErrorCode.ABORTED, TransactionAbort.PARTICIPANT_UNAVAILABLE,
          reason.getMessage());
    };
    if (lockConflict) {
      reported = new TroupeException(ErrorCode.ABORTED, TransactionAbort.LOCK_CONFLICT,
          "%s (gave up after %d retries)".formatted(reason.getMessage(),
              limits.maxLockConflictRetries()));
    }
    finish(new Outcome.Failed(reported), effects);
  }

  /** Presumed abort: nothing to persist; participants that never prepared ignore it. */
  private void abortAll(List<Effect> effects) {
    parts.keySet().forEach(participant ->
        effects.add(new Effect.SendDecision(participant, transactionId, false)));
  }

  private void decideCommit(List<Effect> effects) {
    TroupeException chain = chainTooLong();
    if (chain != null) {
      abort(chain, effects);
      return;
    }
    boolean wrote = votes.values().stream().anyMatch(TurnResult.Done::wrote);
    if (!wrote) {
      sendCommit(effects); // nothing to redo after a crash, so no decision record
      return;
    }
    phase = Phase.PERSISTING_DECISION;
    effects.add(new Effect.PersistDecision(transactionId, writers()));
  }

  /**
   * The participants that hold a prepared record (voted yes with {@code wrote}), in part order:
   * what the decision record names. Only they have anything to resolve at recovery, and only they
   * commit a journal record, so a replication log's decision entry that names them names exactly
   * the parts a receiver must wait for (a read-only participant commits nothing and would be
   * waited for forever). The first of them places the record, for persisting and forgetting alike.
   */
  private List<EntityId> writers() {
    List<EntityId> writers = new ArrayList<>();
    for (EntityId participant : parts.keySet()) {
      if (votes.get(participant) instanceof TurnResult.Done done && done.wrote()) {
        writers.add(participant);
      }
    }
    return List.copyOf(writers);
  }

  private void sendCommit(List<Effect> effects) {
    phase = Phase.COMMITTING;
    commitSent = true;
    acknowledgements.clear();
    parts.keySet().forEach(participant ->
        effects.add(new Effect.SendDecision(participant, transactionId, true)));
    if (!mutations.contains(Mutations.Mutation.COORDINATOR_SKIPS_DECISION_RESEND)) {
      effects.add(new Effect.ScheduleDecisionResend(transactionId,
          limits.decisionResendIntervalMillis()));
    }
  }

  private void completeCommit(List<Effect> effects) {
    Map<EntityId, ParticipantResult> results = new LinkedHashMap<>();
    List<EntityId> failed = new ArrayList<>();
    for (EntityId participant : parts.keySet()) {
      switch (acknowledgements.get(participant)) {
        case TurnResult.Done done -> results.put(participant, new ParticipantResult(
            done.readVersion(), done.version(), done.state(), done.wrote()));
        case TurnResult.Failed ignored -> failed.add(participant);
      }
    }
    if (!failed.isEmpty()) {
      // Committed (the decision is durable) but not applied everywhere: the store of those
      // participants failed, and recovery applies the decision, so keep its record. Not
      // "unavailable", which promises that nothing changed and invites a retry that would apply
      // the transaction twice (found by the simulator's damage runs).
      finish(new Outcome.Failed(new TroupeException(ErrorCode.OUTCOME_UNKNOWN,
          ("transaction %d committed (its decision is durable), but %s could not apply it yet; it"
              + " is applied when the node recovers: do not retry it").formatted(transactionId,
              failed))), effects);
      return;
    }
    if (decisionPersisted) {
      effects.add(new Effect.ForgetDecision(transactionId, writers()));
    }
    finish(new Outcome.Committed(transactionId, results), effects);
  }

  private void finish(Outcome outcome, List<Effect> effects) {
    phase = Phase.FINISHED;
    effects.add(new Effect.Reply(outcome));
    effects.add(new Effect.Finished());
  }
}
