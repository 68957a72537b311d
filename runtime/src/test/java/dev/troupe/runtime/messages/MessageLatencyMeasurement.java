package dev.troupe.runtime.messages;

import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.runtime.RuntimeSettings;
import dev.troupe.runtime.Troupe;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Prints delivery figures on one node: not a test of behaviour, and not run with the suite (its
 * name does not end in Test); run it by name with {@code -Dtest=MessageLatencyMeasurement}.
 */
class MessageLatencyMeasurement {
  @TempDir Path directory;

  @Test
  void measure() {
    RuntimeSettings settings = RuntimeSettings.fromConfig(ConfigFactory.parseMap(Map.of(
        "troupe.data-directory", directory.toString())).withFallback(ConfigFactory.load()));
    try (Troupe troupe = Troupe.open(settings)) {
      MessageDeliveryTest.define(troupe);
      // Sequential: one message at a time, from commit acknowledged to receiver updated.
      int sequential = 300;
      long[] latencies = new long[sequential];
      for (int i = 0; i < sequential; i++) {
        EntityId receiver = new EntityId("Receiver", "seq" + i);
        troupe.invoke(new EntityId("Sender", "s"), "notify",
            Json.parse("{\"to\": \"seq" + i + "\", \"v\": 1}")).join();
        long acknowledged = System.nanoTime();
        MessageDeliveryTest.await(() -> MessageDeliveryTest.value(troupe, receiver, "last") == 1,
            "delivered");
        latencies[i] = System.nanoTime() - acknowledged;
      }
      Arrays.sort(latencies);
      System.out.printf("sequential %d: after the sender's answer, delivered in p50 %.2f ms,"
          + " p99 %.2f ms, max %.2f ms%n", sequential, latencies[sequential / 2] / 1e6,
          latencies[sequential * 99 / 100] / 1e6, latencies[sequential - 1] / 1e6);
      // Burst: many senders to many receivers at once.
      int burst = 5000;
      long before = troupe.messageDelivery().deliveredCount();
      long start = System.nanoTime();
      List<CompletableFuture<?>> sends = new ArrayList<>();
      for (int i = 0; i < burst; i++) {
        sends.add(troupe.invoke(new EntityId("Sender", "b" + i), "notify",
            Json.parse("{\"to\": \"b" + (i % 500) + "x" + (i / 500) + "\", \"v\": 1}")));
      }
      CompletableFuture.allOf(sends.toArray(CompletableFuture[]::new)).join();
      long committed = System.nanoTime();
      MessageDeliveryTest.await(() -> troupe.messageDelivery().deliveredCount() - before
          >= burst, "burst delivered");
      long delivered = System.nanoTime();
      System.out.printf("burst %d: committed in %.0f ms, all delivered %.0f ms after the last"
          + " commit (%.0f messages/s end to end)%n", burst, (committed - start) / 1e6,
          (delivered - committed) / 1e6, burst / ((delivered - start) / 1e9));
    }
  }
}
