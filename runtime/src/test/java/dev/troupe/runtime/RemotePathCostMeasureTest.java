package dev.troupe.runtime;

import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.txn.Turn;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the remote path costs on one node (docs/ARCHITECTURE.md, "Entity messages between nodes"):
 * sequential single turns, dynamic transfers 16 in flight, and cached reads, told directly, routed
 * through the transport, and routed as wire bytes; two rounds each (the first warms the JIT).
 * A measurement, not a check: run with {@code -Dtroupe.measure.remote-path=true}; it prints lines
 * starting with MEASURE.
 */
@EnabledIfSystemProperty(named = "troupe.measure.remote-path", matches = "true")
class RemotePathCostMeasureTest {
  @TempDir Path directory;

  @Test
  void measureTheRemotePathOnOneNode() throws Exception {
    String[][] configs = {
        {"direct", ""},
        {"routed", "troupe.transport.route-entity-messages = true"},
        {"routed+bytes", "troupe.transport.route-entity-messages = true\n"
            + "troupe.transport.encode-local-messages = true"}};
    for (int round = 0; round < 2; round++) {
      for (String[] config : configs) {
        Path data = directory.resolve(config[0] + round);
        try (Troupe troupe = Troupe.open(RuntimeSettings.fromConfig(ConfigFactory.parseString(
                config[1]).withFallback(ConfigFactory.parseMap(Map.of("troupe.data-directory",
                data.toString()))).withFallback(ConfigFactory.load())))) {
          troupe.defineType(SpecParser.parse(null, EntityMessagesThroughTransportTest.ACCOUNT
              .getBytes(StandardCharsets.UTF_8), true)).join();
          for (int i = 0; i < 8; i++) {
            troupe.invoke(EntityId.parse("Account/a" + i), "open",
                Json.parse("{\"initial\": 1000000}")).join();
          }
          int turns = 2000;
          long start = System.nanoTime();
          for (int i = 0; i < turns; i++) {
            troupe.invoke(EntityId.parse("Account/a" + (i % 8)), "deposit",
                Json.parse("{\"amount\": 1}")).join();
          }
          double turnMicros = (System.nanoTime() - start) / 1000.0 / turns;
          int transfers = 2000;
          start = System.nanoTime();
          List<CompletableFuture<?>> running = new ArrayList<>();
          for (int i = 0; i < transfers; i++) {
            int from = i % 8;
            int to = (i * 3 + 1) % 8 == from ? (from + 1) % 8 : (i * 3 + 1) % 8;
            running.add(troupe.transact(new TransactionRequest(List.of(
                new TransactionRequest.Operation(EntityId.parse("Account/a" + from),
                    new Turn.InvokeAction("withdraw", Json.parse("{\"amount\": 1}"))),
                new TransactionRequest.Operation(EntityId.parse("Account/a" + to),
                    new Turn.InvokeAction("deposit", Json.parse("{\"amount\": 1}")))),
                List.of(), TransactionRequest.Mode.DYNAMIC)).exceptionally(e -> null));
            if (running.size() == 16) {
              running.forEach(CompletableFuture::join);
              running.clear();
            }
          }
          running.forEach(CompletableFuture::join);
          double perSecond = transfers / ((System.nanoTime() - start) / 1e9);
          int reads = 5000;
          start = System.nanoTime();
          for (int i = 0; i < reads; i++) {
            troupe.getKey(EntityId.parse("Account/a" + (i % 8)), "balance").join();
          }
          double readMicros = (System.nanoTime() - start) / 1000.0 / reads;
          System.out.printf("MEASURE round %d %-13s sequential turn %7.1f us | transfers %7.1f/s"
              + " (16 in flight) | read %6.1f us | envelopes %d%n", round, config[0], turnMicros,
              perSecond, readMicros, troupe.transport().delivered());
        }
      }
    }
  }
}
