package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.server.ServerProcess.Answer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two-phase commit survives {@code kill -9} of the node that runs coordinators and participants:
 * clients run transfers between accounts in different partitions, each also writing a receipt
 * entity, and the server is killed at random moments, mid-stream, 8 times. After every restart
 * (which resolves in-doubt transactions before serving):
 *
 * <ul>
 *   <li>every acknowledged transfer's receipt is present (nothing acknowledged is lost);
 *   <li>each account's balance equals its opening balance plus exactly the transfers whose receipt
 *       exists (all or nothing: no half-applied transfer, including the unacknowledged ones);
 *   <li>the total is conserved.
 * </ul>
 *
 * Over all restarts, recovery must have resolved some prepared parts (commit or presumed abort),
 * so the in-doubt path really ran.
 */
class TransactionCrashTest {
  private static final int CYCLES = 6;
  /**
   * Transfers each cycle acknowledges at least before its kill (waiting past the random kill time,
   * up to {@link #LONGEST_CYCLE_MILLIS}, on a slow or loaded machine), so that the run always
   * exercises more than the 200 acknowledged transfers it asserts.
   */
  private static final int LEAST_ACKNOWLEDGED_PER_CYCLE = 34;
  private static final long LONGEST_CYCLE_MILLIS = 15_000;
  private static final int CLIENTS = 6;
  private static final int ACCOUNTS = 6;
  private static final long OPENING = 10_000;

  @TempDir Path data;

  private record Transfer(int from, int to, long amount) {}

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"Account", "PsacAccount"})
  void transfersAreAtomicAndDurableAcrossKillNine(String type) throws Exception {
    long seed = Long.getLong("troupe.test.seed", System.nanoTime());
    System.out.println("TransactionCrashTest seed " + seed + " (rerun with -Dtroupe.test.seed=" + seed + ")");
    Random random = new Random(seed);
    Path directory = data.resolve("node");
    String[] settings = {
      "troupe.storage.partitions=4",
      "troupe.storage.checkpoint-every-operations=50",
      "troupe.storage.checkpoint-interval-millis=200",
      "troupe.storage.history-retention-millis=100"
    };
    Map<String, Transfer> attempted = new ConcurrentHashMap<>();
    Map<String, Boolean> acknowledged = new ConcurrentHashMap<>();
    Map<String, Transfer> committed = new HashMap<>();
    long recoveredParts = 0;

    ServerProcess first = ServerProcess.start(directory, settings);
    try {
      String yaml = type.equals("Account") ? TransactionRestTest.BANK_YAML
          : TransactionRestTest.bankType(type, "psac\npsac: {maxInFlight: 4, maxOvertakes: 8}");
      Answer defined = first.send("PUT", "/v1/types/" + type, yaml, "application/yaml");
      assertEquals(200, defined.status(), defined.text());
      for (int i = 0; i < ACCOUNTS; i++) {
        assertEquals(200, first.send("POST", "/v1/entities/" + type + "/k" + i + "/actions/open",
            "{\"initial\": " + OPENING + "}").status());
      }
    } finally {
      first.close();
    }

    for (int cycle = 0; cycle <= CYCLES; cycle++) {
      ServerProcess server = ServerProcess.start(directory, settings);
      try {
        String metrics = server.get("/metrics").text();
        recoveredParts += metric(metrics, "troupe_transactions_recovered_committed")
            + metric(metrics, "troupe_transactions_recovered_aborted");
        verify(server, type, cycle, attempted, acknowledged, committed);
        if (cycle == CYCLES) {
          server.close(); // the last incarnation, verified: not left running after the test
          break;
        }
        AtomicBoolean running = new AtomicBoolean(true);
        List<Thread> clients = new ArrayList<>();
        for (int c = 0; c < CLIENTS; c++) {
          Random clientRandom = new Random(random.nextLong());
          String prefix = "c" + cycle + "-" + c + "-";
          Thread thread = new Thread(() -> transfer(server, type, prefix, clientRandom, running,
              attempted, acknowledged));
          thread.setDaemon(true);
          thread.start();
          clients.add(thread);
        }
        int acknowledgedBefore = acknowledged.size();
        long cycleStartNanos = System.nanoTime();
        Thread.sleep(400 + random.nextInt(1200));
        while (acknowledged.size() - acknowledgedBefore < LEAST_ACKNOWLEDGED_PER_CYCLE
            && System.nanoTime() - cycleStartNanos < LONGEST_CYCLE_MILLIS * 1_000_000) {
          Thread.sleep(20);
        }
        server.kill();
        running.set(false);
        for (Thread thread : clients) {
          thread.join(10_000);
        }
      } catch (Throwable failure) {
        System.out.println("server log of the failing cycle " + cycle + ":\n" + server.log());
        server.kill();
        throw failure;
      }
    }
    System.out.println(type + ": transfers attempted " + attempted.size() + ", acknowledged "
        + acknowledged.size() + ", committed " + committed.size() + ", prepared parts resolved"
        + " by recovery " + recoveredParts);
    assertTrue(acknowledged.size() > 200, "the test transferred too little: " + acknowledged.size());
    assertTrue(recoveredParts > 0, "no restart found an in-doubt transaction to resolve");
  }

  private static void transfer(ServerProcess server, String type, String prefix, Random random,
      AtomicBoolean running, Map<String, Transfer> attempted, Map<String, Boolean> acknowledged) {
    for (int n = 0; running.get(); n++) {
      int from = random.nextInt(ACCOUNTS);
      int to = (from + 1 + random.nextInt(ACCOUNTS - 1)) % ACCOUNTS;
      Transfer transfer = new Transfer(from, to, 1 + random.nextInt(50));
      String receipt = prefix + n;
      attempted.put(receipt, transfer);
      String body = """
          {"ops": [
            {"entity": "%s/k%d", "action": "withdraw", "args": {"amount": %d}},
            {"entity": "%s/k%d", "action": "deposit", "args": {"amount": %d}},
            {"entity": "Receipt/%s", "key": "amount", "op": "assign", "value": %d}]}
          """.formatted(type, from, transfer.amount(), type, to, transfer.amount(), receipt,
          transfer.amount());
      try {
        Answer answer = server.send("POST", "/v1/transactions", body);
        if (answer.status() == 200) {
          acknowledged.put(receipt, true);
        } else if (answer.status() != 409) {
          // Anything but a clean abort: its fate is settled by the receipt after the restart.
          continue;
        }
      } catch (Exception killed) {
        return;
      }
    }
  }

  /** Settles every transfer attempted before the crash, then checks every balance. */
  private static void verify(ServerProcess server, String type, int cycle,
      Map<String, Transfer> attempted,
      Map<String, Boolean> acknowledged, Map<String, Transfer> committed) throws Exception {
    for (Map.Entry<String, Transfer> entry : new ArrayList<>(attempted.entrySet())) {
      String receipt = entry.getKey();
      Answer answer = server.get("/v1/entities/Receipt/" + receipt);
      if (answer.status() == 200) {
        assertEquals(entry.getValue().amount(), answer.body().at("/state/amount").asLong());
        committed.put(receipt, entry.getValue());
      } else {
        assertEquals(404, answer.status(), answer.text());
        assertTrue(!acknowledged.containsKey(receipt),
            "cycle " + cycle + ": acknowledged transfer " + receipt + " was lost");
      }
      attempted.remove(receipt);
    }
    long[] expected = new long[ACCOUNTS];
    java.util.Arrays.fill(expected, OPENING);
    for (Transfer transfer : committed.values()) {
      expected[transfer.from()] -= transfer.amount();
      expected[transfer.to()] += transfer.amount();
    }
    long total = 0;
    for (int i = 0; i < ACCOUNTS; i++) {
      Answer account = server.get("/v1/entities/" + type + "/k" + i);
      assertEquals(200, account.status(), account.text());
      long balance = account.body().at("/state/balance").asLong();
      assertEquals(expected[i], balance, "cycle " + cycle + ": account k" + i
          + " does not match the transfers whose receipt exists (a half-applied transfer)");
      assertTrue(balance >= 0);
      total += balance;
    }
    assertEquals(ACCOUNTS * OPENING, total, "money is conserved");
  }

  private static long metric(String metrics, String name) {
    return metrics.lines().filter(line -> line.startsWith(name + " ")).findFirst()
        .map(line -> (long) Double.parseDouble(line.substring(name.length() + 1))).orElse(0L);
  }
}
