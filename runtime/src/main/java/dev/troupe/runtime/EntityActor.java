package dev.troupe.runtime;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Invariants;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.storage.Committed;
import dev.troupe.storage.DurableStore;
import dev.troupe.storage.EntityWrite;
import dev.troupe.storage.PreparedTransaction;
import dev.troupe.storage.StoreHealth;
import dev.troupe.txn.entity.EntityTurnCore;
import dev.troupe.txn.entity.EntityTurnCore.Effect;
import dev.troupe.txn.entity.EntityTurnCore.Input;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnCodec;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.port.Timers;
import dev.troupe.txn.port.Transport;
import dev.troupe.txn.wire.Envelope;
import dev.troupe.txn.wire.ParticipantMessages;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * Shell of one active entity: decodes messages, feeds {@link EntityTurnCore}, and runs its effects
 * (submit a commit to the store, reply, stop). All protocol decisions live in the core.
 *
 * <p>Started by its partition's {@link EntityRegistry} with the entity's durable state read from the
 * store (possibly materialized from checkpoint and journal, hence the blocking dispatcher). Asks the
 * registry to passivate it once it has been idle for a whole {@code passivate-after-idle-millis}
 * period (checked periodically, so after one to two periods), or at once when the registry asks
 * ({@link AskIfIdle}: it received only the message that activated it, {@code
 * passivate-once-used-after-millis} ago) and it is idle.
 *
 * <p>A part that voted yes and hears no decision within {@code in-doubt-query-interval-millis}
 * asks the coordinator's node (the core's {@link Effect.QueryDecision}): a {@code DecisionQuery}
 * through the node's {@link Transport} to that node, whose {@link NodeInbox} answers from its
 * {@link DecisionDirectory}; a commit or abort answer comes back as a {@link Decide} nobody
 * acknowledges. Without a transport the question is not asked and no timer is set: on one node
 * the mailboxes never lose the decision.
 */
public final class EntityActor extends AbstractBehavior<EntityActor.Command> {

  /** Messages of an entity actor. */
  public sealed interface Command {}

  /** Messages routed to an entity through its registry (which may activate it first). */
  public sealed interface Routed extends Command {
    /** The registry cannot deliver it (too many buffered for this entity): answer the sender. */
    void refuse(TroupeException reason);
  }

  /**
   * Run one turn against this entity and reply once everything it depends on is durable. {@code
   * transactionId}: the turn's, or 0 to take a fresh one (see {@link Troupe#turn}); {@code
   * replyTo}: a local {@link Recipient.Caller} or a {@link Recipient.RemoteCaller}.
   */
  record RunTurn(Turn turn, CompiledType type, Recipient replyTo, long transactionId)
      implements Routed {
    @Override
    public void refuse(TroupeException reason) {
      replyTo.deliver(new TurnResult.Failed(reason));
    }
  }

  /**
   * Prepare this entity's part of a transaction and vote (see {@link EntityTurnCore}). {@code
   * knownLocks}: the planner's locks of {@code turns}, or null (never sent to another node: the
   * receiver works them out).
   */
  record Prepare(long transactionId, long startTimestamp, List<Turn> turns, boolean readsState,
      CompiledType type, boolean planned, List<dev.troupe.txn.Forward> forwards,
      java.util.Map<String, dev.troupe.txn.entity.LockTable.Mode> reserved,
      dev.troupe.txn.entity.AccessSets.KnownLocks knownLocks, Recipient voteTo)
      implements Routed {
    @Override
    public void refuse(TroupeException reason) {
      voteTo.deliver(new TurnResult.Failed(reason));
    }
  }

  /**
   * The operations forwarded to this entity's prepared part changed: evaluate it again and vote
   * again (see {@link EntityTurnCore.Input.ForwardsReceived}).
   */
  record Forwards(long transactionId, List<dev.troupe.txn.Forward> forwards, Recipient voteTo,
      int round) implements Routed {
    @Override
    public void refuse(TroupeException reason) {
      voteTo.deliver(new TurnResult.Failed(reason));
    }
  }

  /** One step of an interactive transaction (turn null: a read of the whole state). */
  record Step(long transactionId, long startTimestamp, Turn turn, CompiledType type,
      Recipient replyTo) implements Routed {
    @Override
    public void refuse(TroupeException reason) {
      replyTo.deliver(new TurnResult.Failed(reason));
    }
  }

  /**
   * The decision of a transaction this entity took part in; acknowledgeTo is null for aborts and
   * for a decision learned by asking (in doubt: {@code answersQuestion}, fed as the core's {@code
   * DecisionAnswered}, which a part no longer in doubt ignores).
   */
  record Decide(long transactionId, boolean commit, Recipient acknowledgeTo,
      boolean answersQuestion) implements Routed {
    /** A coordinator's decision (not an answer to a question). */
    Decide(long transactionId, boolean commit, Recipient acknowledgeTo) {
      this(transactionId, commit, acknowledgeTo, false);
    }

    @Override
    public void refuse(TroupeException reason) {
      // The first commit goes only to a participant that voted yes, which stays active until it
      // applies the decision, so the registry delivers it without buffering. A resent commit may
      // meet an entity being passivated after it applied it; refused, it is simply resent (the
      // coordinator resends until acknowledged), as an in-doubt answer is asked for again.
    }
  }

  /**
   * A prepared part recovery kept in doubt (its coordinator is on another node: {@code
   * InDoubtResolution.toAsk}), adopted before anything else reaches this entity ({@link
   * RecoveredParts}): it holds the entity and asks the coordinator's node until answered.
   */
  record AdoptRecovered(long transactionId, List<dev.troupe.model.Operation> operations,
      CompiledType type) implements Routed {
    @Override
    public void refuse(TroupeException reason) {
      // Refused only when the entity has too many buffered messages, which cannot happen to the
      // first message of a partition's entity; the part stays prepared in the store, and the
      // next start (or acquisition of the partition) adopts it again.
    }
  }

  /** The registry stops this incarnation (idle, or making room); it buffers the entity meanwhile. */
  public record Passivate() implements Command {}

  /**
   * The registry asks this incarnation, which received only the message that activated it, to
   * offer its passivation now if it is idle ({@code ActivationCore.sweep}).
   */
  public record AskIfIdle() implements Command {}

  private record CommitCompleted(long serial, Committed committed, Throwable failure)
      implements Command {}

  private record PrepareCompleted(long transactionId, Throwable failure) implements Command {}

  private record IdleCheck() implements Command {}

  /** The in-doubt interval of a part elapsed (its timer in {@link #inDoubtTimers}). */
  private record InDoubtCheck(long transactionId) implements Command {}

  private final EntityId entity;
  private final DurableStore store;
  private final EntityTurnCore<Recipient> core;
  private final ActorRef<EntityRegistry.Command> registry;
  private final FatalErrorHandler fatalErrorHandler;
  private final TurnMetrics metrics;
  private final TransactionMetrics transactionMetrics;
  /** Where a part in doubt sends its question; null when not wired (then nobody asks). */
  private final Transport transport;
  /** Runs the core's timer effects (the in-doubt questions' intervals). */
  private final Timers timers;
  /**
   * The in-doubt timer of each part waiting for its decision, by transaction id: one per part (a
   * new one replaces it), cancelled by the decision and when the actor stops. Actor thread only.
   */
  private final Map<Long, Timers.Scheduled> inDoubtTimers = new HashMap<>();
  /** This actor's part of {@link TurnMetrics#actorBytes}: its overhead plus its state's weight. */
  private final long overheadBytes;
  private long weightBytes;

  /**
   * @param timers runs the core's timer effects (null only with {@code transport} null)
   * @param transport what a part in doubt sends its question through (null: nowhere)
   */
  public static Behavior<Command> create(
      EntityId entity,
      DurableStore store,
      RuntimeSettings settings,
      ActorRef<EntityRegistry.Command> registry,
      FatalErrorHandler fatalErrorHandler,
      TurnMetrics metrics,
      TransactionMetrics transactionMetrics,
      Timers timers,
      Transport transport) {
    // A periodic check rather than a receive timeout: a receive timeout is rescheduled on every
    // message, which costs the scheduler work on the hot path of a busy entity.
    Duration idlePeriod = Duration.ofMillis(settings.passivateAfterIdleMillis());
    return Behaviors.setup(
        // The idle check is the shell's own period (the core only answers it), so it stays an
        // actor timer: it needs no cancelling by the core and stops with the actor.
        context -> Behaviors.withTimers(actorTimers -> {
          actorTimers.startTimerWithFixedDelay(new IdleCheck(), idlePeriod);
          StoreHealth storage = store.health();
          if (!storage.accepting()) {
            // A failed store: the predecessor may have stopped with parts prepared whose commit
            // decisions still arrive. This incarnation knows nothing of them; recovery applies them.
            return refusing(new TroupeException(ErrorCode.UNAVAILABLE, "storage failed and"
                + " accepts no more commits until the node restarts: " + storage.failure()),
                registry, entity);
          }
          EntityState durable;
          try {
            durable = store.read(entity);
          } catch (TroupeException unreadable) {
            // Damaged (corrupt_data) or unreadable: the entity must not start from "absent", or its
            // first write would re-create it over its acknowledged keys.
            return refusing(unreadable, registry, entity);
          }
          return new EntityActor(
              context, entity, durable, store, settings, registry, fatalErrorHandler, metrics,
              transactionMetrics, timers, transport);
        }));
  }

  /**
   * An incarnation that cannot serve: its durable state could not be read (damaged), or the store
   * failed. It answers every request with the reason and asks to be passivated at its first idle
   * check, so the next request reads the store again (after a repair or a restart it succeeds). A
   * commit decision can reach it only after a failed store stopped the predecessor that voted: it
   * answers that the commit could not be applied (the coordinator then answers {@code
   * outcome_unknown}; the decision is durable and recovery applies it).
   */
  private static Behavior<Command> refusing(
      TroupeException reason, ActorRef<EntityRegistry.Command> registry, EntityId entity) {
    return Behaviors.receive(Command.class)
        .onMessage(Command.class, command -> switch (command) {
          case Decide decide when decide.commit() && decide.acknowledgeTo() != null -> {
            decide.acknowledgeTo().deliver(new TurnResult.Failed(reason));
            yield Behaviors.same();
          }
          case Routed routed -> {
            routed.refuse(reason);
            yield Behaviors.same();
          }
          case Passivate ignored -> Behaviors.stopped();
          case AskIfIdle ignored -> {
            registry.tell(new EntityRegistry.PassivationWanted(entity));
            yield Behaviors.same();
          }
          case IdleCheck ignored -> {
            registry.tell(new EntityRegistry.PassivationWanted(entity));
            yield Behaviors.same();
          }
          case CommitCompleted ignored -> Behaviors.same();
          case PrepareCompleted ignored -> Behaviors.same();
          case InDoubtCheck ignored -> Behaviors.same();
        })
        .build();
  }

  private EntityActor(
      ActorContext<Command> context,
      EntityId entity,
      EntityState durable,
      DurableStore store,
      RuntimeSettings settings,
      ActorRef<EntityRegistry.Command> registry,
      FatalErrorHandler fatalErrorHandler,
      TurnMetrics metrics,
      TransactionMetrics transactionMetrics,
      Timers timers,
      Transport transport) {
    super(context);
    this.transport = transport;
    this.timers = timers;
    this.transactionMetrics = transactionMetrics;
    this.entity = entity;
    this.store = store;
    this.registry = registry;
    this.fatalErrorHandler = fatalErrorHandler;
    this.metrics = metrics;
    this.core =
        new EntityTurnCore<>(
            entity,
            durable,
            settings.turnLimits(),
            settings.transactions().participantLimits(),
            settings.storage().dataCentreId(),
            java.util.Set.of());
    this.overheadBytes = settings.memory().actorOverheadBytes();
    reweigh();
  }

  /**
   * Weighs this actor for the memory budget: its overhead plus its state's weight as the object
   * cache estimated it (kept when the state is not cached: no re-weighing walk per commit).
   */
  private void reweigh() {
    int stateBytes = store.cachedWeightBytes(entity);
    long weight = overheadBytes + stateBytes;
    if (stateBytes > 0 || weightBytes == 0) {
      metrics.addActorBytes(weight - weightBytes);
      weightBytes = weight;
    }
  }

  private Behavior<Command> onPostStop(PostStop stopped) {
    metrics.addActorBytes(-weightBytes);
    weightBytes = 0;
    inDoubtTimers.values().forEach(Timers.Scheduled::cancel);
    inDoubtTimers.clear();
    return this;
  }

  @Override
  public Receive<Command> createReceive() {
    return newReceiveBuilder().onMessage(Command.class, this::onCommand)
        .onSignal(PostStop.class, this::onPostStop).build();
  }

  private Behavior<Command> onCommand(Command command) {
    long waitsBefore = core.lockWaits();
    long delaysBefore = core.psacDelays();
    try {
      return switch (command) {
        case RunTurn run ->
            runEffects(core.handle(new Input.TurnRequested<>(run.turn(), run.type(),
                run.transactionId() != 0 ? run.transactionId() : store.newTransactionId(),
                run.replyTo())));
        case Prepare prepare ->
            runEffects(core.handle(new Input.PrepareRequested<>(
                prepare.transactionId(), prepare.startTimestamp(), prepare.turns(),
                prepare.readsState(), prepare.type(), prepare.voteTo(), prepare.planned(),
                prepare.forwards(), prepare.reserved(), prepare.knownLocks())));
        case Forwards forwards ->
            runEffects(core.handle(new Input.ForwardsReceived<>(forwards.transactionId(),
                forwards.forwards(), forwards.voteTo(), forwards.round())));
        case Step step ->
            runEffects(core.handle(new Input.StepRequested<>(step.transactionId(),
                step.startTimestamp(), step.turn(), step.type(), step.replyTo())));
        case Decide decide -> {
          Timers.Scheduled inDoubtTimer = inDoubtTimers.remove(decide.transactionId());
          if (inDoubtTimer != null) {
            inDoubtTimer.cancel();
          }
          yield runEffects(core.handle(decide.answersQuestion()
              ? new Input.DecisionAnswered<>(decide.transactionId(), decide.commit())
              : new Input.DecisionReceived<>(decide.transactionId(), decide.commit(),
                  decide.acknowledgeTo())));
        }
        case AdoptRecovered adopt -> runEffects(core.handle(new Input.PreparedPartRecovered<>(
            adopt.transactionId(), adopt.operations(), adopt.type())));
        case InDoubtCheck check -> {
          inDoubtTimers.remove(check.transactionId());
          yield runEffects(core.handle(new Input.InDoubtQueryDue<>(check.transactionId())));
        }
        case PrepareCompleted completed when completed.failure() == null ->
            runEffects(core.handle(new Input.PrepareSucceeded<>(completed.transactionId())));
        case PrepareCompleted completed ->
            runEffects(core.handle(new Input.PrepareFailed<>(
                completed.transactionId(), DurableStore.failureOf(completed.failure()))));
        case CommitCompleted completed when completed.failure() == null ->
            runEffects(core.handle(new Input.CommitSucceeded<>(
                completed.serial(), completed.committed().commitTimestamp())));
        case CommitCompleted completed ->
            runEffects(core.handle(new Input.CommitFailed<>(
                completed.serial(), DurableStore.failureOf(completed.failure()), false)));
        case Passivate ignored -> runEffects(core.handle(new Input.PassivationRequested<>()));
        case IdleCheck ignored -> runEffects(core.handle(new Input.IdleCheckElapsed<>()));
        case AskIfIdle ignored -> runEffects(core.handle(new Input.IdlenessAsked<>()));
      };
    } catch (Invariants.InvariantViolation violation) {
      fatalErrorHandler.onFatalError("entity " + entity, violation);
      return Behaviors.stopped();
    } finally {
      transactionMetrics.recordLockWaits(core.lockWaits() - waitsBefore);
      transactionMetrics.recordPsacDelays(core.psacDelays() - delaysBefore);
      if (command instanceof CommitCompleted || command instanceof IdleCheck) {
        reweigh();
      }
    }
  }

  /**
   * Runs the core's effects in order. A commit the store refuses at once (e.g. its queue is full) is
   * reported back to the core before any later effect runs, and the later commits of the same batch
   * are dropped: the core rolls back to before the refused one (see {@link EntityTurnCore}).
   */
  private Behavior<Command> runEffects(List<Effect<Recipient>> effects) {
    return execute(effects) ? Behaviors.stopped() : this;
  }

  /** Returns whether the core asked to stop. */
  private boolean execute(List<Effect<Recipient>> effects) {
    boolean stop = false;
    boolean dropCommits = false;
    for (Effect<Recipient> effect : effects) {
      switch (effect) {
        case Effect.SubmitCommit<Recipient> submit -> {
          if (dropCommits) {
            continue;
          }
          List<EntityWrite> writes = List.of(new EntityWrite(entity, submit.operations()));
          CompletableFuture<Committed> future = submit.resolvesPrepared()
              ? store.commitPrepared(submit.transactionId(), entity, submit.operations())
              : submit.exemptFromQueueLimit()
                  ? store.commitExemptFromQueueLimit(submit.transactionId(), writes)
                  : store.commit(submit.transactionId(), writes);
          TroupeException refusal = DurableStore.refusedAtOnce(future);
          if (refusal != null) {
            dropCommits = true;
            stop |= execute(core.handle(new Input.CommitFailed<>(submit.serial(), refusal, true)));
          } else {
            long serial = submit.serial();
            getContext()
                .pipeToSelf(future, (committed, failure) ->
                    new CommitCompleted(serial, committed, failure));
          }
        }
        case Effect.Reply<Recipient> reply -> {
          if (reply.replyTo().answersCaller()) {
            metrics.recordTurn(reply.result());
            if (reply.replyTo().idempotentTransactionId() != 0) {
              // Answered: committed (the record is durable) or not (it never will be).
              store.detachIdempotency(reply.replyTo().idempotentTransactionId());
            }
          }
          reply.replyTo().deliver(reply.result());
        }
        case Effect.ReportForwards<Recipient> report ->
            report.voteTo().reportForwards(report.forwards());
        case Effect.SubmitPrepare<Recipient> prepare -> {
          long transactionId = prepare.transactionId();
          byte[] redo = prepare.redoTurns().isEmpty()
              ? null : TurnCodec.encode(prepare.redoTurns());
          getContext().pipeToSelf(
              store.prepare(new PreparedTransaction(transactionId, entity, prepare.operations(),
                  redo, prepare.arrival())),
              (ignored, failure) -> new PrepareCompleted(transactionId, failure));
        }
        case Effect.AbandonPrepared<Recipient> abandon ->
            store.abandonPrepared(abandon.transactionId(), entity);
        case Effect.Stop<Recipient> ignored -> stop = true;
        case Effect.OfferPassivation<Recipient> ignored ->
            registry.tell(new EntityRegistry.PassivationWanted(entity));
        case Effect.ScheduleInDoubtQuery<Recipient> check -> {
          if (transport != null) {
            // The action only tells the actor: the core sees the expiry on the actor's thread.
            long transactionId = check.transactionId();
            ActorRef<Command> self = getContext().getSelf();
            Timers.Scheduled previous = inDoubtTimers.put(transactionId, timers.schedule(
                check.delayMillis(), () -> self.tell(new InDoubtCheck(transactionId))));
            if (previous != null) {
              previous.cancel();
            }
          }
        }
        case Effect.QueryDecision<Recipient> query -> {
          if (transport != null) {
            // The answer comes back to this entity (ToEntity), as a Decide through its registry;
            // "undecided" is dropped and asked again after the next interval.
            transport.send(new Envelope(transport.localNode(),
                new Envelope.Destination.ToNode(query.coordinatorNode()),
                ParticipantMessages.decisionQuery(query.transactionId(), transport.localNode(),
                    entity)));
          }
        }
      }
    }
    return stop;
  }
}
