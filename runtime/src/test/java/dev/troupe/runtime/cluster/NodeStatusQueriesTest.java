package dev.troupe.runtime.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.txn.port.Transport;
import dev.troupe.txn.wire.Envelope;
import dev.troupe.txn.wire.WireCodec;
import dev.troupe.txn.wire.WireMessage;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The node status query between members, both sides, over a transport that carries every
 * envelope as its wire bytes ({@link WireCodec}, as the cluster transport does): an answer comes
 * from the asked member's own numbers; a member that does not answer is unknown after the
 * timeout; a late or stray answer is dropped and counted; the view assembles what answered.
 */
class NodeStatusQueriesTest {
  /** Delivers each envelope, encoded and decoded, to its destination node's queries. */
  private static final class WireTransport implements Transport {
    private final int localNode;
    private final Map<Integer, NodeStatusQueries> nodes;
    private final List<Envelope> sent = new ArrayList<>();
    boolean deliver = true;

    WireTransport(int localNode, Map<Integer, NodeStatusQueries> nodes) {
      this.localNode = localNode;
      this.nodes = nodes;
    }

    @Override
    public void send(Envelope envelope) {
      sent.add(envelope);
      if (!deliver) {
        return;
      }
      Envelope arrived = WireCodec.decode(WireCodec.encode(envelope));
      int to = ((Envelope.Destination.ToNode) arrived.destination()).nodeId();
      NodeStatusQueries target = nodes.get(to);
      if (target != null) {
        target.receive(arrived.senderNode(), arrived.message(),
            new WireTransport(to, nodes));
      }
    }

    @Override
    public int localNode() {
      return localNode;
    }
  }

  private static NodeStatus numbers(int nodeId, List<Integer> partitions, long entities) {
    return new NodeStatus(nodeId, partitions, entities, 100L * nodeId, 1000L, 10L * nodeId);
  }

  @Test
  void aMemberAnswersWithItsOwnNumbers() throws Exception {
    NodeStatusQueries one = new NodeStatusQueries(1, () -> numbers(1, List.of(0, 2), 5));
    NodeStatusQueries two = new NodeStatusQueries(2, () -> numbers(2, List.of(1, 3), 7));
    Map<Integer, NodeStatusQueries> nodes = Map.of(1, one, 2, two);
    WireTransport fromOne = new WireTransport(1, nodes);

    NodeStatus answered = one.ask(fromOne, 2, 5_000).get(5, TimeUnit.SECONDS);
    assertEquals(numbers(2, List.of(1, 3), 7), answered);
    assertEquals(0, one.pendingCount());
    // The query crossed as a ToNode envelope; the answer named the query.
    Envelope query = fromOne.sent.getFirst();
    assertEquals(new Envelope.Destination.ToNode(2), query.destination());
    assertTrue(query.message() instanceof WireMessage.NodeStatusQuery);

    // Itself: its own numbers, nothing sent.
    assertEquals(numbers(1, List.of(0, 2), 5), one.ask(fromOne, 1, 5_000).get());
    assertEquals(1, fromOne.sent.size());
  }

  @Test
  void aMemberThatDoesNotAnswerIsUnknownAfterTheTimeout() throws Exception {
    NodeStatusQueries one = new NodeStatusQueries(1, () -> numbers(1, List.of(), 0));
    WireTransport lost = new WireTransport(1, Map.of(1, one));
    lost.deliver = false;
    long started = System.nanoTime();
    assertNull(one.ask(lost, 3, 200).get(5, TimeUnit.SECONDS));
    assertTrue(System.nanoTime() - started >= TimeUnit.MILLISECONDS.toNanos(200));
    assertEquals(0, one.pendingCount(), "a timed-out query is forgotten");

    // Its answer arriving after all is dropped and counted; so is one nobody asked for.
    long queryId = ((WireMessage.NodeStatusQuery) lost.sent.getFirst().message()).queryId();
    one.receive(3, numbers(3, List.of(4), 1).toWire(queryId), lost);
    one.receive(3, numbers(3, List.of(4), 1).toWire(999L), lost);
    assertEquals(2, one.lateAnswers());
  }

  @Test
  void theViewCarriesTheNumbersOfTheMembersThatAnswered() {
    ClusterView view = new ClusterView("pekko://troupe@127.0.0.1:1", 4, List.of(
        member(1, List.of(0, 1)), member(2, List.of(2)), member(3, List.of()),
        member(-1, List.of())));
    ClusterView completed = view.withNodeStatuses(Map.of(
        1, numbers(1, List.of(0, 1), 3), 2, numbers(2, List.of(2, 3), 4)));

    assertEquals(numbers(1, List.of(0, 1), 3), completed.members().get(0).node());
    assertEquals(numbers(2, List.of(2, 3), 4), completed.members().get(1).node());
    assertNull(completed.members().get(2).node(), "node 3 did not answer: unknown");
    assertNull(completed.members().get(3).node(), "no node id: unknown");
    assertEquals(view.members().get(1).partitions(), completed.members().get(1).partitions());
    assertEquals(4, completed.hostedPartitionCount());
    assertEquals(0, view.hostedPartitionCount(), "nothing answered yet");
    // A partition two members claim while it moves counts once.
    assertEquals(2, view.withNodeStatuses(Map.of(1, numbers(1, List.of(0, 1), 0),
        2, numbers(2, List.of(1), 0))).hostedPartitionCount());
  }

  private static ClusterView.MemberView member(int nodeId, List<Integer> partitions) {
    return new ClusterView.MemberView("pekko://troupe@127.0.0.1:" + (100 + nodeId), "up", true,
        nodeId, nodeId < 0 ? List.of() : List.of("troupe-node-" + nodeId), partitions, true, null);
  }

  @Test
  void thisProcessReportsAPositiveHeap() {
    NodeStatus status = NodeStatus.ofThisProcess(4, List.of(1), 2, 3, "http://127.0.0.1:8080");
    assertTrue(status.heapUsedBytes() > 0);
    assertTrue(status.heapMaxBytes() >= status.heapUsedBytes());
    CompletableFuture<NodeStatus> unused = CompletableFuture.completedFuture(status);
    assertEquals(status, NodeStatus.fromWire(4, unused.join().toWire(9L)));
  }
}
