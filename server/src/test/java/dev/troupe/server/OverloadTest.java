package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.server.ServerProcess.Answer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Past its limits the server sheds load: it pushes back at once with a JSON 429 {@code overloaded}
 * and a {@code Retry-After} header instead of queueing, a refused write changes nothing while
 * accepted ones all stick, health and {@code /metrics} are answered throughout (they never count
 * against a limit), and admitted requests keep a bounded latency.
 */
class OverloadTest {
  private static final Pattern REFUSED_WRITES =
      Pattern.compile("troupe_http_refused_total\\{class=\"writes\"} (\\d+)");
  private static final Pattern WRITES_LIMIT =
      Pattern.compile("troupe_http_concurrency_limit\\{class=\"writes\"} (\\d+)");

  @TempDir Path data;

  @Test
  void excessRequestsAreRefusedAndChangeNothingWhileHealthIsAnswered() throws Exception {
    try (ServerProcess server = ServerProcess.start(data.resolve("node"),
        "troupe.http.max-in-flight-requests=2");
        Probes probes = new Probes(server)) {
      Map<String, Integer> outcomes = new ConcurrentHashMap<>();
      AtomicInteger overloaded = new AtomicInteger();
      List<Future<?>> clients = new ArrayList<>();
      try (ExecutorService pool = Executors.newFixedThreadPool(32)) {
        for (int client = 0; client < 32; client++) {
          int id = client;
          clients.add(pool.submit(() -> {
            for (int i = 0; i < 40; i++) {
              String path = "/v1/entities/Busy/c" + id + "-" + i + "/keys/n";
              Answer answer = server.send("PUT", path, Integer.toString(i));
              outcomes.put(path, answer.status());
              if (answer.status() == 429) {
                checkRefusal(answer);
                overloaded.incrementAndGet();
              } else {
                assertEquals(200, answer.status(), answer.text());
              }
            }
            return null;
          }));
        }
        for (Future<?> client : clients) {
          client.get();
        }
      }
      probes.checkAllAnswered();
      assertTrue(overloaded.get() > 0, "32 clients against a limit of 2 must be pushed back");
      for (Map.Entry<String, Integer> outcome : outcomes.entrySet()) {
        int status = server.get(outcome.getKey()).status();
        assertEquals(outcome.getValue() == 200 ? 200 : 404, status,
            outcome.getKey() + " answered " + outcome.getValue());
      }
      Matcher refused = REFUSED_WRITES.matcher(server.get("/metrics").text());
      assertTrue(refused.find(), "the metrics show refused writes");
      assertEquals(overloaded.get(), Long.parseLong(refused.group(1)));
    }
  }

  /**
   * Many more clients than the adaptive class limits allow, reading and writing for a few
   * seconds: refusals are JSON 429 with Retry-After, health and metrics stay 200, and the p99 of
   * admitted requests stays well under what queueing every client would cost on a shared machine.
   */
  @Test
  void adaptiveLimitsShedLoadAndKeepAdmittedLatencyBounded() throws Exception {
    int clients = 64;
    long loadMillis = 6_000;
    try (ServerProcess server = ServerProcess.start(data.resolve("node"),
        "troupe.http.request-admission.writes.initial-limit=4",
        "troupe.http.request-admission.writes.min-limit=2",
        "troupe.http.request-admission.writes.max-limit=8",
        "troupe.http.request-admission.reads.initial-limit=4",
        "troupe.http.request-admission.reads.min-limit=2",
        "troupe.http.request-admission.reads.max-limit=8");
        Probes probes = new Probes(server)) {
      Histogram admittedMicros = new ConcurrentHistogram(3);
      AtomicInteger refusals = new AtomicInteger();
      long end = System.nanoTime() + loadMillis * 1_000_000;
      List<Future<?>> futures = new ArrayList<>();
      try (ExecutorService pool = Executors.newFixedThreadPool(clients)) {
        for (int client = 0; client < clients; client++) {
          int id = client;
          futures.add(pool.submit(() -> {
            for (int i = 0; System.nanoTime() < end; i++) {
              String path = "/v1/entities/Busy/c" + id + "-" + (i % 20) + "/keys/n";
              long start = System.nanoTime();
              Answer answer = i % 2 == 0 ? server.send("PUT", path, Integer.toString(i))
                  : server.get(path);
              long micros = (System.nanoTime() - start) / 1_000;
              if (answer.status() == 429) {
                checkRefusal(answer);
                refusals.incrementAndGet();
                // A polite client waits before retrying; a short pause keeps the test brief.
                Thread.sleep(5);
              } else {
                assertTrue(answer.status() == 200 || answer.status() == 404, answer.text());
                admittedMicros.recordValue(micros);
              }
            }
            return null;
          }));
        }
        for (Future<?> future : futures) {
          future.get();
        }
      }
      probes.checkAllAnswered();
      assertTrue(refusals.get() > 0, clients + " clients against limits of at most 8 per class"
          + " must be pushed back");
      assertTrue(admittedMicros.getTotalCount() > 0, "some requests must be admitted");
      long p99Millis = admittedMicros.getValueAtPercentile(99) / 1_000;
      assertTrue(p99Millis < 2_000, "p99 of admitted requests was " + p99Millis + " ms");
      String metrics = server.get("/metrics").text();
      Matcher limit = WRITES_LIMIT.matcher(metrics);
      assertTrue(limit.find(), metrics);
      int writesLimit = Integer.parseInt(limit.group(1));
      assertTrue(writesLimit >= 2 && writesLimit <= 8, "writes limit " + writesLimit);
      Matcher refused = REFUSED_WRITES.matcher(metrics);
      assertTrue(refused.find() && Long.parseLong(refused.group(1)) > 0, metrics);
    }
  }

  private static void checkRefusal(Answer answer) {
    assertEquals("overloaded", answer.errorCode(), answer.text());
    assertTrue(answer.header("Content-Type").orElse("").startsWith("application/json"),
        answer.headers().toString());
    String retryAfter = answer.header("Retry-After").orElse("");
    assertTrue(retryAfter.matches("[1-9][0-9]*"), "Retry-After: '" + retryAfter + "'");
  }

  /**
   * Polls {@code /v1/health} and {@code /metrics} while the load runs; every answer must be 200.
   */
  private static final class Probes implements AutoCloseable {
    private final AtomicBoolean stopped = new AtomicBoolean();
    private final List<String> failures = new ArrayList<>();
    private final AtomicInteger answered = new AtomicInteger();
    private final Thread thread;

    Probes(ServerProcess server) {
      thread = Thread.ofPlatform().name("probes").start(() -> {
        while (!stopped.get()) {
          for (String path : List.of("/v1/health", "/metrics")) {
            try {
              Answer answer = server.get(path);
              if (answer.status() != 200) {
                failures.add(path + " answered " + answer.status() + ": " + answer.text());
              }
              answered.incrementAndGet();
            } catch (Exception e) {
              failures.add(path + " failed: " + e);
            }
          }
          try {
            Thread.sleep(20);
          } catch (InterruptedException e) {
            return;
          }
        }
      });
    }

    /** Stops probing and checks that there were probes and that all were answered 200. */
    void checkAllAnswered() throws InterruptedException {
      close(); // joins the probing thread, so its failures are visible here
      assertEquals(List.of(), failures);
      assertTrue(answered.get() >= 4, "probes answered: " + answered.get());
    }

    @Override
    public void close() throws InterruptedException {
      stopped.set(true);
      thread.join();
    }
  }
}
