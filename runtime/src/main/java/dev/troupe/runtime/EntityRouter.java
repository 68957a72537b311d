package dev.troupe.runtime;

import dev.troupe.model.EntityId;
import dev.troupe.model.Invariants;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.storage.Codec;
import dev.troupe.storage.DurableStore;
import dev.troupe.storage.IdempotencyRecord;
import dev.troupe.txn.Turn;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.port.Transport;
import dev.troupe.txn.wire.Envelope;
import dev.troupe.txn.wire.ParticipantMessages;
import dev.troupe.txn.wire.TypeReference;
import dev.troupe.txn.wire.WireMessage;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.Predicate;
import org.apache.pekko.actor.Cancellable;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * The one way from this node's requests, coordinators and interactive transactions to an entity
 * (docs/ARCHITECTURE.md, "Entity messages between nodes"). An entity of this node is told
 * directly through its partition's {@link EntityRegistry}, with in-process recipients; any other
 * is reached through the {@link Transport}: the message becomes its {@link WireMessage} (types by
 * {@link TypeReference}, no actor reference or callback) in an {@link Envelope} to the entity, and
 * its answer comes back to this node's {@link NodeInbox} — a turn's or a step's through the
 * caller's entry in {@link RemoteReplies}, a vote or an acknowledgement to the live {@link
 * TransactionRun} of its attempt, found in the {@link DecisionDirectory}.
 *
 * <p>With {@code troupe.transport.route-entity-messages} on, every entity is "not here": one node
 * then runs every message through the remote path (and, with {@code encode-local-messages}, through
 * its bytes), which is the evidence that the path carries everything a cluster needs.
 *
 * <p>Thread-safe and non-blocking (a tell, or a conversion and a send).
 */
final class EntityRouter {
  private final EntityRoutes routes;
  private final Transport transport;
  /**
   * Whether this node hosts an entity (its messages are told to the local registry). One node:
   * the locator places it here. A cluster injects its own ("the store owns the entity's partition
   * and its host runs here").
   */
  private final Predicate<EntityId> hostedHere;
  private final boolean routeEntityMessages;
  private final TypeRegistry types;
  private final RemoteReplies replies;
  private final DurableStore store;
  private final ActorSystem<Void> system;
  private final Duration turnTimeout;
  private final long remoteTimeoutMillis;

  /**
   * @param routes the way to an entity this node hosts (its registry, or its actor directly)
   * @param hostedHere whether this node hosts an entity (see {@link #hostedHere}); {@code
   *     troupe.transport.route-entity-messages} overrides it with "never"
   */
  EntityRouter(EntityRoutes routes,
      Predicate<EntityId> hostedHere, Transport transport, RuntimeSettings settings,
      TypeRegistry types, RemoteReplies replies, DurableStore store, ActorSystem<Void> system) {
    this.routes = routes;
    this.transport = transport;
    this.hostedHere = hostedHere;
    this.routeEntityMessages = settings.transport().routeEntityMessages();
    this.types = types;
    this.replies = replies;
    this.store = store;
    this.system = system;
    this.turnTimeout = Duration.ofMillis(settings.turnTimeoutMillis());
    this.remoteTimeoutMillis = Math.min(settings.turnTimeoutMillis(),
        settings.transport().pendingReplyTimeoutMillis());
  }

  /** How long a turn, step or read through the transport waits for its answer. */
  long remoteTimeoutMillis() {
    return remoteTimeoutMillis;
  }

  /**
   * Whether this node hosts {@code entity}, so that its commits go to this node's store (whatever
   * path its messages take).
   */
  boolean hosts(EntityId entity) {
    return hostedHere.test(entity);
  }

  /** Whether {@code entity} is told directly (hosted here, and the switch is off). */
  boolean isHere(EntityId entity) {
    return !routeEntityMessages && hostedHere.test(entity);
  }

  /**
   * Sends a coordinator's or an interactive transaction's message: a {@link EntityActor.Prepare},
   * {@link EntityActor.Forwards} or {@link EntityActor.Decide} (a decision, not an answer to a
   * question: those only arrive at the entity's own node). Its recipient is dropped on the remote
   * path: the answer finds its coordinator by the attempt's transaction id.
   */
  void tell(EntityId entity, EntityActor.Routed message) {
    if (isHere(entity)) {
      routes.route(entity, message);
      return;
    }
    WireMessage wire = switch (message) {
      case EntityActor.Prepare prepare -> new WireMessage.Prepare(prepare.transactionId(),
          prepare.startTimestamp(), entity, types.referenceOf(prepare.type()), prepare.turns(),
          prepare.readsState(), prepare.forwards(), prepare.reserved(), prepare.planned());
      case EntityActor.Forwards forwards -> new WireMessage.ForwardsChanged(
          forwards.transactionId(), entity, forwards.round(), forwards.forwards());
      case EntityActor.Decide decide -> {
        Invariants.check(!decide.answersQuestion(),
            "an in-doubt answer is delivered at its entity's node, never routed");
        yield new WireMessage.Decision(decide.transactionId(), entity, decide.commit());
      }
      case EntityActor.RunTurn ignored -> throw new IllegalArgumentException("use turn()");
      case EntityActor.Step ignored -> throw new IllegalArgumentException("use step()");
      case EntityActor.AdoptRecovered ignored -> throw new IllegalArgumentException(
          "a recovered part is adopted on its entity's node (RecoveredParts)");
    };
    transport.send(new Envelope(transport.localNode(), new Envelope.Destination.ToEntity(entity),
        wire));
  }

  /**
   * Runs one turn on {@code entity} and completes with its answer, or fails with a {@link
   * java.util.concurrent.TimeoutException} when none comes in time (as an ask does).
   *
   * @param transactionId the turn's id, under which an idempotency record may be attached (0: a
   *     fresh one; on the remote path it is taken here, so the answer can be matched to this
   *     caller)
   * @param idempotency the client's idempotency record attached to {@code transactionId} in this
   *     node's store (null: none); on the remote path it travels with the turn and is attached in
   *     the store of the entity's node, which writes it with the turn's commit
   */
  CompletableFuture<TurnResult> turn(EntityId entity, Turn turn, CompiledType type,
      long transactionId, IdempotencyRecord idempotency) {
    if (isHere(entity)) {
      return ask(entity, answer -> new EntityActor.RunTurn(turn, type,
          new Recipient.Caller(answer, transactionId), transactionId));
    }
    long id = transactionId != 0 ? transactionId : store.newTransactionId();
    return remote(RemoteReplies.Kind.TURN, id, entity,
        ParticipantMessages.turnRequest(id, entity, types.referenceOf(type), turn,
            idempotency == null ? null : Codec.encodeIdempotency(idempotency)));
  }

  /** One step of an interactive transaction ({@code turn} null reads the state), as a turn. */
  CompletableFuture<TurnResult> step(EntityId entity, long transactionId, long startTimestamp,
      Turn turn, CompiledType type) {
    if (isHere(entity)) {
      return ask(entity, answer -> new EntityActor.Step(transactionId, startTimestamp, turn,
          type, new Recipient.Caller(answer)));
    }
    return remote(RemoteReplies.Kind.STEP, transactionId, entity,
        ParticipantMessages.stepRequest(transactionId, startTimestamp, entity,
            types.referenceOf(type), turn));
  }

  private CompletableFuture<TurnResult> remote(RemoteReplies.Kind kind, long transactionId,
      EntityId entity, WireMessage request) {
    // The table sends it now, or holds it while its partition has no live home (failover).
    return replies.send(kind, transactionId, entity, remoteTimeoutMillis,
        () -> transport.send(new Envelope(transport.localNode(),
            new Envelope.Destination.ToEntity(entity), request)));
  }

  /**
   * Tells {@code entity} the message built around a local {@link Recipient.Caller} and returns its
   * answer, failed with a {@link TimeoutException} when none comes within the turn timeout. No ask:
   * the entity completes the future itself (no temporary actor, no Scala future and no hop through
   * it), and its continuations run on the entity actor's thread, where the ask's ran before.
   */
  private CompletableFuture<TurnResult> ask(EntityId entity,
      Function<CompletableFuture<TurnResult>, EntityActor.Routed> message) {
    CompletableFuture<TurnResult> answer = new CompletableFuture<>();
    Cancellable timeout = system.scheduler().scheduleOnce(turnTimeout, () ->
        answer.completeExceptionally(new TimeoutException("no answer from " + entity
            + " within " + turnTimeout.toMillis() + " ms")), system.executionContext());
    routes.route(entity, message.apply(answer));
    // Cancelled at once when answered, so an answered turn's state is not held until the timeout.
    answer.whenComplete((result, failure) -> timeout.cancel());
    return answer;
  }
}
