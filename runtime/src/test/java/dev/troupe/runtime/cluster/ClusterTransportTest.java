package dev.troupe.runtime.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityLocator;
import dev.troupe.model.SingleNodeLocator;
import dev.troupe.txn.wire.Envelope;
import dev.troupe.txn.wire.WireMessage;
import java.io.IOException;
import java.net.ServerSocket;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The cluster transport between two members in one JVM (two actor systems over Artery TCP on
 * loopback): a {@code ToNode} envelope reaches the named node's inbox, a {@code ToEntity} one the
 * inbox of the one member hosting the entity's partition, each as a wire frame through the
 * serializer; partitions are spread over both members, each hosted once.
 */
class ClusterTransportTest {
  private static final int PARTITIONS = 4;
  private static final EntityLocator LOCATOR = new SingleNodeLocator(PARTITIONS, 0);

  private record Arrival(int node, Envelope envelope) {}

  private final BlockingQueue<Arrival> arrivals = new LinkedBlockingQueue<>();
  private ActorSystem<Void> first;
  private ActorSystem<Void> second;

  @AfterEach
  void stop() throws Exception {
    for (ActorSystem<Void> system : new ActorSystem[] {first, second}) {
      if (system != null) {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
      }
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  private ClusterNode member(int nodeId, int port, int seedPort, ActorSystem<Void>[] holder) {
    Config troupe = ConfigFactory.parseString(
            "cluster.enabled = true\ncluster.host = \"127.0.0.1\"\ncluster.port = " + port
                + "\ncluster.seed-nodes = [\"127.0.0.1:" + seedPort + "\"]\n"
                + "cluster.stable-after-millis = 2000\n")
        .withFallback(ConfigFactory.load().getConfig("troupe"));
    ClusterSettings settings = ClusterSettings.fromConfig(troupe);
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), ClusterSettings.SYSTEM_NAME,
        ClusterNode.actorSystemConfig(settings, nodeId, ConfigFactory.load()));
    holder[0] = system;
    ClusterNode node = ClusterNode.create(system, settings, nodeId, PARTITIONS, LOCATOR,
        (envelope, replies) -> arrivals.add(new Arrival(nodeId, envelope)), () -> {});
    node.startSharding(PartitionOwner.ownsEverything(), Behaviors::empty);
    return node;
  }

  @Test
  @SuppressWarnings("unchecked")
  void envelopesReachTheNamedNodeAndThePartitionsHost() throws Exception {
    int firstPort = freePort();
    int secondPort = freePort();
    ActorSystem<Void>[] holder = new ActorSystem[1];
    ClusterNode one = member(1, firstPort, firstPort, holder);
    first = holder[0];
    ClusterNode two = member(2, secondPort, firstPort, holder);
    second = holder[0];
    awaitUp(first, 2);
    awaitUp(second, 2);

    // To a node: from 1 to 2, and 2 to 1.
    EntityId alice = EntityId.parse("Account/alice");
    Envelope toTwo = new Envelope(1, new Envelope.Destination.ToNode(2),
        new WireMessage.DecisionQuery(42L, 1, alice));
    one.transport().send(toTwo);
    Arrival arrival = arrivals.poll(20, TimeUnit.SECONDS);
    assertNotNull(arrival, "the envelope for node 2 arrived");
    assertEquals(2, arrival.node());
    assertEquals(toTwo, arrival.envelope());
    Envelope toOne = new Envelope(2, new Envelope.Destination.ToNode(1),
        new WireMessage.DecisionQuery(43L, 2, alice));
    two.transport().send(toOne);
    arrival = arrivals.poll(20, TimeUnit.SECONDS);
    assertNotNull(arrival);
    assertEquals(new Arrival(1, toOne), arrival);

    // To an entity: arrives once, at the member hosting its partition.
    awaitEveryPartitionHostedOnce(one, two);
    int partition = LOCATOR.partitionOf(alice);
    int host = one.hosted().hosts(partition) ? 1 : 2;
    Envelope toAlice = new Envelope(1, new Envelope.Destination.ToEntity(alice),
        new WireMessage.DecisionAnswer(42L, alice, WireMessage.DecisionState.COMMITTED));
    one.transport().send(toAlice);
    two.transport().send(toAlice);
    for (int i = 0; i < 2; i++) {
      arrival = arrivals.poll(20, TimeUnit.SECONDS);
      assertNotNull(arrival, "the envelope for alice arrived");
      assertEquals(new Arrival(host, toAlice), arrival);
    }

    // A decision question for a node no member carries: handed to the asker's own inbox, which
    // answers it from the shared store once that node's coordinators are ended.
    Envelope toNobody = new Envelope(1, new Envelope.Destination.ToNode(9),
        new WireMessage.DecisionQuery(44L, 1, alice));
    one.transport().send(toNobody);
    assertEquals(new Arrival(1, toNobody), arrivals.poll(20, TimeUnit.SECONDS));
    assertEquals(1, one.transport().questionsAnsweredHere());
    // Anything else for such a node: dropped and counted, never thrown.
    one.transport().send(new Envelope(1, new Envelope.Destination.ToNode(9),
        new WireMessage.DecisionAnswer(44L, alice, WireMessage.DecisionState.ABORTED)));
    assertEquals(1, one.transport().droppedNoMember());
    assertNull(arrivals.poll(500, TimeUnit.MILLISECONDS));
    assertEquals(5, one.transport().delivered() + two.transport().delivered());

    // The view of the cluster agrees from both members.
    ClusterView view = one.view().get(10, TimeUnit.SECONDS);
    assertEquals(2, view.members().size());
    Set<Integer> seen = new HashSet<>();
    for (ClusterView.MemberView member : view.members()) {
      assertTrue(member.partitionsKnown());
      assertTrue(List.of(1, 2).contains(member.nodeId()));
      // Its own numbers, asked of it over Artery (a node status query; node 1 answers itself).
      assertNotNull(member.node(), "node " + member.nodeId() + " answered its status");
      assertEquals(member.nodeId(), member.node().nodeId());
      assertEquals(member.partitions(), member.node().hostedPartitions());
      assertTrue(member.node().heapUsedBytes() > 0 && member.node().heapMaxBytes() > 0);
      for (int hosted : member.partitions()) {
        assertTrue(seen.add(hosted), "partition " + hosted + " hosted once");
      }
    }
    assertEquals(PARTITIONS, seen.size());
    assertEquals(PARTITIONS, view.hostedPartitionCount());
  }

  /** A damaged frame that reaches a node is dropped and counted; the inbox never sees it. */
  @Test
  void aDamagedArrivalIsDroppedAndCounted() {
    ClusterTransport transport = new ClusterTransport(1, LOCATOR, null,
        (envelope, replies) -> arrivals.add(new Arrival(1, envelope)));
    byte[] bytes = dev.troupe.txn.wire.WireCodec.encode(new Envelope(2,
        new Envelope.Destination.ToNode(1),
        new WireMessage.DecisionQuery(7L, 2, EntityId.parse("Account/alice"))));
    bytes[bytes.length / 2] ^= 1;
    transport.deliverArrived(new WireFrame(bytes));
    assertEquals(1, transport.droppedDamaged());
    assertEquals(0, transport.delivered());
    assertTrue(arrivals.isEmpty());
  }

  /**
   * Two members with one node id: the younger (the later up) leaves and reports it; the older
   * keeps its place.
   */
  @Test
  @SuppressWarnings("unchecked")
  void theYoungerOfTwoMembersWithOneNodeIdLeaves() throws Exception {
    int firstPort = freePort();
    int secondPort = freePort();
    java.util.concurrent.CountDownLatch firstRemoved = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch secondRemoved = new java.util.concurrent.CountDownLatch(1);
    ActorSystem<Void>[] holder = new ActorSystem[1];
    memberWithCallback(7, firstPort, firstPort, holder, firstRemoved::countDown);
    first = holder[0];
    awaitUp(first, 1);
    memberWithCallback(7, secondPort, firstPort, holder, secondRemoved::countDown);
    second = holder[0];
    assertTrue(secondRemoved.await(30, TimeUnit.SECONDS), "the younger member left");
    assertEquals(1, firstRemoved.getCount(), "the older member stays");
  }

  private ClusterNode memberWithCallback(int nodeId, int port, int seedPort,
      ActorSystem<Void>[] holder, Runnable onRemoved) {
    Config troupe = ConfigFactory.parseString(
            "cluster.enabled = true\ncluster.host = \"127.0.0.1\"\ncluster.port = " + port
                + "\ncluster.seed-nodes = [\"127.0.0.1:" + seedPort + "\"]\n")
        .withFallback(ConfigFactory.load().getConfig("troupe"));
    ClusterSettings settings = ClusterSettings.fromConfig(troupe);
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), ClusterSettings.SYSTEM_NAME,
        ClusterNode.actorSystemConfig(settings, nodeId, ConfigFactory.load()));
    holder[0] = system;
    return ClusterNode.create(system, settings, nodeId, PARTITIONS, LOCATOR,
        (envelope, replies) -> {}, onRemoved);
  }

  private static void awaitUp(ActorSystem<Void> system, int members) throws InterruptedException {
    Cluster cluster = Cluster.get(system);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      long up = 0;
      for (var member : cluster.state().getMembers()) {
        if (member.status() == MemberStatus.up()) {
          up++;
        }
      }
      if (up == members) {
        return;
      }
      Thread.sleep(100);
    }
    throw new AssertionError("the cluster did not reach " + members + " up members");
  }

  private static void awaitEveryPartitionHostedOnce(ClusterNode one, ClusterNode two)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      boolean all = true;
      for (int partition = 0; partition < PARTITIONS; partition++) {
        all &= one.hosted().hosts(partition) ^ two.hosted().hosts(partition);
      }
      if (all) {
        return;
      }
      Thread.sleep(100);
    }
    throw new AssertionError("not every partition hosted exactly once");
  }
}
