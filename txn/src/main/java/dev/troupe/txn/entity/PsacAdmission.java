package dev.troupe.txn.entity;

import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.AdmissionPolicy;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.PsacSettings;
import dev.troupe.txn.DependencyEvaluator;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnEvaluator;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.entity.EntitySide.GateItem;
import dev.troupe.txn.entity.EntitySide.GatedPart;
import dev.troupe.txn.entity.EntitySide.GatedTurn;
import dev.troupe.txn.entity.EntitySide.Participation;
import dev.troupe.txn.entity.EntitySide.PendingReply;
import dev.troupe.txn.entity.EntitySide.Phase;
import dev.troupe.txn.entity.EntitySide.Waiting;
import dev.troupe.txn.entity.EntityTurnCore.Effect;
import java.util.List;

/**
 * Admission by PSAC for one entity whose type admits by {@code psac}: offers turns and
 * transaction parts to the entity's {@link PsacGate}, acts on its decisions (admit, reject,
 * delay, die), and applies committed actions in arrival order as the in-flight bound allows. A
 * part that keeps declared dependencies is admitted alone and evaluated like a locking part (by
 * the {@link Participant}).
 *
 * <p>Package-private: the shell sees only {@link EntityTurnCore}. State lives in the shared
 * {@link EntitySide} (the gate itself among it); this class holds none of its own.
 */
final class PsacAdmission<R> {
  private final EntitySide<R> side;
  private TurnPipeline<R> pipeline;
  private Participant<R> participant;

  PsacAdmission(EntitySide<R> side) {
    this.side = side;
  }

  /** Wired once by the core's constructor: the collaborators call each other (not the shell). */
  void connect(TurnPipeline<R> pipeline, Participant<R> participant) {
    this.pipeline = pipeline;
    this.participant = participant;
  }

  static boolean isPsac(CompiledType type) {
    return type.spec().admission() == AdmissionPolicy.PSAC;
  }

  /** The entity's gate, with the type's bounds (new bounds apply once the gate is empty). */
  PsacGate<GateItem<R>> gate(CompiledType type) {
    PsacSettings settings = type.spec().psac();
    if (side.gate == null || (side.gate.isEmpty() && !settings.equals(side.gateSettings))) {
      side.gateSettings = settings;
      side.gate = new PsacGate<>(
          new PsacGate.Limits(settings.maxInFlight(), settings.maxOvertakes()), (item, state) -> {
            TurnEvaluator.Sequence evaluated = switch (item) {
              case GatedTurn<R> turn -> side.evaluateTurns(turn.turn.type(),
                  List.of(turn.turn.turn()), turn.turn.transactionId(), state);
              case GatedPart<R> part -> side.evaluateTurns(part.participation.request.type(),
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
                  || DependencyEvaluator.mayForward(side.entity, part.participation.request.type(),
                      state, part.participation.request.turns(),
                      part.participation.request.readsState())));
    }
    return side.gate;
  }

  void offerTurn(Waiting<R> turn, List<Effect<R>> effects) {
    if (DependencyEvaluator.mayForward(side.entity, turn.type(), side.tentative,
        List.of(turn.turn()), false)) {
      // It may forward to other entities: it runs as a transaction, admitted alone.
      effects.add(new Effect.Reply<>(turn.replyTo(), pipeline.needsTransaction()));
      return;
    }
    PsacGate<GateItem<R>> psac = gate(turn.type());
    if (psac.delayedCount() >= side.limits.maxQueuedTurnsPerEntity()) {
      effects.add(new Effect.Reply<>(turn.replyTo(), new TurnResult.Failed(new TroupeException(
          ErrorCode.OVERLOADED,
              "entity %s has %d actions delayed; retry later".formatted(side.entity,
              psac.delayedCount())))));
      return;
    }
    handleGateDecision(psac.offer(new GatedTurn<>(turn), turn.transactionId(), false, false,
        side.tentative), effects);
  }

  void handleGateDecision(PsacGate.Decision<GateItem<R>> decision, List<Effect<R>> effects) {
    switch (decision) {
      case PsacGate.Decision.Admitted<GateItem<R>> admitted -> {
        switch (admitted.item()) {
          case GatedTurn<R> turn -> {
            if (DependencyEvaluator.mayForward(side.entity, turn.turn.type(), side.tentative,
                List.of(turn.turn.turn()), false)) {
              // A dependency was recorded while it waited: it must run as a transaction. Checked
              // once at admission, not on every leaf of every outcome tree it is evaluated on.
              side.gate.abort(turn);
              effects.add(new Effect.Reply<>(turn.turn.replyTo(), pipeline.needsTransaction()));
              applyGate(effects);
              return;
            }
            side.gate.commit(turn); // a single turn commits as soon as it is admitted
            applyGate(effects);
          }
          case GatedPart<R> part -> {
            Participation<R> participation = part.participation;
            List<Turn> turns = participation.request.turns();
            participation.exclusive = side.gate.isExclusive(part);
            if (participation.exclusive) {
              participant.evaluate(participation, effects);
            } else if (turns.isEmpty()) {
              participant.voteYes(participation, side.tentative, false, effects);
            } else {
              participation.phase = Phase.PREPARING;
              participation.preparesInFlight++;
              effects.add(new Effect.SubmitPrepare<>(participation.request.transactionId(),
                  List.of(), turns, ++side.gateArrivals));
            }
          }
        }
      }
      case PsacGate.Decision.Rejected<GateItem<R>> rejected -> {
        switch (rejected.item()) {
          case GatedTurn<R> turn -> {
            side.replies.add(new PendingReply<>(side.lastSubmittedSerial, turn.turn.replyTo(),
                side.tentative, false, rejected.error(), false));
            pipeline.releaseReplies(effects);
          }
          case GatedPart<R> part -> participant.voteNo(part.participation, rejected.error(),
              effects);
        }
      }
      case PsacGate.Decision.Delayed<GateItem<R>> ignored -> side.psacDelays++;
      case PsacGate.Decision.Died<GateItem<R>> died -> {
        GatedPart<R> part = (GatedPart<R>) died.item();
        participant.voteNo(part.participation, new TroupeException(ErrorCode.ABORTED,
            TransactionAbort.LOCK_CONFLICT, "%s has an older transaction in progress (PSAC)"
                .formatted(side.entity)), effects);
      }
    }
  }

  /** The gate changed (an action committed, aborted or was withdrawn): apply and retry. */
  void applyGate(List<Effect<R>> effects) {
    side.gateChanged = true;
    drainGate(effects);
  }

  /**
   * Applies, in arrival order, every committed action at the head of the gate (as far as the
   * in-flight commit bound allows), and re-offers the delayed actions whenever the actions in
   * progress changed, until nothing moves. Not re-entrant: a decision handled inside marks the gate
   * changed and the loop picks it up.
   */
  void drainGate(List<Effect<R>> effects) {
    if (side.gate == null || side.drainingGate) {
      return;
    }
    side.drainingGate = true;
    try {
      while (true) {
        boolean applied = false;
        GateItem<R> item;
        while (side.inFlight.size() < side.limits.maxInFlightCommitsPerEntity()
            && (item = side.gate.pollApplicable()) != null) {
          applied = true;
          switch (item) {
            case GatedTurn<R> turn -> applyGated(turn.turn.type(), List.of(turn.turn.turn()),
                turn.turn.transactionId(), turn.turn.replyTo(), false, false, effects);
            case GatedPart<R> part -> {
              Participation<R> participation = part.participation;
              side.participations.remove(participation.request.transactionId());
              if (participation.exclusive) {
                pipeline.applyOperations(participation.operations,
                    participation.request.transactionId(), participation.acknowledgeTo,
                    participation.recordSubmitted, participant.rememberCommit(
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
          pipeline.releaseReplies(effects);
          side.gateChanged = true;
        }
        if (!side.gateChanged || side.gate.delayedCount() == 0) {
          side.gateChanged = false;
          return;
        }
        side.gateChanged = false;
        for (PsacGate.Decision<GateItem<R>> decision : side.gate.retryDelayed(side.tentative)) {
          handleGateDecision(decision, effects);
        }
      }
    } finally {
      side.drainingGate = false;
    }
  }

  /** Applies one committed action at the head of the gate to the tentative state. */
  private void applyGated(CompiledType type, List<Turn> turns, long transactionId, R replyTo,
      boolean prepared, boolean transactionPart, List<Effect<R>> effects) {
    TurnEvaluator.Sequence evaluated = side.evaluateTurns(type, turns, transactionId,
        side.tentative);
    Invariants.check(evaluated.error() == null,
        "%s: PSAC admitted %s, but it fails on the state it meets: %s", side.entity, turns,
        evaluated.error() == null ? "" : evaluated.error().getMessage());
    pipeline.applyOperations(evaluated.operations(), transactionId, replyTo, prepared,
        transactionPart ? participant.rememberCommit(transactionId, evaluated.operations()) : null,
            effects);
  }
}
