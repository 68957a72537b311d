package dev.troupe.runtime.messages;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.BooleanNode;
import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.runtime.RuntimeSettings;
import dev.troupe.runtime.Troupe;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Causal messages on one unnamed node over real RocksDB and actors: a message exists iff its
 * sender's transaction commits, arrives once, in order, and its receiving turn sees what the
 * sender wrote.
 */
class MessageDeliveryTest {
  static final String SENDER = """
      {"type": "Sender", "keys": {"allowed": {"kind": "register", "default": true}},
       "actions": {
         "notify": {"params": {"to": "string", "v": "int"}, "pre": ["allowed == true"],
                    "send": [{"entity": "Receiver/{to}", "action": "hear", "args": {"v": "v"}}]},
         "arm": {"params": {"to": "string", "v": "int"},
                 "sync": [{"entity": "Receiver/{to}", "action": "arm"}],
                 "send": [{"entity": "Receiver/{to}", "action": "consume",
                           "args": {"v": "v"}}]}}}
      """;

  static final String RECEIVER = """
      {"type": "Receiver",
       "keys": {"last": {"kind": "register", "default": 0},
                "count": {"kind": "register", "default": 0},
                "armed": {"kind": "register", "default": false}},
       "actions": {
         "hear": {"params": {"v": "int"}, "pre": ["last == v - 1"],
                  "effect": {"last": "v", "count": "count + 1"}},
         "arm": {"effect": {"armed": "true"}},
         "consume": {"params": {"v": "int"}, "pre": ["armed == true"],
                     "effect": {"count": "count + v"}}}}
      """;

  @TempDir Path directory;

  private RuntimeSettings settings(String... overrides) {
    return RuntimeSettings.fromConfig(ConfigFactory.parseString(String.join("\n", overrides))
        .withFallback(ConfigFactory.parseMap(Map.of("troupe.data-directory",
            directory.toString())))
        .withFallback(ConfigFactory.load()));
  }

  static void define(Troupe troupe) {
    troupe.defineType(SpecParser.parse(null, SENDER.getBytes(StandardCharsets.UTF_8), false))
        .join();
    troupe.defineType(SpecParser.parse(null, RECEIVER.getBytes(StandardCharsets.UTF_8), false))
        .join();
  }

  /** The key's value, or -1 while the entity does not exist. */
  static long value(Troupe troupe, EntityId entity, String key) {
    try {
      return troupe.get(entity).join().state().path(key).asLong();
    } catch (CompletionException absent) {
      return -1;
    }
  }

  static void await(BooleanSupplier done, String what) {
    long deadline = System.currentTimeMillis() + 20_000;
    while (!done.getAsBoolean()) {
      if (System.currentTimeMillis() > deadline) {
        throw new AssertionError("not reached in 20 s: " + what);
      }
      try {
        Thread.sleep(5);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }

  private static CompletableFuture<?> notify(Troupe troupe, EntityId sender, String to, int v) {
    return troupe.invoke(sender, "notify",
        Json.parse("{\"to\": \"" + to + "\", \"v\": " + v + "}"));
  }

  @Test
  void aMessageExistsIffItsSendersTransactionCommits() throws Exception {
    try (Troupe troupe = Troupe.open(settings())) {
      define(troupe);
      EntityId sender = new EntityId("Sender", "s");
      EntityId receiver = new EntityId("Receiver", "r");
      troupe.assign(sender, "allowed", BooleanNode.FALSE).join();
      // Its precondition fails: the transaction aborts, and sends nothing.
      assertThrows(CompletionException.class, () -> notify(troupe, sender, "r", 1).join());
      troupe.assign(sender, "allowed", BooleanNode.TRUE).join();
      notify(troupe, sender, "r", 1).join();
      await(() -> value(troupe, receiver, "last") == 1, "the message delivered");
      Thread.sleep(200); // nothing else comes
      assertEquals(1, value(troupe, receiver, "count"));
      assertEquals(1, troupe.messageDelivery().deliveredCount());
      assertEquals(Map.of(), troupe.messageDelivery().failedCounts());
      // Nobody replicates an unnamed node's log: it is truncated up to the delivered watermark.
      await(() -> troupe.store().replicationLog().entryCount() == 0
          && troupe.messageDelivery().recordedWatermark() > 0, "the log truncated");
    }
  }

  @Test
  void messagesArriveInOrderFromOneSenderAndCausallyAcrossSenders() {
    try (Troupe troupe = Troupe.open(settings())) {
      define(troupe);
      EntityId receiver = new EntityId("Receiver", "r");
      // Each send waits for the previous one's commit: the next sender's transaction follows it.
      // Out of order, "hear" finds last != v - 1 and the message is consumed as failed.
      for (int v = 1; v <= 40; v++) {
        notify(troupe, new EntityId("Sender", "s" + (v % 3)), "r", v).join();
      }
      await(() -> value(troupe, receiver, "last") == 40, "every message delivered");
      assertEquals(40, value(troupe, receiver, "count"));
      assertEquals(Map.of(), troupe.messageDelivery().failedCounts());
    }
  }

  @Test
  void aFailingReceivingActionConsumesItsMessage() {
    try (Troupe troupe = Troupe.open(settings())) {
      define(troupe);
      EntityId receiver = new EntityId("Receiver", "r");
      notify(troupe, new EntityId("Sender", "s"), "r", 5).join(); // last is 0, not 4
      notify(troupe, new EntityId("Sender", "s"), "r", 1).join();
      // The counts move when the delivery's answer comes back, a little after the state.
      await(() -> value(troupe, receiver, "last") == 1
          && troupe.messageDelivery().deliveredCount() == 1, "the second message delivered");
      assertEquals(Map.of("precondition_failed", 1L), troupe.messageDelivery().failedCounts());
      assertEquals(1, troupe.messageDelivery().deliveredCount());
    }
  }

  @Test
  void theReceivingTurnSeesWhatTheSendersTransactionWroteToIt() {
    // The sender's transaction arms the receiver through a sync call and sends it "consume",
    // whose precondition needs that write: delivered before the receiver's part commits, it
    // would be consumed as failed.
    try (Troupe troupe = Troupe.open(settings())) {
      define(troupe);
      for (int i = 0; i < 20; i++) {
        troupe.invoke(new EntityId("Sender", "s" + i), "arm",
            Json.parse("{\"to\": \"a" + i + "\", \"v\": 7}")).join();
      }
      for (int i = 0; i < 20; i++) {
        EntityId receiver = new EntityId("Receiver", "a" + i);
        await(() -> value(troupe, receiver, "count") == 7, "consumed by " + receiver);
      }
      await(() -> troupe.messageDelivery().deliveredCount() == 20, "every delivery counted");
      assertEquals(Map.of(), troupe.messageDelivery().failedCounts());
      assertEquals(20, troupe.messageDelivery().deliveredCount());
    }
  }

  @Test
  void eachMessageIsDeliveredExactlyOnceAcrossRestartsInTheMiddleOfDelivery() {
    // The watermark is recorded once at start, then not for a long time: every restart
    // re-delivers what was delivered since, and the receivers' markers must skip it.
    String[] overrides = {"troupe.messages.watermark-record-interval-millis = 600000"};
    int receivers = 20;
    int perReceiver = 5;
    long redelivered = 0;
    try (Troupe troupe = Troupe.open(settings(overrides))) {
      define(troupe);
      List<CompletableFuture<?>> sends = new ArrayList<>();
      for (int v = 1; v <= perReceiver; v++) {
        for (int r = 0; r < receivers; r++) {
          sends.add(notify(troupe, new EntityId("Sender", "s" + r), "r" + r, v));
        }
        CompletableFuture.allOf(sends.toArray(CompletableFuture[]::new)).join();
      }
    } // closed in the middle of delivery
    for (int restart = 0; restart < 2; restart++) {
      try (Troupe troupe = Troupe.open(settings(overrides))) {
        Thread.sleep(30 * restart);
        redelivered += troupe.messageDelivery().redeliveredCount();
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
    }
    try (Troupe troupe = Troupe.open(settings(overrides))) {
      for (int r = 0; r < receivers; r++) {
        EntityId receiver = new EntityId("Receiver", "r" + r);
        await(() -> value(troupe, receiver, "last") == perReceiver, "all of " + receiver);
      }
      redelivered += troupe.messageDelivery().redeliveredCount();
      for (int r = 0; r < receivers; r++) {
        // Exactly once: a second application would have been refused by "last == v - 1" and
        // counted as failed, and could not raise the count past the number of messages.
        assertEquals(perReceiver, value(troupe, new EntityId("Receiver", "r" + r), "count"));
      }
      assertEquals(Map.of(), troupe.messageDelivery().failedCounts());
      assertTrue(redelivered > 0, "some delivery was repeated after a restart and skipped");
    }
  }
}
