package dev.troupe.runtime;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.txn.TurnResult;
import dev.troupe.txn.port.Transport;
import dev.troupe.txn.wire.Envelope;
import dev.troupe.txn.wire.WireMessage;
import dev.troupe.txn.wire.WireResult;
import dev.troupe.txn.wire.WireResults;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;

/**
 * Reads of entities this node does not serve (docs/ARCHITECTURE.md, "Entity messages between
 * nodes"): a client's read ({@code GET} of an entity, a key, {@code ?at=}) of an entity another
 * node owns is answered by that node from its store and object cache, since only the owner's
 * cache follows every commit. The asking side sends a {@link WireMessage.ReadRequest} through the
 * {@link Transport} and waits in the node's {@link RemoteReplies} (its bound and timeout; no
 * answer in time is {@code unavailable}); the entity's node serves it on its {@link ReadPath}
 * (cached on the delivering thread, otherwise on the materialization pool) and answers with a
 * {@link WireMessage.ReadAnswer} carrying the state, which the asker renders with its type as a
 * local read would.
 *
 * <p>Which reads go: those of an entity the {@link EntityRouter} does not tell directly (another
 * node's, or every one with {@code troupe.transport.route-entity-messages} on: the one-node
 * evidence).
 *
 * <p>Thread-safe.
 */
final class RemoteReads {
  private final Transport transport;
  private final RemoteReplies replies;
  private final Predicate<EntityId> here;
  private final long timeoutMillis;
  /** This node's reads in flight are numbered; the answer names the number. */
  private final AtomicLong nextReadId = new AtomicLong();

  RemoteReads(Transport transport, RemoteReplies replies, Predicate<EntityId> here,
      long timeoutMillis) {
    this.transport = transport;
    this.replies = replies;
    this.here = here;
    this.timeoutMillis = timeoutMillis;
    replies.useProbe(this::probe);
  }

  /** Whether {@code entity} is read from this node's own store. */
  boolean isHere(EntityId entity) {
    return here.test(entity);
  }

  /**
   * The committed state of {@code entity} at its node: the latest ({@code timestamp} 0) or as of
   * {@code timestamp}; fails with the node's refusal, or {@code unavailable} when it does not
   * answer in time.
   */
  CompletableFuture<EntityState> read(EntityId entity, long timestamp) {
    long readId = nextReadId.incrementAndGet();
    // The table sends it now, or holds it while its partition has no live home (failover); a
    // read is sent again when the member it went to is lost.
    CompletableFuture<TurnResult> answer = replies.send(RemoteReplies.Kind.READ, readId, entity,
        timeoutMillis, () -> sendRead(readId, entity, timestamp));
    return answer.handle((result, failure) -> {
      if (failure != null) {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null
            ? failure.getCause() : failure;
        if (cause instanceof TimeoutException) {
          throw new TroupeException(ErrorCode.UNAVAILABLE, "the node of " + entity
              + " did not answer the read in time; retry");
        }
        throw cause instanceof RuntimeException runtime ? runtime : new CompletionException(cause);
      }
      return switch (result) {
        case TurnResult.Done done -> done.state() == null ? EntityState.ABSENT : done.state();
        case TurnResult.Failed failed -> throw failed.error();
      };
    });
  }

  private void sendRead(long readId, EntityId entity, long timestamp) {
    transport.send(new Envelope(transport.localNode(), new Envelope.Destination.ToEntity(entity),
        new WireMessage.ReadRequest(readId, entity, timestamp)));
  }

  /**
   * A read of {@code entity} sent at once whatever its partition's state, its answer ignored: the
   * answer teaches the reply table the partition's new home ({@link RemoteReplies}, probes).
   */
  void probe(EntityId entity) {
    long readId = nextReadId.incrementAndGet();
    CompletableFuture<TurnResult> answer =
        replies.expect(RemoteReplies.Kind.READ, readId, entity, timeoutMillis);
    if (!answer.isDone()) {
      sendRead(readId, entity, 0);
    }
  }

  /** On the entity's node: serves {@code request} and answers the asking node. */
  static void serve(WireMessage.ReadRequest request, int askingNode, ReadPath reads,
      Transport transport) {
    reads.stateOf(request.entity(), request.timestamp()).whenComplete((state, failure) -> {
      WireResult answer;
      if (failure == null) {
        answer = new WireResult.Done(state.version(), state, false, state.version(), List.of(),
            Map.of(), Map.of());
      } else {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null
            ? failure.getCause() : failure;
        TroupeException error = cause instanceof TroupeException troupe ? troupe
            : new TroupeException(ErrorCode.UNAVAILABLE, "the read failed: " + cause);
        answer = WireResults.toWire(new TurnResult.Failed(error));
      }
      transport.send(new Envelope(transport.localNode(),
          new Envelope.Destination.ToNode(askingNode),
          new WireMessage.ReadAnswer(request.readId(), request.entity(), answer)));
    });
  }
}
