package dev.troupe.runtime;

import dev.troupe.model.EntityId;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.storage.DecidedTransaction;
import dev.troupe.storage.DurableStore;
import dev.troupe.storage.IdempotencyRecord;
import dev.troupe.storage.OutcomeUnknownException;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.coordinator.CoordinatorCore.Effect;
import dev.troupe.txn.coordinator.CoordinatorCore.Input;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.port.Timers;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * Shell of one transaction's {@link CoordinatorCore}: feeds it votes, acknowledgements, timer
 * expiries and store completions, and runs its effects (messages to participants through the
 * {@link EntityRouter}, decision records, the answer).
 *
 * <p><b>Concurrency.</b> Not an actor: inputs arrive on participants' and the store's threads and
 * are fed to the core one at a time under this object's monitor. An input that arrives while
 * effects are running on the same thread (a store future completing at once) is queued and fed
 * after them, so the core never sees a nested call. Every effect is non-blocking (a tell, an
 * enqueue in a partition writer's queue), so the monitor is held briefly.
 *
 * <p><b>Timers.</b> The prepare timeout, the retry backoff and the commit decision's resends
 * ({@code decision-resend-interval-millis}) run through the {@link Timers} port ({@link
 * PekkoTimers}); a fired timer feeds the core under this object's monitor like any other input,
 * and one that fires after the attempt moved on is ignored by the core. With a {@link
 * DecisionDirectory}, the run registers its attempts and its decision records there, so
 * participants in doubt can ask.
 */
final class TransactionRun {
  private final CoordinatorCore core;
  /** Participants' types: the plan's, then those of the followers dependencies bring in. */
  private final Map<EntityId, CompiledType> types;
  private final Function<EntityId, CompiledType> typeOf;
  /** Reaches the participants, on this node or through the transport. */
  private final EntityRouter router;
  private final DurableStore store;
  private final Timers timers;
  private final CompletableFuture<CoordinatorCore.Outcome> outcome = new CompletableFuture<>();
  private final ArrayDeque<Input> pending = new ArrayDeque<>();
  private boolean draining;
  /** Where participants in doubt ask; null when nobody can (not wired). */
  private final DecisionDirectory decisions;
  /** The latest decision resend scheduled, cancelled when the run finishes (null: none). */
  private Timers.Scheduled resendTimer;

  /**
   * Whether every turn of every part applies a remote DC's transaction ({@code
   * Turn.ApplyReplicated}): its decision is flagged so that the store does not ship it as a local
   * transaction (it is in the replication log under its origin already).
   */
  private final boolean replicaApplication;

  /** Written with the commit decision, in the same atomic write (an idempotent request's key). */
  private volatile IdempotencyRecord idempotency;

  void recordWithDecision(IdempotencyRecord record) {
    this.idempotency = record;
  }

  /** Completes when the coordinator is done (it will write nothing more), whatever the outcome. */
  private final CompletableFuture<Void> finished = new CompletableFuture<>();

  CompletableFuture<Void> finished() {
    return finished;
  }

  /**
   * @param planned a planned transaction (see {@link CoordinatorCore})
   * @param timers runs the core's timer effects
   * @param decisions where the node's participants in doubt ask (null: nowhere)
   */
  TransactionRun(Map<EntityId, CoordinatorCore.Part> parts, Map<EntityId, CompiledType> types,
      Function<EntityId, CompiledType> typeOf, CoordinatorCore.Limits limits, boolean planned,
      EntityRouter router, DurableStore store,
      Timers timers, DecisionDirectory decisions) {
    this.decisions = decisions;
    this.core = new CoordinatorCore(parts, limits, planned);
    this.replicaApplication = !parts.isEmpty() && parts.values().stream().allMatch(part ->
        !part.turns().isEmpty()
            && part.turns().stream().allMatch(turn -> turn instanceof Turn.ApplyReplicated));
    this.types = types;
    this.typeOf = typeOf;
    this.router = router;
    this.store = store;
    this.timers = timers;
  }

  /**
   * Persists a commit decision. When every participant it names is hosted by this node, their
   * commits go to this node's store after the decision, and those synced commits make it durable:
   * the store may then write it without a sync of its own ({@link
   * DurableStore#persistDecisionBeforeLocalCommits}, issue 20). The client is answered only once
   * every participant's commit is durable either way.
   */
  private CompletableFuture<Void> persistDecision(
      DecidedTransaction decision) {
    for (EntityId participant : decision.participants()) {
      if (!router.hosts(participant)) {
        return store.persistDecision(decision);
      }
    }
    return store.persistDecisionBeforeLocalCommits(decision);
  }

  /** Starts the first attempt; the future completes with the outcome. */
  CompletableFuture<CoordinatorCore.Outcome> start() {
    return start(store.newTransactionId());
  }

  /** Starts under a given id (an interactive transaction's, whose locks are held under it). */
  CompletableFuture<CoordinatorCore.Outcome> start(long transactionId) {
    return start(transactionId, transactionId);
  }

  /** Starts under a given id and age (a planned transaction's age is its position). */
  CompletableFuture<CoordinatorCore.Outcome> start(long transactionId, long startTimestamp) {
    handle(new Input.Started(transactionId, startTimestamp));
    return outcome;
  }

  /** The current (or last) attempt's transaction id. */
  synchronized long transactionId() {
    return core.transactionId();
  }

  /** Attempts wait-die killed so far. */
  synchronized int lockConflicts() {
    return core.lockConflicts();
  }

  void voteReceived(EntityId participant, long transactionId, TurnResult vote, int round) {
    handle(new Input.VoteReceived(participant, transactionId, vote, round));
  }

  /** A participant's forwards, reported before its vote of {@code round}. */
  void forwardsReported(EntityId participant, long transactionId,
      java.util.List<dev.troupe.txn.Forward> forwards, int round) {
    handle(new Input.ForwardsReported(participant, transactionId, forwards, round));
  }

  /** What this coordinator knows of attempt {@code transactionId} (for a participant in doubt). */
  synchronized CoordinatorCore.Knowledge knowledgeOf(long transactionId) {
    return core.knowledgeOf(transactionId);
  }

  void acknowledged(EntityId participant, long transactionId, TurnResult acknowledgement) {
    handle(new Input.Acknowledged(participant, transactionId, acknowledgement));
  }

  private synchronized void handle(Input input) {
    pending.add(input);
    if (draining) {
      return;
    }
    draining = true;
    try {
      Input next;
      while ((next = pending.poll()) != null) {
        if (decisions != null) {
          switch (next) {
            case Input.Started started -> decisions.attemptStarted(started.transactionId(), this);
            case Input.RetryDue retry -> decisions.attemptStarted(retry.transactionId(), this);
            default -> {}
          }
        }
        for (Effect effect : core.handle(next)) {
          run(effect);
        }
      }
    } finally {
      draining = false;
    }
  }

  private void run(Effect effect) {
    switch (effect) {
      case Effect.SendPrepare prepare -> {
        EntityId participant = prepare.participant();
        // A follower a dependency brought in has no type in the plan yet.
        CompiledType type = types.computeIfAbsent(participant, typeOf);
        router.tell(participant,
            new EntityActor.Prepare(prepare.transactionId(), prepare.startTimestamp(),
                prepare.part().turns(), prepare.part().readsState(), type,
                prepare.planned(), prepare.part().forwards(), prepare.part().reserved(),
                prepare.part().knownLocks(),
                new Recipient.Voter(this, participant, prepare.transactionId())));
      }
      case Effect.SendForwards forwards -> {
        EntityId participant = forwards.participant();
        router.tell(participant,
            new EntityActor.Forwards(forwards.transactionId(), forwards.forwards(),
                new Recipient.Voter(this, participant, forwards.transactionId(),
                    forwards.round()), forwards.round()));
      }
      case Effect.SchedulePrepareTimeout timeout -> {
        long transactionId = timeout.transactionId();
        timers.schedule(timeout.delayMillis(),
            () -> handle(new Input.PrepareTimedOut(transactionId)));
      }
      case Effect.ScheduleRetry retry -> timers.schedule(retry.delayMillis(),
          () -> handle(new Input.RetryDue(store.newTransactionId())));
      case Effect.PersistDecision persist -> persistDecision(new DecidedTransaction(
              persist.transactionId(), persist.participants(), idempotency, replicaApplication))
              .whenComplete((ignored, failure) -> {
                Input.DecisionPersisted persisted = Input.DecisionPersisted.ofStoreAnswer(failure);
                if (decisions != null && persisted.error() == null) {
                  decisions.decisionRecorded(persist.transactionId());
                } else if (decisions != null && persisted.unknown()) {
                  decisions.decisionWriteUncertain(persist.transactionId());
                }
                handle(persisted);
              });
      case Effect.ScheduleDecisionResend resend -> {
        long transactionId = resend.transactionId();
        resendTimer = timers.schedule(resend.delayMillis(),
            () -> handle(new Input.DecisionResendDue(transactionId)));
      }
      case Effect.SendDecision decision -> {
        EntityId participant = decision.participant();
        Recipient acknowledgeTo = decision.commit()
            ? new Recipient.Acknowledger(this, participant, decision.transactionId()) : null;
        router.tell(participant,
            new EntityActor.Decide(decision.transactionId(), decision.commit(), acknowledgeTo));
      }
      case Effect.ForgetDecision forget -> {
        store.forgetDecision(
            new DecidedTransaction(forget.transactionId(), forget.participants()));
        if (decisions != null) {
          decisions.decisionForgotten(forget.transactionId());
        }
      }
      case Effect.Reply reply -> outcome.complete(reply.outcome());
      case Effect.Finished ignored -> {
        if (resendTimer != null) {
          resendTimer.cancel(); // most commits are acknowledged well within the interval
        }
        if (decisions != null) {
          decisions.finished(this);
        }
        finished.complete(null);
      }
    }
  }
}
