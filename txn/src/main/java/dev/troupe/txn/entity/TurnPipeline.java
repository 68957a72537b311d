package dev.troupe.txn.entity;

import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.Operation;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.TroupeException;
import dev.troupe.txn.DependencyEvaluator;
import dev.troupe.txn.TurnEvaluator;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.entity.EntitySide.GateItem;
import dev.troupe.txn.entity.EntitySide.GatedTurn;
import dev.troupe.txn.entity.EntitySide.InFlight;
import dev.troupe.txn.entity.EntitySide.Participation;
import dev.troupe.txn.entity.EntitySide.PendingReply;
import dev.troupe.txn.entity.EntitySide.Phase;
import dev.troupe.txn.entity.EntitySide.RememberedCommit;
import dev.troupe.txn.entity.EntitySide.Waiting;
import dev.troupe.txn.entity.EntityTurnCore.Effect;
import dev.troupe.txn.entity.EntityTurnCore.Input;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The turn pipeline of one entity (see {@link EntityTurnCore}, "Pipelining"): runs single turns
 * against the tentative state, submits their commits at once, keeps at most {@code
 * maxInFlightCommitsPerEntity} in flight, releases replies in arrival order once what they
 * observed is durable, and rolls back or fails everything when a commit fails. The participant
 * and the PSAC admission submit their commits and replies through it too, so there is one order
 * of commits and one order of replies per entity.
 *
 * <p>Package-private: the shell sees only {@link EntityTurnCore}. State lives in the shared
 * {@link EntitySide}; this class holds none of its own.
 */
final class TurnPipeline<R> {
  private final EntitySide<R> side;

  TurnPipeline(EntitySide<R> side) {
    this.side = side;
  }

  /** A turn of a type admitted by locking: runs now, waits in the queue, or is refused. */
  void turnRequested(Waiting<R> turn, List<Effect<R>> effects) {
    if (side.waiting.isEmpty() && canRun(turn)) {
      run(turn, effects);
    } else if (side.waiting.size() < side.limits.maxQueuedTurnsPerEntity()) {
      side.waiting.add(turn);
    } else {
      effects.add(new Effect.Reply<>(turn.replyTo(), new TurnResult.Failed(
          new TroupeException(ErrorCode.OVERLOADED, "entity %s has %d turns waiting; retry later"
              .formatted(side.entity, side.waiting.size())))));
    }
  }

  /** The oldest commit in flight is durable: release what waited for it and run the queue. */
  void commitSucceeded(Input.CommitSucceeded<R> success, List<Effect<R>> effects) {
    InFlight head = side.inFlight.pollFirst();
    Invariants.check(head != null && head.serial() == success.serial(),
        "%s: commit %d succeeded out of order (expected %s)", side.entity, success.serial(), head);
    Invariants.check(success.commitTimestamp() > side.lastDurableVersion,
        "%s: commit timestamps must grow (%d after %d)", side.entity, success.commitTimestamp(),
        side.lastDurableVersion);
    side.durable = side.durable.apply(head.operations(), success.commitTimestamp(), side.originDc);
    side.lastDurableSerial = success.serial();
    side.versionBeforeLastDurable = side.lastDurableVersion;
    side.lastDurableVersion = success.commitTimestamp();
    releaseReplies(effects);
    rebaseWhenSettled();
    runWaitingTurns(effects);
  }

  /**
   * A commit failed: roll back when that is exact (refused before it was written, no decided
   * commit lost, and an empty PSAC gate, whose admitted outcome trees a rollback would
   * invalidate); otherwise fail everything and stop.
   */
  void commitFailed(Input.CommitFailed<R> failure, List<Effect<R>> effects) {
    if (failure.refusedBeforeWrite() && !rollbackLosesADecision(failure.serial())
        && (side.gate == null || side.gate.isEmpty())) {
      refuseFrom(failure.serial(), failure.error(), effects);
    } else {
      failEverything(failure.error(), effects);
    }
  }

  private boolean canRun(Waiting<R> turn) {
    // The lock set is only worked out when a transaction holds locks here, and once per turn
    // (Waiting.locks): a turn's access under key-level admission binds its arguments.
    return side.inFlight.size() < side.limits.maxInFlightCommitsPerEntity()
        && (side.locks.holderCount() == 0 || !side.locks.conflictsWithHolders(turn.locks()));
  }

  /** Runs queued turns in arrival order while the head may run. */
  void runWaitingTurns(List<Effect<R>> effects) {
    while (!side.waiting.isEmpty() && canRun(side.waiting.peekFirst())) {
      run(side.waiting.pollFirst(), effects);
    }
  }

  /** @param remembered the commit of a transaction's part, remembered for duplicates (or null) */
  void applyOperations(List<Operation> operations, long transactionId, R replyTo,
      boolean prepared, RememberedCommit<R> remembered, List<Effect<R>> effects) {
    if (operations.isEmpty()) {
      if (prepared) {
        effects.add(new Effect.AbandonPrepared<>(transactionId));
      }
      side.replies.add(new PendingReply<>(side.lastSubmittedSerial, replyTo, side.tentative, false,
          null, false, DependencyEvaluator.Forwarding.NONE, remembered));
      return;
    }
    EntityState before = side.tentative;
    side.tentative = side.tentative.apply(operations, side.tentative.version() + 1, side.originDc);
    long serial = ++side.lastSubmittedSerial;
    side.inFlight.add(new InFlight(serial, before, prepared, operations));
    side.replies.add(new PendingReply<>(serial, replyTo, side.tentative, true, null, true,
        DependencyEvaluator.Forwarding.NONE, remembered));
    // Never refused for load: rolling back an applied PSAC action would invalidate the outcome
    // trees of the actions admitted after it.
    effects.add(new Effect.SubmitCommit<>(serial, transactionId, operations, prepared, true));
  }

  private void run(Waiting<R> turn, List<Effect<R>> effects) {
    TurnEvaluator.Decision decision = TurnEvaluator.evaluate(
        side.entity, turn.type(), side.tentative, turn.turn(), turn.transactionId(), side.originDc,
            side.limits);
    switch (decision) {
      case TurnEvaluator.Decision.Reject reject ->
          // A rejection read the tentative state, so it too waits for what it observed.
          side.replies.add(new PendingReply<>(side.lastSubmittedSerial, turn.replyTo(),
              side.tentative, false, reject.error(), false));
      case TurnEvaluator.Decision.Write write when write.operations().isEmpty() ->
          side.replies.add(new PendingReply<>(side.lastSubmittedSerial, turn.replyTo(),
              side.tentative, false, null, false));
      case TurnEvaluator.Decision.Write write
          when DependencyEvaluator.needsTransaction(side.entity, turn.type(), side.tentative,
              turn.turn(), write.operations()) ->
          // Its dependencies' other entities must join: changes nothing here, and the shell runs
          // it again as a transaction. Answered at once, like an overload refusal.
          effects.add(new Effect.Reply<>(turn.replyTo(), needsTransaction()));
      case TurnEvaluator.Decision.Write write -> {
        EntityState before = side.tentative;
        side.tentative = side.tentative.apply(write.operations(), side.tentative.version() + 1,
            side.originDc);
        long serial = ++side.lastSubmittedSerial;
        side.inFlight.add(new InFlight(serial, before, false, write.operations()));
        side.replies.add(new PendingReply<>(serial, turn.replyTo(), side.tentative, true, null,
            true));
        effects.add(
            new Effect.SubmitCommit<>(serial, turn.transactionId(), write.operations(), false));
      }
    }
    releaseReplies(effects);
  }

  TurnResult needsTransaction() {
    return new TurnResult.Failed(new TroupeException(ErrorCode.ABORTED,
        TransactionAbort.NEEDS_TRANSACTION,
            side.entity + " has dependencies: run as a transaction"));
  }

  void releaseReplies(List<Effect<R>> effects) {
    while (!side.replies.isEmpty()
        && side.replies.peekFirst().dependsOnSerial() <= side.lastDurableSerial) {
      PendingReply<R> reply = side.replies.pollFirst();
      boolean ownCommit = reply.committedBySerial()
          && reply.dependsOnSerial() == side.lastDurableSerial;
      TurnResult result = reply.error() != null
          ? new TurnResult.Failed(reply.error())
          : new TurnResult.Done(side.lastDurableVersion, reply.state(), reply.wrote(),
              ownCommit ? side.versionBeforeLastDurable : side.lastDurableVersion,
                  reply.forwarding());
      if (reply.commit() != null) {
        // A commit's acknowledgement, kept for duplicates; those that came meanwhile get it too.
        reply.commit().acknowledgement = result;
        for (R recipient : reply.commit().waiting) {
          effects.add(new Effect.Reply<>(recipient, result));
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
    Invariants.check(serial > side.lastDurableSerial && serial <= side.lastSubmittedSerial,
        "%s: refused commit %d is not in flight (durable %d, submitted %d)", side.entity, serial,
        side.lastDurableSerial, side.lastSubmittedSerial);
    while (!side.inFlight.isEmpty() && side.inFlight.peekLast().serial() >= serial) {
      side.tentative = side.inFlight.pollLast().stateBefore();
    }
    rebaseWhenSettled();
    side.lastSubmittedSerial = serial - 1;
    ArrayDeque<PendingReply<R>> kept = new ArrayDeque<>();
    for (PendingReply<R> reply : side.replies) {
      boolean observedRefused = reply.dependsOnSerial() >= serial;
      if (observedRefused) {
        if (reply.replyTo() != null) { // null: a commit learned by asking, which nobody awaits
          effects.add(new Effect.Reply<>(reply.replyTo(), new TurnResult.Failed(error)));
        }
      } else {
        kept.add(reply);
      }
    }
    side.replies.clear();
    side.replies.addAll(kept);
    // The store is pushing back: turns queued behind the refused one are refused too rather than
    // piled onto a full queue.
    for (Waiting<R> turn : side.waiting) {
      effects.add(new Effect.Reply<>(turn.replyTo(), new TurnResult.Failed(error)));
    }
    side.waiting.clear();
    rebaseWhenSettled();
  }

  /**
   * Whether rolling back to before {@code serial} would drop a decided transaction's commit: that
   * cannot be redone here, so the entity fails instead and recovery applies the decision.
   */
  private boolean rollbackLosesADecision(long serial) {
    for (InFlight commit : side.inFlight) {
      if (commit.serial() >= serial && commit.resolvesPrepared()) {
        return true;
      }
    }
    return false;
  }

  /**
   * With nothing in flight the tentative state is the durable one: take it, with the real
   * version and register stamps instead of the provisional ones.
   */
  private void rebaseWhenSettled() {
    if (side.inFlight.isEmpty()) {
      side.tentative = side.durable;
    }
  }

  private void failEverything(TroupeException cause, List<Effect<R>> effects) {
    for (PendingReply<R> reply : side.replies) {
      TroupeException error = reply.wrote()
          ? new TroupeException(ErrorCode.OUTCOME_UNKNOWN,
              "the write to %s may or may not have committed: %s".formatted(side.entity,
                  cause.getMessage()))
          : new TroupeException(ErrorCode.UNAVAILABLE,
              "storage failed while this turn waited: " + cause.getMessage());
      if (reply.replyTo() != null) { // null: a commit learned by asking, which nobody awaits
        effects.add(new Effect.Reply<>(reply.replyTo(), new TurnResult.Failed(error)));
      }
    }
    for (Waiting<R> turn : side.waiting) {
      effects.add(new Effect.Reply<>(turn.replyTo(), new TurnResult.Failed(
          new TroupeException(ErrorCode.UNAVAILABLE, "storage failed: " + cause.getMessage()))));
    }
    if (side.gate != null) {
      TroupeException unavailable =
          new TroupeException(ErrorCode.UNAVAILABLE, "storage failed: " + cause.getMessage());
      List<GateItem<R>> gated = new ArrayList<>(side.gate.inProgressItems());
      gated.addAll(side.gate.delayedItems());
      for (GateItem<R> item : gated) {
        if (item instanceof GatedTurn<R> turn) {
          effects.add(new Effect.Reply<>(turn.turn.replyTo(), new TurnResult.Failed(unavailable)));
        }
      }
    }
    for (Participation<R> participation : side.participations.values()) {
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
    side.replies.clear();
    side.waiting.clear();
    side.inFlight.clear();
    side.participations.clear();
    side.gate = null;
    side.stopped = true;
    effects.add(new Effect.Stop<>());
  }
}
