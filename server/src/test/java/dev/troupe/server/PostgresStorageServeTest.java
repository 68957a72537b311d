package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.server.ServerProcess.Answer;
import dev.troupe.storage.postgres.PostgresInstance;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code troupe serve --storage postgres --jdbc-url URL}: a real server process keeps its store in
 * a real PostgreSQL, takes writes over REST, is killed with {@code kill -9} mid-stream, and after
 * a restart serves every acknowledged write back; nothing is written to the data directory.
 * Flags that do not go together are refused with a clear message and the configuration exit code.
 */
class PostgresStorageServeTest {
  private static final int WRITERS = 3;

  static PostgresInstance postgres;
  static String jdbcUrl;

  @TempDir Path data;

  @BeforeAll
  static void startPostgres() {
    postgres = PostgresInstance.startForTroupe(32);
    postgres.createDatabase("troupe");
    jdbcUrl = postgres.jdbcUrl("troupe");
  }

  @AfterAll
  static void stopPostgres() {
    if (postgres != null) {
      postgres.close();
    }
  }

  private ServerProcess serve() throws Exception {
    return ServerProcess.launch(List.of("serve", "--data", data.toString(), "--port", "0",
        "--storage", "postgres", "--jdbc-url", jdbcUrl,
        "--set", "troupe.storage.partitions=2",
        "--set", "troupe.storage.checkpoint-journal-records=200",
        "--set", "troupe.storage.checkpoint-every-operations=40"));
  }

  @Test
  void acknowledgedWritesSurviveKillNineOfTheServer() throws Exception {
    Map<String, Long> acknowledged = new ConcurrentHashMap<>();
    AtomicLong acknowledgedIncrements = new AtomicLong();
    AtomicLong attemptedIncrements = new AtomicLong();
    ServerProcess server = serve();
    try {
      assertTrue(server.log().contains("storage: PostgreSQL at"), server.log());
      AtomicBoolean running = new AtomicBoolean(true);
      List<Thread> writers = new ArrayList<>();
      for (int w = 0; w < WRITERS; w++) {
        int writer = w;
        Thread thread = new Thread(() -> {
          for (long n = 0; running.get(); n++) {
            try {
              if (n % 2 == 0) {
                String path = "/v1/entities/Item/w" + writer + "-" + n + "/keys/value";
                if (server.send("PUT", path, Long.toString(n)).status() == 200) {
                  acknowledged.put(path, n);
                }
              } else {
                attemptedIncrements.incrementAndGet();
                if (server.send("POST", "/v1/entities/Tally/all/keys/count/increment",
                    "{\"by\": 1}").status() == 200) {
                  acknowledgedIncrements.incrementAndGet();
                }
              }
            } catch (Exception killed) {
              return;
            }
          }
        }, "postgres-serve-writer-" + w);
        thread.setDaemon(true);
        thread.start();
        writers.add(thread);
      }
      long deadline = System.nanoTime() + 30_000_000_000L;
      while (acknowledged.size() < 200 && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      server.kill();
      running.set(false);
      for (Thread thread : writers) {
        thread.join(10_000);
      }
    } catch (Throwable failure) {
      System.out.println("server log:\n" + server.log());
      server.kill();
      throw failure;
    }
    assertTrue(acknowledged.size() >= 200, "the test wrote too little: " + acknowledged.size());
    // The store is in PostgreSQL: the data directory holds no RocksDB database.
    assertFalse(Files.exists(data.resolve("CURRENT")), "no RocksDB files in " + data);

    ServerProcess restarted = serve();
    try {
      for (Map.Entry<String, Long> entry : acknowledged.entrySet()) {
        Answer answer = restarted.get(entry.getKey());
        assertEquals(200, answer.status(), "acknowledged write lost: " + entry.getKey());
        assertEquals(entry.getValue().longValue(), answer.body().get("value").asLong());
      }
      Answer tally = restarted.get("/v1/entities/Tally/all/keys/count");
      long value = tally.status() == 200 ? tally.body().get("value").asLong() : 0;
      assertTrue(value >= acknowledgedIncrements.get() && value <= attemptedIncrements.get(),
          "counter " + value + ", acknowledged " + acknowledgedIncrements.get() + ", attempted "
              + attemptedIncrements.get());
    } finally {
      restarted.close();
    }
  }

  @Test
  void flagsThatDoNotGoTogetherAreRefused() throws Exception {
    assertRefused(List.of("--storage", "postgres"), 78, "troupe.storage.postgres.jdbc-url");
    assertRefused(List.of("--jdbc-url", jdbcUrl), 78, "--jdbc-url is the database of --storage postgres");
    assertRefused(List.of("--storage", "cassandra"), 78, "must be rocksdb or postgres");
    assertRefused(List.of("--storage", "postgres", "--jdbc-url", jdbcUrl, "--bootstrap-from", "paris"),
        78, "cannot be combined with --storage postgres");
    assertRefused(List.of("--storage", "postgres", "--jdbc-url",
        "jdbc:postgresql://127.0.0.1:1/nothing?connectTimeout=2"), 74,
        "cannot open the store on PostgreSQL");
  }

  private void assertRefused(List<String> flags, int exitStatus, String message) throws Exception {
    List<String> arguments = new ArrayList<>(List.of("serve", "--data", data.toString(), "--port", "0"));
    arguments.addAll(flags);
    ServerProcess.Finished finished = ServerProcess.run(arguments);
    assertEquals(exitStatus, finished.exitStatus(), finished.output());
    assertTrue(finished.output().contains(message), finished.output());
  }
}
