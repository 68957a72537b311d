package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.server.ServerProcess.Answer;
import dev.troupe.txn.check.AtomicVisibilityChecker;
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
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Multi-entity transactions through REST against a real server process: atomic transfers under
 * contention checked for serializability (dependency-graph cycles over the recorded history), money
 * conservation and no negative balance; all-or-nothing aborts; sync actions; bad input.
 */
class TransactionRestTest {
  /** The end-to-end test's account type (balance, status, and a counter and a set unused here). */
  static final String BANK_YAML = RestEndToEndTest.ACCOUNT_YAML;
  static final String TRANSFER_YAML = """
      type: Transfer
      actions:
        book: {params: {from: string, to: string, amount: int},
               sync: [{entity: "Account/{from}", action: withdraw, args: {amount: amount}},
                      {entity: "Account/{to}",   action: deposit,  args: {amount: amount}}]}
      """;
  private static final int ACCOUNTS = 8;
  private static final long INITIAL = 1_000;

  @TempDir static Path data;
  static ServerProcess server;

  /** The bank account type under another name and admission policy. */
  static String bankType(String name, String admission) {
    return BANK_YAML.replace("type: Account", "type: " + name + "\nadmission: " + admission);
  }

  @BeforeAll
  static void start() throws Exception {
    server = ServerProcess.start(data.resolve("node"));
    for (String yaml : List.of(BANK_YAML, TRANSFER_YAML, bankType("KeysAccount", "keys"),
        bankType("PsacAccount", "psac\npsac: {maxInFlight: 4, maxOvertakes: 8}"),
        bankType("TwoPhaseAccount", "psac\npsac: {maxInFlight: 1}"))) {
      String type = yaml.lines().findFirst().orElseThrow().substring("type: ".length());
      Answer defined = server.send("PUT", "/v1/types/" + type, yaml, "application/yaml");
      assertEquals(200, defined.status(), defined.text());
    }
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
  }

  static void open(String prefix, int count) throws Exception {
    open("Account", prefix, count);
  }

  static void open(String type, String prefix, int count) throws Exception {
    for (int i = 0; i < count; i++) {
      Answer opened = server.send("POST", "/v1/entities/" + type + "/" + prefix + i + "/actions/open",
          "{\"initial\": " + INITIAL + "}");
      assertEquals(200, opened.status(), opened.text());
    }
  }

  static String transfer(String type, String from, String to, long amount) {
    return transfer(type, from, to, amount, "dynamic");
  }

  static String transfer(String type, String from, String to, long amount, String mode) {
    return """
        {"mode": "%s", "ops": [
          {"entity": "%s/%s", "action": "withdraw", "args": {"amount": %d}},
          {"entity": "%s/%s", "action": "deposit", "args": {"amount": %d}}]}
        """.formatted(mode, type, from, amount, type, to, amount);
  }

  static long balance(String account) throws Exception {
    return balance("Account", account);
  }

  static long balance(String type, String account) throws Exception {
    Answer answer = server.get("/v1/entities/" + type + "/" + account);
    assertEquals(200, answer.status(), answer.text());
    return answer.body().at("/state/balance").asLong();
  }

  @ParameterizedTest(name = "{0} {1}")
  @CsvSource({"Account, dynamic", "Account, planned", "KeysAccount, dynamic",
      "KeysAccount, planned", "PsacAccount, dynamic", "PsacAccount, planned",
      "TwoPhaseAccount, dynamic"})
  void concurrentTransfersAreSerializableAndConserveMoney(String type, String mode)
      throws Exception {
    String prefix = "c" + mode.charAt(0);
    open(type, prefix, ACCOUNTS);
    History.Recorder history = new History.Recorder();
    // The opening turns wrote each account's first version: record them as transactions too.
    for (int i = 0; i < ACCOUNTS; i++) {
      Answer account = server.get("/v1/entities/" + type + "/" + prefix + i);
      history.record(new RecordedTransaction("open-" + prefix + i, RecordedTransaction.Outcome.COMMITTED,
          Map.of(), Map.of(type + "/" + prefix + i, account.body().get("version").asLong())));
    }
    Map<String, AtomicInteger> outcomes = new ConcurrentHashMap<>();
    List<String> unexpected = java.util.Collections.synchronizedList(new ArrayList<>());
    List<Long> snapshotTotals = java.util.Collections.synchronizedList(new ArrayList<>());
    long seed = Long.getLong("troupe.test.seed", System.nanoTime());
    System.out.println("TransactionRestTest seed " + seed);
    List<Thread> clients = new ArrayList<>();
    for (int c = 0; c < 6; c++) {
      Random random = new Random(seed + c);
      int client = c;
      Thread thread = new Thread(() -> {
        for (int n = 0; n < 120; n++) {
          try {
            String id = "t" + client + "-" + n;
            if (random.nextInt(5) == 0) {
              // A read-only transaction over every account: a consistent cut.
              StringBuilder reads = new StringBuilder();
              for (int i = 0; i < ACCOUNTS; i++) {
                reads.append(i == 0 ? "" : ",").append("{\"entity\": \"").append(type).append("/").append(prefix).append(i).append("\"}");
              }
              Answer answer = server.send("POST", "/v1/transactions", "{\"reads\": [" + reads + "]}");
              record(history, id, answer, outcomes, unexpected);
              if (answer.status() == 200) {
                long total = 0;
                for (JsonNode read : answer.body().get("reads")) {
                  total += read.at("/state/balance").asLong();
                }
                snapshotTotals.add(total);
              }
              continue;
            }
            int from = random.nextInt(ACCOUNTS);
            int to = (from + 1 + random.nextInt(ACCOUNTS - 1)) % ACCOUNTS;
            Answer answer = server.send("POST", "/v1/transactions",
                transfer(type, prefix + from, prefix + to, 1 + random.nextInt(400), mode));
            record(history, id, answer, outcomes, unexpected);
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
    assertTrue(unexpected.isEmpty(), "unexpected answers: " + unexpected);
    System.out.println(type + " " + mode + " outcomes: " + outcomes);
    assertTrue(outcomes.getOrDefault("committed", new AtomicInteger()).get() > 300,
        "most transactions commit: " + outcomes);

    // Every policy: no transaction sees half of another.
    AtomicVisibilityChecker.Result atomic = AtomicVisibilityChecker.check(history.snapshot());
    assertInstanceOf(AtomicVisibilityChecker.Atomic.class, atomic, atomic.toString());
    assertTrue(((AtomicVisibilityChecker.Atomic) atomic).pairsChecked() > 100,
        "readers and transfers overlapped: " + atomic);
    if (!type.startsWith("Psac")) {
      // Locking policies: conflict-serializable by versions. PSAC may apply two commuting
      // transfers in opposite orders on two accounts (a write cycle by versions that no client can
      // observe), so for it the atomicity, conservation and snapshot checks stand in.
      SerializabilityChecker.Result result = SerializabilityChecker.check(history.snapshot());
      assertInstanceOf(SerializabilityChecker.Serializable.class, result, result.toString());
    }
    Map<String, Long> balances = new HashMap<>();
    for (int i = 0; i < ACCOUNTS; i++) {
      balances.put(prefix + i, balance(type, prefix + i));
    }
    ConservationChecker.Result money = ConservationChecker.check(balances, ACCOUNTS * INITIAL);
    assertInstanceOf(ConservationChecker.Conserved.class, money, money.toString());
    assertTrue(snapshotTotals.size() > 20, "read-only transactions ran: " + snapshotTotals.size());
    for (long total : snapshotTotals) {
      assertEquals(ACCOUNTS * INITIAL, total, "a read-only transaction saw a partial transfer");
    }
    String metrics = server.get("/metrics").text();
    assertTrue(metrics.contains("troupe_transactions_total{outcome=\"committed\"}"), metrics);
    assertTrue(metrics.contains("troupe_transactions_total{outcome=\"precondition_failed\"}"),
        "failed withdrawals are counted by reason");
    assertTrue(metrics.contains("troupe_transport_dropped_total{reason=\"other_node\"} 0"),
        "one node sends nothing to another: " + metrics);
    if (Boolean.getBoolean(ServerProcess.ROUTE_ENTITY_MESSAGES_PROPERTY)) {
      // The bank run's turns, prepares, votes, decisions and reads all went as envelopes.
      long delivered = metrics.lines()
          .filter(line -> line.startsWith("troupe_transport_delivered_total "))
          .mapToLong(line -> Long.parseLong(line.substring(line.indexOf(' ') + 1).trim()))
          .sum();
      assertTrue(delivered > 1_000, "entity messages went through the transport: " + delivered);
    }
  }

  /**
   * A committed transaction as its answer reports it: per entity, the version it read, and the
   * version it wrote when it wrote.
   */
  static RecordedTransaction committed(String id, Answer answer) {
    Map<String, Long> reads = new HashMap<>();
    Map<String, Long> writes = new HashMap<>();
    for (JsonNode entity : answer.body().get("entities")) {
      String name = entity.get("entity").asText();
      reads.put(name, entity.get("readVersion").asLong());
      if (entity.get("wrote").asBoolean()) {
        writes.put(name, entity.get("version").asLong());
      }
    }
    return new RecordedTransaction(id, RecordedTransaction.Outcome.COMMITTED, reads, writes);
  }

  /** Records one answer in the history: committed with versions, aborted, or unexpected. */
  private static void record(History.Recorder history, String id, Answer answer,
      Map<String, AtomicInteger> outcomes, List<String> unexpected) {
    if (answer.status() == 200) {
      history.record(committed(id, answer));
      outcomes.computeIfAbsent("committed", k -> new AtomicInteger()).incrementAndGet();
    } else if (answer.status() == 409 && "aborted".equals(answer.errorCode())) {
      history.record(new RecordedTransaction(id, RecordedTransaction.Outcome.ABORTED, Map.of(),
          Map.of()));
      outcomes.computeIfAbsent(answer.body().get("reason").asText(), k -> new AtomicInteger())
          .incrementAndGet();
    } else {
      unexpected.add(answer.status() + " " + answer.text());
    }
  }

  @Test
  void snapshotReadsAreConsistentCutsAtOneTimestamp() throws Exception {
    open("PsacAccount", "r", 4);
    open("Account", "r", 2);
    List<String> failures = java.util.Collections.synchronizedList(new ArrayList<>());
    java.util.concurrent.atomic.AtomicBoolean running =
        new java.util.concurrent.atomic.AtomicBoolean(true);
    Thread writer = new Thread(() -> {
      Random random = new Random(7);
      while (running.get()) {
        try {
          int from = random.nextInt(4);
          Answer answer = server.send("POST", "/v1/transactions", """
              {"ops": [{"entity": "PsacAccount/r%d", "action": "withdraw", "args": {"amount": 3}},
                       {"entity": "PsacAccount/r%d", "action": "deposit", "args": {"amount": 3}},
                       {"entity": "Account/r%d", "action": "deposit", "args": {"amount": 1}},
                       {"entity": "Account/r%d", "action": "withdraw", "args": {"amount": 1}}]}
              """.formatted(from, (from + 1) % 4, random.nextInt(2), random.nextInt(2)));
          if (answer.status() != 200 && answer.status() != 409) {
            failures.add(answer.text());
          }
        } catch (Exception e) {
          failures.add(e.toString());
        }
      }
    });
    writer.start();
    try {
      for (int n = 0; n < 40; n++) {
        Answer snapshot = server.send("POST", "/v1/snapshot-read", """
            {"entities": ["PsacAccount/r0", "PsacAccount/r1", "PsacAccount/r2", "PsacAccount/r3",
                          {"entity": "Account/r0"}, "Account/r1"]}
            """);
        assertEquals(200, snapshot.status(), snapshot.text());
        long timestamp = snapshot.body().get("timestamp").asLong();
        long total = 0;
        for (JsonNode entity : snapshot.body().get("entities")) {
          total += entity.at("/state/balance").asLong();
          assertTrue(entity.get("version").asLong() <= timestamp);
          // The cut is the state of every entity at the snapshot's timestamp.
          Answer at = server.get(
              "/v1/entities/" + entity.get("entity").asText() + "?at=" + timestamp);
          assertEquals(200, at.status(), at.text());
          assertEquals(entity.get("state"), at.body().get("state"), "as of " + timestamp);
        }
        assertEquals(6 * INITIAL, total, "a snapshot saw part of a transfer");
      }
    } finally {
      running.set(false);
      writer.join(30_000);
    }
    assertTrue(failures.isEmpty(), failures.toString());
    for (String bad : List.of("{}", "{\"entities\": []}",
        "{\"entities\": [\"Account/r0\", \"Account/r0\"]}", "{\"entities\": [7]}",
        "{\"entities\": [\"nope\"]}", "{\"entities\": [\"A/b\"], \"at\": 1}")) {
      Answer answer = server.send("POST", "/v1/snapshot-read", bad);
      assertEquals(400, answer.status(), bad + " -> " + answer.text());
      assertEquals("invalid_request", answer.errorCode());
    }
  }

  @Test
  void aFailedPreconditionAbortsEveryOperation() throws Exception {
    open("a", 2);
    Answer rich = server.send("POST", "/v1/transactions", """
        {"ops": [{"entity": "Account/a0", "action": "withdraw", "args": {"amount": 600}},
                 {"entity": "Account/a1", "action": "withdraw", "args": {"amount": 600}},
                 {"entity": "Account/a1", "action": "withdraw", "args": {"amount": 600}}]}
        """);
    assertEquals(409, rich.status(), rich.text());
    assertEquals("aborted", rich.errorCode());
    assertEquals("precondition_failed", rich.body().get("reason").asText());
    assertTrue(rich.body().get("message").asText().contains("balance - amount >= 0"), rich.text());
    assertEquals(INITIAL, balance("a0"), "the first withdrawal was rolled back");
    assertEquals(INITIAL, balance("a1"));

    // Two operations on one entity see each other: 2 x 400 fits in 1000 once, the third does not.
    Answer twice = server.send("POST", "/v1/transactions", """
        {"ops": [{"entity": "Account/a1", "action": "withdraw", "args": {"amount": 400}},
                 {"entity": "Account/a1", "action": "withdraw", "args": {"amount": 400}},
                 {"entity": "Account/a0", "action": "deposit", "args": {"amount": 800}}],
         "reads": [{"entity": "Account/a0"}, {"entity": "Account/a1"}]}
        """);
    assertEquals(200, twice.status(), twice.text());
    assertEquals(1_800, twice.body().at("/reads/0/state/balance").asLong());
    assertEquals(200, twice.body().at("/reads/1/state/balance").asLong());
    assertEquals(1_800, balance("a0"));
    assertEquals(200, balance("a1"));
    long txId = twice.body().get("txId").asLong();
    assertTrue(txId > 0);
    // Each written entity reports the version its commit produced, readable at once.
    for (JsonNode entity : twice.body().get("entities")) {
      Answer read = server.get("/v1/entities/" + entity.get("entity").asText());
      assertEquals(entity.get("version").asLong(), read.body().get("version").asLong());
      assertTrue(entity.get("version").asLong() > entity.get("readVersion").asLong());
    }
  }

  @Test
  void keyOperationsAndSchemalessEntitiesJoinTransactions() throws Exception {
    Answer answer = server.send("POST", "/v1/transactions", """
        {"ops": [{"entity": "Stock/s1", "key": "count", "op": "assign", "value": 5},
                 {"entity": "Order/o1", "key": "items", "op": "assign", "value": ["s1"]},
                 {"entity": "Order/o1", "key": "note", "op": "assign", "value": "gift"}],
         "reads": [{"entity": "Order/o1"}]}
        """);
    assertEquals(200, answer.status(), answer.text());
    assertEquals("gift", answer.body().at("/reads/0/state/note").asText());
    assertEquals(5, server.get("/v1/entities/Stock/s1").body().at("/state/count").asLong());
    Answer delete = server.send("POST", "/v1/transactions", """
        {"ops": [{"entity": "Stock/s1", "op": "delete"},
                 {"entity": "Order/o1", "key": "note", "op": "deleteKey"}]}
        """);
    assertEquals(200, delete.status(), delete.text());
    assertEquals(404, server.get("/v1/entities/Stock/s1").status());
    assertEquals(404, server.get("/v1/entities/Order/o1/keys/note").status());
    // Deleting a key that is not there fails the whole transaction.
    Answer missing = server.send("POST", "/v1/transactions", """
        {"ops": [{"entity": "Order/o1", "key": "items", "op": "assign", "value": []},
                 {"entity": "Order/o1", "key": "note", "op": "deleteKey"}]}
        """);
    assertEquals(404, missing.status(), missing.text());
    assertEquals("s1", server.get("/v1/entities/Order/o1").body().at("/state/items/0").asText());
  }

  @Test
  void syncActionsCommitAllOrNothing() throws Exception {
    open("s", 2);
    Answer booked = server.send("POST", "/v1/entities/Transfer/t1/actions/book",
        "{\"from\": \"s0\", \"to\": \"s1\", \"amount\": 300}");
    assertEquals(200, booked.status(), booked.text());
    assertEquals(700, balance("s0"));
    assertEquals(1_300, balance("s1"));
    Answer overdrawn = server.send("POST", "/v1/entities/Transfer/t1/actions/book",
        "{\"from\": \"s0\", \"to\": \"s1\", \"amount\": 701}");
    assertEquals(409, overdrawn.status(), overdrawn.text());
    assertEquals("precondition_failed", overdrawn.errorCode());
    assertEquals(700, balance("s0"));
    assertEquals(1_300, balance("s1"), "the deposit did not happen without the withdrawal");
    // A sync action inside a transaction brings its calls along.
    Answer inside = server.send("POST", "/v1/transactions", """
        {"ops": [{"entity": "Transfer/t2", "action": "book", "args": {"from": "s1", "to": "s0", "amount": 50}}],
         "reads": [{"entity": "Account/s0"}]}
        """);
    assertEquals(200, inside.status(), inside.text());
    assertEquals(750, inside.body().at("/reads/0/state/balance").asLong());
    // Concurrent bookings through one Transfer entity in both directions conserve money.
    List<Thread> threads = new ArrayList<>();
    AtomicInteger failures = new AtomicInteger();
    for (int t = 0; t < 4; t++) {
      int direction = t % 2;
      Thread thread = new Thread(() -> {
        for (int n = 0; n < 40; n++) {
          try {
            Answer answer = server.send("POST", "/v1/entities/Transfer/t3/actions/book",
                "{\"from\": \"s" + direction + "\", \"to\": \"s" + (1 - direction)
                    + "\", \"amount\": 7}");
            if (answer.status() != 200 && answer.status() != 409) {
              failures.incrementAndGet();
            }
          } catch (Exception e) {
            failures.incrementAndGet();
          }
        }
      });
      thread.start();
      threads.add(thread);
    }
    for (Thread thread : threads) {
      thread.join(60_000);
    }
    assertEquals(0, failures.get());
    assertEquals(2 * INITIAL, balance("s0") + balance("s1"));
  }

  static Stream<Arguments> badTransactions() {
    return Stream.of(
        Arguments.of("not json", "{", 400),
        Arguments.of("not an object", "[]", 400),
        Arguments.of("empty", "{}", 400),
        Arguments.of("unknown field", "{\"ops\": [], \"reads\": [], \"extra\": 1}", 400),
        Arguments.of("unknown mode", "{\"mode\": \"eventual\", \"reads\": [{\"entity\": \"Account/b0\"}]}", 400),
        Arguments.of("ops not an array", "{\"ops\": {}}", 400),
        Arguments.of("op not an object", "{\"ops\": [1]}", 400),
        Arguments.of("entity missing", "{\"ops\": [{\"op\": \"delete\"}]}", 400),
        Arguments.of("entity without id", "{\"ops\": [{\"entity\": \"Account\", \"op\": \"delete\"}]}", 400),
        Arguments.of("reserved type", "{\"ops\": [{\"entity\": \"$system/x\", \"op\": \"delete\"}]}", 400),
        Arguments.of("unknown op", "{\"ops\": [{\"entity\": \"Account/b0\", \"op\": \"explode\"}]}", 400),
        Arguments.of("increment without by", "{\"ops\": [{\"entity\": \"Account/b0\", \"key\": \"k\", \"op\": \"increment\"}]}", 400),
        Arguments.of("increment by text", "{\"ops\": [{\"entity\": \"Account/b0\", \"key\": \"k\", \"op\": \"increment\", \"by\": \"1\"}]}", 400),
        Arguments.of("extra field on op", "{\"ops\": [{\"entity\": \"Account/b0\", \"op\": \"delete\", \"key\": \"k\"}]}", 400),
        Arguments.of("args not an object", "{\"ops\": [{\"entity\": \"Account/b0\", \"action\": \"deposit\", \"args\": 5}]}", 400),
        Arguments.of("unknown action", "{\"ops\": [{\"entity\": \"Account/b0\", \"action\": \"steal\", \"args\": {}}, {\"entity\": \"Account/b1\", \"action\": \"deposit\", \"args\": {\"amount\": 5}}]}", 404),
        Arguments.of("wrong argument type", "{\"ops\": [{\"entity\": \"Account/b0\", \"action\": \"deposit\", \"args\": {\"amount\": \"5\"}}, {\"entity\": \"Account/b1\", \"action\": \"deposit\", \"args\": {\"amount\": 5}}]}", 400),
        Arguments.of("undeclared key", "{\"ops\": [{\"entity\": \"Account/b0\", \"key\": \"nope\", \"op\": \"assign\", \"value\": 1}, {\"entity\": \"Account/b1\", \"action\": \"deposit\", \"args\": {\"amount\": 5}}]}", 400),
        Arguments.of("sync action with a bad argument", "{\"ops\": [{\"entity\": \"Transfer/x\", \"action\": \"book\", \"args\": {\"from\": \"b0\", \"to\": \"b1\"}}]}", 400),
        Arguments.of("reads not an array", "{\"reads\": {\"entity\": \"Account/b0\"}}", 400),
        Arguments.of("read with extra field", "{\"reads\": [{\"entity\": \"Account/b0\", \"key\": \"balance\"}]}", 400),
        Arguments.of("mode not a string", "{\"mode\": 1, \"reads\": [{\"entity\": \"Account/b0\"}]}", 400));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badTransactions")
  void badTransactionsAreRefusedAndChangeNothing(String name, String body, int status)
      throws Exception {
    if (server.get("/v1/entities/Account/b0").status() == 404) {
      open("b", 2);
    }
    Answer before0 = server.get("/v1/entities/Account/b0");
    Answer before1 = server.get("/v1/entities/Account/b1");
    Answer answer = server.send("POST", "/v1/transactions", body);
    assertEquals(status, answer.status(), answer.text());
    assertTrue(answer.body() != null && answer.body().has("error") && answer.body().has("message"),
        "a JSON error: " + answer.text());
    assertEquals(before0.body(), server.get("/v1/entities/Account/b0").body(), "b0 unchanged");
    assertEquals(before1.body(), server.get("/v1/entities/Account/b1").body(), "b1 unchanged");
  }

  @Test
  void onlyPostIsAllowed() throws Exception {
    Answer get = server.get("/v1/transactions");
    assertEquals(405, get.status(), get.text());
    Answer nested = server.send("POST", "/v1/transactions/extra", "{}");
    if (nested.status() != 404) {
      fail("unexpected " + nested.status());
    }
  }
}
