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
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Past the in-flight request limit the server pushes back with 429 {@code overloaded} instead of
 * queueing without bound, and a refused write changes nothing while accepted ones all stick.
 */
class OverloadTest {
  @TempDir Path data;

  @Test
  void excessRequestsAreRefusedAndChangeNothing() throws Exception {
    try (ServerProcess server = ServerProcess.start(data.resolve("node"),
        "troupe.http.max-in-flight-requests=2")) {
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
                assertEquals("overloaded", answer.errorCode(), answer.text());
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
      assertTrue(overloaded.get() > 0, "32 clients against a limit of 2 must be pushed back");
      for (Map.Entry<String, Integer> outcome : outcomes.entrySet()) {
        int status = server.get(outcome.getKey()).status();
        assertEquals(outcome.getValue() == 200 ? 200 : 404, status,
            outcome.getKey() + " answered " + outcome.getValue());
      }
    }
  }
}
