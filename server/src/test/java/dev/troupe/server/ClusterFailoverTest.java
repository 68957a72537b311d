package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityLocator;
import dev.troupe.server.ServerProcess.Answer;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bank failover in a data centre of three members on one PostgreSQL (issue 18): clients send
 * transfers of every kind ({@link ClusterBank}: single-entity turns, sync actions, planned and
 * dynamic transactions) to all three members round-robin while one member after another is killed
 * with {@code kill -9} and started again (two cycles, a different victim each). Afterwards:
 * money is conserved, no balance is negative, every acknowledged transfer is there, every account
 * is writable (no part of a transaction left prepared and locking it), and after each kill a write
 * to an entity of a partition that moved commits within a bound derived from the failure detector
 * and stable-after settings (measured and printed).
 */
class ClusterFailoverTest {
  private static final int ACCOUNTS = 8;
  private static final int CLIENTS = 4;

  @TempDir Path directory;
  private ThreeNodeCluster cluster;

  @AfterEach
  void stop() throws InterruptedException {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void acknowledgedTransfersSurviveKillNineOfEachMemberInTurn() throws Exception {
    ThreeNodeCluster.Options options = ThreeNodeCluster.Options.defaults();
    cluster = ThreeNodeCluster.start(directory, options);
    cluster.check(() -> run(options));
  }

  /**
   * The failover bound from "declared down" (issue 18: service restored within 10 s of it):
   * troupe.transport.rehoming-wait-millis, the default (reference.conf), after which a request
   * held for a partition without a live home is refused.
   */
  private static final long REHOMING_WAIT_MILLIS = com.typesafe.config.ConfigFactory
      .defaultReference().getLong("troupe.transport.rehoming-wait-millis");

  /**
   * When {@code node} last saw a member declared down (its metric
   * troupe_cluster_last_member_downed_timestamp_seconds), in epoch milliseconds.
   */
  static long lastDownedEpochMillis(ServerProcess node) throws Exception {
    for (String line : node.get("/metrics").text().lines().toList()) {
      if (line.startsWith("troupe_cluster_last_member_downed_timestamp_seconds ")) {
        return Math.round(Double.parseDouble(line.substring(line.indexOf(' ') + 1).trim())
            * 1000);
      }
    }
    throw new AssertionError("no troupe_cluster_last_member_downed_timestamp_seconds");
  }

  /** troupe.transactions.in-doubt-query-interval-millis, the default (reference.conf). */
  private static final long IN_DOUBT_QUERY_INTERVAL_MILLIS = 5_000;

  private void run(ThreeNodeCluster.Options options) throws Exception {
    ClusterBank bank = new ClusterBank(ACCOUNTS, cluster::node);
    bank.setUp(cluster.node(0), running());
    String[] probes = probeEntities(options.partitions());
    long seed = Long.getLong("troupe.test.seed", System.nanoTime());
    System.out.println("ClusterFailoverTest seed " + seed);
    bank.startClients(CLIENTS, seed);
    Thread.sleep(3_000);
    long bound = options.failoverBoundMillis();
    List<String> figures = new ArrayList<>();
    List<Integer> killed = new ArrayList<>();
    for (int cycle = 0; cycle < 2; cycle++) {
      Map<Integer, Integer> before = cluster.awaitPlacementOfAll();
      // A different victim each cycle, among the members hosting a partition (a restarted member
      // gets partitions back only when sharding rebalances).
      int victim = List.of(2, 1, 0).stream()
          .filter(index -> before.containsValue(ThreeNodeCluster.nodeId(index)))
          .sorted(java.util.Comparator.comparing(killed::contains)).findFirst().orElseThrow();
      killed.add(victim);
      int moved = before.entrySet().stream()
          .filter(entry -> entry.getValue() == ThreeNodeCluster.nodeId(victim))
          .mapToInt(Map.Entry::getKey).findFirst().orElseThrow();
      int survivor = (victim + 1) % 3;
      long killedAt = System.nanoTime();
      long killedAtEpochMillis = System.currentTimeMillis();
      long killedSecond = bank.secondsSinceStart();
      cluster.kill(victim);
      long restoredMillis = firstWriteMillis(cluster.node(survivor), probes[moved], killedAt,
          bound);
      // From "declared down" (the survivor's own record of it): the setting's bound.
      long downedAtEpochMillis = lastDownedEpochMillis(cluster.node(survivor));
      long afterDownedMillis = killedAtEpochMillis + restoredMillis - downedAtEpochMillis;
      List<Integer> survivors = cluster.running();
      Map<Integer, Integer> after = cluster.awaitPlacement(survivors, bound, false);
      long placedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
      String figure = ("kill -9 of node %d: first write to moved partition %d (through node %d)"
          + " %d ms after the kill, %d ms after it was declared down (%d ms after the kill;"
          + " bound troupe.transport.rehoming-wait-millis %d ms), every partition hosted again by"
          + " %d ms (bound %d ms;"
          + " failure detector pause %d ms, stable-after %d ms); placement %s -> %s;"
          + " acknowledged so far %d; killed at second %d of the time line").formatted(
          ThreeNodeCluster.nodeId(victim), moved,
          ThreeNodeCluster.nodeId(survivor), restoredMillis, afterDownedMillis,
          downedAtEpochMillis - killedAtEpochMillis, REHOMING_WAIT_MILLIS, placedMillis, bound,
          options.failureDetectorPauseMillis(), options.stableAfterMillis(), before, after,
          bank.acknowledgedCount(), killedSecond);
      System.out.println(figure);
      figures.add(figure);
      assertTrue(restoredMillis <= bound, figure);
      assertTrue(downedAtEpochMillis >= killedAtEpochMillis,
          "the survivor recorded the victim's downing: " + figure);
      assertTrue(afterDownedMillis <= REHOMING_WAIT_MILLIS, figure);
      if (cycle == 0) {
        // The coordinator fence (docs/ARCHITECTURE.md, "On the shared store"): the victim was
        // killed with transactions it coordinates undecided and is NOT started yet. Service must
        // return without it: within the failover bound plus one in-doubt question interval (and
        // a request timeout of slack) every account is writable through a survivor, the survivors
        // having ended the dead member's coordinators and answered its participants in doubt
        // from the shared store (committed if its decision is recorded, else aborted). (This was
        // a test of its own with a cluster of its own; folded in here for CI time.)
        long fenceBoundMillis = bound + IN_DOUBT_QUERY_INTERVAL_MILLIS + 10_000;
        long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
        long writableMillis = bank.awaitEveryAccountWritable(cluster.node(survivor),
            Math.max(1_000, fenceBoundMillis - elapsedMillis));
        figures.add(("kill -9 of node %d, before it is started again: every account writable"
            + " through node %d %d ms after the kill (bound %d ms)").formatted(
            ThreeNodeCluster.nodeId(victim), ThreeNodeCluster.nodeId(survivor),
            elapsedMillis + writableMillis, fenceBoundMillis));
      }
      cluster.start(victim);
      figures.add("node " + ThreeNodeCluster.nodeId(victim) + " started again at second "
          + bank.secondsSinceStart());
      cluster.awaitPlacement(List.of(0, 1, 2), 120_000, false);
      long acknowledgedWhenHosted = bank.acknowledgedCount();
      // Progress is awaited, not sampled after a fixed pause: on a loaded 2-core machine the
      // clients' requests sent to the dead member may still be waiting out their timeouts here.
      long progressMillis = awaitProgress(bank, acknowledgedWhenHosted, PROGRESS_TIMEOUT_MILLIS);
      figures.add("clients acknowledged a new transfer after the kill and restart of node "
          + ThreeNodeCluster.nodeId(victim) + " within " + progressMillis
          + " ms of every member hosting again");
      assertTrue(progressMillis >= 0, "the clients made no progress within "
          + PROGRESS_TIMEOUT_MILLIS + " ms after node " + ThreeNodeCluster.nodeId(victim)
          + " was killed and started again: " + bank.timeLine() + "; outcomes "
          + bank.outcomeCounts());
    }
    bank.stopClients();
    cluster.awaitPlacement(List.of(0, 1, 2), 120_000, false);
    long writableMillis = bank.awaitEveryAccountWritable(cluster.node(0), 60_000);
    long openMillis = awaitNoOpenTransactions(60_000);
    bank.check(cluster.node(1));
    Map<String, Long> outcomes = bank.outcomeCounts();
    System.out.println("ClusterFailoverTest figures:");
    figures.forEach(figure -> System.out.println("  " + figure));
    System.out.println("  every account writable after the run within " + writableMillis
        + " ms; no transaction open on any member within " + openMillis + " ms");
    System.out.println("  acknowledged transfers checked: " + bank.acknowledged.size()
        + ", refused (precondition_failed, checked absent): " + bank.refused.size());
    System.out.println("  outcomes: " + outcomes);
    System.out.println("  time line (second: acknowledged/slowest ms): " + bank.timeLine());
    for (String kind : List.of("turn", "sync", "planned", "dynamic")) {
      assertTrue(outcomes.getOrDefault(kind + " acknowledged", 0L) >= 20,
          "enough " + kind + " writes were acknowledged: " + outcomes);
    }
  }

  /** How long the clients may take to acknowledge a new transfer once every member hosts again. */
  private static final long PROGRESS_TIMEOUT_MILLIS = 60_000;

  /**
   * Waits until the clients have acknowledged more than {@code before} transfers; answers the
   * milliseconds it took, or -1 past {@code timeoutMillis}.
   */
  private static long awaitProgress(ClusterBank bank, long before, long timeoutMillis)
      throws InterruptedException {
    long start = System.nanoTime();
    while (System.nanoTime() - start < TimeUnit.MILLISECONDS.toNanos(timeoutMillis)) {
      if (bank.acknowledgedCount() > before) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      }
      Thread.sleep(100);
    }
    return -1;
  }

  private List<ServerProcess> running() {
    return cluster.running().stream().map(cluster::node).toList();
  }

  /** One schemaless entity per partition: {@code Probe/p<k>} for the first k that hashes to it. */
  static String[] probeEntities(int partitions) {
    String[] probes = new String[partitions];
    int found = 0;
    for (int k = 0; found < partitions; k++) {
      int partition = EntityLocator.partitionOf(new EntityId("Probe", "p" + k), partitions);
      if (probes[partition] == null) {
        probes[partition] = "p" + k;
        found++;
      }
    }
    return probes;
  }

  /**
   * Writes {@code Probe/<probe>} through {@code node} until a write is acknowledged; answers the
   * milliseconds from {@code since} to that acknowledgement (fails past {@code boundMillis} plus
   * one request timeout).
   */
  static long firstWriteMillis(ServerProcess node, String probe, long since, long boundMillis)
      throws Exception {
    long deadline = since + TimeUnit.MILLISECONDS.toNanos(boundMillis + 10_000);
    String last = "";
    for (int n = 0; System.nanoTime() < deadline; n++) {
      try {
        Answer answer = ServerProcess.send(node.baseUrl() + "/v1/entities/Probe/" + probe
            + "/keys/n", "PUT", Integer.toString(n), "application/json", Map.of(),
            Duration.ofSeconds(5));
        if (answer.status() == 200) {
          return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - since);
        }
        last = answer.text();
      } catch (IOException timedOut) {
        last = timedOut.toString();
      }
      Thread.sleep(100);
    }
    throw new AssertionError("no write to Probe/" + probe + " was acknowledged within "
        + (boundMillis + 10_000) + " ms of the kill; last: " + last);
  }

  /**
   * Waits until every member's {@code troupe_transactions_open} is 0 (every transaction its
   * coordinators ran has ended); answers how long it took.
   */
  private long awaitNoOpenTransactions(long timeoutMillis) throws Exception {
    long start = System.nanoTime();
    String last = "";
    while (System.nanoTime() - start < TimeUnit.MILLISECONDS.toNanos(timeoutMillis)) {
      boolean none = true;
      for (int index : cluster.running()) {
        String metrics = cluster.node(index).get("/metrics").text();
        for (String line : metrics.lines().toList()) {
          if (line.startsWith("troupe_transactions_open ")
              && Double.parseDouble(line.substring(line.indexOf(' ') + 1).trim()) != 0) {
            none = false;
            last = "node " + ThreeNodeCluster.nodeId(index) + ": " + line;
          }
        }
      }
      if (none) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      }
      Thread.sleep(250);
    }
    throw new AssertionError("transactions still open after " + timeoutMillis + " ms: " + last);
  }
}
