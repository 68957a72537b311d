package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.storage.postgres.PostgresDisk;
import dev.troupe.storage.postgres.PostgresDiskSettings;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Two nodes share one PostgreSQL database, each through a {@link PostgresDisk} of its own (its
 * own connections, as two processes would): stores in acquired-partition mode with writer
 * threads, three threads committing to either node, and a mover handing random partitions over,
 * gracefully (release, then acquire) or not (the other node acquires while the owner still
 * writes, so the database's owner rows fence the old owner's batches in flight). Afterwards
 * every commit ended, the only refusal is {@code not_owner}, and each entity's state is exactly
 * the sum of its acknowledged commits: nothing acknowledged was lost, nothing refused was written.
 */
class SharedPostgresHandOffTest {
  private static final int PARTITIONS = 4;
  private static final int ENTITY_COUNT = 12;

  @RegisterExtension static final TestPostgres postgres = new TestPostgres();


  private record Submitted(EntityId entity, long amount, CompletableFuture<Committed> future) {}

  @Test
  void handOffsBetweenTwoNodesOnOneDatabaseLoseNothing() throws Exception {
    PostgresDiskSettings database = postgres.newDatabase();
    RocksStore[] nodes = new RocksStore[2];
    List<Throwable> failures = new CopyOnWriteArrayList<>();
    for (int i = 0; i < 2; i++) {
      StorageSettings settings = PartitionOwnershipTest.settings(i + 1).withPartitions(PARTITIONS)
          .withCheckpoints(50, 20, 200).withHistoryRetentionMillis(0);
      nodes[i] = RocksStore.open(settings, System::currentTimeMillis, PostgresDisk.open(database),
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
    try {
      List<EntityId> entities = new ArrayList<>();
      for (int i = 0; i < ENTITY_COUNT; i++) {
        entities.add(new EntityId("Account", "a" + i));
      }
      int[] owner = new int[PARTITIONS];
      for (int partition = 0; partition < PARTITIONS; partition++) {
        nodes[0].acquirePartition(partition);
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
              EntityId entity = entities.get(random.nextInt(ENTITY_COUNT));
              int partition = nodes[0].partitionOf(entity);
              RocksStore node = nodes[random.nextInt(10) < 8 ? owner[partition] : random.nextInt(2)];
              long amount = 1 + random.nextInt(9);
              window.add(new Submitted(entity, amount, node.commit(node.newTransactionId(),
                  PartitionOwnershipTest.increment(entity, amount))));
            }
            submitted.addAll(window);
            for (Submitted commit : window) {
              try {
                commit.future().get(30, TimeUnit.SECONDS);
              } catch (Exception e) {
                // Checked below.
              }
            }
          }
        }, "committer-" + t);
        committer.start();
        committers.add(committer);
      }
      SplittableRandom random = new SplittableRandom(42);
      long end = System.currentTimeMillis() + 3_000;
      int moves = 0;
      while (System.currentTimeMillis() < end) {
        int partition = random.nextInt(PARTITIONS);
        int from = owner[partition];
        if (random.nextBoolean()) {
          nodes[from].releasePartition(partition);
        }
        nodes[1 - from].acquirePartition(partition);
        owner[partition] = 1 - from;
        moves++;
        Thread.sleep(random.nextInt(20));
      }
      running.set(false);
      for (Thread committer : committers) {
        committer.join();
      }
      assertEquals(List.of(), failures, "a store failed");
      int acknowledged = 0;
      for (Submitted commit : submitted) {
        assertTrue(commit.future().isDone(), "a commit never ended");
        ErrorCode refusal = PartitionOwnershipTest.refusal(commit.future());
        if (refusal == null) {
          acknowledged++;
        } else {
          assertEquals(ErrorCode.NOT_OWNER, refusal, "the only refusal is not_owner");
        }
      }
      // Both directions once more, then read everything at one owner.
      for (int partition = 0; partition < PARTITIONS; partition++) {
        nodes[1].releasePartition(partition);
        nodes[0].acquirePartition(partition);
      }
      for (EntityId entity : entities) {
        long sum = 0;
        for (Submitted commit : submitted) {
          if (commit.entity().equals(entity) && !commit.future().isCompletedExceptionally()) {
            sum += commit.amount();
          }
        }
        assertEquals(sum, Fixtures.counter(nodes[0].read(entity), "n"), entity.toString());
      }
      System.out.printf("two nodes on PostgreSQL: %d moves, %d commits acknowledged of %d%n",
          moves, acknowledged, submitted.size());
      assertTrue(moves > 20 && acknowledged > 100, moves + " moves, " + acknowledged);
    } finally {
      for (RocksStore node : nodes) {
        node.close();
      }
    }
  }
}
