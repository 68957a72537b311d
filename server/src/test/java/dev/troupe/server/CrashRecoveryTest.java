package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.server.ServerProcess.Answer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Nothing acknowledged is lost by {@code kill -9}, at random moments, with checkpoints and
 * truncation running: a real server process takes concurrent writes and counter increments over
 * HTTP and is killed mid-stream, 14 times; after every restart each acknowledged write is present
 * and each counter lies between its acknowledged and attempted increments. Each restart checks a
 * random sample of the single-write entities; the final restart checks every one of them.
 */
class CrashRecoveryTest {
  private static final int CYCLES = 14;
  private static final int WRITERS = 6;

  @TempDir Path data;

  @Test
  void acknowledgedWritesSurviveKillNine() throws Exception {
    long seed = Long.getLong("troupe.test.seed", System.nanoTime());
    System.out.println("CrashRecoveryTest seed " + seed + " (rerun with -Dtroupe.test.seed=" + seed + ")");
    Random random = new Random(seed);
    Path directory = data.resolve("node");
    String[] settings = {
      "troupe.storage.checkpoint-every-operations=40",
      "troupe.storage.checkpoint-journal-records=150",
      "troupe.storage.checkpoint-interval-millis=200",
      "troupe.storage.history-retention-millis=100",
      "troupe.storage.partitions=2"
    };
    // Acknowledged state, as the clients saw it.
    Map<String, Long> acknowledgedValues = new ConcurrentHashMap<>();
    AtomicLongArray acknowledgedIncrements = new AtomicLongArray(WRITERS);
    AtomicLongArray attemptedIncrements = new AtomicLongArray(WRITERS);
    AtomicLongArray acknowledgedLast = new AtomicLongArray(WRITERS);
    AtomicLongArray attemptedLast = new AtomicLongArray(WRITERS);
    long checkpointRounds = 0;
    long truncated = 0;
    long writeSequence = 0;

    for (int cycle = 0; cycle < CYCLES; cycle++) {
      ServerProcess server = ServerProcess.start(directory, settings);
      try {
        verify(server, random, acknowledgedValues, acknowledgedIncrements, attemptedIncrements,
            acknowledgedLast, attemptedLast, cycle, 300);

        AtomicBoolean running = new AtomicBoolean(true);
        List<Thread> writers = new ArrayList<>();
        long base = writeSequence;
        for (int w = 0; w < WRITERS; w++) {
          int writer = w;
          Thread thread = new Thread(() -> write(server, writer, base, running, acknowledgedValues,
              acknowledgedIncrements, attemptedIncrements, acknowledgedLast, attemptedLast));
          thread.setDaemon(true);
          thread.start();
          writers.add(thread);
        }
        writeSequence += 1_000_000;
        Thread.sleep(300 + random.nextInt(1200));
        Answer metrics = server.get("/metrics");
        checkpointRounds = Math.max(checkpointRounds, metric(metrics.text(), "troupe_checkpoint_rounds_total"));
        truncated = Math.max(truncated, metric(metrics.text(), "troupe_journal_truncated_records_total"));
        server.kill();
        running.set(false);
        for (Thread thread : writers) {
          thread.join(10_000);
        }
      } catch (Throwable failure) {
        System.out.println("server log of the failing cycle " + cycle + ":\n" + server.log());
        server.kill();
        throw failure;
      }
    }
    ServerProcess last = ServerProcess.start(directory, settings);
    try {
      verify(last, random, acknowledgedValues, acknowledgedIncrements, attemptedIncrements,
          acknowledgedLast, attemptedLast, CYCLES, Integer.MAX_VALUE);
    } finally {
      last.close();
    }
    assertTrue(acknowledgedValues.size() > 100, "the test wrote too little: " + acknowledgedValues.size());
    assertTrue(checkpointRounds > 0, "checkpoint rounds must run during the loop");
    assertTrue(truncated > 0, "truncation must run during the loop");
  }

  private static void write(ServerProcess server, int writer, long base, AtomicBoolean running,
      Map<String, Long> acknowledgedValues, AtomicLongArray acknowledgedIncrements,
      AtomicLongArray attemptedIncrements, AtomicLongArray acknowledgedLast,
      AtomicLongArray attemptedLast) {
    long n = base + writer * 100_000L;
    while (running.get()) {
      n++;
      try {
        switch ((int) (n % 3)) {
          case 0 -> {
            String path = "/v1/entities/Item/w" + writer + "-" + n + "/keys/value";
            if (server.send("PUT", path, Long.toString(n)).status() == 200) {
              acknowledgedValues.put(path, n);
            }
          }
          case 1 -> {
            attemptedIncrements.incrementAndGet(writer);
            if (server.send("POST", "/v1/entities/Tally/w" + writer + "/keys/count/increment",
                "{\"by\": 1}").status() == 200) {
              acknowledgedIncrements.incrementAndGet(writer);
            }
          }
          default -> {
            attemptedLast.set(writer, n);
            if (server.send("PUT", "/v1/entities/Latest/w" + writer + "/keys/n", Long.toString(n))
                .status() == 200) {
              acknowledgedLast.set(writer, n);
            }
          }
        }
      } catch (Exception killed) {
        return;
      }
    }
  }

  private static void verify(ServerProcess server, Random random, Map<String, Long> acknowledgedValues,
      AtomicLongArray acknowledgedIncrements, AtomicLongArray attemptedIncrements,
      AtomicLongArray acknowledgedLast, AtomicLongArray attemptedLast, int cycle, int sampleSize)
      throws Exception {
    for (int writer = 0; writer < WRITERS; writer++) {
      if (attemptedIncrements.get(writer) > 0) {
        Answer counter = server.get("/v1/entities/Tally/w" + writer + "/keys/count");
        long value = counter.status() == 200 ? counter.body().get("value").asLong() : 0;
        assertTrue(value >= acknowledgedIncrements.get(writer) && value <= attemptedIncrements.get(writer),
            "cycle " + cycle + ": counter w" + writer + " = " + value + ", acknowledged "
                + acknowledgedIncrements.get(writer) + ", attempted " + attemptedIncrements.get(writer));
        // Unacknowledged increments that did commit are now part of the durable history.
        acknowledgedIncrements.set(writer, value);
        attemptedIncrements.set(writer, value);
      }
      if (acknowledgedLast.get(writer) > 0) {
        Answer latest = server.get("/v1/entities/Latest/w" + writer + "/keys/n");
        assertEquals(200, latest.status(), latest.text());
        long value = latest.body().get("value").asLong();
        assertTrue(value >= acknowledgedLast.get(writer) && value <= attemptedLast.get(writer),
            "cycle " + cycle + ": register w" + writer + " = " + value + ", acknowledged "
                + acknowledgedLast.get(writer));
        acknowledgedLast.set(writer, value);
      }
    }
    List<Map.Entry<String, Long>> entries = new ArrayList<>(acknowledgedValues.entrySet());
    java.util.Collections.shuffle(entries, random);
    int checked = 0;
    for (Map.Entry<String, Long> entry : entries) {
      if (checked++ >= sampleSize) {
        break;
      }
      Answer answer = server.get(entry.getKey());
      assertEquals(200, answer.status(), "cycle " + cycle + ": acknowledged write lost: " + entry.getKey());
      assertEquals(entry.getValue().longValue(), answer.body().get("value").asLong(), entry.getKey());
    }
  }

  private static long metric(String metrics, String name) {
    return metrics.lines().filter(line -> line.startsWith(name + " ")).findFirst()
        .map(line -> (long) Double.parseDouble(line.substring(name.length() + 1))).orElse(0L);
  }
}
