package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityLocator;
import dev.troupe.model.time.TransactionIds;
import dev.troupe.server.ServerProcess.Answer;
import dev.troupe.storage.Codec;
import dev.troupe.storage.KeyValueDisk;
import dev.troupe.storage.postgres.PostgresDisk;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A network partition inside a three-member data centre (issue 18): one member is cut off from
 * the two others in both directions (Artery through {@link ThreeNodeCluster}'s proxies; PostgreSQL
 * and the HTTP ports stay reachable, so the cut-off member keeps trying to write), clients keep
 * writing through all three, the majority takes over every partition, the cut is healed and the
 * cut-off member comes back. Then:
 *
 * <ul>
 *   <li>every acknowledged write, through whichever member, is read back;
 *   <li>the majority served every partition (a write to each partition the minority hosted was
 *       acknowledged by the majority within the failover bound, measured and printed);
 *   <li>from the journal in PostgreSQL (read here with JDBC): per partition, the commit
 *       timestamps grow with the journal sequence, and the writer (the node id in a commit
 *       timestamp's low bits: every write here is a single-entity turn, timestamped by the host
 *       of the entity's partition) changes at most as often as the partition changed owner (its
 *       owner epoch counts the acquisitions). So no two members wrote one partition interleaved:
 *       once the majority acquired a partition, no write of the minority followed in it, and
 *       every write of the minority that was acknowledged (read back above) precedes the take-over.
 * </ul>
 */
class ClusterPartitionTest {
  private static final int CUT_OFF = 2;

  @TempDir Path directory;
  private ThreeNodeCluster cluster;
  private final AtomicBoolean running = new AtomicBoolean(true);
  /** Acknowledged writes: path -> value. */
  private final Map<String, Long> acknowledged = new ConcurrentHashMap<>();
  /** Writes acknowledged by the cut-off member after the cut, with when (ms after the cut). */
  private final Map<String, Long> minorityAcknowledgedAfterCut = new ConcurrentHashMap<>();
  private final Map<String, AtomicLong> outcomes = new ConcurrentHashMap<>();
  private volatile long cutAt;
  /** The cut-off member's process (not the one started after healing). */
  private volatile ServerProcess isolated;

  @AfterEach
  void stop() throws InterruptedException {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void theMinoritySideStopsWritingAndNoPartitionIsWrittenByTwoMembers() throws Exception {
    // Checkpoints would truncate the journal this test reads back: none during the test.
    ThreeNodeCluster.Options options = ThreeNodeCluster.Options.defaults().withProxies()
        .with("troupe.storage.checkpoint-interval-millis=3600000",
            "troupe.storage.checkpoint-journal-records=10000000");
    cluster = ThreeNodeCluster.start(directory, options);
    cluster.check(() -> run(options));
  }

  private void run(ThreeNodeCluster.Options options) throws Exception {
    String[] probes = ClusterFailoverTest.probeEntities(options.partitions());
    List<Thread> writers = new ArrayList<>();
    Map<Integer, Integer> formed = cluster.awaitPlacement(List.of(0, 1, 2), 60_000, true);
    for (int member = 0; member < 3; member++) {
      for (int w = 0; w < 2; w++) {
        int index = member;
        String prefix = "m" + ThreeNodeCluster.nodeId(member) + "w" + w + "-";
        // Writer 0 of each member writes only entities of the partitions the member hosted when
        // the test began (so the cut-off member keeps writing its own partitions, which succeed
        // until the majority takes them over); writer 1 writes entities of every partition.
        List<Integer> own = w == 0 ? formed.entrySet().stream()
            .filter(entry -> entry.getValue() == ThreeNodeCluster.nodeId(index))
            .map(Map.Entry::getKey).toList() : null;
        Thread thread = new Thread(() -> write(index, prefix, own, options.partitions()),
            "partition-writer-" + prefix);
        thread.setDaemon(true);
        thread.start();
        writers.add(thread);
      }
    }
    Thread.sleep(3_000);
    Map<Integer, Integer> before = cluster.awaitPlacement(List.of(0, 1, 2), 60_000, true);
    List<Integer> minorityPartitions = before.entrySet().stream()
        .filter(entry -> entry.getValue() == ThreeNodeCluster.nodeId(CUT_OFF))
        .map(Map.Entry::getKey).toList();

    isolated = cluster.node(CUT_OFF);
    cutAt = System.nanoTime();
    cluster.isolate(CUT_OFF);
    long bound = options.failoverBoundMillis();
    Map<Integer, Long> takeOverMillis = new TreeMap<>();
    for (int partition : minorityPartitions) {
      takeOverMillis.put(partition, ClusterFailoverTest.firstWriteMillis(cluster.node(0),
          probes[partition], cutAt, bound));
    }
    Map<Integer, Integer> majority = cluster.awaitPlacement(List.of(0, 1), bound, false);
    long placedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cutAt);
    // Let the minority side try a while longer (its clients keep sending) before healing.
    Thread.sleep(3_000);
    ServerProcess cutOff = cluster.node(CUT_OFF);
    boolean exitedByItself = !cutOff.isAlive();
    cluster.heal();
    long healedAt = System.nanoTime();
    // A member the others downed cannot join again with its old incarnation: it is restarted.
    cluster.kill(CUT_OFF);
    cluster.start(CUT_OFF);
    Map<Integer, Integer> rejoined = cluster.awaitPlacement(List.of(0, 1, 2), 120_000, false);
    long rejoinedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - healedAt);
    Thread.sleep(2_000);
    running.set(false);
    for (Thread thread : writers) {
      thread.join(30_000);
    }

    // Every acknowledged write is there.
    for (Map.Entry<String, Long> write : acknowledged.entrySet()) {
      Answer answer = cluster.node(1).getRetrying(write.getKey(), 30_000);
      assertEquals(200, answer.status(), "acknowledged write lost: " + write.getKey() + " "
          + answer.text());
      assertEquals(write.getValue().longValue(), answer.body().get("value").asLong());
    }
    JournalCheck journal = checkJournal(cluster.jdbcUrl(), options.partitions());
    Map<String, Long> counts = new TreeMap<>();
    outcomes.forEach((key, count) -> counts.put(key, count.get()));
    System.out.println("ClusterPartitionTest figures:");
    System.out.printf("  node %d cut off (it hosted partitions %s of %s); the majority wrote to"
        + " each of them after (ms from the cut) %s; every partition hosted by the majority %d ms"
        + " after the cut: %s; the cut-off member %s by itself; after healing and its restart"
        + " the three agree %d ms later: %s%n", ThreeNodeCluster.nodeId(CUT_OFF),
        minorityPartitions, before, takeOverMillis, placedMillis, majority,
        exitedByItself ? "had exited" : "was still running", rejoinedMillis, rejoined);
    List<Long> minorityTimes = minorityAcknowledgedAfterCut.values().stream().sorted().toList();
    System.out.println("  writes acknowledged by the cut-off member after the cut: "
        + minorityTimes.size() + (minorityTimes.isEmpty() ? "" : ", from "
        + minorityTimes.getFirst() + " to " + minorityTimes.getLast() + " ms after it"));
    System.out.println("  outcomes by member: " + counts);
    System.out.println("  journal: " + journal);
    for (long millis : takeOverMillis.values()) {
      assertTrue(millis <= bound, "take-over within " + bound + " ms: " + takeOverMillis);
    }
    long firstTakeOver = takeOverMillis.values().stream().mapToLong(Long::longValue).min()
        .orElse(Long.MAX_VALUE);
    assertTrue(journal.violations().isEmpty(), "journal: " + journal.violations());
    // The cut-off member downed itself and was told, as its cluster shut down, that the others
    // were removed: it must not have ended their coordinators (they never restarted, so their
    // coordinator partitions are still at the epoch they opened with).
    for (int member = 0; member < 3; member++) {
      if (member != CUT_OFF) {
        int coordinatorPartition =
            dev.troupe.storage.CoordinatorPartitions.BASE + ThreeNodeCluster.nodeId(member);
        assertEquals(1L, journal.epochs().get(coordinatorPartition), "the coordinators of"
            + " node " + ThreeNodeCluster.nodeId(member) + " (never restarted) were ended: "
            + journal.epochs());
      }
    }
    long latestMinority = minorityAcknowledgedAfterCut.values().stream()
        .mapToLong(Long::longValue).max().orElse(-1);
    System.out.println("  first take-over " + firstTakeOver + " ms after the cut; latest"
        + " acknowledgement by the cut-off member " + latestMinority + " ms after the cut");
    // The journal check above is the proof (commit order); as the clients saw it, too: the
    // cut-off member acknowledged nothing once the majority wrote to a partition it had hosted.
    assertTrue(latestMinority < firstTakeOver, "the cut-off member acknowledged a write "
        + latestMinority + " ms after the cut, the majority took over at " + firstTakeOver);
  }

  /**
   * A writer through member {@code index} only: one new schemaless entity per write, of the
   * partitions {@code only} (null: any).
   */
  private void write(int index, String prefix, List<Integer> only, int partitions) {
    for (long n = 0; running.get(); n++) {
      if (only != null && !only.contains(
          EntityLocator.partitionOf(new EntityId("Item", prefix + n), partitions))) {
        continue;
      }
      ServerProcess node = cluster.node(index);
      String member = "node " + ThreeNodeCluster.nodeId(index);
      if (node == null || !node.isAlive()) {
        sleep(100);
        continue;
      }
      String path = "/v1/entities/Item/" + prefix + n + "/keys/value";
      String outcome;
      try {
        Answer answer = ServerProcess.send(node.baseUrl() + path, "PUT", Long.toString(n),
            "application/json", Map.of(), Duration.ofSeconds(5));
        if (answer.status() == 200) {
          acknowledged.put(path, n);
          outcome = "acknowledged";
          long cut = cutAt;
          if (node == isolated && cut != 0) {
            minorityAcknowledgedAfterCut.put(path,
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cut));
          }
        } else {
          outcome = answer.status() + " " + answer.errorCode();
        }
      } catch (IOException | RuntimeException e) {
        outcome = "no answer";
        sleep(50);
      } catch (InterruptedException e) {
        return;
      }
      outcomes.computeIfAbsent(member + " " + outcome, k -> new AtomicLong()).incrementAndGet();
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * What the journal shows: records per partition, the writer changes per partition, the owner
   * epoch per partition, and every violation found.
   */
  record JournalCheck(Map<Integer, Integer> records, Map<Integer, List<Integer>> writers,
      Map<Integer, Long> epochs, List<String> violations) {}

  /**
   * Reads the journal table and the partition owners from PostgreSQL: per partition, in journal
   * sequence order, commit timestamps must grow, and the run of writer node ids (each run a
   * stretch written by one member) may have at most as many changes as the partition had
   * acquisitions after its first (owner epoch - 1).
   */
  static JournalCheck checkJournal(String jdbcUrl, int partitions) throws Exception {
    Map<Integer, Integer> records = new TreeMap<>();
    Map<Integer, List<Integer>> writers = new TreeMap<>();
    Map<Integer, Long> lastTimestamp = new HashMap<>();
    Map<Integer, Long> lastSequence = new HashMap<>();
    Map<Integer, Long> epochs = new TreeMap<>();
    List<String> violations = new ArrayList<>();
    try (Connection connection = DriverManager.getConnection(jdbcUrl);
        Statement statement = connection.createStatement()) {
      try (ResultSet rows = statement.executeQuery("SELECT key, value FROM "
          + PostgresDisk.tableName(KeyValueDisk.Column.JOURNAL) + " ORDER BY key")) {
        while (rows.next()) {
          ByteBuffer key = ByteBuffer.wrap(rows.getBytes(1));
          int partition = key.getShort() & 0xFFFF;
          long sequence = key.getLong();
          long timestamp = Codec.decodeRecord(rows.getBytes(2)).commitTimestamp();
          int writer = TransactionIds.nodeOf(timestamp);
          records.merge(partition, 1, Integer::sum);
          Long previous = lastTimestamp.put(partition, timestamp);
          Long previousSequence = lastSequence.put(partition, sequence);
          if (previous != null && timestamp <= previous) {
            violations.add("partition " + partition + ": sequence " + sequence + " has commit"
                + " timestamp " + timestamp + " not above " + previous + " at sequence "
                + previousSequence);
          }
          List<Integer> runs = writers.computeIfAbsent(partition, p -> new ArrayList<>());
          if (runs.isEmpty() || runs.getLast() != writer) {
            runs.add(writer);
          }
        }
      }
      try (ResultSet rows = statement.executeQuery(
          "SELECT partition, epoch FROM troupe_partition_owners")) {
        while (rows.next()) {
          epochs.put(rows.getInt(1), rows.getLong(2));
        }
      }
    }
    for (Map.Entry<Integer, List<Integer>> entry : writers.entrySet()) {
      long epoch = epochs.getOrDefault(entry.getKey(), 0L);
      int changes = entry.getValue().size() - 1;
      if (changes > epoch - 1) {
        violations.add("partition " + entry.getKey() + ": writers " + entry.getValue() + " ("
            + changes + " changes) but only " + epoch + " acquisitions");
      }
    }
    assertTrue(records.size() == partitions || records.size() > 0, "the journal has records");
    return new JournalCheck(records, writers, epochs, violations);
  }
}
