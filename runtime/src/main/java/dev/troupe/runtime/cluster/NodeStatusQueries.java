package dev.troupe.runtime.cluster;

import dev.troupe.txn.port.Transport;
import dev.troupe.txn.wire.Envelope;
import dev.troupe.txn.wire.WireMessage;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;

/**
 * The node status query between members ({@link WireMessage.NodeStatusQuery} and {@link
 * WireMessage.NodeStatusAnswer}), both sides: asking another member for its {@link NodeStatus}
 * through the node's {@link Transport} (a {@code ToNode} envelope like every message between
 * nodes) and waiting a bounded time, and answering such a query from this node's own numbers.
 *
 * <p>A query changes nothing, so a lost one is simply unanswered: the asker's future completes
 * with null after its timeout (the member's numbers are shown unknown), and an answer that comes
 * later, or twice, or names no query of this node, is dropped and counted. Nothing is resent.
 *
 * <p>Thread-safe: asked from any thread (an HTTP request's), answered on the transport's
 * delivering thread; non-blocking.
 */
public final class NodeStatusQueries {
  private final int localNode;
  private final Supplier<NodeStatus> local;
  /** The queries of this node in flight, by query id. */
  private final Map<Long, CompletableFuture<NodeStatus>> pending = new ConcurrentHashMap<>();
  private final AtomicLong nextQueryId = new AtomicLong();
  private final LongAdder lateAnswers = new LongAdder();

  /** @param local this node's own numbers now (what it answers, and what it shows of itself) */
  public NodeStatusQueries(int localNode, Supplier<NodeStatus> local) {
    this.localNode = localNode;
    this.local = local;
  }

  /** This node's own numbers now. */
  public NodeStatus local() {
    return local.get();
  }

  /**
   * Asks node {@code nodeId} for its numbers through {@code transport}: completes with them, or
   * with null when no answer arrives within {@code timeoutMillis}. Never fails.
   */
  public CompletableFuture<NodeStatus> ask(Transport transport, int nodeId, long timeoutMillis) {
    if (nodeId == localNode) {
      return CompletableFuture.completedFuture(local());
    }
    long queryId = nextQueryId.incrementAndGet();
    CompletableFuture<NodeStatus> answer = new CompletableFuture<>();
    pending.put(queryId, answer);
    answer.whenComplete((status, failure) -> pending.remove(queryId));
    transport.send(new Envelope(localNode, new Envelope.Destination.ToNode(nodeId),
        new WireMessage.NodeStatusQuery(queryId)));
    return answer.completeOnTimeout(null, timeoutMillis, TimeUnit.MILLISECONDS);
  }

  /** A status message arrived from node {@code sender}: a query is answered, an answer taken. */
  public void receive(int sender, WireMessage message, Transport transport) {
    switch (message) {
      case WireMessage.NodeStatusQuery query -> transport.send(new Envelope(localNode,
          new Envelope.Destination.ToNode(sender), local().toWire(query.queryId())));
      case WireMessage.NodeStatusAnswer answer -> {
        CompletableFuture<NodeStatus> waiting = pending.remove(answer.queryId());
        if (waiting == null || !waiting.complete(NodeStatus.fromWire(sender, answer))) {
          lateAnswers.increment(); // timed out, duplicated, or not ours
        }
      }
      default -> throw new IllegalArgumentException(
          "not a node status message: " + message.getClass().getSimpleName());
    }
  }

  /** Whether {@code message} is one of the two this class handles. */
  public static boolean handles(WireMessage message) {
    return message instanceof WireMessage.NodeStatusQuery
        || message instanceof WireMessage.NodeStatusAnswer;
  }

  /** Queries of this node still waiting for their answer. */
  public int pendingCount() {
    return pending.size();
  }

  /** Answers dropped because no query of this node waited for them any more. */
  public long lateAnswers() {
    return lateAnswers.sum();
  }
}
