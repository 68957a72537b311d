package dev.troupe.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicationEntry;
import dev.troupe.replication.DeliveryCore.Effect;
import dev.troupe.replication.DeliveryCore.Input;
import dev.troupe.replication.DeliveryCore.Message;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

/**
 * Random logs delivered through {@link DeliveryCore} by a driver that reads in random batches,
 * completes deliveries in random order, fails some, and crashes (a new core from the recorded
 * watermark; deliveries in flight may have run or not). Receivers keep a delivered marker as the
 * receiving turn does. Checked: every receiver gets exactly its messages, in log order, each
 * once; a receiver never has two in flight; the recorded watermark never passes an undelivered
 * message. The failing seed is in the message.
 */
class DeliveryCoreProperties {
  private static final int DC = 3;
  private static final List<EntityId> RECEIVERS =
      List.of(new EntityId("R", "a"), new EntityId("R", "b"), new EntityId("R", "c"));

  @Property(tries = 300)
  void everyMessageReachesItsReceiverOnceInLogOrder(@ForAll long seed) {
    new Run(seed).run();
  }

  private static final class Run {
    final long seed;
    final Random random;
    final List<ReplicationEntry> log = new ArrayList<>();
    final Map<EntityId, List<Message>> expected = new HashMap<>();
    final Map<EntityId, List<Message>> applied = new HashMap<>();
    final Map<EntityId, long[]> markers = new HashMap<>();
    final List<Message> inFlight = new ArrayList<>();
    long safe;
    long recorded;
    long now;
    DeliveryCore core;
    Effect.Read pendingRead;

    Run(long seed) {
      this.seed = seed;
      this.random = new Random(seed);
      long timestamp = 0;
      int parts = 1 + random.nextInt(30);
      for (int i = 0; i < parts; i++) {
        timestamp += 1 + random.nextInt(3);
        List<Operation> operations = new ArrayList<>();
        int messages = random.nextInt(3);
        List<EntityId> receivers = new ArrayList<>(RECEIVERS);
        java.util.Collections.shuffle(receivers, random);
        for (int m = 0; m < messages; m++) {
          operations.add(new Operation.SendMessage(receivers.get(m), "hear", Json.parse("{}")));
        }
        log.add(new ReplicationEntry.Part(DC, timestamp, timestamp, 0,
            new EntityId("S", "s" + random.nextInt(3)), operations, DependencyVector.EMPTY));
      }
      // The messages each receiver must get, in log order (one part per timestamp here).
      for (ReplicationEntry logged : log) {
        ReplicationEntry.Part entry = (ReplicationEntry.Part) logged;
        int index = 0;
        for (Operation operation : entry.operations()) {
          Operation.SendMessage send = (Operation.SendMessage) operation;
          expected.computeIfAbsent(send.receiver(), r -> new ArrayList<>()).add(new Message(DC, 
              entry.timestamp(), index++, entry.entity(), send.receiver(), "hear", send.args()));
        }
      }
    }

    String context() {
      return "seed " + seed;
    }

    void run() {
      start();
      long lastTimestamp = log.get(log.size() - 1).timestamp();
      for (int step = 0; step < 10_000; step++) {
        if (done(lastTimestamp)) {
          break;
        }
        now += random.nextInt(30);
        int choice = random.nextInt(100);
        if (choice < 10) {
          safe = Math.min(lastTimestamp, safe + 1 + random.nextInt(5)); // commits become safe
        } else if (choice < 30 && pendingRead != null) {
          answerRead();
        } else if (choice < 70 && !inFlight.isEmpty()) {
          complete(inFlight.remove(random.nextInt(inFlight.size())), random.nextInt(10) == 0);
        } else if (choice < 72) {
          crash();
        } else {
          feed(new Input.Tick());
        }
      }
      assertTrue(done(lastTimestamp), "not finished: " + context());
      for (EntityId receiver : RECEIVERS) {
        assertEquals(expected.getOrDefault(receiver, List.of()),
            applied.getOrDefault(receiver, List.of()), receiver + ": " + context());
      }
    }

    boolean done(long lastTimestamp) {
      return safe == lastTimestamp && core.pendingMessages() == 0 && inFlight.isEmpty()
          && core.watermark() == lastTimestamp;
    }

    void start() {
      core = new DeliveryCore(DC, recorded, new DeliveryLimits(2, 1 + random.nextInt(4), 5, 20,
          random.nextInt(50)));
      pendingRead = null;
      feed(new Input.Started());
    }

    void crash() {
      // Deliveries in flight ran or not, at random; either way the new core emits them again.
      for (Message message : inFlight) {
        if (random.nextBoolean()) {
          receive(message);
        }
      }
      inFlight.clear();
      start();
    }

    void answerRead() {
      Effect.Read read = pendingRead;
      pendingRead = null;
      feed(new Input.EntriesRead(LogReads.answer(DC, log, read, safe)));
    }

    /** The receiving turn: the marker decides, as TurnEvaluator.delivery does. */
    void receive(Message message) {
      long[] marker = markers.get(message.receiver());
      if (marker != null && (marker[0] > message.timestamp()
          || (marker[0] == message.timestamp() && marker[1] >= message.index()))) {
        return;
      }
      markers.put(message.receiver(), new long[] {message.timestamp(), message.index()});
      applied.computeIfAbsent(message.receiver(), r -> new ArrayList<>()).add(message);
    }

    void complete(Message message, boolean fails) {
      if (fails) {
        feed(new Input.DeliveryFailed(message));
      } else {
        receive(message);
        feed(new Input.Delivered(message));
      }
    }

    void feed(Input input) {
      for (Effect effect : core.handle(input, now)) {
        switch (effect) {
          case Effect.Read read -> {
            assertTrue(pendingRead == null, "two reads at once: " + context());
            pendingRead = read;
          }
          case Effect.Deliver deliver -> {
            for (Message other : inFlight) {
              assertTrue(!other.receiver().equals(deliver.message().receiver()),
                  "two messages in flight to one receiver: " + context());
            }
            inFlight.add(deliver.message());
          }
          case Effect.RecordWatermark record -> {
            for (List<Message> messages : expected.values()) {
              for (Message message : messages) {
                List<Message> got = applied.getOrDefault(message.receiver(), List.of());
                assertTrue(message.timestamp() > record.timestamp() || got.contains(message),
                    "watermark " + record.timestamp() + " passes undelivered " + message + ": "
                        + context());
              }
            }
            recorded = record.timestamp();
            feed(new Input.WatermarkRecorded(DC, record.timestamp()));
          }
        }
      }
    }
  }
}
