package dev.troupe.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationEntry;
import dev.troupe.replication.DeliveryCore.Effect;
import dev.troupe.replication.DeliveryCore.Input;
import dev.troupe.replication.DeliveryCore.Message;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Each rule of {@link DeliveryCore}. */
class DeliveryCoreTest {
  private static final int DC = 5;
  private static final EntityId S1 = new EntityId("S", "1");
  private static final EntityId S2 = new EntityId("S", "2");
  private static final EntityId R = new EntityId("R", "r");
  private static final EntityId Q = new EntityId("R", "q");
  private static final DeliveryLimits LIMITS = new DeliveryLimits(8, 100, 1000, 50, 0);

  private static ReplicationEntry.Part part(long timestamp, EntityId sender,
      EntityId... receivers) {
    List<Operation> operations = new ArrayList<>();
    operations.add(new Operation.Increment("n", 1));
    for (EntityId receiver : receivers) {
      operations.add(new Operation.SendMessage(receiver, "hear", Json.parse("{}")));
    }
    return new ReplicationEntry.Part(DC, timestamp, timestamp, 0, sender, operations,
        DependencyVector.EMPTY);
  }

  private static Input.EntriesRead read(long upTo, ReplicationEntry... entries) {
    return new Input.EntriesRead(new ReplicationBatch(DC, List.of(entries), upTo));
  }

  private static List<Message> delivers(List<Effect> effects) {
    List<Message> messages = new ArrayList<>();
    for (Effect effect : effects) {
      if (effect instanceof Effect.Deliver deliver) {
        messages.add(deliver.message());
      }
    }
    return messages;
  }

  private static List<Long> records(List<Effect> effects) {
    List<Long> records = new ArrayList<>();
    for (Effect effect : effects) {
      if (effect instanceof Effect.RecordWatermark record) {
        records.add(record.timestamp());
      }
    }
    return records;
  }

  @Test
  void readsFromTheRecordedWatermark() {
    DeliveryCore core = new DeliveryCore(DC, 40, LIMITS);
    assertEquals(List.of(new Effect.Read(DC, 40, 100)), core.handle(new Input.Started(), 0));
  }

  @Test
  void oneReceiverGetsItsMessagesOneAtATimeInLogOrder() {
    DeliveryCore core = new DeliveryCore(DC, 0, LIMITS);
    core.handle(new Input.Started(), 0);
    // S2's part (timestamp 20) after S1's (10): the log's order, which causality respects.
    List<Message> first = delivers(core.handle(read(30, part(10, S1, R), part(20, S2, R)), 0));
    assertEquals(1, first.size());
    assertEquals(new Message(DC, 10, 0, S1, R, "hear", Json.parse("{}")), first.get(0));
    assertEquals(List.of(), delivers(core.handle(new Input.Tick(), 1)));
    List<Message> second = delivers(core.handle(new Input.Delivered(first.get(0)), 2));
    assertEquals(List.of(new Message(DC, 20, 0, S2, R, "hear", Json.parse("{}"))), second);
  }

  @Test
  void differentReceiversAreDeliveredTogetherUpToTheBound() {
    DeliveryCore core = new DeliveryCore(DC, 0, new DeliveryLimits(2, 100, 1000, 50, 0));
    core.handle(new Input.Started(), 0);
    EntityId third = new EntityId("R", "t");
    List<Message> emitted = delivers(core.handle(read(30, part(10, S1, R, Q, third)), 0));
    assertEquals(List.of(R, Q), emitted.stream().map(Message::receiver).toList());
    assertEquals(List.of(0, 1), emitted.stream().map(Message::index).toList());
    List<Message> next = delivers(core.handle(new Input.Delivered(emitted.get(1)), 1));
    assertEquals(List.of(third), next.stream().map(Message::receiver).toList());
    assertEquals(2, next.get(0).index());
  }

  @Test
  void theWatermarkIsThePrefixOfDeliveredMessages() {
    DeliveryCore core = new DeliveryCore(DC, 0, LIMITS);
    core.handle(new Input.Started(), 0);
    List<Effect> effects = core.handle(read(50, part(10, S1, R), part(20, S2, Q)), 0);
    List<Message> emitted = delivers(effects);
    assertEquals(9, core.watermark());
    assertEquals(List.of(9L), records(effects));
    core.handle(new Input.WatermarkRecorded(DC, 9), 0);
    // The later message delivered first: the watermark waits for the earlier one.
    core.handle(new Input.Delivered(emitted.get(1)), 1);
    assertEquals(9, core.watermark());
    List<Effect> last = core.handle(new Input.Delivered(emitted.get(0)), 2);
    assertEquals(50, core.watermark());
    assertEquals(List.of(50L), records(last));
    core.handle(new Input.WatermarkRecorded(DC, 50), 3);
    assertEquals(50, core.recordedWatermark());
  }

  @Test
  void anIdleLogAdvancesTheWatermarkAndRecordsAreThrottled() {
    DeliveryCore core = new DeliveryCore(DC, 0, new DeliveryLimits(8, 100, 1000, 50, 1000));
    core.handle(new Input.Started(), 0);
    assertEquals(List.of(7L), records(core.handle(read(7), 0)));
    core.handle(new Input.WatermarkRecorded(DC, 7), 0);
    core.handle(new Input.Tick(), 10);
    assertEquals(List.of(), records(core.handle(read(12), 10)));
    assertEquals(12, core.watermark());
    assertEquals(List.of(12L), records(core.handle(new Input.Tick(), 1000)));
    // One record at a time.
    assertEquals(List.of(), records(core.handle(read(13), 2500)));
    assertEquals(List.of(13L), records(core.handle(new Input.WatermarkRecorded(DC, 12), 2500)));
  }

  @Test
  void aFailedDeliveryIsRetriedAfterTheDelayAndNothingOvertakesIt() {
    DeliveryCore core = new DeliveryCore(DC, 0, LIMITS);
    core.handle(new Input.Started(), 0);
    Message first = delivers(core.handle(read(30, part(10, S1, R), part(20, S2, R)), 0)).get(0);
    core.handle(new Input.DeliveryFailed(first), 100);
    assertEquals(List.of(), delivers(core.handle(new Input.Tick(), 120)));
    assertEquals(List.of(first), delivers(core.handle(new Input.Tick(), 150)));
    assertEquals(20, delivers(core.handle(new Input.Delivered(first), 160)).get(0).timestamp());
  }

  @Test
  void aBatchOverlappingAnEarlierOneNumbersNothingTwice() {
    DeliveryCore core = new DeliveryCore(DC, 0, LIMITS);
    core.handle(new Input.Started(), 0);
    Message only = delivers(core.handle(read(10, part(10, S1, R)), 0)).get(0);
    core.handle(read(20, part(10, S1, R), part(20, S2, Q)), 0);
    assertEquals(2, core.pendingMessages());
    core.handle(new Input.Delivered(only), 1);
    assertEquals(1, core.pendingMessages());
  }

  @Test
  void readingStopsAtThePendingBound() {
    DeliveryCore core = new DeliveryCore(DC, 0, new DeliveryLimits(1, 100, 2, 50, 0));
    core.handle(new Input.Started(), 0);
    List<Effect> effects = core.handle(read(30, part(10, S1, R), part(20, S2, R)), 0);
    assertTrue(effects.stream().noneMatch(effect -> effect instanceof Effect.Read));
    Message first = delivers(effects).get(0);
    List<Effect> after = core.handle(new Input.Delivered(first), 1);
    assertTrue(after.contains(new Effect.Read(DC, 30, 100)), after.toString());
  }

  @Test
  void aMultiEntityTransactionsMessageWaitsForEveryPartItsDecisionNames() {
    DeliveryCore core = new DeliveryCore(DC, 0, LIMITS);
    core.handle(new Input.Started(), 0);
    long transaction = 77;
    ReplicationEntry decision = new ReplicationEntry.Decision(DC, 10, transaction, 0,
        List.of(S1, R), DependencyVector.EMPTY);
    ReplicationEntry senderPart = new ReplicationEntry.Part(DC, 11, transaction, 0, S1,
        List.of(new Operation.SendMessage(R, "hear", Json.parse("{}"))), DependencyVector.EMPTY);
    // The receiver's part (what the sender wrote to it through a sync call) is not committed
    // yet: it is above the safe timestamp, so not in this batch.
    List<Effect> early = core.handle(read(11, decision, senderPart), 0);
    assertEquals(List.of(), delivers(early));
    assertEquals(10, core.watermark());
    ReplicationEntry receiverPart = new ReplicationEntry.Part(DC, 12, transaction, 0, R,
        List.of(new Operation.Increment("n", 1)), DependencyVector.EMPTY);
    List<Message> later = delivers(core.handle(read(12, receiverPart), 1));
    assertEquals(List.of(new Message(DC, 11, 0, S1, R, "hear", Json.parse("{}"))), later);
  }

  // ------------------------------------------------------------ receivers homed elsewhere, here

  private static final int PEER = 7;
  /** R is of a strong type homed at the peer, Q of one homed here. */
  private static final java.util.Map<EntityId, Integer> HOMES = java.util.Map.of(R, PEER, Q, DC);

  private static ReplicationEntry.Part remotePart(int origin, long timestamp, EntityId sender,
      DependencyVector dependencies, EntityId... receivers) {
    List<Operation> operations = new ArrayList<>();
    for (EntityId receiver : receivers) {
      operations.add(new Operation.SendMessage(receiver, "hear", Json.parse("{}")));
    }
    return new ReplicationEntry.Part(origin, timestamp, timestamp, 0, sender, operations,
        dependencies);
  }

  private static Input.EntriesRead readOf(int origin, long upTo, ReplicationEntry... entries) {
    return new Input.EntriesRead(new ReplicationBatch(origin, List.of(entries), upTo), HOMES);
  }

  private static DeliveryCore withPeer() {
    return new DeliveryCore(DC, DependencyVector.EMPTY, java.util.Set.of(PEER), LIMITS);
  }

  @Test
  void aMessageToAReceiverHomedElsewhereIsSkippedAndTheWatermarkPassesIt() {
    DeliveryCore core = withPeer();
    core.handle(new Input.Started(), 0);
    EntityId causal = new EntityId("C", "c");
    List<Message> sent = delivers(core.handle(readOf(DC, 30, part(10, S1, R, causal, Q)), 0));
    // R is the peer's to deliver; the causal receiver and Q (homed here) are this DC's. The
    // numbering counts R's message all the same: one name at every data centre.
    assertEquals(List.of(new Message(DC, 10, 1, S1, causal, "hear", Json.parse("{}")),
        new Message(DC, 10, 2, S1, Q, "hear", Json.parse("{}"))), sent);
    sent.forEach(message -> core.handle(new Input.Delivered(message), 1));
    assertEquals(30, core.watermark());
  }

  @Test
  void anotherOriginsMessageToAReceiverHomedHereWaitsUntilAppliedHere() {
    DeliveryCore core = withPeer();
    List<Effect> started = core.handle(new Input.Started(), 0);
    // Nothing of the peer's log is applied here yet: it is not even read.
    assertEquals(List.of(new Effect.Read(DC, 0, 100)), started);
    core.handle(new Input.AppliedVectorRead(DependencyVector.of(java.util.Map.of(PEER, 25L))), 1);
    List<Effect> tick = core.handle(new Input.Tick(), 1);
    assertTrue(tick.contains(new Effect.Read(PEER, 0, 100)), tick.toString());
    // The batch reaches past the applied entry: what is above it waits.
    List<Message> sent = delivers(core.handle(readOf(PEER, 40,
        remotePart(PEER, 20, S1, DependencyVector.EMPTY, Q, R),
        remotePart(PEER, 30, S2, DependencyVector.EMPTY, Q)), 2));
    // Only Q's (homed here), with the peer as its origin; R is not homed here.
    Message first = new Message(PEER, 20, 0, S1, Q, "hear", Json.parse("{}"));
    assertEquals(List.of(first), sent);
    core.handle(new Input.Delivered(first), 3);
    assertEquals(25, core.watermark(PEER));
    assertEquals(List.of(), delivers(core.handle(new Input.Tick(), 4)));
    core.handle(new Input.AppliedVectorRead(DependencyVector.of(java.util.Map.of(PEER, 40L))), 5);
    List<Effect> later = core.handle(new Input.Tick(), 5);
    assertTrue(later.contains(new Effect.Read(PEER, 25, 100)), later.toString());
    assertEquals(List.of(new Message(PEER, 30, 0, S2, Q, "hear", Json.parse("{}"))),
        delivers(core.handle(readOf(PEER, 40,
            remotePart(PEER, 30, S2, DependencyVector.EMPTY, Q)), 6)));
  }

  /**
   * A peer added while running: its log is read from its recorded watermark once the applied
   * vector covers it, as a configured peer's, and its messages to receivers homed here delivered;
   * adding a known origin again changes nothing.
   */
  @Test
  void aPeerAddedWhileRunningIsReadLikeAConfiguredOne() {
    DeliveryCore core = new DeliveryCore(DC, DependencyVector.EMPTY, java.util.Set.of(), LIMITS);
    assertEquals(List.of(new Effect.Read(DC, 0, 100)), core.handle(new Input.Started(), 0));
    core.handle(readOf(DC, 5), 0);
    core.handle(new Input.OriginAdded(PEER, 12), 1);
    core.handle(new Input.OriginAdded(PEER, 0), 1); // known now: left as it is
    core.handle(new Input.OriginAdded(DC, 0), 1); // this one: left as it is
    assertEquals(12, core.watermark(PEER));
    assertEquals(List.of(), core.handle(new Input.Tick(), 2).stream()
        .filter(effect -> effect instanceof Effect.Read read && read.originDc() == PEER).toList());
    core.handle(new Input.AppliedVectorRead(DependencyVector.of(java.util.Map.of(PEER, 30L))), 3);
    List<Effect> tick = core.handle(new Input.Tick(), 3);
    assertTrue(tick.contains(new Effect.Read(PEER, 12, 100)), tick.toString());
    assertEquals(List.of(new Message(PEER, 20, 0, S1, Q, "hear", Json.parse("{}"))),
        delivers(core.handle(readOf(PEER, 30,
            remotePart(PEER, 20, S1, DependencyVector.EMPTY, Q)), 4)));
  }

  @Test
  void eachOriginHasItsOwnWatermarkRecord() {
    DeliveryCore core = withPeer();
    core.handle(new Input.Started(), 0);
    core.handle(new Input.AppliedVectorRead(DependencyVector.of(java.util.Map.of(PEER, 50L))), 0);
    core.handle(new Input.Tick(), 0);
    List<Effect> effects = new ArrayList<>(core.handle(readOf(DC, 10), 1));
    effects.addAll(core.handle(readOf(PEER, 50), 1));
    assertTrue(effects.contains(new Effect.RecordWatermark(DC, 10)), effects.toString());
    assertTrue(effects.contains(new Effect.RecordWatermark(PEER, 50)), effects.toString());
    core.handle(new Input.WatermarkRecorded(PEER, 50), 2);
    assertEquals(50, core.recordedWatermark(PEER));
    assertEquals(0, core.recordedWatermark());
  }

  @Test
  void aMessageHomedHereWaitsForTheOtherOriginsItsSenderSaw() {
    DeliveryCore core = withPeer();
    core.handle(new Input.Started(), 0);
    // The local sender at 40 saw the peer's transaction at 30, which also sent Q a message.
    DependencyVector sawPeer = DependencyVector.of(java.util.Map.of(PEER, 30L));
    List<Message> early = delivers(core.handle(readOf(DC, 45,
        remotePart(DC, 40, S1, sawPeer, Q)), 1));
    assertEquals(List.of(), early, "delivered before the message its sender saw");
    core.handle(new Input.AppliedVectorRead(DependencyVector.of(java.util.Map.of(PEER, 30L))), 2);
    core.handle(new Input.Tick(), 2);
    List<Message> first = delivers(core.handle(readOf(PEER, 30,
        remotePart(PEER, 30, S2, DependencyVector.EMPTY, Q)), 3));
    assertEquals(List.of(new Message(PEER, 30, 0, S2, Q, "hear", Json.parse("{}"))), first);
    List<Message> second = delivers(core.handle(new Input.Delivered(first.get(0)), 4));
    assertEquals(List.of(new Message(DC, 40, 0, S1, Q, "hear", Json.parse("{}"), sawPeer)),
        second);
  }

  @Test
  void retriesBackOffDoublingUpToTheBound() {
    DeliveryCore core = new DeliveryCore(DC, 0, new DeliveryLimits(8, 100, 1000, 50, 0, 150));
    core.handle(new Input.Started(), 0);
    Message message = delivers(core.handle(read(20, part(10, S1, R)), 0)).get(0);
    long now = 0;
    for (long delay : new long[] {50, 100, 150, 150}) {
      core.handle(new Input.DeliveryFailed(message), now);
      assertEquals(List.of(), delivers(core.handle(new Input.Tick(), now + delay - 1)));
      assertEquals(List.of(message), delivers(core.handle(new Input.Tick(), now + delay)));
      now += delay;
    }
  }
}
