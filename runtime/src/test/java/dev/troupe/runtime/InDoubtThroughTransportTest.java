package dev.troupe.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.txn.Turn;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A participant left in doubt by a slow coordinator asks the coordinator's node through the
 * node's {@link LocalTransport}, with every envelope going through its wire format (the setting
 * {@code encode-local-messages}), and the transaction still commits exactly once.
 */
class InDoubtThroughTransportTest {
  @TempDir Path directory;

  @Test
  void aPartInDoubtAsksThroughTheTransportWhileTheCoordinatorWaits() throws Exception {
    RuntimeSettings settings = RuntimeSettings.fromConfig(ConfigFactory.parseString("""
            troupe.transport.encode-local-messages = true
            troupe.transactions.in-doubt-query-interval-millis = 1
            """)
        .withFallback(ConfigFactory.parseMap(Map.of("troupe.data-directory", directory.toString())))
        .withFallback(ConfigFactory.load()));
    try (Troupe troupe = Troupe.open(settings)) {
      troupe.defineType(SpecParser.parse(null, """
          type: Account
          keys:
            balance: {kind: register, default: 0}
          actions:
            deposit:  {params: {amount: int}, pre: ["amount > 0"],
                       effect: {balance: "balance + amount"}}
          """.getBytes(StandardCharsets.UTF_8), true)).join();
      EntityId ready = EntityId.parse("Account/ready");
      EntityId held = EntityId.parse("Account/held");
      Turn deposit = new Turn.InvokeAction("deposit", Json.parse("{\"amount\": 5}"));

      // An interactive transaction holds the lock of one participant...
      long holder = troupe.beginInteractive();
      troupe.stepInteractive(holder, held, deposit).join();
      // ...so a planned transaction over both waits for it (planned waits, never dies), while
      // its other participant has voted yes and sits in doubt, asking every interval.
      CompletableFuture<TransactionOutcome> waiting = troupe.transact(new TransactionRequest(
          List.of(new TransactionRequest.Operation(ready, deposit),
              new TransactionRequest.Operation(held, deposit)),
          List.of(), TransactionRequest.Mode.PLANNED));
      LocalTransport transport = troupe.transport();
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (transport.delivered() < 4 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertFalse(waiting.isDone(), "the planned transaction waits for the held lock");
      assertTrue(transport.delivered() >= 4,
          "questions and answers went through the transport: " + transport.delivered());

      troupe.commitInteractive(holder).join();
      waiting.join();
      assertEquals(10, troupe.getKey(held, "balance").join().asLong());
      assertEquals(5, troupe.getKey(ready, "balance").join().asLong(),
          "the part in doubt applied its commit once");
      assertEquals(transport.delivered(), transport.encoded(),
          "every envelope went through WireCodec");
      assertEquals(0, transport.droppedForOtherNodes() + transport.droppedUndeliverable());
    }
  }
}
