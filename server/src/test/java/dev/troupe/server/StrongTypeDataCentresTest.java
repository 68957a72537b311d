package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.causal.DataCentreIds;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.server.replication.VectorText;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Strong types with a home DC (docs/ARCHITECTURE.md, "Strong types with a home DC") with two real
 * server processes, a and b, each pulling the other through a {@link TcpProxy} ({@link
 * DataCentreCluster}):
 *
 * <ol>
 *   <li>a causal Account whose {@code withdraw} requires {@code balance - amount >= 0} is refused
 *       at declaration (400) in a DC with peers;
 *   <li>declared strong, homed at a, withdrawals sent to both DCs at once (racing, many more than
 *       the balance allows) never overdraw: afterwards the balance is the same in both DCs, not
 *       negative, and exactly the initial balance minus the accepted withdrawals;
 *   <li>a write sent to b is answered by a (its token names a's write) and is visible at b to a
 *       read carrying that token;
 *   <li>a transaction sent to b writing only entities homed at a runs at a; one writing strong
 *       entities of two homes is refused (400);
 *   <li>with a down, a write sent to b fails at once with a typed error; reads go on.
 * </ol>
 */
class StrongTypeDataCentresTest {
  private static final List<String> NAMES = List.of("a", "b");
  private static final String SECRET = "strong-types-test-secret-0123456789";
  private static final int INITIAL = 1000;
  private static final int AMOUNT = 30;
  private static final int CLIENTS_PER_DC = 3;
  private static final int WITHDRAWALS_PER_CLIENT = 20;
  private static final String KEYS_AND_ACTIONS = "\"keys\": {\"balance\": {\"kind\": \"register\","
      + " \"default\": 0}}, \"actions\": {"
      + "\"deposit\": {\"params\": {\"amount\": \"int\"}, \"pre\": [\"amount > 0\"],"
      + " \"effect\": {\"balance\": \"balance + amount\"}},"
      + "\"withdraw\": {\"params\": {\"amount\": \"int\"},"
      + " \"pre\": [\"amount > 0\", \"balance - amount >= 0\"],"
      + " \"effect\": {\"balance\": \"balance - amount\"}}}";

  @TempDir Path data;

  private DataCentreCluster cluster;

  @Test
  void strongAccountNeverOverdrawsWithWithdrawalsInBothDataCentres() throws Exception {
    cluster = DataCentreCluster.builder(data).dataCentres(NAMES.toArray(String[]::new))
        .secret(SECRET).settings(
            "troupe.replication.pull-interval-millis=50",
            "troupe.replication.token-wait-max-millis=20000",
            "troupe.storage.partitions=2")
        .start();
    try {
      check();
    } catch (Throwable failure) {
      cluster.printLogs(6000);
      throw failure;
    } finally {
      cluster.close();
    }
  }

  /**
   * A DC declared a causal Account while alone; started again with a peer it refuses to start
   * (exit 78), naming the type and the precondition.
   */
  @Test
  void aDcGivenPeersRefusesToStartWithAnUnsafeCausalType() throws Exception {
    Path directory = data.resolve("alone");
    Files.createDirectories(directory);
    Path secretFile = data.resolve("secret");
    Files.writeString(secretFile, SECRET);
    ServerProcess alone = ServerProcess.launchWithJvmOptions(
        List.of("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"),
        List.of("serve", "--data", directory.toString(), "--port", "0", "--dc", "a"));
    try {
      ServerProcess.Answer declared =
          alone.send("PUT", "/v1/types/Account", "{" + KEYS_AND_ACTIONS + "}");
      assertEquals(200, declared.status(), declared.text());
    } finally {
      alone.close();
    }
    ServerProcess.Finished refused = ServerProcess.run(List.of("serve", "--data",
        directory.toString(), "--port", "0", "--dc", "a", "--peer", "b=http://127.0.0.1:9",
        "--replication-secret-file", secretFile.toString()));
    assertEquals(78, refused.exitStatus(), refused.output());
    assertTrue(refused.output().contains("type 'Account': actions.withdraw.pre[1]"),
        refused.output());
  }

  private void check() throws Exception {
    // 1. Causal, the withdrawal's precondition could be broken by a concurrent one elsewhere.
    ServerProcess.Answer causal = send("b", "PUT", "/v1/types/Account",
        "{" + KEYS_AND_ACTIONS + "}", null);
    assertEquals(400, causal.status(), causal.text());
    assertEquals("invalid_request", causal.errorCode());
    assertTrue(causal.body().path("message").asText().contains("actions.withdraw.pre[1]"),
        causal.text());

    // 2. Strong, homed at a: declared in both DCs (declarations are per DC).
    for (String dc : NAMES) {
      ServerProcess.Answer declared = send(dc, "PUT", "/v1/types/Account",
          "{\"consistency\": \"strong\", \"home\": \"a\", " + KEYS_AND_ACTIONS + "}", null);
      assertEquals(200, declared.status(), declared.text());
      ServerProcess.Answer vault = send(dc, "PUT", "/v1/types/Vault",
          "{\"consistency\": \"strong\", \"home\": \"b\", " + KEYS_AND_ACTIONS + "}", null);
      assertEquals(200, vault.status(), vault.text());
      JsonNode shown = send(dc, "GET", "/v1/types/Account", null, null).body();
      assertEquals("strong", shown.path("consistency").asText(), shown.toString());
      assertEquals("a", shown.path("home").asText(), shown.toString());
    }
    String account = "/v1/entities/Account/shared";
    ServerProcess.Answer opened = send("a", "POST", account + "/actions/deposit",
        "{\"amount\": " + INITIAL + "}", null);
    assertEquals(200, opened.status(), opened.text());

    AtomicLong accepted = new AtomicLong();
    AtomicLong refused = new AtomicLong();
    Map<String, AtomicLong> acceptedAt = new ConcurrentHashMap<>();
    List<String> unexpected = java.util.Collections.synchronizedList(new ArrayList<>());
    List<Thread> clients = new ArrayList<>();
    for (String dc : NAMES) {
      acceptedAt.put(dc, new AtomicLong());
      for (int client = 0; client < CLIENTS_PER_DC; client++) {
        clients.add(Thread.ofPlatform().name("withdraw-" + dc + "-" + client).start(() -> {
          for (int i = 0; i < WITHDRAWALS_PER_CLIENT; i++) {
            try {
              ServerProcess.Answer answer = send(dc, "POST", account + "/actions/withdraw",
                  "{\"amount\": " + AMOUNT + "}", null);
              if (answer.status() == 200) {
                accepted.incrementAndGet();
                acceptedAt.get(dc).incrementAndGet();
              } else if (answer.status() == 409
                  && "precondition_failed".equals(answer.errorCode())) {
                refused.incrementAndGet();
              } else {
                unexpected.add(dc + ": " + answer.status() + " " + answer.text());
              }
            } catch (Exception e) {
              unexpected.add(dc + ": " + e);
            }
          }
        }));
      }
    }
    for (Thread client : clients) {
      client.join(120_000);
    }
    System.out.printf("StrongTypeDataCentresTest: %d withdrawals accepted (%s), %d refused%n",
        accepted.get(), acceptedAt, refused.get());
    assertEquals(List.of(), unexpected);
    assertTrue(acceptedAt.get("b").get() > 0, "b forwarded no accepted withdrawal");
    assertTrue(refused.get() > 0, "the withdrawals should exceed the balance");
    // Serializable at the home: accepted while the balance allowed, then refused.
    assertEquals(INITIAL / AMOUNT, accepted.get());

    // 3. A deposit sent to b runs at a; its token names a's write; b shows it with the token.
    ServerProcess.Answer deposit = send("b", "POST", account + "/actions/deposit",
        "{\"amount\": 5}", null);
    assertEquals(200, deposit.status(), deposit.text());
    long version = deposit.body().path("version").asLong();
    DependencyVector token = VectorText.parse(
        deposit.header("Troupe-Causal-Token").orElseThrow(), "Troupe-Causal-Token");
    assertTrue(token.get(DataCentreIds.of("a")) >= version,
        "the token " + token + " does not name a's write at " + version);
    long expected = INITIAL - AMOUNT * accepted.get() + 5;
    ServerProcess.Answer atA = send("a", "GET", account, null, null);
    assertEquals(version, atA.body().path("version").asLong(), atA.text());
    String tokenText = deposit.header("Troupe-Causal-Token").orElseThrow();
    ServerProcess.Answer atB = send("b", "GET", account, null, tokenText);
    assertEquals(200, atB.status(), atB.text());
    for (ServerProcess.Answer answer : List.of(atA, atB)) {
      long balance = answer.body().path("state").path("balance").asLong();
      assertEquals(expected, balance, answer.text());
      assertTrue(balance >= 0);
    }

    // 4. A transaction at b writing only entities homed at a is forwarded there as a whole; one
    // writing strong entities of both homes is refused: no DC may run it.
    ServerProcess.Answer transaction = send("b", "POST", "/v1/transactions", "{\"ops\": ["
        + "{\"entity\": \"Account/shared\", \"action\": \"withdraw\", \"args\": {\"amount\": 5}},"
        + "{\"entity\": \"Account/other\", \"action\": \"deposit\", \"args\": {\"amount\": 5}}]}",
        null);
    assertEquals(200, transaction.status(), transaction.text());
    ServerProcess.Answer other = send("a", "GET", "/v1/entities/Account/other", null, null);
    assertEquals(5, other.body().path("state").path("balance").asLong(), other.text());
    ServerProcess.Answer twoHomes = send("b", "POST", "/v1/transactions", "{\"ops\": ["
        + "{\"entity\": \"Account/shared\", \"action\": \"deposit\", \"args\": {\"amount\": 1}},"
        + "{\"entity\": \"Vault/v\", \"action\": \"deposit\", \"args\": {\"amount\": 1}}]}",
        null);
    assertEquals(400, twoHomes.status(), twoHomes.text());
    assertTrue(twoHomes.body().path("message").asText().contains("several home data centres"),
        twoHomes.text());
    // 5. A key write at b whose path holds percent-encoded characters reaches a unchanged.
    ServerProcess.Answer keyWrite =
        send("b", "PUT", "/v1/entities/Account/sp%20ace%5B1%5D/keys/balance", "7", null);
    assertEquals(200, keyWrite.status(), keyWrite.text());
    ServerProcess.Answer written = send("a", "GET", "/v1/entities/Account/sp%20ace%5B1%5D", null,
        null);
    assertEquals(7, written.body().path("state").path("balance").asLong(), written.text());
    // 6. The home down: b answers writes to its entities at once with a typed failure (here the
    // proxy takes the connection and drops it, so b cannot know whether a ran it), and serves
    // reads on.
    cluster.kill("a");
    long started = System.nanoTime();
    ServerProcess.Answer homeDown = send("b", "POST", account + "/actions/deposit",
        "{\"amount\": 1}", null);
    long tookMillis = (System.nanoTime() - started) / 1_000_000;
    System.out.printf("StrongTypeDataCentresTest: with the home down, a write at b: %d %s in %d"
        + " ms%n", homeDown.status(), homeDown.errorCode(), tookMillis);
    assertTrue((homeDown.status() == 503 && "unavailable".equals(homeDown.errorCode()))
        || (homeDown.status() == 500 && "outcome_unknown".equals(homeDown.errorCode())),
        homeDown.text());
    assertTrue(tookMillis < 20_000, "the failed forward took " + tookMillis + " ms");
    assertEquals(200, send("b", "GET", account, null, null).status());
  }

  private ServerProcess.Answer send(String dc, String method, String path, String body,
      String token) throws Exception {
    return cluster.send(dc, method, path, body, DataCentreCluster.causalToken(token));
  }
}
