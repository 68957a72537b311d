package dev.troupe.txn;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.TroupeException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

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
 * erase. The client is answered once every participant acknowledged that its commit is durable,
 * so a read after the answer sees the transaction everywhere; then the decision record is
 * forgotten. A transaction that wrote nothing skips the decision record.
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

  /** The settings the coordinator obeys (troupe.transactions in reference.conf). */
  public record Limits(long prepareTimeoutMillis, int maxLockConflictRetries,
      long retryBackoffMillis) {}

  /**
   * One participant's part.
   *
   * @param turns its operations, in request order
   * @param readsState whether the transaction reads its whole state
   */
  public record Part(List<Turn> turns, boolean readsState) {
    public Part {
      turns = List.copyOf(turns);
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

    record VoteReceived(EntityId participant, long transactionId, TurnResult vote)
        implements Input {}

    record PrepareTimedOut(long transactionId) implements Input {}

    /** Retry after a lock conflict, under this new transaction id. */
    record RetryDue(long transactionId) implements Input {}

    /**
     * The commit decision's record is durable ({@code error == null}), was certainly not written
     * ({@code error != null, unknown == false}), or its fate is unknown.
     */
    record DecisionPersisted(TroupeException error, boolean unknown) implements Input {}

    record Acknowledged(EntityId participant, long transactionId, TurnResult acknowledgement)
        implements Input {}
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

    /** Feed PrepareTimedOut for this attempt after the delay. */
    record SchedulePrepareTimeout(long transactionId, long delayMillis) implements Effect {}

    /** Feed RetryDue with a fresh transaction id after the delay. */
    record ScheduleRetry(long delayMillis) implements Effect {}

    /** Durably record the commit decision; report with DecisionPersisted. */
    record PersistDecision(long transactionId, List<EntityId> participants) implements Effect {}

    /** Send the decision; a commit's acknowledgement comes back as Acknowledged. */
    record SendDecision(EntityId participant, long transactionId, boolean commit)
        implements Effect {}

    /** Every participant applied the commit: drop the decision record (needs no sync). */
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

  private final Map<EntityId, Part> parts;
  private final Limits limits;
  private final boolean planned;
  private Phase phase = Phase.NOT_STARTED;
  private long startTimestamp;
  private long transactionId;
  private int lockConflicts;
  private final Map<EntityId, TurnResult.Done> votes = new LinkedHashMap<>();
  private final Map<EntityId, TurnResult> acknowledgements = new LinkedHashMap<>();
  private boolean decisionPersisted;

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
    Invariants.check(!parts.isEmpty(), "a transaction needs at least one participant");
    this.parts = new LinkedHashMap<>(parts);
    this.limits = limits;
    this.planned = planned;
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
        Invariants.check(parts.containsKey(received.participant()) && !votes.containsKey(
            received.participant()), "unexpected vote from %s", received.participant());
        switch (received.vote()) {
          case TurnResult.Failed no -> abort(no.error(), effects);
          case TurnResult.Done yes -> {
            votes.put(received.participant(), yes);
            if (votes.size() == parts.size()) {
              decideCommit(effects);
            }
          }
        }
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
          finish(new Outcome.Failed(new TroupeException(ErrorCode.OUTCOME_UNKNOWN,
              "transaction %d: the commit decision may or may not be durable: %s".formatted(
                  transactionId, persisted.error().getMessage()))), effects);
        }
      }
      case Input.Acknowledged acknowledged -> {
        if (phase != Phase.COMMITTING || acknowledged.transactionId() != transactionId) {
          break;
        }
        acknowledgements.put(acknowledged.participant(), acknowledged.acknowledgement());
        if (acknowledgements.size() == parts.size()) {
          completeCommit(effects);
        }
      }
    }
    return effects;
  }

  private void startAttempt(long id, List<Effect> effects) {
    transactionId = id;
    votes.clear();
    phase = Phase.COLLECTING_VOTES;
    parts.forEach((participant, part) ->
        effects.add(new Effect.SendPrepare(participant, id, startTimestamp, part, planned)));
    effects.add(new Effect.SchedulePrepareTimeout(id, limits.prepareTimeoutMillis()));
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
    TroupeException reported = switch (reason.code()) {
      case ABORTED, INVALID_REQUEST, NOT_FOUND, UNKNOWN_TYPE, UNKNOWN_ACTION, TOO_LARGE, CONFLICT ->
          reason;
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
    boolean wrote = votes.values().stream().anyMatch(TurnResult.Done::wrote);
    if (!wrote) {
      sendCommit(effects); // nothing to redo after a crash, so no decision record
      return;
    }
    phase = Phase.PERSISTING_DECISION;
    effects.add(new Effect.PersistDecision(transactionId, List.copyOf(parts.keySet())));
  }

  private void sendCommit(List<Effect> effects) {
    phase = Phase.COMMITTING;
    acknowledgements.clear();
    parts.keySet().forEach(participant ->
        effects.add(new Effect.SendDecision(participant, transactionId, true)));
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
      // participants failed, and recovery applies the decision, so keep its record.
      finish(new Outcome.Failed(new TroupeException(ErrorCode.UNAVAILABLE,
          "transaction %d committed, but %s could not apply it yet; it is applied when the node recovers"
              .formatted(transactionId, failed))), effects);
      return;
    }
    if (decisionPersisted) {
      effects.add(new Effect.ForgetDecision(transactionId, List.copyOf(parts.keySet())));
    }
    finish(new Outcome.Committed(transactionId, results), effects);
  }

  private void finish(Outcome outcome, List<Effect> effects) {
    phase = Phase.FINISHED;
    effects.add(new Effect.Reply(outcome));
    effects.add(new Effect.Finished());
  }
}
