package dev.troupe.runtime;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.storage.DurableStore;
import dev.troupe.txn.entity.ActivationCore;
import dev.troupe.txn.entity.ActivationCore.Effect;
import dev.troupe.txn.port.Timers;
import dev.troupe.txn.port.Transport;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * Shell of one partition's {@link ActivationCore}: spawns, routes to and stops the entity actors of
 * its partition. One registry per storage partition, so routing is not a single bottleneck.
 *
 * <p>On a single node it also keeps the partition's {@link DirectRoutes}: it publishes each active
 * entity's incarnation there (after telling it every message sent through the registry), withdraws
 * it before telling it to stop, and applies the direct deliveries' touches to the core's recency
 * order before each decision; senders then tell an active entity's actor directly.
 *
 * <p>Every fifth of {@code passivate-once-used-after-millis} (at least 100 ms) it sweeps the core's
 * once-used entities ({@link ActivationCore#sweep}) and asks those old enough to passivate if idle.
 */
public final class EntityRegistry extends AbstractBehavior<EntityRegistry.Command> {

  /** Messages of a registry. */
  public sealed interface Command {}

  /** Route a message to an entity, activating it if needed. */
  public record Route(EntityId entity, EntityActor.Routed message) implements Command {}

  /** An idle entity offers to stop. */
  public record PassivationWanted(EntityId entity) implements Command {}

  /**
   * The memory budget moved the most active entities of this partition: past it, the least
   * recently used are passivated now.
   */
  public record LimitActive(int maxActive) implements Command {}

  private record IncarnationStopped(EntityId entity, ActorRef<EntityActor.Command> incarnation)
      implements Command {}

  /** The period of the once-used sweep elapsed. */
  private record SweepOnceUsed() implements Command {}

  /** The shortest period of the once-used sweep. */
  private static final long MINIMUM_SWEEP_PERIOD_MILLIS = 100;

  private final ActivationCore<EntityActor.Routed> core;
  private final Map<EntityId, ActorRef<EntityActor.Command>> incarnations = new HashMap<>();
  private final DurableStore store;
  private final RuntimeSettings settings;
  private final FatalErrorHandler fatalErrorHandler;
  private final TurnMetrics metrics;
  private final TransactionMetrics transactionMetrics;
  /** What the entities' parts in doubt send their questions through (null: nowhere). */
  private final Transport transport;
  private final Timers timers;
  private long nextIncarnation;
  /** The direct route to this partition's active entities (null: none, every message comes here). */
  private final DirectRoutes<ActorRef<EntityActor.Command>> direct;
  /** {@link #metricsKey()}, built once: every message would otherwise build the path's string. */
  private String metricsKey;
  /** The active count last reported to the metrics (-1: none yet); reported only when it moves. */
  private int reportedActive = -1;

  /**
   * @param timers runs the entities' cores' timer effects (null only with {@code transport} null)
   * @param transport what the entities' parts in doubt ask through (null: nowhere)
   */
  public static Behavior<Command> create(
      DurableStore store, RuntimeSettings settings, int maxActive,
      FatalErrorHandler fatalErrorHandler, TurnMetrics metrics,
      TransactionMetrics transactionMetrics, Timers timers, Transport transport) {
    return create(store, settings, maxActive, fatalErrorHandler, metrics, transactionMetrics,
        timers, transport, null);
  }

  /**
   * As {@link #create(DurableStore, RuntimeSettings, int, FatalErrorHandler, TurnMetrics,
   * TransactionMetrics, Timers, Transport)}, keeping {@code direct} (null: none); every message
   * to the partition's entities must then be sent through {@code direct}.
   */
  static Behavior<Command> create(
      DurableStore store, RuntimeSettings settings, int maxActive,
      FatalErrorHandler fatalErrorHandler, TurnMetrics metrics,
      TransactionMetrics transactionMetrics, Timers timers, Transport transport,
      DirectRoutes<ActorRef<EntityActor.Command>> direct) {
    long onceUsedMillis = settings.passivateOnceUsedAfterMillis();
    return Behaviors.setup(context -> Behaviors.withTimers(registryTimers -> {
      if (onceUsedMillis > 0) {
        registryTimers.startTimerWithFixedDelay(new SweepOnceUsed(),
            Duration.ofMillis(Math.max(MINIMUM_SWEEP_PERIOD_MILLIS, onceUsedMillis / 5)));
      }
      return new EntityRegistry(context, store, settings, maxActive, fatalErrorHandler,
          metrics, transactionMetrics, timers, transport, direct);
    }));
  }

  private EntityRegistry(
      ActorContext<Command> context, DurableStore store, RuntimeSettings settings, int maxActive,
      FatalErrorHandler fatalErrorHandler, TurnMetrics metrics,
      TransactionMetrics transactionMetrics, Timers timers, Transport transport,
      DirectRoutes<ActorRef<EntityActor.Command>> direct) {
    super(context);
    this.direct = direct;
    this.timers = timers;
    this.transport = transport;
    this.transactionMetrics = transactionMetrics;
    this.store = store;
    this.settings = settings;
    this.fatalErrorHandler = fatalErrorHandler;
    this.metrics = metrics;
    this.core = new ActivationCore<>(maxActive, settings.turnLimits().maxQueuedTurnsPerEntity(),
        settings.passivateOnceUsedAfterMillis(), settings.rememberedOnceUsedEntitiesPerPartition(),
        settings.passivateAfterIdleMillis());
  }

  @Override
  public Receive<Command> createReceive() {
    return newReceiveBuilder().onMessage(Command.class, this::onCommand)
        .onSignal(PostStop.class, stopped -> {
          // A cluster member's registry stops when its partition moves away: its actors go too.
          metrics.removeActiveEntities(metricsKey());
          return this;
        })
        .build();
  }

  private Behavior<Command> onCommand(Command command) {
    if (direct != null) {
      // Before any decision: an entity used directly is recent, not the first to make room.
      for (EntityId touched : direct.drainTouched()) {
        core.touched(touched);
      }
    }
    List<Effect<EntityActor.Routed>> effects = switch (command) {
      case Route route -> core.deliver(route.entity(), route.message(), nowMillis());
      case SweepOnceUsed ignored -> core.sweep(nowMillis());
      case PassivationWanted wanted -> core.passivationWanted(wanted.entity(), nowMillis());
      case LimitActive limit -> core.limitActive(limit.maxActive());
      case IncarnationStopped stopped -> {
        // Only the current incarnation's end matters; an older one's end was already handled.
        if (incarnations.get(stopped.entity()) != stopped.incarnation()) {
          yield List.of();
        }
        incarnations.remove(stopped.entity());
        metrics.recordPassivation();
        yield core.stopped(stopped.entity());
      }
    };
    for (Effect<EntityActor.Routed> effect : effects) {
      switch (effect) {
        case Effect.Activate<EntityActor.Routed> activate -> activate(activate.entity());
        case Effect.Deliver<EntityActor.Routed> deliver ->
            incarnations.get(deliver.entity()).tell(deliver.message());
        case Effect.Passivate<EntityActor.Routed> passivate -> {
          if (direct != null) {
            // First: no direct message may follow the stop into the mailbox.
            direct.withdraw(passivate.entity());
          }
          incarnations.get(passivate.entity()).tell(new EntityActor.Passivate());
        }
        case Effect.Refuse<EntityActor.Routed> refuse ->
            refuse.message().refuse(new TroupeException(
                ErrorCode.OVERLOADED, refuse.entity() + " has too many waiting turns"));
        case Effect.AskIfIdle<EntityActor.Routed> ask ->
            incarnations.get(ask.entity()).tell(new EntityActor.AskIfIdle());
      }
    }
    if (direct != null) {
      // After the tells above: what went through the registry is in the mailbox before anything
      // sent direct from now on.
      switch (command) {
        case Route route -> direct.handled(route.entity(), activeIncarnation(route.entity()));
        case IncarnationStopped stopped ->
            direct.publish(stopped.entity(), activeIncarnation(stopped.entity()));
        case PassivationWanted ignored -> {}
        case LimitActive ignored -> {}
        case SweepOnceUsed ignored -> {}
      }
    }
    int active = core.activeCount();
    if (active != reportedActive) {
      reportedActive = active;
      metrics.setActiveEntities(metricsKey(), active);
    }
    return this;
  }

  /**
   * The registry's key among the node's active-entity counts: its whole path, since a cluster
   * member's registries are all named {@code registry} (each under its partition's host).
   */
  private String metricsKey() {
    if (metricsKey == null) {
      metricsKey = getContext().getSelf().path().toStringWithoutAddress();
    }
    return metricsKey;
  }

  /** A monotonic clock for the core's once-used rule (the shell's, never the core's). */
  private static long nowMillis() {
    return System.nanoTime() / 1_000_000;
  }

  /** The entity's incarnation when it is active (not stopping), else null. */
  private ActorRef<EntityActor.Command> activeIncarnation(EntityId entity) {
    return core.isActive(entity) ? incarnations.get(entity) : null;
  }

  private void activate(EntityId entity) {
    ActorRef<EntityActor.Command> incarnation =
        getContext()
            .spawn(
                EntityActor.create(entity, store, settings, getContext().getSelf(),
                    fatalErrorHandler, metrics, transactionMetrics, timers, transport),
                "entity-" + (nextIncarnation++),
                DispatcherSelector.fromConfig("troupe-entity-dispatcher"));
    getContext().watchWith(incarnation, new IncarnationStopped(entity, incarnation));
    incarnations.put(entity, incarnation);
    metrics.recordActivation();
  }
}
