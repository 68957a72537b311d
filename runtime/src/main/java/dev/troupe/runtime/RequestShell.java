package dev.troupe.runtime;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.KeyReference;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.storage.CachedState;
import dev.troupe.storage.DurableStore;
import dev.troupe.storage.IdempotencyRecord;
import dev.troupe.storage.InDoubtResolution;
import dev.troupe.storage.Store;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnCodec;
import dev.troupe.txn.TurnEvaluator;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.port.Timers;
import dev.troupe.txn.request.RequestCore;
import dev.troupe.txn.request.RequestCore.Effect;
import dev.troupe.txn.request.RequestCore.Input;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorSystem;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shell of {@link RequestCore}: one core per client request, fed the request and then the
 * answers of what its effects started (an entity's turn, a coordinator's outcome), until it
 * replies. Runs the effects over the node's machinery: asks to entity registries, {@link
 * TransactionRun}s (planned ones through the {@link PlannedSequencer}), the registrations in
 * progress, the metrics, and an idempotent request's record (attached to its turn's commit or
 * written with its transaction's decision).
 *
 * <p><b>Concurrency.</b> A request's inputs arrive on the threads that complete its asks and
 * coordinators; they are fed one at a time under the request's monitor, an input arriving while
 * effects run (a future completed at once) queued after them. Effects only send or enqueue.
 */
final class RequestShell {
  /** An interactive transaction's lifecycle, which steps report to ({@link InteractiveShell}). */
  interface Interactive {
    /** A step is about to run; throws {@link TroupeException} to refuse it. */
    void stepStarted(long transactionId, EntityId entity, CompiledType type);

    void stepFinished(long transactionId, EntityId entity, Turn turn, boolean succeeded);

    void abort(long transactionId);
  }

  private static final Logger log = LoggerFactory.getLogger(Troupe.class);

  private final DurableStore store;
  /** Where the node's participants in doubt ask; every coordinator registers with it. */
  private final DecisionDirectory decisions;
  private final ActorSystem<Void> system;
  /** Runs the coordinators' timer effects. */
  private final Timers timers;
  /** The one way to an entity, here or on another node. */
  private final EntityRouter router;
  private final Function<EntityId, CompiledType> typeOf;
  private final RequestCore.Limits limits;
  /** {@link #limits} without the bounds on one transaction's size (replica applications). */
  private final RequestCore.Limits replicaLimits;
  private final Duration turnTimeout;
  private final TurnMetrics metrics;
  private final TransactionMetrics transactionMetrics;
  /** Positions planned transactions at ticks of this node's clock (the store's, ceiling-guarded). */
  private final PlannedSequencer sequencer;
  /**
   * Dependencies being registered by transactions in progress: a planned transaction that writes
   * their leader key plans their follower too. Its reconnaissance reads committed states only,
   * and a registration ordered before it but not yet committed would otherwise reach beyond its
   * plan (a price change queued behind additions to carts, on a hot product).
   */
  private final PendingRegistrations pendingRegistrations = new PendingRegistrations();
  /** Idempotent transactions running, by key (a count: a replanned one runs again). */
  private final ConcurrentHashMap<String, Integer> runningIdempotent = new ConcurrentHashMap<>();
  private volatile Interactive interactive;

  RequestShell(RuntimeSettings settings, DurableStore store, ActorSystem<Void> system,
      Timers timers,
      EntityRouter router,
      Function<EntityId, CompiledType> typeOf, TurnMetrics metrics,
      TransactionMetrics transactionMetrics, DecisionDirectory decisions) {
    this.store = store;
    this.decisions = decisions;
    this.sequencer = new PlannedSequencer(store::newTransactionId);
    this.system = system;
    this.timers = timers;
    this.router = router;
    this.typeOf = typeOf;
    this.metrics = metrics;
    this.transactionMetrics = transactionMetrics;
    this.turnTimeout = Duration.ofMillis(settings.turnTimeoutMillis());
    RuntimeSettings.TransactionSettings transactions = settings.transactions();
    CoordinatorCore.Limits coordinator = new CoordinatorCore.Limits(
        transactions.prepareTimeoutMillis(),
        transactions.maxLockConflictRetries(),
        transactions.retryBackoffMillis(),
        Math.max(transactions.maxParticipants(), transactions.maxParticipantsWithFollowers()),
        transactions.maxForwardRounds(),
        settings.turnLimits().maxDependencyChain(),
        transactions.decisionResendIntervalMillis());
    this.limits = new RequestCore.Limits(transactions.maxOperations(),
        transactions.maxParticipants(), transactions.maxSyncDepth(), transactions.maxReplans(),
        settings.turnLimits().values(), settings.turnLimits().maxDependencyChain(), coordinator,
        settings.turnTimeoutMillis());
    this.replicaLimits = new RequestCore.Limits(Integer.MAX_VALUE, Integer.MAX_VALUE,
        limits.maxSyncDepth(), limits.maxReplans(), limits.values(),
        limits.maxDependencyChain(), coordinator, limits.answerTimeoutMillis());
  }

  void useInteractive(Interactive interactive) {
    this.interactive = interactive;
  }

  /**
   * At start, before any turn runs: commits or aborts what a crash left prepared (the store's
   * {@link InDoubtResolution}); PSAC parts are re-evaluated, in arrival order, on the state they
   * meet, with their entity's type.
   */
  /** How a recovered PSAC part is redone: its turns evaluated again on the state it meets. */
  static Store.Redo redo(Function<EntityId, CompiledType> typeOf, RuntimeSettings settings) {
    return (part, current) ->
        TurnEvaluator.redo(part.entity(), typeOf.apply(part.entity()), current,
            TurnCodec.decode(part.redo()), part.transactionId(),
            settings.storage().dataCentreId(), settings.turnLimits());
  }

  static InDoubtResolution resolveInDoubtTransactions(Store store,
      Function<EntityId, CompiledType> typeOf,
      RuntimeSettings settings, TransactionMetrics transactionMetrics) {
    InDoubtResolution resolution =
        store.resolveInDoubtTransactions(redo(typeOf, settings));
    transactionMetrics.recordRecovery(resolution.toCommit().size(), resolution.toAbort().size());
    if (!resolution.isEmpty()) {
      log.info("resolved in-doubt transactions: committed {} prepared parts, aborted {},"
              + " forgot {} decisions", resolution.toCommit().size(),
          resolution.toAbort().size(), resolution.decisionsToForget().size());
    }
    return resolution;
  }

  // ---------------------------------------------------------------- requests

  /** A client's turn on one entity (see {@link Troupe#turn}). */
  CompletableFuture<TurnOutcome> turn(EntityId entity, Turn turn, IdempotencyRecord idempotency) {
    return start(lookups(typeOf), idempotency, new Input.TurnRequested(entity, turn, 0))
        .thenApply(RequestShell::turnOutcome);
  }

  /** A turn on an entity of a given type, reserved ones included (the types' own entity). */
  CompletableFuture<TurnOutcome> run(EntityId entity, CompiledType type, Turn turn) {
    Function<EntityId, CompiledType> only = target -> {
      if (target.equals(entity)) {
        return type;
      }
      return typeOf.apply(target);
    };
    return start(lookups(only), null, new Input.TurnRequested(entity, turn, 0))
        .thenApply(RequestShell::turnOutcome);
  }

  CompletableFuture<TransactionOutcome> transact(TransactionRequest request,
      IdempotencyRecord idempotency) {
    return transact(request, idempotency, typeOf, limits);
  }

  /**
   * A remote DC's multi-entity transaction applied here ({@link Troupe#applyReplicated(Map)}),
   * its entities' types from {@code types}. Not held to this node's bounds on one transaction's
   * operations and participants: the origin's bounds held it already (its dependencies' followers
   * included), and a refusal here would be refused again at every retry, stopping the origin's
   * replication for good.
   */
  CompletableFuture<TransactionOutcome> transactReplicated(TransactionRequest request,
      Function<EntityId, CompiledType> types) {
    return transact(request, null, types, replicaLimits);
  }

  private CompletableFuture<TransactionOutcome> transact(TransactionRequest request,
      IdempotencyRecord idempotency, Function<EntityId, CompiledType> types,
      RequestCore.Limits requestLimits) {
    List<RequestCore.Operation> operations = new ArrayList<>();
    for (TransactionRequest.Operation operation : request.operations()) {
      operations.add(new RequestCore.Operation(operation.entity(), operation.turn()));
    }
    RequestCore.Scheduling scheduling = switch (request.mode()) {
      case AUTO -> RequestCore.Scheduling.AUTO;
      case PLANNED -> RequestCore.Scheduling.PLANNED;
      case DYNAMIC -> RequestCore.Scheduling.DYNAMIC;
    };
    Running running = new Running(lookups(types), idempotency, requestLimits);
    running.feed(new Input.TransactionRequested(operations, request.reads(), scheduling));
    return running.answer.thenApply(running::transactionOutcome);
  }

  /** One step of an open interactive transaction ({@code turn} null: a read). */
  CompletableFuture<EntityView> step(long transactionId, EntityId entity, Turn turn) {
    return start(lookups(typeOf), null, new Input.StepRequested(transactionId, entity, turn))
        .thenApply(reply -> switch (reply) {
          case Effect.ReplyView view ->
              new EntityView(view.entity(), view.type().render(view.state()), view.version());
          default -> throw new IllegalStateException("a step answered " + reply);
        });
  }

  /** The commit of an interactive transaction, over the parts its steps prepared. */
  CompletableFuture<TransactionOutcome> commitInteractive(long transactionId,
      Map<EntityId, CoordinatorCore.Part> parts, Map<EntityId, CompiledType> types,
      IdempotencyRecord idempotency) {
    Running running = new Running(lookups(typeOf), idempotency);
    running.feed(new Input.InteractiveCommitRequested(transactionId, parts, types));
    return running.answer.thenApply(running::transactionOutcome);
  }

  /**
   * Whether a transaction with this idempotency key may still commit here: its coordinator has
   * not finished, also after its caller gave up waiting.
   */
  boolean idempotentTransactionRunning(String qualifiedKey) {
    return runningIdempotent.containsKey(qualifiedKey);
  }

  private CompletableFuture<Effect> start(RequestCore.Lookups lookups,
      IdempotencyRecord idempotency, Input request) {
    Running running = new Running(lookups, idempotency);
    running.feed(request);
    return running.answer;
  }

  private RequestCore.Lookups lookups(Function<EntityId, CompiledType> types) {
    return new RequestCore.Lookups() {
      @Override
      public CompiledType typeOf(EntityId entity) {
        return types.apply(entity);
      }

      @Override
      public Optional<EntityState> cachedState(EntityId entity) {
        if (!store.isCached(entity)) {
          return Optional.empty();
        }
        // The planner reads only dependency keys: a state without any tells it what an absent
        // one does, so the cached entry is decoded only when it has some.
        CachedState cached = store.readCached(entity);
        return Optional.of(cached.holdsDependencies() ? cached.state() : EntityState.ABSENT);
      }

      @Override
      public List<Dependency> pendingRegistrations(KeyReference leader) {
        return pendingRegistrations.of(leader);
      }
    };
  }

  private static TurnOutcome turnOutcome(Effect reply) {
    return switch (reply) {
      case Effect.ReplyTurn turn ->
          new TurnOutcome(turn.version(), turn.wrote(), turn.state(), turn.type());
      default -> throw new IllegalStateException("a turn answered " + reply);
    };
  }

  private static Throwable unwrap(Throwable failure) {
    return failure instanceof CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
  }

  /** One request: its core, the effects' answers fed back, and the reply. */
  private final class Running {
    private final RequestCore core;
    private final IdempotencyRecord idempotency;
    /** The reply effect, or the failure; completed once. */
    private final CompletableFuture<Effect> answer = new CompletableFuture<>();
    private final ArrayDeque<Input> pending = new ArrayDeque<>();
    private boolean draining;
    /** The types of the last coordinator's participants (it adds the followers it brings in). */
    private Map<EntityId, CompiledType> coordinatorTypes = Map.of();

    Running(RequestCore.Lookups lookups, IdempotencyRecord idempotency) {
      this(lookups, idempotency, limits);
    }

    Running(RequestCore.Lookups lookups, IdempotencyRecord idempotency,
        RequestCore.Limits requestLimits) {
      this.core = new RequestCore(requestLimits, lookups);
      this.idempotency = idempotency;
    }

    synchronized void feed(Input input) {
      pending.add(input);
      if (draining) {
        return;
      }
      draining = true;
      try {
        Input next;
        while ((next = pending.poll()) != null) {
          for (Effect effect : core.handle(next)) {
            run(effect);
          }
        }
      } catch (RuntimeException unexpected) {
        answer.completeExceptionally(unexpected);
      } finally {
        draining = false;
      }
    }

    private void run(Effect effect) {
      switch (effect) {
        case Effect.RunTurn turn -> runTurn(turn);
        case Effect.RunStep step -> runStep(step);
        case Effect.StartCoordinator start -> startCoordinator(start);
        case Effect.AnnounceRegistrations announce ->
            announce.dependencies().forEach(pendingRegistrations::add);
        case Effect.WithdrawRegistrations withdraw ->
            withdraw.dependencies().forEach(pendingRegistrations::remove);
        case Effect.CountPlanning count ->
            transactionMetrics.recordDependencyPlanning(count.replanned());
        case Effect.AbortInteractive abort -> interactive.abort(abort.transactionId());
        case Effect.ReplyFailure failure -> answer.completeExceptionally(failure.error());
        case Effect.ReplyTurn reply -> answer.complete(reply);
        case Effect.ReplyView reply -> answer.complete(reply);
        case Effect.ReplyTransaction reply -> answer.complete(reply);
      }
    }

    private void runTurn(Effect.RunTurn turn) {
      // An idempotent turn's record rides on its commit (the same atomic write), found by the
      // transaction id given to the turn; a turn that wrote nothing leaves it unused.
      long transactionId = turn.transactionId();
      if (idempotency != null) {
        transactionId = store.newTransactionId();
        store.attachIdempotency(transactionId, idempotency);
      }
      long attached = idempotency == null ? 0 : transactionId;
      long started = System.nanoTime();
      long runAs = transactionId;
      router.turn(turn.entity(), turn.turn(), turn.type(), runAs, idempotency)
          .whenComplete((result, failure) -> {
            metrics.recordLatencyNanos(System.nanoTime() - started);
            Input answered = answered(result, failure);
            boolean unknown = answered instanceof Input.TurnUnanswered
                || result instanceof TurnResult.Failed failed
                    && failed.error().code() == ErrorCode.OUTCOME_UNKNOWN;
            if (attached != 0 && !unknown) {
              // Answered. An unknown outcome (no answer in time) may still commit: the entity
              // drops the attachment when it answers (see Recipient.Caller).
              store.detachIdempotency(attached);
            }
            feed(answered);
          });
    }

    private void runStep(Effect.RunStep step) {
      try {
        interactive.stepStarted(step.transactionId(), step.entity(), step.type());
      } catch (TroupeException refused) {
        answer.completeExceptionally(refused);
        return;
      }
      router.step(step.entity(), step.transactionId(), step.transactionId(), step.turn(),
              step.type())
          .whenComplete((result, failure) -> {
            interactive.stepFinished(step.transactionId(), step.entity(), step.turn(),
                failure == null && result instanceof TurnResult.Done);
            feed(answered(result, failure));
          });
    }

    private Input answered(TurnResult result, Throwable failure) {
      if (failure == null) {
        return new Input.TurnAnswered(result);
      }
      Throwable cause = unwrap(failure);
      return new Input.TurnUnanswered(cause instanceof TimeoutException,
          String.valueOf(cause.getMessage()));
    }

    private void startCoordinator(Effect.StartCoordinator start) {
      Map<EntityId, CompiledType> types = new LinkedHashMap<>(start.types());
      coordinatorTypes = types;
      TransactionRun run = new TransactionRun(start.parts(), types, typeOf, start.limits(),
          start.planned(), router, store, timers, decisions);
      run.recordWithDecision(idempotency);
      long started = System.nanoTime();
      transactionMetrics.recordStarted();
      RecentTransactions.Kind kind = switch (start.start()) {
        case DYNAMIC -> RecentTransactions.Kind.DYNAMIC;
        case PLANNED -> RecentTransactions.Kind.PLANNED;
        case INTERACTIVE_COMMIT -> RecentTransactions.Kind.INTERACTIVE;
      };
      if (idempotency != null) {
        // Until the coordinator is done, not until the caller stops waiting (outcome_unknown).
        String key = idempotency.qualifiedKey();
        runningIdempotent.merge(key, 1, Integer::sum);
        run.finished().whenComplete((ignored, failure) ->
            runningIdempotent.computeIfPresent(key, (k, count) -> count == 1 ? null : count - 1));
      }
      CompletableFuture<CoordinatorCore.Outcome> outcome = switch (start.start()) {
        case DYNAMIC -> run.start();
        case INTERACTIVE_COMMIT -> run.start(start.transactionId());
        case PLANNED -> {
          CompletableFuture<CoordinatorCore.Outcome> sequenced = new CompletableFuture<>();
          sequencer.submit(position -> run.start(store.newTransactionId(), position)
              .whenComplete((result, failure) -> {
                if (failure != null) {
                  sequenced.completeExceptionally(failure);
                } else {
                  sequenced.complete(result);
                }
              }));
          yield sequenced;
        }
      };
      outcome.orTimeout(turnTimeout.toMillis(), TimeUnit.MILLISECONDS)
          .whenComplete((result, failure) -> {
            long micros = Math.max(0, (System.nanoTime() - started) / 1000);
            RecentTransactions recent = transactionMetrics.recent();
            if (failure != null) {
              TroupeException unknown = new TroupeException(ErrorCode.OUTCOME_UNKNOWN,
                  "no outcome in time");
              transactionMetrics.recordFailed(unknown, run.lockConflicts());
              recent.failed(run.transactionId(), kind, unknown, start.parts().keySet(),
                  System.currentTimeMillis(), micros);
              feed(new Input.CoordinatorUnanswered());
              return;
            }
            switch (result) {
              case CoordinatorCore.Outcome.Committed committed -> {
                transactionMetrics.recordCommitted(System.nanoTime() - started,
                    run.lockConflicts());
                recent.committed(committed.transactionId(), kind, committed.results().keySet(),
                    commitVersion(committed), System.currentTimeMillis(), micros);
              }
              case CoordinatorCore.Outcome.Failed failed -> {
                transactionMetrics.recordFailed(failed.error(), run.lockConflicts());
                recent.failed(run.transactionId(), kind, failed.error(), start.parts().keySet(),
                    System.currentTimeMillis(), micros);
              }
            }
            feed(new Input.CoordinatorAnswered(result));
          });
    }

    /** A committed transaction's commit timestamp: the greatest version it wrote or read. */
    private static long commitVersion(CoordinatorCore.Outcome.Committed committed) {
      long version = 0;
      for (CoordinatorCore.ParticipantResult result : committed.results().values()) {
        version = Math.max(version, result.version());
      }
      return version;
    }

    /** A committed transaction's answer, its states rendered lazily with its types. */
    TransactionOutcome transactionOutcome(Effect reply) {
      if (!(reply instanceof Effect.ReplyTransaction transaction)) {
        throw new IllegalStateException("a transaction answered " + reply);
      }
      Map<EntityId, CompiledType> types = coordinatorTypes;
      List<TransactionOutcome.EntityOutcome> entities = new ArrayList<>();
      transaction.committed().results().forEach((entity, result) -> entities.add(
          new TransactionOutcome.EntityOutcome(entity, result.readVersion(), result.version(),
              result.wrote(), () -> types.get(entity).render(result.state()))));
      return new TransactionOutcome(transaction.committed().transactionId(), entities);
    }
  }
}
