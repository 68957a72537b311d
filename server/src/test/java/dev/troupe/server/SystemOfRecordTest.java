package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.server.ServerProcess.Answer;
import dev.troupe.storage.postgres.PostgresInstance;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * PostgreSQL as a system of record (docs/ARCHITECTURE.md, "System of record"), end to end: a real
 * server JVM runs {@code serve --system-of-record} against a real PostgreSQL reached through a
 * proxy; a bank workload of transfers runs while the proxy drops the exporter's connection and
 * the server is killed with {@code kill -9}, then restarted and dropped again. Once the exporter
 * has caught up, every account's row equals the account read {@code ?at=} the exporter's
 * watermark (balance and version), and {@code SELECT sum(balance)} equals Troupe's total, which
 * transfers conserve.
 */
class SystemOfRecordTest {
  private static final int ACCOUNTS = 8;
  private static final long OPENING = 1_000;
  private static final int CLIENTS = 3;

  @TempDir Path data;

  @Test
  void tablesEqualTheStatesAtTheWatermarkAcrossKillNineAndDroppedConnections() throws Exception {
    Random random = new Random(Long.getLong("troupe.test.seed", System.nanoTime()));
    try (PostgresInstance postgres = PostgresInstance.start(32);
        TcpProxy proxy = TcpProxy.start(postgres.port())) {
      postgres.createDatabase("reports");
      String direct = postgres.jdbcUrl("reports");
      String proxied = "jdbc:postgresql://127.0.0.1:" + proxy.port() + "/reports?user=postgres";
      Path directory = data.resolve("node");
      java.nio.file.Files.createDirectories(directory);
      List<String> arguments = List.of("serve", "--data", directory.toString(), "--port", "0",
          "--system-of-record", proxied,
          "--set", "troupe.storage.partitions=4",
          "--set", "troupe.system-of-record.poll-interval-millis=20",
          "--set", "troupe.system-of-record.retry-min-backoff-millis=50",
          "--set", "troupe.system-of-record.retry-max-backoff-millis=400",
          // Tiny batches: size cuts fall between the parts of transfers all the time, and must
          // never leave one half applied (without the planner's closed cuts the sampler below
          // saw ~10 wrong totals per run).
          "--set", "troupe.system-of-record.batch-max-records=3");
      // Any SQL reader sees a consistent cut: transfers are applied whole, so the total never
      // changes between batches. Sampled all along, across the drops and the kill.
      AtomicBoolean sampling = new AtomicBoolean(true);
      List<String> inconsistentCuts = java.util.Collections.synchronizedList(new ArrayList<>());
      AtomicInteger cutsSampled = new AtomicInteger();
      Thread sampler = new Thread(() -> {
        while (sampling.get()) {
          try (Connection connection = DriverManager.getConnection(direct);
              Statement statement = connection.createStatement();
              ResultSet result = statement.executeQuery("SELECT count(*), sum(balance),"
                  + " (SELECT watermark FROM troupe_system_of_record) FROM \"Account\"")) {
            result.next();
            if (result.getInt(1) == ACCOUNTS) {
              cutsSampled.incrementAndGet();
              if (result.getBigDecimal(2).longValueExact() != ACCOUNTS * OPENING) {
                inconsistentCuts.add("sum " + result.getBigDecimal(2) + " at watermark "
                    + result.getLong(3));
              }
            }
            Thread.sleep(20);
          } catch (Exception notYet) {
            // The table does not exist yet, or the test is ending.
            try {
              Thread.sleep(20);
            } catch (InterruptedException e) {
              return;
            }
          }
        }
      });
      sampler.setDaemon(true);
      sampler.start();

      long began = System.nanoTime();
      ServerProcess first = ServerProcess.launch(arguments);
      phase(began, "first server listening");
      AtomicInteger transfers = new AtomicInteger();
      try {
        Answer defined = first.send("PUT", "/v1/types/Account",
            TransactionRestTest.BANK_YAML, "application/yaml");
        assertEquals(200, defined.status(), defined.text());
        for (int i = 0; i < ACCOUNTS; i++) {
          assertEquals(200, first.send("POST", "/v1/entities/Account/k" + i + "/actions/open",
              "{\"initial\": " + OPENING + "}").status());
        }
        phase(began, "accounts opened");
        runTransfers(first, random, transfers, proxy::reset, () -> {
          first.kill(); // kill -9 while transfers run
          return null;
        });
      } catch (Throwable failure) {
        System.out.println("server log:\n" + first.log());
        first.kill();
        throw failure;
      }

      phase(began, "first server killed, " + transfers.get() + " transfers");
      ServerProcess second = ServerProcess.launch(arguments);
      phase(began, "second server listening");
      try {
        runTransfers(second, random, transfers, proxy::reset, () -> null);
        phase(began, "transfers done: " + transfers.get());
        // Quiet now: wait for the exporter to pass the newest version of every account.
        long newest = 0;
        for (int i = 0; i < ACCOUNTS; i++) {
          newest = Math.max(newest,
              second.get("/v1/entities/Account/k" + i).body().get("version").asLong());
        }
        long deadline = System.nanoTime() + 20_000_000_000L;
        long watermark;
        while ((watermark = watermark(direct)) < newest) {
          assertTrue(System.nanoTime() < deadline, "the exporter did not catch up: watermark "
              + watermark + " below " + newest + "\n" + metrics(second));
          Thread.sleep(20);
        }
        phase(began, "caught up");
        String metrics = metrics(second);
        assertTrue(metric(metrics, "troupe_system_of_record_errors_total") >= 1,
            "the dropped connection was noticed and retried:\n" + metrics);
        assertEquals(0, metric(metrics, "troupe_system_of_record_stopped"), metrics);

        Map<String, long[]> rows = new HashMap<>();
        BigDecimal sum;
        try (Connection connection = DriverManager.getConnection(direct);
            Statement statement = connection.createStatement()) {
          try (ResultSet result =
              statement.executeQuery("SELECT id, version, balance FROM \"Account\"")) {
            while (result.next()) {
              rows.put(result.getString(1), new long[] {result.getLong(2),
                  result.getBigDecimal(3).longValueExact()});
            }
          }
          try (ResultSet result = statement.executeQuery("SELECT sum(balance) FROM \"Account\"")) {
            result.next();
            sum = result.getBigDecimal(1);
          }
        }
        assertEquals(ACCOUNTS, rows.size(), rows.keySet().toString());
        long troupeTotal = 0;
        for (int i = 0; i < ACCOUNTS; i++) {
          Answer account = second.get("/v1/entities/Account/k" + i + "?at=" + watermark);
          assertEquals(200, account.status(), account.text());
          long balance = account.body().at("/state/balance").asLong();
          long version = account.body().get("version").asLong();
          troupeTotal += balance;
          long[] row = rows.get("k" + i);
          assertEquals(version, row[0], "k" + i + ": the row's version is the state's at "
              + watermark);
          assertEquals(balance, row[1], "k" + i + ": the row's balance is the state's");
        }
        assertEquals(ACCOUNTS * OPENING, troupeTotal, "transfers conserve money");
        assertEquals(BigDecimal.valueOf(troupeTotal), sum, "SELECT sum(balance) agrees");
        sampling.set(false);
        sampler.join(5_000);
        assertTrue(cutsSampled.get() > 10, "too few cuts sampled: " + cutsSampled.get());
        assertEquals(List.of(), inconsistentCuts, "a reader saw a transfer half applied");
        assertTrue(transfers.get() > 20, "too few transfers committed: " + transfers.get());
        assertNotEquals(0, metric(metrics, "troupe_system_of_record_rows_applied_total"));
        System.out.println("SystemOfRecordTest: " + transfers.get() + " transfers committed,"
            + " watermark " + watermark + ", " + cutsSampled.get() + " cuts sampled");
      } catch (Throwable failure) {
        System.out.println("server log:\n" + second.log());
        throw failure;
      } finally {
        second.close();
      }
    }
  }

  @Test
  void aUrlThatIsNotPostgresIsRefusedAtStart() throws Exception {
    ServerProcess.Finished refused = ServerProcess.run(List.of("serve", "--data",
        data.resolve("refused").toString(), "--port", "0",
        "--system-of-record", "jdbc:mysql://127.0.0.1/reports"));
    assertEquals(78, refused.exitStatus(), refused.output());
    assertTrue(refused.output().contains("is not a PostgreSQL JDBC URL"), refused.output());
  }

  /**
   * Transfers on {@link #CLIENTS} threads for about a second, with {@code midway} half-way and
   * {@code atEnd} while they still run.
   */
  private static void runTransfers(ServerProcess server, Random random, AtomicInteger committed,
      Runnable midway, java.util.concurrent.Callable<Void> atEnd) throws Exception {
    AtomicBoolean running = new AtomicBoolean(true);
    List<Thread> clients = new ArrayList<>();
    for (int c = 0; c < CLIENTS; c++) {
      Random clientRandom = new Random(random.nextLong());
      Thread thread = new Thread(() -> {
        while (running.get()) {
          int from = clientRandom.nextInt(ACCOUNTS);
          int to = (from + 1 + clientRandom.nextInt(ACCOUNTS - 1)) % ACCOUNTS;
          int amount = 1 + clientRandom.nextInt(20);
          String body = """
              {"ops": [
                {"entity": "Account/k%d", "action": "withdraw", "args": {"amount": %d}},
                {"entity": "Account/k%d", "action": "deposit", "args": {"amount": %d}}]}
              """.formatted(from, amount, to, amount);
          try {
            if (server.send("POST", "/v1/transactions", body).status() == 200) {
              committed.incrementAndGet();
            }
          } catch (Exception killed) {
            return;
          }
        }
      });
      thread.setDaemon(true);
      thread.start();
      clients.add(thread);
    }
    Thread.sleep(500);
    midway.run();
    Thread.sleep(500);
    atEnd.call();
    running.set(false);
    for (Thread thread : clients) {
      thread.join(10_000);
    }
  }

  private static void phase(long began, String what) {
    System.out.printf("SystemOfRecordTest: %5d ms %s%n", (System.nanoTime() - began) / 1_000_000,
        what);
  }

  private static long watermark(String url) throws Exception {
    try (Connection connection = DriverManager.getConnection(url);
        Statement statement = connection.createStatement();
        ResultSet result = statement.executeQuery(
            "SELECT watermark FROM troupe_system_of_record WHERE name = 'watermark'")) {
      return result.next() ? result.getLong(1) : -1;
    } catch (java.sql.SQLException notYet) {
      return -1; // the table is created by the exporter's first connection
    }
  }

  private static String metrics(ServerProcess server) throws Exception {
    return server.get("/metrics").text();
  }

  private static double metric(String metrics, String name) {
    return metrics.lines().filter(line -> line.startsWith(name + " ")).findFirst()
        .map(line -> Double.parseDouble(line.substring(name.length() + 1))).orElse(-1.0);
  }
}
