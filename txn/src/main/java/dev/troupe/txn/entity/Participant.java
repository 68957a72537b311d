package dev.troupe.txn.entity;

import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.Operation;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.TroupeException;
import dev.troupe.txn.DependencyEvaluator;
import dev.troupe.txn.Mutations;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnEvaluator;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.entity.EntitySide.GatedPart;
import dev.troupe.txn.entity.EntitySide.InFlight;
import dev.troupe.txn.entity.EntitySide.Participation;
import dev.troupe.txn.entity.EntitySide.PendingReply;
import dev.troupe.txn.entity.EntitySide.Phase;
import dev.troupe.txn.entity.EntitySide.RememberedCommit;
import dev.troupe.txn.entity.EntitySide.Waiting;
import dev.troupe.txn.entity.EntityTurnCore.Effect;
import dev.troupe.txn.entity.EntityTurnCore.Input;
import java.util.ArrayList;
import java.util.List;

/**
 * The participant side of two-phase commit for one entity (see {@link EntityTurnCore},
 * "Transactions" and "Over a network"): prepares a part under its locks (or hands it to the PSAC
 * admission), votes, takes forwarded operations in numbered rounds, applies a decision once,
 * answers duplicates from what it remembers, asks the coordinator's node about a part in doubt,
 * adopts parts recovery kept in doubt, and runs the steps of interactive transactions. Commits and
 * replies go through the {@link TurnPipeline}, so they keep the entity's one order.
 *
 * <p>Package-private: the shell sees only {@link EntityTurnCore}. State lives in the shared
 * {@link EntitySide}; this class holds none of its own.
 */
final class Participant<R> {
  private final EntitySide<R> side;
  private TurnPipeline<R> pipeline;
  private PsacAdmission<R> admission;

  Participant(EntitySide<R> side) {
    this.side = side;
  }

  /** Wired once by the core's constructor: the collaborators call each other (not the shell). */
  void connect(TurnPipeline<R> pipeline, PsacAdmission<R> admission) {
    this.pipeline = pipeline;
    this.admission = admission;
  }

  void prepare(Input.PrepareRequested<R> request, List<Effect<R>> effects) {
    Invariants.check(!side.passivationRequested, "%s got a prepare while passivating", side.entity);
    long transactionId = request.transactionId();
    Participation<R> open = side.participations.get(transactionId);
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
        side.replies.add(new PendingReply<>(side.lastSubmittedSerial, request.voteTo(),
            open.votedState, open.votedWrote, null, false, open.forwarding));
        pipeline.releaseReplies(effects);
      }
      return;
    }
    if (side.rememberedCommits.containsKey(transactionId)) {
      effects.add(new Effect.Reply<>(request.voteTo(), new TurnResult.Failed(new TroupeException(
          ErrorCode.ABORTED, TransactionAbort.DECIDED,
          "transaction %d was already decided on %s".formatted(transactionId, side.entity)))));
      return;
    }
    if (side.rememberedAborts.contains(transactionId)
        && !side.mutations.contains(Mutations.Mutation.PREPARE_AFTER_ABORT)) {
      effects.add(new Effect.Reply<>(request.voteTo(), new TurnResult.Failed(new TroupeException(
          ErrorCode.ABORTED, TransactionAbort.DECIDED,
          "transaction %d was aborted before its prepare reached %s".formatted(transactionId,
              side.entity)))));
      return;
    }
    if (side.participations.size() >= side.limits.maxOpenTransactionsPerEntity()) {
      effects.add(new Effect.Reply<>(request.voteTo(), new TurnResult.Failed(new TroupeException(
          ErrorCode.OVERLOADED, "entity %s takes part in %d open transactions; retry later"
              .formatted(side.entity, side.participations.size())))));
      return;
    }
    Participation<R> participation = new Participation<>(request);
    if (PsacAdmission.isPsac(request.type())) {
      side.participations.put(transactionId, participation);
      participation.gateItem = new GatedPart<>(participation);
      admission.handleGateDecision(admission.gate(request.type()).offer(participation.gateItem,
          request.startTimestamp(), true, request.readsState(), request.planned(), side.tentative),
          effects);
      return;
    }
    // The planner's locks when it worked them out from this type and these turns (exact: see
    // AccessSets.KnownLocks); otherwise worked out here.
    LockTable.LockSet access = AccessSets.forPart(request.type(), request.turns(),
        request.readsState(), request.forwards(), request.knownLocks())
        .merge(AccessSets.reservation(request.type(), request.reserved()));
    side.participations.put(transactionId, participation);
    requestLocks(participation, access, !request.planned(), effects);
  }

  /**
   * Asks for a part's locks (more of them, for an amended part): evaluates it once granted; a
   * wait-die death votes no (and forgets the part, releasing what it held).
   */
  private void requestLocks(Participation<R> participation, LockTable.LockSet access,
      boolean mayDie, List<Effect<R>> effects) {
    long transactionId = participation.request.transactionId();
    switch (side.locks.request(transactionId, participation.request.startTimestamp(), access,
        transactionId, mayDie)) {
      case LockTable.Outcome.Granted ignored -> evaluate(participation, effects);
      case LockTable.Outcome.Waiting ignored -> {
        side.lockWaits++;
        participation.phase = Phase.WAITING_FOR_LOCKS;
      }
      case LockTable.Outcome.Died died -> voteNo(participation, new TroupeException(
          ErrorCode.ABORTED, TransactionAbort.LOCK_CONFLICT,
          "%s is locked by an older transaction (%d)".formatted(side.entity,
              died.conflictingTransaction())), effects);
    }
  }

  void forwardsReceived(Input.ForwardsReceived<R> forwarded, List<Effect<R>> effects) {
    Participation<R> participation = side.participations.get(forwarded.transactionId());
    if (participation != null && participation.phase == Phase.PREPARING
        && forwarded.round() > participation.round) {
      forwardsWhilePreparing(participation, forwarded, effects);
      return;
    }
    if (participation != null && forwarded.round() != 0
        && forwarded.round() <= participation.round) {
      // A duplicate or late copy: vote again if it voted in this round (its vote may have been
      // lost); an older round's vote would be ignored, and a vote still to come will be sent.
      if (participation.phase == Phase.PREPARED && forwarded.round() == participation.round
          && participation.votedState != null) {
        side.replies.add(new PendingReply<>(side.lastSubmittedSerial, forwarded.voteTo(),
            participation.votedState, participation.votedWrote, null, false,
            participation.forwarding));
        pipeline.releaseReplies(effects);
      }
      return;
    }
    if (participation == null || participation.phase != Phase.PREPARED) {
      effects.add(new Effect.Reply<>(forwarded.voteTo(), new TurnResult.Failed(new TroupeException(
          ErrorCode.ABORTED, TransactionAbort.DECIDED, "transaction %d has no prepared part on %s"
              .formatted(forwarded.transactionId(), side.entity)))));
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
            + " dependencies; retry the transaction").formatted(side.entity)), effects);
      }
      return;
    }
    LockTable.LockSet access = AccessSets.forPart(participation.request.type(), List.of(), false,
        forwarded.forwards());
    if (participation.request.planned()) {
      // Planned parts never wait outside their order: the keys must have been reserved.
      if (side.locks.holds(forwarded.transactionId(), access)) {
        evaluate(participation, effects);
      } else {
        voteNo(participation, new TroupeException(ErrorCode.ABORTED,
            TransactionAbort.DEPENDENCIES_INVOLVED, ("%s was asked to apply forwards on keys its"
                + " planned part did not reserve").formatted(side.entity)), effects);
      }
      return;
    }
    requestLocks(participation, access, true, effects);
  }

  /**
   * Forwards of a later round that reached this part while its prepared record is being written
   * (its coordinator had its {@link Effect.ReportForwards}): evaluated at once when the part holds
   * every lock they need, its new record replacing the one in flight (the vote waits for both);
   * otherwise kept and taken once the record is durable, as after a vote.
   */
  private void forwardsWhilePreparing(Participation<R> participation,
      Input.ForwardsReceived<R> forwarded, List<Effect<R>> effects) {
    if (participation.abortedWhilePreparing) {
      return; // voted no or aborted: its records are abandoned once written
    }
    Input.ForwardsReceived<R> kept = participation.forwardsAfterPrepared;
    if (kept != null) {
      if (forwarded.round() > kept.round()) {
        participation.forwardsAfterPrepared = forwarded;
      }
      return; // a duplicate of the kept round, or a later one kept instead
    }
    LockTable.LockSet access = AccessSets.forPart(participation.request.type(), List.of(), false,
        forwarded.forwards());
    if (participation.gateItem != null
        || !side.locks.holds(forwarded.transactionId(), access)) {
      participation.forwardsAfterPrepared = forwarded;
      return;
    }
    participation.round = forwarded.round();
    participation.request = participation.request.votingTo(forwarded.voteTo());
    participation.forwards = forwarded.forwards();
    evaluate(participation, effects);
  }

  /** Locks held: evaluate the transaction's turns in order on the tentative state. */
  void evaluate(Participation<R> participation, List<Effect<R>> effects) {
    Input.PrepareRequested<R> request = participation.request;
    DependencyEvaluator.Evaluation evaluated = DependencyEvaluator.evaluate(side.entity,
        request.type(), side.tentative, request.turns(), participation.forwards,
        request.transactionId(), side.originDc, side.limits);
    if (evaluated.error() != null) {
      voteNo(participation, evaluated.error(), effects);
      return;
    }
    participation.operations = evaluated.operations();
    participation.stateAfter = evaluated.after();
    participation.forwarding = side.mutations.contains(Mutations.Mutation.DROP_FORWARDS)
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
      participation.preparesInFlight++;
      effects.add(new Effect.SubmitPrepare<>(request.transactionId(), participation.operations,
          List.of(), 0));
      if (!participation.forwarding.forwards().isEmpty() || !request.reserved().isEmpty()) {
        // Its forwards are known now: the coordinator sends them on while this record is
        // written (and a reserving follower says it is preparing, so it takes them at once).
        effects.add(new Effect.ReportForwards<>(request.voteTo(),
            participation.forwarding.forwards()));
      }
    }
  }

  void prepared(long transactionId, List<Effect<R>> effects) {
    Participation<R> participation = side.participations.get(transactionId);
    Invariants.check(participation != null && participation.phase == Phase.PREPARING
        && participation.preparesInFlight > 0,
        "%s: prepared record of transaction %d is durable but it was not preparing (%s)",
            side.entity,
        transactionId, participation == null ? null : participation.phase);
    participation.preparedRecordWritten = true;
    if (--participation.preparesInFlight > 0) {
      return; // its replacement is still being written: the vote waits for it
    }
    if (participation.abortedWhilePreparing) {
      effects.add(new Effect.AbandonPrepared<>(transactionId));
      finish(transactionId, effects);
      return;
    }
    if (participation.prepareFailure != null) {
      voteNo(participation, participation.prepareFailure, effects);
      return;
    }
    Input.ForwardsReceived<R> kept = participation.forwardsAfterPrepared;
    if (kept != null) {
      // Forwards of a later round came while preparing: take them as after a vote (this round's
      // vote is no longer counted, so none is sent).
      participation.forwardsAfterPrepared = null;
      participation.phase = Phase.PREPARED;
      forwardsReceived(kept, effects);
      return;
    }
    // "wrote": a prepared record exists (a PSAC part's holds turns, not operations), so the
    // coordinator must make its decision durable before anyone commits.
    voteYes(participation, participation.stateAfter, true, effects);
    if (side.mutations.contains(Mutations.Mutation.RELEASE_LOCKS_AT_VOTE)
        && participation.gateItem == null) {
      grant(side.locks.release(transactionId), effects); // a deliberate bug (simulator tests only)
    }
    if (participation.gateItem == null) {
      releaseKeyLocksEarly(transactionId, effects);
    }
  }

  /** {@link Mutations.Mutation#RELEASE_KEY_LOCK_EARLY}, a deliberate bug (simulator tests only). */
  private void releaseKeyLocksEarly(long transactionId, List<Effect<R>> effects) {
    if (side.mutations.contains(Mutations.Mutation.RELEASE_KEY_LOCK_EARLY)) {
      grant(side.locks.releaseReadKeys(transactionId), effects);
    }
  }

  /**
   * The part is prepared: vote yes (once everything it observed is durable) and watch for its
   * decision (see the class doc: a part in doubt asks).
   */
  void voteYes(Participation<R> participation, EntityState state, boolean wrote,
      List<Effect<R>> effects) {
    participation.phase = Phase.PREPARED;
    participation.votedState = state;
    participation.votedWrote = wrote;
    side.replies.add(new PendingReply<>(side.lastSubmittedSerial, participation.request.voteTo(),
        state, wrote, null, false, participation.forwarding));
    pipeline.releaseReplies(effects);
    scheduleInDoubtCheck(participation, effects);
  }

  private void scheduleInDoubtCheck(Participation<R> participation, List<Effect<R>> effects) {
    if (!participation.inDoubtCheckScheduled) {
      participation.inDoubtCheckScheduled = true;
      effects.add(new Effect.ScheduleInDoubtQuery<>(participation.request.transactionId(),
          side.participantLimits.inDoubtQueryIntervalMillis()));
    }
  }

  /** Adopts a part recovery kept in doubt (see {@link Input.PreparedPartRecovered}). */
  void adoptRecovered(Input.PreparedPartRecovered<R> recovered, List<Effect<R>> effects) {
    long transactionId = recovered.transactionId();
    Invariants.check(!side.participations.containsKey(transactionId),
        "%s: recovered part of transaction %d twice", side.entity, transactionId);
    // PSAC turns pass the lock table by, so a lock could not hold them back.
    Invariants.check(!PsacAdmission.isPsac(recovered.type()),
        "%s admits by PSAC: a part recovered in doubt"
        + " cannot hold it (not supported yet)", side.entity);
    Participation<R> participation = new Participation<>(new Input.PrepareRequested<>(
        transactionId, transactionId, List.of(), false, recovered.type(), null));
    participation.operations = recovered.operations();
    participation.recordSubmitted = true;
    participation.phase = Phase.PREPARED;
    LockTable.Outcome outcome = side.locks.request(transactionId, transactionId,
        LockTable.LockSet.wholeEntity(LockTable.Mode.WRITE), transactionId, false);
    Invariants.check(outcome instanceof LockTable.Outcome.Granted,
        "%s: recovered part of transaction %d did not get the entity at once (%s): it must be"
            + " fed before anything else", side.entity, transactionId, outcome);
    side.participations.put(transactionId, participation);
    scheduleInDoubtCheck(participation, effects);
  }

  /** The in-doubt interval elapsed: a part still waiting for its decision asks for it. */
  void inDoubtQueryDue(long transactionId, List<Effect<R>> effects) {
    Participation<R> participation = side.participations.get(transactionId);
    if (participation == null) {
      return; // decided meanwhile
    }
    participation.inDoubtCheckScheduled = false;
    if (participation.phase != Phase.PREPARED || participation.commitReceived) {
      return; // voting again (forwards), or committed and waiting in the PSAC gate
    }
    if (side.mutations.contains(Mutations.Mutation.PRESUME_COMMIT_IN_DOUBT)) {
      // A deliberate bug (simulator tests only): presumes the commit nobody decided.
      decide(new Input.DecisionReceived<>(transactionId, true, null), effects);
      return;
    }
    effects.add(new Effect.QueryDecision<>(transactionId,
        dev.troupe.model.time.TransactionIds.nodeOf(transactionId)));
    scheduleInDoubtCheck(participation, effects);
  }

  void prepareFailed(Input.PrepareFailed<R> failed, List<Effect<R>> effects) {
    Participation<R> participation = side.participations.get(failed.transactionId());
    Invariants.check(participation != null && participation.phase == Phase.PREPARING
        && participation.preparesInFlight > 0,
        "%s: prepare of transaction %d failed but it was not preparing", side.entity,
        failed.transactionId());
    if (participation.prepareFailure == null) {
      participation.prepareFailure = failed.error();
    }
    if (--participation.preparesInFlight > 0) {
      return; // answered once its replacement's write is done too
    }
    if (participation.abortedWhilePreparing) {
      if (participation.preparedRecordWritten) {
        effects.add(new Effect.AbandonPrepared<>(failed.transactionId()));
      }
      finish(failed.transactionId(), effects);
      return;
    }
    voteNo(participation, participation.prepareFailure, effects);
  }

  void voteNo(Participation<R> participation, TroupeException reason, List<Effect<R>> effects) {
    long transactionId = participation.request.transactionId();
    // A rejection read the tentative state, so it waits for what it observed, like a turn's.
    side.replies.add(new PendingReply<>(side.lastSubmittedSerial, participation.request.voteTo(),
        side.tentative, false, reason, false));
    pipeline.releaseReplies(effects);
    // It voted no, so the transaction aborts: a duplicate of its prepare must not prepare it.
    rememberAbort(transactionId);
    if (participation.preparesInFlight > 0) {
      // A re-evaluation while preparing failed: its records are abandoned once written.
      participation.abortedWhilePreparing = true;
      return;
    }
    if (participation.recordSubmitted) {
      effects.add(new Effect.AbandonPrepared<>(transactionId)); // an amended part's earlier one
    }
    finish(transactionId, effects);
  }

  void step(Input.StepRequested<R> step, List<Effect<R>> effects) {
    Invariants.check(!side.passivationRequested, "%s got a step while passivating", side.entity);
    if (PsacAdmission.isPsac(step.type())) {
      effects.add(new Effect.Reply<>(step.replyTo(), new TurnResult.Failed(TroupeException.invalid(
          "type %s admits by PSAC; interactive transactions need the serial or keys policy"
              .formatted(step.type().name())))));
      return;
    }
    long transactionId = step.transactionId();
    Participation<R> participation = side.participations.get(transactionId);
    if (participation == null) {
      if (side.participations.size() >= side.limits.maxOpenTransactionsPerEntity()) {
        effects.add(new Effect.Reply<>(step.replyTo(), new TurnResult.Failed(new TroupeException(
            ErrorCode.OVERLOADED, "entity %s takes part in %d open transactions; retry later"
                .formatted(side.entity, side.participations.size())))));
        return;
      }
      participation = new Participation<>(new Input.PrepareRequested<>(transactionId,
          step.startTimestamp(), List.of(), false, step.type(), null));
      participation.phase = Phase.OPEN;
      side.participations.put(transactionId, participation);
    }
    Invariants.check(participation.phase == Phase.OPEN && participation.waitingStep == null,
        "%s: step of transaction %d while %s", side.entity, transactionId, participation.phase);
    LockTable.LockSet access = step.turn() == null
        ? LockTable.LockSet.wholeEntity(LockTable.Mode.READ)
        : AccessSets.forTurn(step.type(), step.turn());
    switch (side.locks.request(transactionId, step.startTimestamp(), access, transactionId)) {
      case LockTable.Outcome.Granted ignored -> runStep(participation, step, effects);
      case LockTable.Outcome.Waiting ignored -> {
        side.lockWaits++;
        participation.waitingStep = step;
      }
      case LockTable.Outcome.Died died -> effects.add(new Effect.Reply<>(step.replyTo(),
          new TurnResult.Failed(new TroupeException(ErrorCode.ABORTED,
              TransactionAbort.LOCK_CONFLICT, "%s is locked by an older transaction (%d)"
                  .formatted(side.entity, died.conflictingTransaction())))));
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
        side.evaluateTurns(step.type(), turns, step.transactionId(), side.tentative);
    if (evaluated.error() == null && step.turn() != null) {
      participation.steps.add(step.turn());
    }
    // Like a turn's answer, it waits until everything it observed is durable.
    side.replies.add(new PendingReply<>(side.lastSubmittedSerial, step.replyTo(), evaluated.after(),
        false, evaluated.error(), false));
    pipeline.releaseReplies(effects);
  }

  void decide(Input.DecisionReceived<R> decision, List<Effect<R>> effects) {
    long transactionId = decision.transactionId();
    Participation<R> participation = side.participations.get(transactionId);
    if (participation == null) {
      RememberedCommit<R> committed = side.rememberedCommits.get(transactionId);
      if (decision.commit()) {
        // A duplicated or resent commit of a part decided here (see the class doc).
        acknowledgeCommitAgain(transactionId, committed, decision.acknowledgeTo(), effects);
        return;
      }
      // Already voted no (and forgot it), a repeated abort, or an abort that overtook its
      // prepare: nothing is held, and a prepare arriving later must not hold anything either.
      Invariants.check(committed == null,
          "%s: abort of transaction %d, which committed here", side.entity, transactionId);
      rememberAbort(transactionId);
      acknowledgeAbort(decision, effects);
      return;
    }
    Invariants.check(!participation.commitReceived || decision.commit(),
        "%s: abort of transaction %d, which committed here (waiting in the PSAC gate)",
        side.entity, transactionId);
    if (participation.commitReceived) {
      return; // a duplicate while the commit waits in the PSAC gate: acknowledged once applied
    }
    if (participation.gateItem != null && decision.commit()) {
      Invariants.check(participation.phase == Phase.PREPARED,
          "%s: commit of transaction %d before it voted (%s)", side.entity, transactionId,
          participation.phase);
      participation.commitReceived = true;
      participation.acknowledgeTo = decision.acknowledgeTo();
      side.gate.commit(participation.gateItem);
      admission.applyGate(effects);
      return;
    }
    if (!decision.commit()) {
      switch (participation.phase) {
        case OPEN -> {
          if (participation.waitingStep != null) {
            effects.add(new Effect.Reply<>(participation.waitingStep.replyTo(),
                new TurnResult.Failed(new TroupeException(ErrorCode.ABORTED,
                    TransactionAbort.DECIDED, "the transaction was aborted"))));
            side.participations.remove(transactionId);
            grant(side.locks.cancel(transactionId), effects);
            grant(side.locks.release(transactionId), effects);
          } else {
            finish(transactionId, effects);
          }
        }
        case WAITING_FOR_LOCKS -> {
          if (participation.gateItem != null) {
            finish(transactionId, effects); // withdraws it from the delayed list
          } else {
            side.participations.remove(transactionId);
            grant(side.locks.cancel(transactionId), effects);
            // An amended part waits for more locks while holding its first ones and its record.
            grant(side.locks.release(transactionId), effects);
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
        "%s: commit of transaction %d before it voted (%s)", side.entity, transactionId,
        participation.phase);
    RememberedCommit<R> remembered = rememberCommit(transactionId, participation.operations);
    if (participation.operations.isEmpty()) {
      if (participation.recordSubmitted) {
        // An amendment took every operation back: its empty record needs no commit (a crash
        // before this removal commits nothing at recovery either).
        effects.add(new Effect.AbandonPrepared<>(transactionId));
      }
      side.replies.add(new PendingReply<>(side.lastSubmittedSerial, decision.acknowledgeTo(),
          side.tentative, false, null, false, DependencyEvaluator.Forwarding.NONE, remembered));
    } else {
      EntityState before = side.tentative;
      side.tentative = side.tentative.apply(participation.operations, side.tentative.version() + 1,
          side.originDc);
      long serial = ++side.lastSubmittedSerial;
      side.inFlight.add(new InFlight(serial, before, true, participation.operations));
      side.replies.add(new PendingReply<>(serial, decision.acknowledgeTo(), side.tentative, true,
          null, true, DependencyEvaluator.Forwarding.NONE, remembered));
      effects.add(new Effect.SubmitCommit<>(serial, transactionId, participation.operations, true));
    }
    pipeline.releaseReplies(effects);
    finish(transactionId, effects);
  }

  /**
   * The answer to this part's in-doubt question. Applied only to a part still in doubt: one
   * decided meanwhile (forgotten here, or committed and waiting in the PSAC gate) hears a stale
   * answer, possibly a presumed abort from a coordinator that finished and forgot the commit this
   * part applied (the question crossed the commit), which must not abort it.
   */
  void answered(Input.DecisionAnswered<R> answer, List<Effect<R>> effects) {
    if (!awaitsDecision(answer.transactionId())) {
      return;
    }
    decide(new Input.DecisionReceived<>(answer.transactionId(), answer.commit(), null), effects);
  }

  boolean awaitsDecision(long transactionId) {
    Participation<R> participation = side.participations.get(transactionId);
    return participation != null && !participation.commitReceived;
  }

  /** Remembers a commit applied here (bounded: the oldest is forgotten first). */
  RememberedCommit<R> rememberCommit(long transactionId, List<Operation> operations) {
    if (side.participantLimits.rememberedCommits() == 0) {
      return null;
    }
    RememberedCommit<R> remembered = new RememberedCommit<>();
    if (side.mutations.contains(Mutations.Mutation.APPLY_DUPLICATE_DECISION)) {
      remembered.operations = List.copyOf(operations);
    }
    side.rememberedCommits.put(transactionId, remembered);
    if (side.rememberedCommits.size() > side.participantLimits.rememberedCommits()) {
      side.rememberedCommits.remove(side.rememberedCommits.keySet().iterator().next());
    }
    return remembered;
  }

  /**
   * A commit of a part already committed here (or forgotten: see the class doc): acknowledged
   * again, never applied again.
   */
  private void acknowledgeCommitAgain(long transactionId, RememberedCommit<R> committed,
      R acknowledgeTo, List<Effect<R>> effects) {
    if (committed != null && side.mutations.contains(Mutations.Mutation.APPLY_DUPLICATE_DECISION)
        && !committed.operations.isEmpty()) {
      // A deliberate bug (simulator tests only): the duplicate is applied once more.
      EntityState before = side.tentative;
      side.tentative = side.tentative.apply(committed.operations, side.tentative.version() + 1,
          side.originDc);
      long serial = ++side.lastSubmittedSerial;
      side.inFlight.add(new InFlight(serial, before, false, committed.operations));
      side.replies.add(new PendingReply<>(serial, acknowledgeTo, side.tentative, true, null, true));
      effects.add(new Effect.SubmitCommit<>(serial, transactionId, committed.operations, false,
          true));
      pipeline.releaseReplies(effects);
      return;
    }
    if (acknowledgeTo == null) {
      return; // an answer to an in-doubt question, arriving after the decision itself
    }
    if (committed == null) {
      effects.add(new Effect.Reply<>(acknowledgeTo, new TurnResult.Failed(new TroupeException(
          ErrorCode.OUTCOME_UNKNOWN, ("transaction %d committed on %s, which no longer remembers"
              + " its result (troupe.transactions.remembered-commits)").formatted(transactionId,
              side.entity)))));
    } else if (committed.acknowledgement != null) {
      effects.add(new Effect.Reply<>(acknowledgeTo, committed.acknowledgement));
    } else {
      committed.waiting.add(acknowledgeTo); // answered with the first, once it is durable
    }
  }

  private void rememberAbort(long transactionId) {
    side.rememberedAborts.remove(transactionId);
    side.rememberedAborts.add(transactionId);
    if (side.rememberedAborts.size() > side.limits.rememberedAborts()) {
      side.rememberedAborts.remove(side.rememberedAborts.iterator().next());
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
    Participation<R> participation = side.participations.remove(transactionId);
    if (participation != null && participation.gateItem != null) {
      side.gate.abort(participation.gateItem); // a no-op once it was applied
      admission.applyGate(effects);
      return;
    }
    grant(side.locks.release(transactionId), effects);
  }

  private void grant(List<LockTable.Grant<Long>> granted, List<Effect<R>> effects) {
    for (LockTable.Grant<Long> grant : granted) {
      Participation<R> participation = side.participations.get(grant.transactionId());
      if (participation != null && participation.phase == Phase.OPEN
          && participation.waitingStep != null) {
        Input.StepRequested<R> step = participation.waitingStep;
        participation.waitingStep = null;
        runStep(participation, step, effects);
        continue;
      }
      Invariants.check(participation != null && participation.phase == Phase.WAITING_FOR_LOCKS,
          "%s: granted locks to transaction %d, which was not waiting", side.entity,
          grant.transactionId());
      evaluate(participation, effects);
    }
    pipeline.runWaitingTurns(effects);
  }
}
