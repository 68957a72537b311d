package dev.troupe.sim;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.KeyReference;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.request.RequestCore;
import dev.troupe.txn.request.RequestCore.Effect;
import dev.troupe.txn.request.RequestCore.Input;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * The simulator's shell of {@link RequestCore}, as {@code RequestShell} is the runtime's: one
 * core per client request, its effects run over a simulated node's machinery ({@link Machinery}),
 * the answers fed back, until it replies. With it the simulator takes the runtime's request
 * decisions (escalation to a transaction, planned then replanned then dynamic, which
 * coordinators retry, how a failed interactive step ends its transaction) instead of
 * re-implementing them. {@link SimulatedNode} routes every client request through it.
 *
 * <p>Not thread-safe: the simulation is single-threaded. A request whose node crashes never hears
 * from its machinery again and simply never replies (its client times out), as in production.
 */
final class SimulatedRequests {
  /**
   * What a simulated node offers the requests; every answer arrives later, as a message. {@code
   * request} names the client request (the simulator's histories record which transaction ids
   * belong to which request).
   */
  interface Machinery {
    /** Runs one turn on its entity ({@code transactionId} 0: the node issues one). */
    void runTurn(String request, EntityId entity, CompiledType type, Turn turn,
        long transactionId, Consumer<TurnResult> answer);

    /** Runs one step of an interactive transaction (the lifecycle core told of its start). */
    void runStep(String request, long transactionId, EntityId entity, CompiledType type,
        Turn turn, Consumer<TurnResult> answer);

    /** Starts a coordinator as {@code start} says (planned ones through the sequencer). */
    void startCoordinator(String request, Effect.StartCoordinator start,
        Consumer<CoordinatorCore.Outcome> answer);

    /** Ends an interactive transaction: its parts aborted, its locks released. */
    void abortInteractive(long transactionId);
  }

  private final RequestCore.Limits limits;
  private final Function<EntityId, CompiledType> typeOf;
  /** An entity's durable state as the planner's reconnaissance may see it, or empty. */
  private final Function<EntityId, Optional<EntityState>> cachedState;
  private final Machinery machinery;
  /** Registrations in progress, by leader key (a count per dependency). */
  private final Map<KeyReference, Map<Dependency, Integer>> pending = new HashMap<>();
  private long replanned;
  private long ranDynamic;

  SimulatedRequests(RequestCore.Limits limits, Function<EntityId, CompiledType> typeOf,
      Function<EntityId, Optional<EntityState>> cachedState, Machinery machinery) {
    this.limits = limits;
    this.typeOf = typeOf;
    this.cachedState = cachedState;
    this.machinery = machinery;
  }

  /** A client's turn; {@code reply} receives the core's reply effect. */
  void turn(String request, EntityId entity, Turn turn, long transactionId,
      Consumer<Effect> reply) {
    start(request, new Input.TurnRequested(entity, turn, transactionId), reply);
  }

  /** A workload's transaction, given as parts: their turns are the operations, in order. */
  void transact(String request, Map<EntityId, CoordinatorCore.Part> parts,
      RequestCore.Scheduling scheduling, Consumer<Effect> reply) {
    List<RequestCore.Operation> operations = new ArrayList<>();
    List<EntityId> reads = new ArrayList<>();
    parts.forEach((entity, part) -> {
      part.turns().forEach(turn -> operations.add(new RequestCore.Operation(entity, turn)));
      if (part.readsState()) {
        reads.add(entity);
      }
    });
    start(request, new Input.TransactionRequested(operations, reads, scheduling), reply);
  }

  /** One step of an open interactive transaction ({@code turn} null: a read). */
  void step(String request, long transactionId, EntityId entity, Turn turn,
      Consumer<Effect> reply) {
    start(request, new Input.StepRequested(transactionId, entity, turn), reply);
  }

  /** An interactive transaction's commit over what its lifecycle core says it touched. */
  void commitInteractive(String request, long transactionId,
      Map<EntityId, CoordinatorCore.Part> parts, Map<EntityId, CompiledType> types,
      Consumer<Effect> reply) {
    start(request, new Input.InteractiveCommitRequested(transactionId, parts, types), reply);
  }

  /** Planned transactions planned again, and those that ran dynamic after all (metrics). */
  long replanned() {
    return replanned;
  }

  long ranDynamic() {
    return ranDynamic;
  }

  /** A crash loses every request in flight, and with them their registrations. */
  void crashed() {
    pending.clear();
  }

  private void start(String request, Input input, Consumer<Effect> reply) {
    RequestCore core = new RequestCore(limits, new RequestCore.Lookups() {
      @Override
      public CompiledType typeOf(EntityId entity) {
        return typeOf.apply(entity);
      }

      @Override
      public Optional<EntityState> cachedState(EntityId entity) {
        return cachedState.apply(entity);
      }

      @Override
      public List<Dependency> pendingRegistrations(KeyReference leader) {
        return List.copyOf(pending.getOrDefault(leader, Map.of()).keySet());
      }
    });
    feed(request, core, input, reply);
  }

  private void feed(String request, RequestCore core, Input input, Consumer<Effect> reply) {
    for (Effect effect : core.handle(input)) {
      switch (effect) {
        case Effect.RunTurn turn -> machinery.runTurn(request, turn.entity(), turn.type(),
            turn.turn(), turn.transactionId(),
            result -> feed(request, core, new Input.TurnAnswered(result), reply));
        case Effect.RunStep step -> machinery.runStep(request, step.transactionId(),
            step.entity(), step.type(), step.turn(),
            result -> feed(request, core, new Input.TurnAnswered(result), reply));
        case Effect.StartCoordinator coordinator -> machinery.startCoordinator(request,
            coordinator,
            outcome -> feed(request, core, new Input.CoordinatorAnswered(outcome), reply));
        case Effect.AnnounceRegistrations announce -> announce.dependencies().forEach(
            dependency -> pending.computeIfAbsent(dependency.leader(), ignored -> new HashMap<>())
                .merge(dependency, 1, Integer::sum));
        case Effect.WithdrawRegistrations withdraw -> withdraw.dependencies().forEach(
            dependency -> pending.computeIfPresent(dependency.leader(), (leader, counts) -> {
              counts.computeIfPresent(dependency,
                  (ignored, count) -> count == 1 ? null : count - 1);
              return counts.isEmpty() ? null : counts;
            }));
        case Effect.CountPlanning count -> {
          if (count.replanned()) {
            replanned++;
          } else {
            ranDynamic++;
          }
        }
        case Effect.AbortInteractive abort -> machinery.abortInteractive(abort.transactionId());
        case Effect.ReplyTurn ignored -> reply.accept(effect);
        case Effect.ReplyView ignored -> reply.accept(effect);
        case Effect.ReplyTransaction ignored -> reply.accept(effect);
        case Effect.ReplyFailure ignored -> reply.accept(effect);
      }
    }
  }
}
