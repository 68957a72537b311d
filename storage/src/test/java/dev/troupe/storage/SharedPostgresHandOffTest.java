package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.storage.postgres.PostgresDisk;
import dev.troupe.storage.postgres.PostgresDiskSettings;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
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

  @RegisterExtension static final TestPostgres postgres = new TestPostgres();

  @Test
  void handOffsBetweenTwoNodesOnOneDatabaseLoseNothing() throws Exception {
    PostgresDiskSettings database = postgres.newDatabase();
    List<Throwable> failures = new CopyOnWriteArrayList<>();
    // Each node through a disk of its own on the one database, as two processes would.
    RocksStore[] nodes =
        ThreadedHandOffs.open(PARTITIONS, i -> PostgresDisk.open(database), failures);
    try {
      List<EntityId> entities = ThreadedHandOffs.entities();
      ThreadedHandOffs.Run run = ThreadedHandOffs.run(nodes, PARTITIONS, entities, 3_000, 20);
      List<ThreadedHandOffs.Submitted> submitted = run.submitted();
      int moves = run.moves();
      assertEquals(List.of(), failures, "a store failed");
      int acknowledged = 0;
      for (ThreadedHandOffs.Submitted commit : submitted) {
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
        assertEquals(ThreadedHandOffs.acknowledgedSum(entity, submitted),
            Fixtures.counter(nodes[0].read(entity), "n"), entity.toString());
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
