package dev.troupe.runtime;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.storage.DurableStore;
import dev.troupe.txn.entity.ActivationCore;
import dev.troupe.txn.entity.ActivationCore.Effect;
import dev.troupe.txn.port.Timers;
import dev.troupe.txn.port.Transport;
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

  /**
   * @param timers runs the entities' cores' timer effects (null only with {@code transport} null)
   * @param transport what the entities' parts in doubt ask through (null: nowhere)
   */
  public static Behavior<Command> create(
      DurableStore store, RuntimeSettings settings, int maxActive,
      FatalErrorHandler fatalErrorHandler, TurnMetrics metrics,
      TransactionMetrics transactionMetrics, Timers timers, Transport transport) {
    return Behaviors.setup(
        context -> new EntityRegistry(context, store, settings, maxActive, fatalErrorHandler,
            metrics, transactionMetrics, timers, transport));
  }

  private EntityRegistry(
      ActorContext<Command> context, DurableStore store, RuntimeSettings settings, int maxActive,
      FatalErrorHandler fatalErrorHandler, TurnMetrics metrics,
      TransactionMetrics transactionMetrics, Timers timers, Transport transport) {
    super(context);
    this.timers = timers;
    this.transport = transport;
    this.transactionMetrics = transactionMetrics;
    this.store = store;
    this.settings = settings;
    this.fatalErrorHandler = fatalErrorHandler;
    this.metrics = metrics;
    this.core = new ActivationCore<>(maxActive, settings.turnLimits().maxQueuedTurnsPerEntity());
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
    List<Effect<EntityActor.Routed>> effects = switch (command) {
      case Route route -> core.deliver(route.entity(), route.message());
      case PassivationWanted wanted -> core.passivationWanted(wanted.entity());
      case LimitActive limit -> core.limitActive(limit.maxActive());
      case IncarnationStopped stopped -> {
        // Only the current incarnation's end matters; an older one's end was already handled.
        if (incarnations.get(stopped.entity()) != stopped.incarnation()) {
          yield List.of();
        }
        incarnations.remove(stopped.entity());
        yield core.stopped(stopped.entity());
      }
    };
    for (Effect<EntityActor.Routed> effect : effects) {
      switch (effect) {
        case Effect.Activate<EntityActor.Routed> activate -> activate(activate.entity());
        case Effect.Deliver<EntityActor.Routed> deliver ->
            incarnations.get(deliver.entity()).tell(deliver.message());
        case Effect.Passivate<EntityActor.Routed> passivate ->
            incarnations.get(passivate.entity()).tell(new EntityActor.Passivate());
        case Effect.Refuse<EntityActor.Routed> refuse ->
            refuse.message().refuse(new TroupeException(
                ErrorCode.OVERLOADED, refuse.entity() + " has too many waiting turns"));
      }
    }
    metrics.setActiveEntities(metricsKey(), core.activeCount());
    return this;
  }

  /**
   * The registry's key among the node's active-entity counts: its whole path, since a cluster
   * member's registries are all named {@code registry} (each under its partition's host).
   */
  private String metricsKey() {
    return getContext().getSelf().path().toStringWithoutAddress();
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
  }
}
