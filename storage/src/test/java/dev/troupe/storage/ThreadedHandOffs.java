package dev.troupe.storage;

import dev.troupe.model.EntityId;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntFunction;

/**
 * Two nodes' stores in acquired-partition mode with writer threads, three threads committing
 * increments to whichever node they pick (the owner mostly), and a mover handing random
 * partitions over, gracefully (release, then acquire) or not (the other node acquires while the
 * owner still writes). Shared by the hand-off tests on one {@link MemoryDisk} and on PostgreSQL;
 * they check what the run left.
 */
final class ThreadedHandOffs {
  static final int ENTITY_COUNT = 12;

  /** One commit submitted to node {@code node} (0 or 1). */
  record Submitted(long transactionId, int node, EntityId entity, long amount,
      CompletableFuture<Committed> future) {}

  /**
   * What a run did: every commit submitted, the number of moves, and per partition the node ids
   * (1 or 2) that acquired it, in order.
   */
  record Run(List<Submitted> submitted, int moves, List<List<Integer>> acquisitions) {}

  private ThreadedHandOffs() {}

  /** Two stores with node ids 1 and 2, each on the disk {@code diskOf} gives for its index. */
  static RocksStore[] open(int partitions, IntFunction<KeyValueDisk> diskOf,
      List<Throwable> failures) {
    RocksStore[] nodes = new RocksStore[2];
    for (int i = 0; i < 2; i++) {
      StorageSettings settings = PartitionOwnershipTest.settings(i + 1).withPartitions(partitions)
          .withCheckpoints(50, 20, 200).withHistoryRetentionMillis(0);
      nodes[i] = RocksStore.open(settings, System::currentTimeMillis, diskOf.apply(i),
          RocksStore.Execution.THREADS);
      nodes[i].setEvents(new StorageEvents() {
        @Override
        public void storeFailed(Throwable cause) {
          failures.add(cause);
        }

        @Override
        public void corruptionDetected(String where, CorruptDataException damage) {}
      });
    }
    return nodes;
  }

  static List<EntityId> entities() {
    List<EntityId> entities = new ArrayList<>();
    for (int i = 0; i < ENTITY_COUNT; i++) {
      entities.add(new EntityId("Account", "a" + i));
    }
    return entities;
  }

  /**
   * Node 0 acquires every partition, then committers and the mover run for {@code millis}, the
   * mover pausing up to {@code maxPauseMillis} between moves; returns once every committer ended.
   */
  static Run run(RocksStore[] nodes, int partitions, List<EntityId> entities, long millis,
      int maxPauseMillis) throws InterruptedException {
    int[] owner = new int[partitions];
    List<List<Integer>> acquisitions = new ArrayList<>();
    for (int partition = 0; partition < partitions; partition++) {
      nodes[0].acquirePartition(partition);
      acquisitions.add(new ArrayList<>(List.of(1)));
    }
    List<Submitted> submitted = new CopyOnWriteArrayList<>();
    AtomicBoolean running = new AtomicBoolean(true);
    List<Thread> committers = new ArrayList<>();
    for (int t = 0; t < 3; t++) {
      long seed = t;
      Thread committer = new Thread(() -> {
        SplittableRandom random = new SplittableRandom(seed);
        while (running.get()) {
          List<Submitted> window = new ArrayList<>();
          for (int i = 0; i < 4; i++) {
            EntityId entity = entities.get(random.nextInt(entities.size()));
            int partition = nodes[0].partitionOf(entity);
            int index = random.nextInt(10) < 8 ? owner[partition] : random.nextInt(2);
            RocksStore node = nodes[index];
            long amount = 1 + random.nextInt(9);
            long id = node.newTransactionId();
            window.add(new Submitted(id, index, entity, amount,
                node.commit(id, PartitionOwnershipTest.increment(entity, amount))));
          }
          submitted.addAll(window);
          for (Submitted commit : window) {
            try {
              commit.future().get(30, TimeUnit.SECONDS);
            } catch (Exception e) {
              // The test checks every outcome afterwards.
            }
          }
        }
      }, "committer-" + t);
      committer.start();
      committers.add(committer);
    }
    SplittableRandom random = new SplittableRandom(42);
    long end = System.currentTimeMillis() + millis;
    int moves = 0;
    while (System.currentTimeMillis() < end) {
      int partition = random.nextInt(partitions);
      int from = owner[partition];
      int to = 1 - from;
      if (random.nextBoolean()) {
        nodes[from].releasePartition(partition);
      }
      nodes[to].acquirePartition(partition);
      acquisitions.get(partition).add(to + 1);
      owner[partition] = to;
      moves++;
      Thread.sleep(random.nextInt(maxPauseMillis));
    }
    running.set(false);
    for (Thread committer : committers) {
      committer.join();
    }
    return new Run(submitted, moves, acquisitions);
  }

  /** The sum of the acknowledged increments of {@code entity}. */
  static long acknowledgedSum(EntityId entity, List<Submitted> submitted) {
    long sum = 0;
    for (Submitted commit : submitted) {
      if (commit.entity().equals(entity) && !commit.future().isCompletedExceptionally()) {
        sum += commit.amount();
      }
    }
    return sum;
  }
}
