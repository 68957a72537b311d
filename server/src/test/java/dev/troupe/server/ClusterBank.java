package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.server.ServerProcess.Answer;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.IntFunction;

/**
 * A bank workload for the three-node tests: accounts whose money is {@code balance + savings},
 * moved by every kind of write Troupe has, each sent by several client threads to the members
 * round-robin:
 *
 * <ul>
 *   <li>a single-entity turn: {@code Account.save} moves money between balance and savings (a
 *       positive amount into savings, a negative one back out) and counts itself in the account's
 *       {@code saves} register (same turn). Both ways, half of the time each: a save only into
 *       savings drained every balance after ~300 acknowledged saves, and from then on nearly
 *       every request failed its precondition, which looked like a stalled cluster;
 *   <li>a sync action: {@code Transfer/<unique id>.book} withdraws and deposits through sync calls
 *       and marks its own Transfer entity booked;
 *   <li>planned and dynamic transactions: withdraw, deposit and {@code Transfer/<unique id>.mark}
 *       in one transaction.
 * </ul>
 *
 * <p>So every transfer leaves a marker written in the same transaction: an acknowledged transfer
 * must have its Transfer entity booked afterwards; one refused with {@code precondition_failed}
 * must not; one whose answer was lost (a connection error, a timeout, {@code outcome_unknown},
 * {@code not_owner}, {@code unavailable}) may be either. Saves are counted: per account, the
 * acknowledged saves ≤ the {@code saves} register ≤ the saves sent.
 */
final class ClusterBank {
  static final String ACCOUNT_YAML = """
      type: Account
      keys:
        balance: {kind: register, default: 0}
        savings: {kind: register, default: 0}
        saves:   {kind: register, default: 0}
        touches: {kind: register, default: 0}
        status:  {kind: register, default: "new"}
      actions:
        open:     {params: {initial: int}, pre: ["status == 'new'", "initial >= 0"],
                   effect: {status: "'open'", balance: "initial"}}
        withdraw: {params: {amount: int}, pre: ["status == 'open'", "amount > 0", "balance - amount >= 0"],
                   effect: {balance: "balance - amount"}}
        deposit:  {params: {amount: int}, pre: ["status == 'open'", "amount > 0"],
                   effect: {balance: "balance + amount"}}
        save:     {params: {amount: int}, pre: ["status == 'open'", "amount != 0", "balance - amount >= 0",
                                                "savings + amount >= 0"],
                   effect: {balance: "balance - amount", savings: "savings + amount", saves: "saves + 1"}}
        touch:    {params: {}, effect: {touches: "touches + 1"}}
      """;
  static final String TRANSFER_YAML = """
      type: Transfer
      keys:
        status: {kind: register, default: "new"}
      actions:
        book: {params: {from: string, to: string, amount: int}, pre: ["status == 'new'"],
               effect: {status: "'booked'"},
               sync: [{entity: "Account/{from}", action: withdraw, args: {amount: amount}},
                      {entity: "Account/{to}",   action: deposit,  args: {amount: amount}}]}
        mark: {params: {}, pre: ["status == 'new'"], effect: {status: "'booked'"}}
      """;
  static final long INITIAL = 1_000;
  /** How long a client waits for one answer before it counts the request as unknown. */
  static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(15);

  private final int accounts;
  private final IntFunction<ServerProcess> member;
  /** Transfer id -> kind, for every acknowledged transfer. */
  final Map<String, String> acknowledged = new ConcurrentHashMap<>();
  /** Transfer ids refused with precondition_failed: none may be booked. */
  final Set<String> refused = ConcurrentHashMap.newKeySet();
  /** What each answer was, by kind and outcome: "planned committed", "sync connection_error"... */
  final Map<String, AtomicLong> outcomes = new ConcurrentHashMap<>();
  final AtomicLongArray savesSent;
  final AtomicLongArray savesAcknowledged;
  private final AtomicBoolean running = new AtomicBoolean();
  private final long startNanos = System.nanoTime();
  /** Per second since this bank was made: answers acknowledged, and the slowest answer (ms). */
  private final AtomicLongArray acknowledgedPerSecond = new AtomicLongArray(3600);
  private final AtomicLongArray slowestPerSecond = new AtomicLongArray(3600);
  private final List<Thread> clients = new ArrayList<>();

  /**
   * @param accounts how many accounts
   * @param member member index (0..2) -> its server, or null while it is down
   */
  ClusterBank(int accounts, IntFunction<ServerProcess> member) {
    this.accounts = accounts;
    this.member = member;
    this.savesSent = new AtomicLongArray(accounts);
    this.savesAcknowledged = new AtomicLongArray(accounts);
  }

  /**
   * Defines the types through {@code node}, waits until every one of {@code members} knows them,
   * opens the accounts.
   */
  void setUp(ServerProcess node, List<ServerProcess> members) throws Exception {
    for (String yaml : List.of(ACCOUNT_YAML, TRANSFER_YAML)) {
      String type = yaml.lines().findFirst().orElseThrow().substring("type: ".length());
      Answer defined = node.send("PUT", "/v1/types/" + type, yaml, "application/yaml");
      assertEquals(200, defined.status(), defined.text());
      for (ServerProcess other : members) {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (other.get("/v1/types/" + type).status() != 200) {
          assertTrue(System.nanoTime() < deadline, "type " + type + " not seen by every member");
          Thread.sleep(100);
        }
      }
    }
    for (int i = 0; i < accounts; i++) {
      ServerProcess through = members.get(i % members.size());
      Answer opened = through.send("POST", "/v1/entities/Account/a" + i + "/actions/open",
          "{\"initial\": " + INITIAL + "}");
      assertEquals(200, opened.status(), opened.text());
    }
  }

  /** Starts {@code threads} clients, each sending to the running members round-robin. */
  void startClients(int threads, long seed) {
    running.set(true);
    for (int c = 0; c < threads; c++) {
      int client = c;
      Random random = new Random(seed + c);
      Thread thread = new Thread(() -> {
        for (long n = 0; running.get(); n++) {
          ServerProcess node = null;
          for (int k = 0; k < 3 && node == null; k++) {
            node = member.apply((int) ((client + n + k) % 3));
          }
          if (node == null) {
            sleep(50);
            continue;
          }
          send(node, "c" + client + "-" + n, (int) ((client + n) % 4), random);
        }
      }, "bank-client-" + c);
      thread.setDaemon(true);
      thread.start();
      clients.add(thread);
    }
  }

  /** Stops the clients and waits for their last requests. */
  void stopClients() throws InterruptedException {
    running.set(false);
    for (Thread thread : clients) {
      thread.join(REQUEST_TIMEOUT.toMillis() + 5_000);
    }
    clients.clear();
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void send(ServerProcess node, String id, int kindIndex, Random random) {
    int from = random.nextInt(accounts);
    int to = (from + 1 + random.nextInt(accounts - 1)) % accounts;
    long amount = 1 + random.nextInt(50);
    String kind = List.of("turn", "sync", "planned", "dynamic").get(kindIndex);
    String path;
    String body;
    switch (kind) {
      case "turn" -> {
        path = "/v1/entities/Account/a" + from + "/actions/save";
        body = "{\"amount\": " + (random.nextBoolean() ? amount : -amount) + "}";
        savesSent.incrementAndGet(from);
      }
      case "sync" -> {
        path = "/v1/entities/Transfer/" + id + "/actions/book";
        body = "{\"from\": \"a%d\", \"to\": \"a%d\", \"amount\": %d}".formatted(from, to, amount);
      }
      default -> {
        path = "/v1/transactions";
        body = """
            {"mode": "%s", "ops": [
              {"entity": "Account/a%d", "action": "withdraw", "args": {"amount": %d}},
              {"entity": "Account/a%d", "action": "deposit", "args": {"amount": %d}},
              {"entity": "Transfer/%s", "action": "mark", "args": {}}]}
            """.formatted(kind, from, amount, to, amount, id);
      }
    }
    String outcome;
    long sentAt = System.nanoTime();
    try {
      Answer answer = ServerProcess.send(node.baseUrl() + path, "POST", body, "application/json",
          Map.of(), REQUEST_TIMEOUT);
      if (answer.status() == 200) {
        long now = System.nanoTime();
        int second = (int) Math.min(3599, (now - startNanos) / 1_000_000_000L);
        acknowledgedPerSecond.incrementAndGet(second);
        slowestPerSecond.accumulateAndGet(second, (now - sentAt) / 1_000_000, Math::max);
        outcome = "acknowledged";
        if (kind.equals("turn")) {
          savesAcknowledged.incrementAndGet(from);
        } else {
          acknowledged.put(id, kind);
        }
      } else {
        outcome = answer.status() + " " + answer.errorCode();
        if ("precondition_failed".equals(answer.errorCode()) && !kind.equals("turn")) {
          refused.add(id);
        }
      }
    } catch (IOException | RuntimeException e) {
      outcome = "connection_error";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return;
    }
    outcomes.computeIfAbsent(kind + " " + outcome, k -> new AtomicLong()).incrementAndGet();
  }

  /** Acknowledged answers so far, of every kind. */
  long acknowledgedCount() {
    long total = 0;
    for (Map.Entry<String, AtomicLong> entry : outcomes.entrySet()) {
      if (entry.getKey().endsWith(" acknowledged")) {
        total += entry.getValue().get();
      }
    }
    return total;
  }

  /** Seconds since this bank was made (the time line of {@link #timeLine}). */
  long secondsSinceStart() {
    return (System.nanoTime() - startNanos) / 1_000_000_000L;
  }

  /**
   * Acknowledged answers per second and the slowest acknowledged answer of that second, in ms
   * ("second: count/slowest"), from the first second with an answer to the last.
   */
  String timeLine() {
    StringBuilder line = new StringBuilder();
    int last = 0;
    for (int second = 0; second < 3600; second++) {
      if (acknowledgedPerSecond.get(second) > 0) {
        last = second;
      }
    }
    for (int second = 0; second <= last; second++) {
      line.append(second).append(':').append(acknowledgedPerSecond.get(second)).append('/')
          .append(slowestPerSecond.get(second)).append(' ');
    }
    return line.toString().trim();
  }

  /** The outcomes, sorted, for the test's output. */
  Map<String, Long> outcomeCounts() {
    Map<String, Long> sorted = new TreeMap<>();
    outcomes.forEach((key, count) -> sorted.put(key, count.get()));
    return sorted;
  }

  /**
   * Waits (up to {@code timeoutMillis}) until a {@code touch} turn commits on every account
   * through {@code node}: no account is left locked by a prepared part of a transaction whose
   * outcome was not decided (an unresolved in-doubt part holds its entity's lock).
   */
  long awaitEveryAccountWritable(ServerProcess node, long timeoutMillis) throws Exception {
    long start = System.nanoTime();
    long deadline = start + timeoutMillis * 1_000_000;
    for (int i = 0; i < accounts; i++) {
      while (true) {
        Answer touched;
        try {
          touched = ServerProcess.send(node.baseUrl() + "/v1/entities/Account/a" + i
              + "/actions/touch", "POST", "{}", "application/json", Map.of(),
              Duration.ofSeconds(10));
        } catch (IOException e) {
          touched = null;
        }
        if (touched != null && touched.status() == 200) {
          break;
        }
        assertTrue(System.nanoTime() < deadline, "account a" + i + " is not writable: "
            + (touched == null ? "no answer" : touched.text()));
        Thread.sleep(200);
      }
    }
    return (System.nanoTime() - start) / 1_000_000;
  }

  /**
   * The checks after the run, reading through {@code node}: money conserved, no negative
   * balance, every acknowledged transfer booked, none refused booked, saves counted right.
   */
  void check(ServerProcess node) throws Exception {
    long total = 0;
    for (int i = 0; i < accounts; i++) {
      Answer account = node.getRetrying("/v1/entities/Account/a" + i, 30_000);
      assertEquals(200, account.status(), account.text());
      JsonNode state = account.body().get("state");
      long balance = state.get("balance").asLong();
      long savings = state.path("savings").asLong(0);
      long saves = state.path("saves").asLong(0);
      assertTrue(balance >= 0 && savings >= 0, "negative money in a" + i + ": " + state);
      total += balance + savings;
      assertTrue(saves >= savesAcknowledged.get(i) && saves <= savesSent.get(i),
          "a" + i + ": saves " + saves + ", acknowledged " + savesAcknowledged.get(i) + ", sent "
              + savesSent.get(i));
    }
    assertEquals(accounts * INITIAL, total, "money is conserved");
    List<String> lost = new ArrayList<>();
    for (Map.Entry<String, String> transfer : acknowledged.entrySet()) {
      Answer marker = node.getRetrying("/v1/entities/Transfer/" + transfer.getKey(), 30_000);
      if (marker.status() != 200
          || !"booked".equals(marker.body().at("/state/status").asText())) {
        // Say whether it is gone or its entity does not answer, through every member, twice.
        StringBuilder again = new StringBuilder();
        for (int attempt = 0; attempt < 2; attempt++) {
          for (int index = 0; index < 3; index++) {
            ServerProcess other = member.apply(index);
            if (other != null) {
              again.append("; through node ").append(index + 1).append(": ")
                  .append(other.get("/v1/entities/Transfer/" + transfer.getKey()).text());
            }
          }
        }
        lost.add(transfer.getValue() + " " + transfer.getKey() + ": " + marker.text() + again);
      }
    }
    assertTrue(lost.isEmpty(), "acknowledged transfers lost: " + lost);
    List<String> phantom = new ArrayList<>();
    for (String id : refused) {
      Answer marker = node.getRetrying("/v1/entities/Transfer/" + id, 30_000);
      if (marker.status() == 200 && "booked".equals(marker.body().at("/state/status").asText())) {
        phantom.add(id);
      }
    }
    assertTrue(phantom.isEmpty(), "transfers refused yet booked: " + phantom);
  }
}
