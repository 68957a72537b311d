package dev.troupe.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Operation;
import dev.troupe.model.SingleNodeLocator;
import dev.troupe.model.TroupeException;
import dev.troupe.runtime.cluster.ClusterNode;
import dev.troupe.runtime.cluster.ClusterSettings;
import dev.troupe.storage.DecidedTransaction;
import dev.troupe.storage.EntityWrite;
import dev.troupe.storage.KeyValueDisk;
import dev.troupe.storage.MemoryDisk;
import dev.troupe.storage.PartitionOwnership;
import dev.troupe.storage.RocksStore;
import dev.troupe.storage.StorageSettings;
import dev.troupe.txn.coordinator.DecisionQueryCore;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The partitions' hosts over the real store in {@link PartitionOwnership#ACQUIRED} mode: two
 * members (two actor systems in one JVM), each with its own {@link RocksStore} over ONE shared
 * disk (as they would share a PostgreSQL database). Sharding places the partitions; each member's
 * store owns exactly the partitions its hosts run (acquired through {@link StorePartitionOwner}),
 * together every partition once. When a member leaves, its hosts release their partitions and the
 * other member's hosts acquire them: its store then owns them all.
 */
class ClusterPartitionOwnershipTest {
  private static final int PARTITIONS = 4;

  private final MemoryDisk disk = new MemoryDisk();
  private final List<ActorSystem<Void>> systems = new ArrayList<>();
  private final List<RocksStore> stores = new ArrayList<>();

  @AfterEach
  void stop() throws Exception {
    for (ActorSystem<Void> system : systems) {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
    for (RocksStore store : stores) {
      store.close();
    }
    disk.close();
  }

  /** One member's view of the shared disk: closing it leaves the disk open for the other. */
  private KeyValueDisk view() {
    return (KeyValueDisk) Proxy.newProxyInstance(KeyValueDisk.class.getClassLoader(),
        new Class<?>[] {KeyValueDisk.class}, (proxy, method, arguments) -> {
          if (method.getName().equals("close") && arguments == null) {
            return null;
          }
          try {
            return method.invoke(disk, arguments);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  private record Member(ActorSystem<Void> system, RocksStore store, ClusterNode node) {}

  private Member member(int nodeId, int port, int seedPort) {
    return member(nodeId, port, seedPort, "");
  }

  private RocksStore store(int nodeId) {
    RuntimeSettings defaults = RuntimeSettings.fromConfig(ConfigFactory.load());
    StorageSettings storage = defaults.storage().withNodeId(nodeId).withPartitions(PARTITIONS)
        .withPartitionOwnership(PartitionOwnership.ACQUIRED);
    RocksStore store = RocksStore.open(storage, System::currentTimeMillis, view(),
        RocksStore.Execution.THREADS);
    stores.add(store);
    return store;
  }

  private Member member(int nodeId, int port, int seedPort, String clusterSettings) {
    RocksStore store = store(nodeId);
    LoudStorageEvents events = new LoudStorageEvents();
    store.setEvents(events);
    Config troupe = ConfigFactory.parseString(
            "cluster.enabled = true\ncluster.port = " + port
                + "\ncluster.seed-nodes = [\"127.0.0.1:" + seedPort + "\"]\n" + clusterSettings)
        .withFallback(ConfigFactory.load().getConfig("troupe"));
    ClusterSettings settings = ClusterSettings.fromConfig(troupe);
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), ClusterSettings.SYSTEM_NAME,
        ClusterNode.actorSystemConfig(settings, nodeId, store.coordinatorEpoch(),
            ConfigFactory.load()));
    systems.add(system);
    ClusterNode node = ClusterNode.create(system, settings, nodeId, PARTITIONS,
        new SingleNodeLocator(PARTITIONS, nodeId), (envelope, replies) -> {}, () -> {});
    node.startSharding(new StorePartitionOwner(store, PartitionOwnership.ACQUIRED, events,
            (part, current) -> part.operations(), nodeId, new DecisionDirectory(),
            resolution -> {}),
        Behaviors::empty);
    return new Member(system, store, node);
  }

  @Test
  void eachStoreOwnsWhatItsHostsRunAndALeavingMemberHandsItsPartitionsOver() throws Exception {
    int firstPort = freePort();
    int secondPort = freePort();
    Member first = member(1, firstPort, firstPort);
    Member second = member(2, secondPort, firstPort);

    // Both up, both hosting (sharding rebalances the first member's partitions onto the second),
    // each store owning exactly what its hosts run, every partition once.
    await(60, () -> first.node().hosted().hostedPartitions().size()
        + second.node().hosted().hostedPartitions().size() == PARTITIONS
        && !second.node().hosted().hostedPartitions().isEmpty()
        && first.store().ownedPartitions().equals(first.node().hosted().hostedPartitions())
        && second.store().ownedPartitions().equals(second.node().hosted().hostedPartitions()));
    TreeSet<Integer> all = new TreeSet<>(first.store().ownedPartitions());
    all.addAll(second.store().ownedPartitions());
    assertEquals(PARTITIONS, all.size(), "every partition owned once");
    System.out.println("placed: node 1 owns " + first.store().ownedPartitions() + ", node 2 owns "
        + second.store().ownedPartitions());
    // Node 2 coordinates: one transaction's decision recorded, one undecided. While node 2 is a
    // member nobody else may presume: node 1 answers a question about them "undecided".
    EntityId participant = entityIn(first.store(), 0);
    long recordedId = second.store().newTransactionId();
    second.store().persistDecision(new DecidedTransaction(recordedId, List.of(participant)))
        .join();
    long undecidedId = second.store().newTransactionId();
    DecisionDirectory firstAnswers = new DecisionDirectory(first.store()::decisionRecorded,
        first.store()::coordinatorEnded);
    assertEquals(DecisionQueryCore.Answer.UNDECIDED, firstAnswers.askForAnotherNode(recordedId, 2));
    assertEquals(DecisionQueryCore.Answer.UNDECIDED,
        firstAnswers.askForAnotherNode(undecidedId, 2));

    // The second member leaves (its actor system terminates: coordinated shutdown hands off).
    long leftAt = System.nanoTime();
    second.system().terminate();
    second.system().getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    assertTrue(second.store().ownedPartitions().isEmpty(), "the leaving member released all");
    await(30, () -> first.store().ownedPartitions().size() == PARTITIONS
        && first.node().hosted().hostedPartitions().size() == PARTITIONS);
    System.out.printf("hand-over: node 1 owns %s %d ms after node 2 began leaving%n",
        first.store().ownedPartitions(),
        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - leftAt));

    // The coordinator fence: node 1 ended node 2's coordinators when it was removed, so node 2's
    // store (a zombie now: its member is gone, its store still open) can record no decision, and
    // node 1 answers node 2's transactions from the shared store.
    await(30, () -> first.store().coordinatorEnded(2));
    assertEquals(ErrorCode.UNAVAILABLE, ((TroupeException) assertThrows(CompletionException.class,
        () -> second.store().persistDecision(
            new DecidedTransaction(undecidedId, List.of(participant))).join()).getCause()).code());
    assertEquals(DecisionQueryCore.Answer.COMMITTED, firstAnswers.askForAnotherNode(recordedId, 2));
    assertEquals(DecisionQueryCore.Answer.ABORTED, firstAnswers.askForAnotherNode(undecidedId, 2));
  }

  /**
   * A node outside the cluster takes a partition over behind sharding's back (what a member cut
   * off from the majority meets once the majority moved its partition): the member's next write
   * to it is fenced, the store reports the partition lost, and its host releases it and stops;
   * the member's other partitions stay hosted.
   */
  @Test
  void aFencedPartitionsHostStops() throws Exception {
    int port = freePort();
    // No periodic start during the test: the lost partition would be started (and taken back) again.
    Member member = member(1, port, port, "cluster.start-partitions-interval-millis = 600000\n");
    await(60, () -> member.node().hosted().hostedPartitions().size() == PARTITIONS
        && member.store().ownedPartitions().size() == PARTITIONS);
    RocksStore intruder = store(9);
    EntityId entity = entityIn(member.store(), 0);
    intruder.acquirePartition(0);
    CompletableFuture<?> fenced = member.store().commit(member.store().newTransactionId(),
        List.of(new EntityWrite(entity, List.of(new Operation.Increment("n", 1)))))
        .orTimeout(10, TimeUnit.SECONDS);
    CompletionException refused = assertThrows(CompletionException.class, fenced::join);
    assertEquals(ErrorCode.NOT_OWNER, ((TroupeException) refused.getCause()).code());
    await(10, () -> !member.node().hosted().hosts(0));
    assertEquals(List.of(1, 2, 3), member.node().hosted().hostedPartitions());
    assertEquals(List.of(1, 2, 3), member.store().ownedPartitions());
    assertEquals(List.of(0), intruder.ownedPartitions());
  }

  /**
   * A partition acquired after its previous owner's node was removed: that node's parts in doubt
   * are settled at the acquisition from the shared store (committed if its decision is recorded,
   * aborted if not, since its coordinators are ended), not left to ask; a part whose coordinator's
   * node is not ended stays prepared and asks.
   */
  @Test
  void anEndedNodesPartsInDoubtAreSettledWhenTheirPartitionIsAcquired() {
    RocksStore removed = store(2);
    RocksStore alive = store(3);
    RocksStore survivor = store(1);
    removed.acquirePartition(0);
    List<EntityId> entities = entitiesIn(removed, 0, 3);
    EntityId recorded = entities.get(0);
    EntityId undecided = entities.get(1);
    EntityId elsewhere = entities.get(2);
    long recordedId = removed.newTransactionId();
    long undecidedId = removed.newTransactionId();
    long elsewhereId = alive.newTransactionId();
    for (var part : List.of(
        new dev.troupe.storage.PreparedTransaction(recordedId, recorded,
            List.of(new Operation.Increment("n", 1))),
        new dev.troupe.storage.PreparedTransaction(undecidedId, undecided,
            List.of(new Operation.Increment("n", 1))),
        new dev.troupe.storage.PreparedTransaction(elsewhereId, elsewhere,
            List.of(new Operation.Increment("n", 1))))) {
      removed.prepare(part).join();
    }
    removed.persistDecision(new DecidedTransaction(recordedId, List.of(recorded))).join();
    // The survivors end the removed node's coordinators (RemovedCoordinators), then sharding
    // moves its partition.
    survivor.endCoordinator(2, removed.coordinatorEpoch());
    StorePartitionOwner owner = new StorePartitionOwner(survivor, PartitionOwnership.ACQUIRED,
        new LoudStorageEvents(), (part, current) -> part.operations(), 1,
        new DecisionDirectory(survivor::decisionRecorded, survivor::coordinatorEnded),
        resolution -> {});
    var resolution = owner.acquireAndResolve(0);
    assertEquals(List.of(recordedId), resolution.toCommit().stream()
        .map(dev.troupe.storage.PreparedTransaction::transactionId).toList());
    assertEquals(List.of(undecidedId), resolution.toAbort().stream()
        .map(dev.troupe.storage.PreparedTransaction::transactionId).toList());
    assertEquals(List.of(elsewhereId), resolution.toAsk().stream()
        .map(dev.troupe.storage.PreparedTransaction::transactionId).toList());
  }

  private static EntityId entityIn(RocksStore store, int partition) {
    return entitiesIn(store, partition, 1).get(0);
  }

  private static List<EntityId> entitiesIn(RocksStore store, int partition, int count) {
    List<EntityId> entities = new ArrayList<>();
    for (int i = 0; entities.size() < count; i++) {
      EntityId entity = new EntityId("Account", "a" + i);
      if (store.partitionOf(entity) == partition) {
        entities.add(entity);
      }
    }
    return entities;
  }

  private static void await(int seconds, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (System.nanoTime() < deadline) {
      if (condition.getAsBoolean()) {
        return;
      }
      Thread.sleep(100);
    }
    throw new AssertionError("not within " + seconds + " s");
  }
}
