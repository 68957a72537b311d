package dev.troupe.txn;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.CompiledType;
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

    /** The shell wants to stop this entity (idle, or to make room for others). */
    record PassivationRequested<R>() implements Input<R> {}

    /** A periodic idleness check (every {@code passivate-after-idle-millis}). */
    record IdleCheckElapsed<R>() implements Input<R> {}
  }

  /** What the shell must do. */
  public sealed interface Effect<R> {
    /** Submit these operations as one journal record, and report back with the serial. */
    record SubmitCommit<R>(long serial, long transactionId, List<Operation> operations)
        implements Effect<R> {}

    record Reply<R>(R replyTo, TurnResult result) implements Effect<R> {}

    /** Stop this incarnation; the next turn starts a fresh one from durable state. */
    record Stop<R>() implements Effect<R> {}

    /**
     * The entity has been idle for a whole check period (so between one and two periods): offer
     * to be passivated.
     */
    record OfferPassivation<R>() implements Effect<R> {}
  }

  private record InFlight(long serial, EntityState stateBefore) {}

  private record PendingReply<R>(long dependsOnSerial, R replyTo, EntityState state, boolean wrote,
      TroupeException error) {}

  private record Waiting<R>(Turn turn, CompiledType type, long transactionId, R replyTo) {}

  private final EntityId entity;
  private final TurnLimits limits;
  private final int originDc;

  private EntityState tentative;
  private long lastDurableVersion;
  private long lastSubmittedSerial;
  private long lastDurableSerial;
  private final ArrayDeque<InFlight> inFlight = new ArrayDeque<>();
  private final ArrayDeque<PendingReply<R>> replies = new ArrayDeque<>();
  private final ArrayDeque<Waiting<R>> waiting = new ArrayDeque<>();
  private boolean passivationRequested;
  private boolean stopped;
  /** Whether any input other than an idle check arrived since the last idle check. */
  private boolean activeSinceIdleCheck = true;

  /** @param durable the entity's latest durable state, read from the store at start */
  public EntityTurnCore(EntityId entity, EntityState durable, TurnLimits limits, int originDc) {
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
        if (inFlight.size() < limits.maxInFlightCommitsPerEntity() && waiting.isEmpty()) {
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
        lastDurableVersion = success.commitTimestamp();
        releaseReplies(effects);
        rebaseWhenSettled();
        while (!waiting.isEmpty() && inFlight.size() < limits.maxInFlightCommitsPerEntity()) {
          run(waiting.pollFirst(), effects);
        }
      }
      case Input.CommitFailed<R> failure -> {
        if (failure.refusedBeforeWrite()) {
          refuseFrom(failure.serial(), failure.error(), effects);
        } else {
          failEverything(failure.error(), effects);
        }
      }
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

  /** Nothing in flight, nothing waiting, nobody waiting for a reply. */
  public boolean isIdle() {
    return inFlight.isEmpty() && waiting.isEmpty() && replies.isEmpty();
  }

  private void run(Waiting<R> turn, List<Effect<R>> effects) {
    TurnEvaluator.Decision decision = TurnEvaluator.evaluate(
        entity, turn.type(), tentative, turn.turn(), turn.transactionId(), originDc, limits);
    switch (decision) {
      case TurnEvaluator.Decision.Reject reject ->
          // A rejection read the tentative state, so it too waits for what it observed.
          replies.add(new PendingReply<>(lastSubmittedSerial, turn.replyTo(), tentative, false,
              reject.error()));
      case TurnEvaluator.Decision.Write write when write.operations().isEmpty() ->
          replies.add(new PendingReply<>(lastSubmittedSerial, turn.replyTo(), tentative, false,
              null));
      case TurnEvaluator.Decision.Write write -> {
        EntityState before = tentative;
        tentative = tentative.apply(write.operations(), tentative.version() + 1, originDc);
        long serial = ++lastSubmittedSerial;
        inFlight.add(new InFlight(serial, before));
        replies.add(new PendingReply<>(serial, turn.replyTo(), tentative, true, null));
        effects.add(new Effect.SubmitCommit<>(serial, turn.transactionId(), write.operations()));
      }
    }
    releaseReplies(effects);
  }

  private void releaseReplies(List<Effect<R>> effects) {
    while (!replies.isEmpty() && replies.peekFirst().dependsOnSerial() <= lastDurableSerial) {
      PendingReply<R> reply = replies.pollFirst();
      TurnResult result = reply.error() != null
          ? new TurnResult.Failed(reply.error())
          : new TurnResult.Done(lastDurableVersion, reply.state(), reply.wrote());
      effects.add(new Effect.Reply<>(reply.replyTo(), result));
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
    replies.clear();
    waiting.clear();
    inFlight.clear();
    stopped = true;
    effects.add(new Effect.Stop<>());
  }
}
