package dev.troupe.runtime.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.runtime.Troupe;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Causal messages with two data centres: only the sender's DC delivers, and the receiving turn's
 * effects become visible at the other DC only together with (after) the sender's transaction
 * (TTCC rule 10).
 */
class MessagesAcrossDataCentresTest {
  static final String SENDER = """
      {"type": "Sender", "keys": {"note": {"kind": "register", "default": 0}},
       "actions": {"notify": {"params": {"to": "string", "v": "int"}, "effect": {"note": "v"},
         "send": [{"entity": "Receiver/{to}", "action": "hear", "args": {"v": "v"}}]}}}
      """;
  static final String RECEIVER = """
      {"type": "Receiver", "consistency": "strong", "home": "a",
       "keys": {"last": {"kind": "register", "default": 0},
                                   "count": {"kind": "register", "default": 0}},
       "actions": {"hear": {"params": {"v": "int"}, "pre": ["last == v - 1"],
                            "effect": {"last": "v", "count": "count + 1"}}}}
      """;

  @TempDir Path root;

  private static long value(Troupe troupe, EntityId entity, String key) {
    try {
      return troupe.get(entity).join().state().path(key).asLong();
    } catch (CompletionException absent) {
      return -1;
    }
  }

  @Test
  void theReceivingTurnIsVisibleElsewhereOnlyWithTheSendersTransaction() {
    try (DataCentres dcs = new DataCentres(root, Map.of(), "a", "b")) {
      for (String dc : new String[] {"a", "b"}) {
        Troupe troupe = dcs.troupe(dc);
        troupe.defineType(SpecParser.parse(null, SENDER.getBytes(StandardCharsets.UTF_8), false))
            .join();
        troupe.defineType(
            SpecParser.parse(null, RECEIVER.getBytes(StandardCharsets.UTF_8), false)).join();
      }
      Troupe a = dcs.troupe("a");
      Troupe b = dcs.troupe("b");
      EntityId receiver = new EntityId("Receiver", "r");
      int messages = 30;
      for (int v = 1; v <= messages; v++) {
        a.invoke(new EntityId("Sender", "s" + (v % 4)), "notify",
            Json.parse("{\"to\": \"r\", \"v\": " + v + "}")).join();
      }
      // At b, every state of the receiver shows the sender whose message it consumed.
      dcs.pullUntil(() -> {
        long last = value(b, receiver, "last");
        if (last > 0) {
          EntityId sender = new EntityId("Sender", "s" + (last % 4));
          // The sender's note is its latest message's v: at least the one this receiver saw.
          long note = value(b, sender, "note");
          if (note < last) {
            throw new AssertionError("b shows the receiving turn of message " + last
                + " without its sender's transaction (note " + note + ")");
          }
        }
        return last == messages;
      }, 30_000, "the receiver's turns replicated to b");
      assertEquals(messages, value(b, receiver, "count"));
      assertEquals(messages, value(a, receiver, "count"));
      // Only the sender's DC delivers: b applied a's receiving turns, it ran none.
      assertEquals(messages, a.messageDelivery().deliveredCount());
      assertEquals(0, b.messageDelivery().deliveredCount());
    }
  }

  /**
   * A receiver of a strong type homed at b, its senders at a: a skips the messages (never writes
   * the receiver), b delivers each exactly once, in order, from a's log once a's transactions are
   * applied at b, across a restart of b; a then sees b's receiving turns by replication.
   */
  @Test
  void aMessageToAReceiverHomedElsewhereIsDeliveredOnceAtItsHome() throws Exception {
    try (DataCentres dcs = new DataCentres(root, Map.of(), "a", "b")) {
      String homedAtB = RECEIVER.replace("\"home\": \"a\"", "\"home\": \"b\"");
      for (String dc : new String[] {"a", "b"}) {
        Troupe troupe = dcs.troupe(dc);
        troupe.defineType(SpecParser.parse(null, SENDER.getBytes(StandardCharsets.UTF_8), false))
            .join();
        troupe.defineType(
            SpecParser.parse(null, homedAtB.getBytes(StandardCharsets.UTF_8), false)).join();
      }
      Troupe a = dcs.troupe("a");
      EntityId receiver = new EntityId("Receiver", "r");
      int messages = 20;
      for (int v = 1; v <= messages / 2; v++) {
        a.invoke(new EntityId("Sender", "s" + (v % 3)), "notify",
            Json.parse("{\"to\": \"r\", \"v\": " + v + "}")).join();
      }
      // a's delivery reads its log (every poll) and skips them: the receiver is not written.
      Thread.sleep(300);
      assertEquals(-1, value(a, receiver, "count"), "a wrote the receiver homed at b");
      assertEquals(0, a.messageDelivery().deliveredCount());
      assertEquals(Map.of(), a.messageDelivery().failedCounts());
      dcs.pullUntil(() -> value(dcs.troupe("b"), receiver, "count") == messages / 2, 30_000,
          "b delivered the first half");
      // b restarts (its watermark of a's log maybe not recorded yet: the markers skip repeats).
      dcs.restart("b");
      for (int v = messages / 2 + 1; v <= messages; v++) {
        a.invoke(new EntityId("Sender", "s" + (v % 3)), "notify",
            Json.parse("{\"to\": \"r\", \"v\": " + v + "}")).join();
      }
      Troupe b = dcs.troupe("b");
      dcs.pullUntil(() -> value(b, receiver, "count") == messages, 30_000,
          "b delivered the second half");
      // In order and once each: the precondition refuses any other order (a consumed message
      // would leave count short), and nothing more arrives.
      Thread.sleep(500);
      assertEquals(messages, value(b, receiver, "count"));
      assertEquals(messages, value(b, receiver, "last"));
      assertEquals(Map.of(), b.messageDelivery().failedCounts());
      dcs.pullUntil(() -> value(a, receiver, "count") == messages, 30_000,
          "b's receiving turns replicated to a");
      assertEquals(0, a.messageDelivery().deliveredCount());
      assertEquals(Map.of(), a.messageDelivery().failedCounts());
      // b records its watermark of a's log, and its log of a's entries is truncated behind it
      // (the per-origin bound holds truncation back only while a message waits).
      int aId = dcs.get("a").id();
      long logged = dcs.shell("b").status().logEntries();
      dcs.pullUntil(() -> b.store().replicationLog().deliveredVector().get(aId)
              >= a.store().replicationLog().deliveredWatermark()
              && dcs.shell("b").status().logEntries() < logged, 30_000,
          "b's watermark of a recorded and its log truncated");
    }
  }
}
