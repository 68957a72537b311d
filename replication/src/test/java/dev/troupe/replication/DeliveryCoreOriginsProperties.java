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
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

/**
 * Two origins, this data centre's log and a peer's, delivered through {@link DeliveryCore} by a
 * driver that advances this log's safe timestamp and the peer's applied entry apart, reads in
 * random batches, completes deliveries in random order, fails some and crashes (a new core from
 * the recorded watermarks). Receivers are causal, of a strong type homed here, or homed at the
 * peer; they keep a marker per origin as the receiving turn does. Checked: this DC delivers
 * exactly the messages that are its own (its log's to receivers not homed elsewhere, the peer's to
 * receivers homed here), each once; never a peer's message above the applied entry; each receiver
 * gets a message only after every message to it that causally precedes it (same origin: log
 * order; across origins: the sender's dependency vector covers it); the recorded watermarks never
 * pass an undelivered message of their origin. The failing seed is in the message.
 */
class DeliveryCoreOriginsProperties {
  private static final int HERE = 3;
  private static final int PEER = 4;
  private static final List<EntityId> RECEIVERS = List.of(new EntityId("C", "a"),
      new EntityId("H", "a"), new EntityId("H", "b"), new EntityId("P", "a"));
  /** H is homed here, P at the peer; C is causal. */
  private static final Map<EntityId, Integer> HOMES = Map.of(new EntityId("H", "a"), HERE,
      new EntityId("H", "b"), HERE, new EntityId("P", "a"), PEER);

  @Property(tries = 300)
  void eachDataCentreDeliversExactlyItsMessagesOnceInCausalOrder(@ForAll long seed) {
    new Run(seed).run();
  }

  private static final class Run {
    final long seed;
    final Random random;
    final Map<Integer, List<ReplicationEntry>> logs = new HashMap<>();
    final Set<Message> expected = new HashSet<>();
    final List<Message> all = new ArrayList<>();
    final Map<EntityId, List<Message>> applied = new HashMap<>();
    final Map<String, long[]> markers = new HashMap<>();
    final List<Message> inFlight = new ArrayList<>();
    final Map<Integer, Long> last = new HashMap<>();
    long safe;
    long peerApplied;
    DependencyVector recorded = DependencyVector.EMPTY;
    long now;
    DeliveryCore core;
    final Map<Integer, Effect.Read> pendingReads = new HashMap<>();

    Run(long seed) {
      this.seed = seed;
      this.random = new Random(seed);
      logs.put(HERE, new ArrayList<>());
      logs.put(PEER, new ArrayList<>());
      last.put(HERE, 0L);
      last.put(PEER, 0L);
      long timestamp = 0;
      int parts = 1 + random.nextInt(30);
      for (int i = 0; i < parts; i++) {
        timestamp += 1 + random.nextInt(3);
        int origin = random.nextBoolean() ? HERE : PEER;
        int other = origin == HERE ? PEER : HERE;
        // The sender saw some prefix of the other origin's log (what was applied at its DC).
        List<ReplicationEntry> otherLog = logs.get(other);
        long saw = otherLog.isEmpty() ? 0
            : otherLog.get(random.nextInt(otherLog.size())).timestamp();
        DependencyVector dependencies = saw == 0 ? DependencyVector.EMPTY
            : DependencyVector.of(Map.of(other, saw));
        List<Operation> operations = new ArrayList<>();
        List<EntityId> receivers = new ArrayList<>(RECEIVERS);
        java.util.Collections.shuffle(receivers, random);
        int messages = random.nextInt(3);
        for (int m = 0; m < messages; m++) {
          operations.add(new Operation.SendMessage(receivers.get(m), "hear", Json.parse("{}")));
          Message message = new Message(origin, timestamp, m, new EntityId("S", "s"),
              receivers.get(m), "hear", Json.parse("{}"), dependencies);
          all.add(message);
          Integer home = HOMES.get(receivers.get(m));
          if (origin == HERE ? home == null || home == HERE : home != null && home == HERE) {
            expected.add(message);
          }
        }
        logs.get(origin).add(new ReplicationEntry.Part(origin, timestamp, timestamp, 0,
            new EntityId("S", "s"), operations, dependencies));
        last.put(origin, timestamp);
      }
    }

    String context() {
      return "seed " + seed;
    }

    void run() {
      start();
      for (int step = 0; step < 20_000 && !done(); step++) {
        now += random.nextInt(30);
        int choice = random.nextInt(100);
        if (choice < 8) {
          safe = Math.min(last.get(HERE), safe + 1 + random.nextInt(5));
        } else if (choice < 16) {
          peerApplied = Math.min(last.get(PEER), peerApplied + 1 + random.nextInt(5));
          feed(new Input.AppliedVectorRead(DependencyVector.of(Map.of(PEER, peerApplied))));
        } else if (choice < 36 && !pendingReads.isEmpty()) {
          List<Integer> origins = new ArrayList<>(pendingReads.keySet());
          answerRead(pendingReads.remove(origins.get(random.nextInt(origins.size()))));
        } else if (choice < 70 && !inFlight.isEmpty()) {
          complete(inFlight.remove(random.nextInt(inFlight.size())), random.nextInt(10) == 0);
        } else if (choice < 72) {
          crash();
        } else {
          feed(new Input.Tick());
        }
      }
      assertTrue(done(), "not finished: " + context());
      Set<Message> got = new HashSet<>();
      applied.values().forEach(got::addAll);
      assertEquals(expected, got, context());
      int count = applied.values().stream().mapToInt(List::size).sum();
      assertEquals(expected.size(), count, "a message applied twice: " + context());
    }

    boolean done() {
      return safe == last.get(HERE) && peerApplied == last.get(PEER)
          && core.pendingMessages() == 0 && inFlight.isEmpty()
          && core.watermark(HERE) == last.get(HERE) && core.watermark(PEER) == last.get(PEER);
    }

    void start() {
      core = new DeliveryCore(HERE, recorded, Set.of(PEER), new DeliveryLimits(2,
          1 + random.nextInt(4), 3, 20, random.nextInt(50), 80));
      pendingReads.clear();
      feed(new Input.AppliedVectorRead(DependencyVector.of(Map.of(PEER, peerApplied))));
      feed(new Input.Started());
    }

    void crash() {
      for (Message message : inFlight) {
        if (random.nextBoolean()) {
          receive(message);
        }
      }
      inFlight.clear();
      start();
    }

    void answerRead(Effect.Read read) {
      // This DC's log up to its safe timestamp; the peer's as received (ahead of applied).
      long bound = read.originDc() == HERE ? safe : last.get(PEER);
      feed(new Input.EntriesRead(LogReads.answer(read.originDc(), logs.get(read.originDc()), read,
          bound), HOMES));
    }

    /** The receiving turn: the origin's marker decides, as TurnEvaluator.delivery does. */
    void receive(Message message) {
      String key = message.receiver() + "@" + message.originDc();
      long[] marker = markers.get(key);
      if (marker != null && (marker[0] > message.timestamp()
          || (marker[0] == message.timestamp() && marker[1] >= message.index()))) {
        return;
      }
      markers.put(key, new long[] {message.timestamp(), message.index()});
      List<Message> before = applied.computeIfAbsent(message.receiver(), r -> new ArrayList<>());
      // Every expected message to this receiver that causally precedes it came first.
      for (Message other : expected) {
        if (other.receiver().equals(message.receiver()) && precedes(other, message)) {
          assertTrue(before.contains(other), other + " not delivered before " + message + ": "
              + context());
        }
      }
      before.add(message);
    }

    static boolean precedes(Message a, Message b) {
      if (a.originDc() == b.originDc()) {
        return a.timestamp() < b.timestamp()
            || (a.timestamp() == b.timestamp() && a.index() < b.index());
      }
      return a.timestamp() <= b.dependencies().get(a.originDc());
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
            assertTrue(pendingReads.put(read.originDc(), read) == null,
                "two reads of one origin at once: " + context());
          }
          case Effect.Deliver deliver -> {
            Message message = deliver.message();
            assertTrue(expected.contains(message), "not this DC's to deliver: " + message + ": "
                + context());
            assertTrue(message.originDc() == HERE || message.timestamp() <= peerApplied,
                "delivered above the applied entry: " + message + ": " + context());
            for (Message other : inFlight) {
              assertTrue(!other.receiver().equals(message.receiver()),
                  "two messages in flight to one receiver: " + context());
            }
            inFlight.add(message);
          }
          case Effect.RecordWatermark record -> {
            for (Message message : expected) {
              List<Message> got = applied.getOrDefault(message.receiver(), List.of());
              assertTrue(message.originDc() != record.originDc()
                      || message.timestamp() > record.timestamp() || got.contains(message),
                  "watermark " + record + " passes undelivered " + message + ": " + context());
            }
            recorded = recorded.atLeast(record.originDc(), record.timestamp());
            feed(new Input.WatermarkRecorded(record.originDc(), record.timestamp()));
          }
        }
      }
    }
  }
}
