package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.server.ServerProcess.Answer;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
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
 * A rolling restart of a three-member data centre under load (issue 18), as docs/OPERATIONS.md
 * describes it: each member in turn is stopped with SIGTERM (it drains, leaves the cluster and
 * hands its partitions off while it still answers), the test waits until the two others host
 * every partition, starts it again and waits until it is back in the placement; meanwhile clients
 * write through the members that are up. No member may be declared down (each left), no
 * decision may be fenced (no live member's coordinators ended), the aborts the restarts cost are
 * bounded, and so is the time from a stopping member's exit until the others host everything. A client retries a request refused with 503 ({@code not_owner}, {@code unavailable}, {@code
 * overloaded}; each with Retry-After) or lost to a connection error, on the next member, and a
 * transaction aborted for contention or an unanswered participant ({@code 409 aborted}, reason
 * {@code lock_conflict}, {@code timeout}, {@code participant_unavailable}: nothing written) or
 * answered {@code 500 outcome_unknown}, as README allows; the retries are counted by reason and
 * printed (they are the cost of a rolling restart a client sees). Nothing else may fail, and every
 * acknowledged write is read back afterwards.
 *
 * <p>The writes are idempotent under such retries: a key put (the same value again) and a sync
 * action on a Transfer entity of its own whose precondition refuses a second booking, so a retry
 * answered {@code precondition_failed} after an attempt whose answer was lost is resolved by
 * reading the Transfer (booked: the earlier attempt committed).
 */
class ClusterRollingRestartTest {
  private static final int ACCOUNTS = 6;
  private static final int CLIENTS = 4;
  /**
   * How long one request is retried (each attempt after a short pause) before it counts as
   * failed: time, not a count of attempts, bounds it, since a member's partitions are unavailable
   * for the whole hand-off of its restart whatever the machine's speed (0.1-0.3 s measured since
   * the member leaves gracefully; 12-15 s when it was downed instead), and a rebalance or a slow
   * machine stretches it.
   */
  private static final long RETRY_BUDGET_MILLIS = 60_000;
  /**
   * The reasons of a transaction's abort a client sends it again for: contention and a
   * participant that did not answer (README, "A transaction that aborts"); nothing was written.
   */
  private static final java.util.Set<String> RETRIED_ABORTS =
      java.util.Set.of("lock_conflict", "timeout", "participant_unavailable");
  /**
   * The most aborted attempts (409, any reason) per request the restarts may cost: a stopping
   * member drains its transactions and hands its partitions off while it still answers, so only
   * transactions caught by a hand-off abort (measured: 3 to 19 of 1,400-2,800 requests). Before
   * the graceful leave worked, a stopping member was cut off at SIGTERM and, downing itself,
   * ended the other members' coordinators: 510-860 aborts of 690-740 requests.
   */
  private static final double MOST_ABORTS_PER_REQUEST = 0.1;
  /**
   * The longest from a stopping member's exit until the others agree they host every partition
   * (measured 0.3-4.3 s; the hand-off itself ends before the exit, the rest is the removal and
   * the status queries of the placement check), with room for a loaded two-core machine.
   */
  private static final long HAND_OFF_AFTER_EXIT_BOUND_MILLIS = 10_000;

  @TempDir Path directory;
  private ThreeNodeCluster cluster;
  private final Map<String, AtomicLong> retries = new ConcurrentHashMap<>();
  private final List<String> failures = java.util.Collections.synchronizedList(new ArrayList<>());
  private final Map<String, Long> acknowledgedPuts = new ConcurrentHashMap<>();
  private final Map<String, Boolean> acknowledgedTransfers = new ConcurrentHashMap<>();
  private final AtomicLong requests = new AtomicLong();
  private final Map<String, String> samples = new ConcurrentHashMap<>();
  private final AtomicBoolean running = new AtomicBoolean(true);
  /** Aborts because a decision was fenced: a coordinator's node had been ended. */
  private final AtomicLong fencedDecisions = new AtomicLong();

  @AfterEach
  void stop() throws InterruptedException {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void everyMemberRestartedInTurnUnderLoadLosesNothing() throws Exception {
    ThreeNodeCluster.Options options = ThreeNodeCluster.Options.defaults();
    cluster = ThreeNodeCluster.start(directory, options);
    cluster.check(() -> run(options));
  }

  private void run(ThreeNodeCluster.Options options) throws Exception {
    ClusterBank bank = new ClusterBank(ACCOUNTS, cluster::node);
    bank.setUp(cluster.node(0), cluster.running().stream().map(cluster::node).toList());
    List<Thread> clients = new ArrayList<>();
    for (int c = 0; c < CLIENTS; c++) {
      int client = c;
      Thread thread = new Thread(() -> write(client), "rolling-client-" + c);
      thread.setDaemon(true);
      thread.start();
      clients.add(thread);
    }
    Thread.sleep(2_000);
    List<String> figures = new ArrayList<>();
    List<Long> handOffsAfterExit = new ArrayList<>();
    for (int member = 0; member < 3; member++) {
      long requestsBefore = requests.get();
      long stoppedAt = System.nanoTime();
      cluster.stop(member);
      long exitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stoppedAt);
      List<Integer> others = cluster.running();
      Map<Integer, Integer> handedOff =
          cluster.awaitPlacement(others, options.failoverBoundMillis(), false);
      long handedOffMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stoppedAt);
      handOffsAfterExit.add(handedOffMillis - exitedMillis);
      long startedAt = System.nanoTime();
      cluster.start(member);
      Map<Integer, Integer> back = cluster.awaitPlacementOfAll();
      long rejoinedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startedAt);
      String figure = ("node %d: exited %d ms after SIGTERM, partitions hosted by the others"
          + " %d ms after SIGTERM, %d ms after its exit (%s), started and hosting again %d ms"
          + " later (%s); requests meanwhile %d").formatted(ThreeNodeCluster.nodeId(member),
          exitedMillis, handedOffMillis, handedOffMillis - exitedMillis, handedOff,
          rejoinedMillis, back, requests.get() - requestsBefore);
      System.out.println(figure);
      figures.add(figure);
      Thread.sleep(1_000);
    }
    running.set(false);
    for (Thread thread : clients) {
      thread.join(120_000);
    }
    ServerProcess reader = cluster.node(2);
    for (Map.Entry<String, Long> put : acknowledgedPuts.entrySet()) {
      Answer answer = reader.getRetrying(put.getKey(), 30_000);
      assertEquals(200, answer.status(), "acknowledged write lost: " + put.getKey() + " "
          + answer.text());
      assertEquals(put.getValue().longValue(), answer.body().get("value").asLong(), put.getKey());
    }
    for (String transfer : acknowledgedTransfers.keySet()) {
      Answer marker = reader.getRetrying("/v1/entities/Transfer/" + transfer, 30_000);
      assertEquals("booked", marker.body().at("/state/status").asText(),
          "acknowledged transfer lost: " + transfer + " " + marker.text());
    }
    bank.check(reader);
    Map<String, Long> retried = new TreeMap<>();
    retries.forEach((reason, count) -> retried.put(reason, count.get()));
    System.out.println("ClusterRollingRestartTest figures:");
    figures.forEach(figure -> System.out.println("  " + figure));
    System.out.printf("  requests %d, acknowledged puts %d, acknowledged transfers %d,"
        + " retries by reason %s, failures %d%n", requests.get(), acknowledgedPuts.size(),
        acknowledgedTransfers.size(), retried, failures.size());
    samples.forEach((reason, text) -> System.out.println("  a " + reason + ": " + text));
    assertTrue(failures.isEmpty(), "requests failed beyond the documented retries: " + failures);
    // A member stopped with SIGTERM leaves the cluster: no member is ever declared down (the
    // failure detector and the split brain resolver are for members that die, not for these).
    for (String log : cluster.memberLogs()) {
      assertTrue(!log.contains(") declared down"), "a member was downed instead of leaving: "
          + log.lines().filter(line -> line.contains("declared down")).toList());
    }
    // Nothing ends a live member's coordinators: no decision is fenced.
    assertEquals(0, fencedDecisions.get(), "decisions refused by the coordinator fence");
    long aborts = retried.entrySet().stream().filter(e -> e.getKey().startsWith("409 aborted"))
        .mapToLong(Map.Entry::getValue).sum();
    assertTrue(aborts <= MOST_ABORTS_PER_REQUEST * requests.get(), "the restarts aborted "
        + aborts + " attempts of " + requests.get() + " requests: " + retried);
    for (long afterExit : handOffsAfterExit) {
      assertTrue(afterExit <= HAND_OFF_AFTER_EXIT_BOUND_MILLIS, "partitions hosted by the others"
          + " only " + afterExit + " ms after a stopping member's exit: " + figures);
    }
    assertTrue(acknowledgedPuts.size() > 100 && acknowledgedTransfers.size() > 50,
        "the clients wrote during the restarts");
  }

  /** A client: puts and transfers, alternately, each retried on the next member as allowed. */
  private void write(int client) {
    java.util.Random random = new java.util.Random(client);
    for (long n = 0; running.get(); n++) {
      String id = "r" + client + "-" + n;
      try {
        if (n % 2 == 0) {
          String path = "/v1/entities/Item/" + id + "/keys/value";
          Answer answer = withRetries(client + n, path, "PUT", Long.toString(n));
          if (answer != null) {
            acknowledgedPuts.put(path, n);
          }
        } else {
          int from = random.nextInt(ACCOUNTS);
          int to = (from + 1 + random.nextInt(ACCOUNTS - 1)) % ACCOUNTS;
          String path = "/v1/entities/Transfer/" + id + "/actions/book";
          String body = "{\"from\": \"a%d\", \"to\": \"a%d\", \"amount\": %d}".formatted(from,
              to, 1 + random.nextInt(20));
          Answer answer = withRetries(client + n, path, "POST", body);
          if (answer != null) {
            acknowledgedTransfers.put(id, true);
          }
        }
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /**
   * Sends until acknowledged (the answer) or genuinely refused (null: a {@code
   * precondition_failed} not explained by an earlier attempt); a refusal other than 503 or a
   * request still not acknowledged after {@link #RETRY_BUDGET_MILLIS} is a failure.
   */
  private Answer withRetries(long start, String path, String method, String body)
      throws InterruptedException {
    requests.incrementAndGet();
    boolean answerLost = false;
    String last = "";
    long deadline = System.nanoTime()
        + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(RETRY_BUDGET_MILLIS);
    for (int attempt = 0; System.nanoTime() < deadline; attempt++) {
      ServerProcess node = null;
      for (int k = 0; k < 3 && node == null; k++) {
        node = cluster.node((int) ((start + attempt + k) % 3));
      }
      if (node == null) {
        Thread.sleep(100);
        continue;
      }
      try {
        Answer answer = ServerProcess.send(node.baseUrl() + path, method, body,
            "application/json", Map.of(), Duration.ofSeconds(15));
        if (answer.status() == 200) {
          return answer;
        }
        String reason = answer.body().path("reason").asText("");
        boolean preconditionFailed = "precondition_failed".equals(answer.errorCode())
            || ("aborted".equals(answer.errorCode()) && reason.equals("precondition_failed"));
        if (answer.status() == 409 && preconditionFailed) {
          if (answerLost && path.startsWith("/v1/entities/Transfer/")) {
            String transfer = path.substring("/v1/entities/Transfer/".length(),
                path.indexOf("/actions/"));
            Answer marker = node.get("/v1/entities/Transfer/" + transfer);
            if ("booked".equals(marker.body().at("/state/status").asText())) {
              retries.computeIfAbsent("resolved by reading the marker", k -> new AtomicLong())
                  .incrementAndGet();
              return answer;
            }
          }
          return null;
        }
        if (answer.status() == 409 && "aborted".equals(answer.errorCode())
            && RETRIED_ABORTS.contains(reason)) {
          // Aborted, nothing written: README's "A transaction that aborts" may be sent again.
          retries.computeIfAbsent("409 aborted " + reason, k -> new AtomicLong())
              .incrementAndGet();
          // One message per reason, printed: what the cluster said (the retries' cause).
          samples.putIfAbsent("409 aborted " + reason, answer.text());
          if (answer.text().contains("ended this node's coordinators")) {
            fencedDecisions.incrementAndGet();
          }
          last = answer.text();
          Thread.sleep(100);
          continue;
        }
        if (answer.status() == 500 && "outcome_unknown".equals(answer.errorCode())) {
          // README's "Retrying safely": the answer is lost; the retry finds out (the marker).
          retries.computeIfAbsent("500 outcome_unknown", k -> new AtomicLong())
              .incrementAndGet();
          answerLost = true;
          Thread.sleep(100);
          continue;
        }
        if (answer.status() != 503) {
          failures.add(method + " " + path + ": " + answer.status() + " " + answer.text());
          return null;
        }
        last = answer.text();
        retries.computeIfAbsent("503 " + answer.errorCode(), k -> new AtomicLong())
            .incrementAndGet();
        answerLost = true;
        long retryAfterMillis = answer.header("Retry-After").map(Long::parseLong).orElse(0L)
            * 1000;
        Thread.sleep(Math.min(retryAfterMillis, 200) + 50);
      } catch (IOException connection) {
        last = connection.toString();
        answerLost = true;
        retries.computeIfAbsent("connection error", k -> new AtomicLong()).incrementAndGet();
        Thread.sleep(100);
      }
    }
    failures.add(method + " " + path + ": not acknowledged within " + RETRY_BUDGET_MILLIS
        + " ms of retries; last: " + last);
    return null;
  }
}
