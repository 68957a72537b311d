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
}
