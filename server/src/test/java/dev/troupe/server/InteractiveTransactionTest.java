package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.server.ServerProcess.Answer;
import dev.troupe.txn.check.ConservationChecker;
import dev.troupe.txn.check.History;
import dev.troupe.txn.check.RecordedTransaction;
import dev.troupe.txn.check.SerializabilityChecker;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Interactive transactions through REST against a real server process: steps see their own
 * writes, nothing is visible or applied before commit, abort and the idle timeout release
 * everything, wait-die kills the younger of two conflicting transactions, and concurrent
 * interactive transfers are serializable and conserve money.
 */
class InteractiveTransactionTest {
  @TempDir static Path data;
  static ServerProcess server;

  @BeforeAll
  static void start() throws Exception {
    server = ServerProcess.start(data.resolve("node"),
        "troupe.transactions.interactive-idle-timeout-millis=1500");
    for (String yaml : List.of(TransactionRestTest.BANK_YAML,
        TransactionRestTest.bankType("PsacAccount", "psac"))) {
      String type = yaml.lines().findFirst().orElseThrow().substring("type: ".length());
      assertEquals(200, server.send("PUT", "/v1/types/" + type, yaml, "application/yaml").status());
    }
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
  }

  private static void open(String account) throws Exception {
    assertEquals(200, server.send("POST", "/v1/entities/Account/" + account + "/actions/open",
        "{\"initial\": 1000}").status());
  }

  private static long begin() throws Exception {
    Answer begun = server.send("POST", "/v1/transactions/begin", null);
    assertEquals(200, begun.status(), begun.text());
    assertEquals(1500, begun.body().get("idleTimeoutMillis").asLong());
    return begun.body().get("txId").asLong();
  }

  private static Answer step(long transaction, String step, String body) throws Exception {
    return server.send("POST", "/v1/transactions/" + transaction + "/" + step, body);
  }

  private static String action(String account, String action, long amount) {
    return "{\"entity\": \"Account/" + account + "\", \"action\": \"" + action
        + "\", \"args\": {\"amount\": " + amount + "}}";
  }

  private static long balance(String account) throws Exception {
    return server.get("/v1/entities/Account/" + account).body().at("/state/balance").asLong();
  }

  @Test
  void stepsSeeTheirOwnWritesAndNothingAppliesBeforeCommit() throws Exception {
    open("i0");
    open("i1");
    long transaction = begin();
    Answer read = step(transaction, "read", "{\"entity\": \"Account/i0\"}");
    assertEquals(200, read.status(), read.text());
    assertEquals(1000, read.body().at("/state/balance").asLong());
    assertEquals(200, step(transaction, "action", action("i0", "withdraw", 300)).status());
    Answer deposit = step(transaction, "action", action("i1", "deposit", 300));
    assertEquals(1300, deposit.body().at("/state/balance").asLong(), deposit.text());
    Answer again = step(transaction, "read", "{\"entity\": \"Account/i0\"}");
    assertEquals(700, again.body().at("/state/balance").asLong(), "its own write");
    assertEquals(1000, balance("i0"), "not visible outside before commit");
    // A failed step changes nothing and leaves the transaction open.
    Answer overdraw = step(transaction, "action", action("i0", "withdraw", 701));
    assertEquals(409, overdraw.status(), overdraw.text());
    assertEquals("precondition_failed", overdraw.errorCode());
    Answer write = step(transaction, "write",
        "{\"entity\": \"Note/n1\", \"key\": \"text\", \"op\": \"assign\", \"value\": \"paid\"}");
    assertEquals(200, write.status(), write.text());
    Answer committed = step(transaction, "commit", null);
    assertEquals(200, committed.status(), committed.text());
    assertEquals(3, committed.body().get("entities").size());
    assertEquals(700, balance("i0"));
    assertEquals(1300, balance("i1"));
    assertEquals("paid", server.get("/v1/entities/Note/n1").body().at("/state/text").asText());
    assertEquals(404, step(transaction, "read", "{\"entity\": \"Account/i0\"}").status(),
        "a committed transaction is no longer open");
  }

  @Test
  void abortAndTheIdleTimeoutDiscardEverythingAndReleaseTheLocks() throws Exception {
    open("j0");
    long aborted = begin();
    assertEquals(200, step(aborted, "action", action("j0", "withdraw", 10)).status());
    Answer abort = step(aborted, "abort", null);
    assertEquals(200, abort.status(), abort.text());
    assertEquals(1000, balance("j0"));
    assertEquals(404, step(aborted, "commit", null).status());

    long idle = begin();
    assertEquals(200, step(idle, "action", action("j0", "withdraw", 10)).status());
    Thread.sleep(3_000);
    assertEquals(404, step(idle, "commit", null).status(), "the idle timeout aborted it");
    // Its lock on j0 is gone: a transaction on j0 commits at once.
    Answer after = server.send("POST", "/v1/transactions", "{\"ops\": [" + action("j0", "withdraw", 1)
        + "]}");
    assertEquals(200, after.status(), after.text());
    assertEquals(999, balance("j0"));
  }

  @Test
  void theYoungerOfTwoConflictingTransactionsDies() throws Exception {
    open("k0");
    long older = begin();
    long younger = begin();
    assertEquals(200, step(older, "action", action("k0", "withdraw", 5)).status());
    Answer died = step(younger, "action", action("k0", "deposit", 5));
    assertEquals(409, died.status(), died.text());
    assertEquals("aborted", died.errorCode());
    assertEquals("lock_conflict", died.body().get("reason").asText());
    assertEquals(404, step(younger, "commit", null).status(), "the younger one was aborted");
    assertEquals(200, step(older, "commit", null).status());
    assertEquals(995, balance("k0"));
  }

  @Test
  void concurrentInteractiveTransfersAreSerializable() throws Exception {
    int accounts = 5;
    for (int i = 0; i < accounts; i++) {
      open("m" + i);
    }
    History.Recorder history = new History.Recorder();
    for (int i = 0; i < accounts; i++) {
      history.record(new RecordedTransaction("open-m" + i, RecordedTransaction.Outcome.COMMITTED,
          Map.of(), Map.of("Account/m" + i,
              server.get("/v1/entities/Account/m" + i).body().get("version").asLong())));
    }
    AtomicInteger committed = new AtomicInteger();
    AtomicInteger conflicts = new AtomicInteger();
    List<String> unexpected = java.util.Collections.synchronizedList(new ArrayList<>());
    List<Thread> clients = new ArrayList<>();
    for (int c = 0; c < 4; c++) {
      Random random = new Random(c);
      int client = c;
      Thread thread = new Thread(() -> {
        for (int n = 0; n < 25; n++) {
          try {
            int from = random.nextInt(accounts);
            int to = (from + 1 + random.nextInt(accounts - 1)) % accounts;
            long transaction = begin();
            Answer withdraw = step(transaction, "action", action("m" + from, "withdraw", 7));
            Answer deposit = withdraw.status() == 200
                ? step(transaction, "action", action("m" + to, "deposit", 7)) : withdraw;
            if (deposit.status() != 200) {
              if ("lock_conflict".equals(deposit.body().path("reason").asText())) {
                conflicts.incrementAndGet();
              } else {
                unexpected.add(deposit.text());
              }
              step(transaction, "abort", null);
              continue;
            }
            Answer commit = step(transaction, "commit", null);
            if (commit.status() != 200) {
              unexpected.add(commit.text());
              continue;
            }
            history.record(TransactionRestTest.committed("c" + client + "-" + n, commit));
            committed.incrementAndGet();
          } catch (Exception e) {
            unexpected.add(e.toString());
          }
        }
      });
      thread.start();
      clients.add(thread);
    }
    for (Thread thread : clients) {
      thread.join(120_000);
    }
    assertTrue(unexpected.isEmpty(), unexpected.toString());
    System.out.println("interactive: committed " + committed + ", lock conflicts " + conflicts);
    assertTrue(committed.get() > 20, "committed " + committed);
    SerializabilityChecker.Result result = SerializabilityChecker.check(history.snapshot());
    assertInstanceOf(SerializabilityChecker.Serializable.class, result, result.toString());
    Map<String, Long> balances = new HashMap<>();
    for (int i = 0; i < accounts; i++) {
      balances.put("m" + i, balance("m" + i));
    }
    ConservationChecker.Result money = ConservationChecker.check(balances, accounts * 1000L);
    assertInstanceOf(ConservationChecker.Conserved.class, money, money.toString());
  }

  @Test
  void badStepsAreRefusedAndChangeNothing() throws Exception {
    open("b0");
    long transaction = begin();
    assertEquals(404, step(999, "read", "{\"entity\": \"Account/b0\"}").status());
    assertEquals(400, step(transaction, "read", "{\"entity\": \"Account/b0\", \"key\": \"x\"}").status());
    assertEquals(400, step(transaction, "read", "[]").status());
    assertEquals(400, step(transaction, "write", action("b0", "deposit", 1)).status(),
        "a write needs an op");
    assertEquals(400, step(transaction, "action",
        "{\"entity\": \"Account/b0\", \"op\": \"delete\"}").status(), "an action needs an action");
    assertEquals(404, step(transaction, "explode", "{}").status());
    Answer psac = step(transaction, "action",
        "{\"entity\": \"PsacAccount/p\", \"action\": \"open\", \"args\": {\"initial\": 1}}");
    assertEquals(400, psac.status(), psac.text());
    assertEquals(400, server.send("POST", "/v1/transactions/abc/read", "{}").status());
    assertEquals(405, server.get("/v1/transactions/" + transaction + "/commit").status());
    assertEquals(200, step(transaction, "commit", null).status(), "still open after bad steps");
    assertEquals(1000, balance("b0"));
  }
}
