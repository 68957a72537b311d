package dev.troupe.replication;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.Invariants;
import dev.troupe.model.Operation;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationEntry;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Delivers the causal messages (TTCC) sent by this data centre's transactions: which message goes
 * to its receiver when. Pure and deterministic: (state, input, now) to effects; the runtime's
 * {@code MessageDelivery} reads the replication log, runs the deliveries as turns and records the
 * watermark.
 *
 * <p><b>Source.</b> A message is an operation ({@link Operation.SendMessage}) of its sender's
 * committed part in this data centre's own replication log. The log's read of the local origin
 * returns entries only up to the local safe timestamp: every entry at or below the batch's {@code
 * upToTimestamp} is in it or an earlier batch, in commit-timestamp order, and no commit still in
 * flight can appear below it. A message exists iff its sender's transaction committed, and is
 * durable with it (same write batch as the journal record).
 *
 * <p><b>Identity.</b> A message is named by (timestamp of its part, index): the index numbers the
 * messages of one timestamp in log key order. A read never splits one timestamp's entries, so the
 * numbering is the same at every re-read after a crash.
 *
 * <p><b>Order (rule 6).</b> Messages to one receiver are delivered one at a time, in log order: the
 * next is emitted only once the previous one is reported delivered. Log order is commit-timestamp
 * order, which extends causality within the data centre (a transaction that saw another commits
 * after it), so a sender's messages arrive in order and causally related messages from different
 * senders too. Messages to different receivers are in flight together, at most {@code
 * maxDelivering}.
 *
 * <p><b>Rules 10 and 11.</b> A message is delivered only after its sender's transaction is durable
 * and below the safe timestamp (for a multi-entity transaction: every part its decision names is
 * read, since the parts commit one by one, each at its own timestamp), so the receiving turn, which runs at this data centre afterwards,
 * sees everything the sender saw and wrote; it commits later than the sender, so every other data
 * centre applies it after the sender's transaction (origin order).
 *
 * <p><b>Exactly once, and the watermark.</b> The receiving turn checks and writes the receiver's
 * delivered marker atomically with the action (or alone when the action cannot run: the message
 * is consumed, never retried forever); a delivery that did not run (the node overloaded) is
 * emitted again after {@code retryDelayMillis}. The <b>delivered watermark</b> is the largest
 * timestamp at or below which every message is delivered (and the log read); it is recorded
 * durably (throttled) and reading resumes from it after a crash. Messages delivered after the last
 * record are emitted again and skipped by the markers. The log's local entries may be truncated
 * only at or below the recorded watermark.
 */
public final class DeliveryCore {

  /** One message, named by (timestamp, index) in its origin's log. */
  public record Message(long timestamp, int index, EntityId sender, EntityId receiver,
      String action, JsonNode args) {}

  /** What the shell tells the core. */
  public sealed interface Input {
    /** Delivery starts (once, first): the core asks for the log after the watermark. */
    record Started() implements Input {}

    /** The answer to a {@link Effect.Read}: the local origin's entries after its timestamp. */
    record EntriesRead(ReplicationBatch batch) implements Input {}

    /** A {@link Effect.Read} failed (the store failed or closed); retried at the next tick. */
    record ReadFailed() implements Input {}

    /** The receiving turn ran (the action applied, or the message consumed), or was a no-op. */
    record Delivered(Message message) implements Input {}

    /** The receiving turn did not run; the message is emitted again after the retry delay. */
    record DeliveryFailed(Message message) implements Input {}

    /** A {@link Effect.RecordWatermark} is durable. */
    record WatermarkRecorded(long timestamp) implements Input {}

    /** Time passes: retries, reads of new entries, watermark records. */
    record Tick() implements Input {}
  }

  /** What the core asks the shell to do. */
  public sealed interface Effect {
    /** Read the local origin's log after {@code afterTimestamp}; answer {@link Input.EntriesRead}. */
    record Read(long afterTimestamp, int maxEntries) implements Effect {}

    /** Run the message's receiving turn; answer {@link Input.Delivered} or a failure. */
    record Deliver(Message message) implements Effect {}

    /** Record the delivered watermark durably; answer {@link Input.WatermarkRecorded}. */
    record RecordWatermark(long timestamp) implements Effect {}
  }

  private static final Comparator<Message> LOG_ORDER =
      Comparator.comparingLong(Message::timestamp).thenComparingInt(Message::index);

  private final int originDc;
  private final DeliveryLimits limits;
  /** Every message read and not yet delivered, in log order, with its transaction's id. */
  private final TreeMap<Message, Long> pending = new TreeMap<>(LOG_ORDER);
  /**
   * Multi-entity transactions whose decision was read but not yet every part: participant
   * entities still to come, by transaction id. Their messages wait (rule 11: a part below the
   * safe timestamp does not mean the transaction's other parts are).
   */
  private final Map<Long, Set<EntityId>> incomplete = new HashMap<>();
  /** Receivers with a message emitted and not yet reported (or waiting for its retry). */
  private final Set<EntityId> busyReceivers = new HashSet<>();
  /** Failed deliveries and when they are emitted again. */
  private final Map<Message, Long> retries = new HashMap<>();
  private long readUpTo;
  private boolean reading;
  private long recordedWatermark;
  private boolean recording;
  private long lastRecordMillis = Long.MIN_VALUE;
  private int inFlight;

  /**
   * @param originDc this data centre's id: the origin whose log is read
   * @param recordedWatermark the watermark as last recorded (0 if never)
   */
  public DeliveryCore(int originDc, long recordedWatermark, DeliveryLimits limits) {
    Invariants.check(recordedWatermark >= 0, "a delivered watermark of %d", recordedWatermark);
    this.originDc = originDc;
    this.limits = limits;
    this.readUpTo = recordedWatermark;
    this.recordedWatermark = recordedWatermark;
  }

  /** Feeds one input; returns the effects to perform, in order. */
  public List<Effect> handle(Input input, long nowMillis) {
    List<Effect> effects = new ArrayList<>();
    switch (input) {
      case Input.Started ignored -> read(effects);
      case Input.EntriesRead read -> {
        reading = false;
        ReplicationBatch batch = read.batch();
        Invariants.check(batch.originDc() == originDc,
            "delivery read the log of data centre %d, not its own %d", batch.originDc(), originDc);
        accept(batch);
        dispatch(effects);
        // A batch with entries may have been cut by its size: read on at once.
        if (!batch.entries().isEmpty()) {
          read(effects);
        }
      }
      case Input.ReadFailed ignored -> reading = false;
      case Input.Delivered delivered -> {
        Invariants.check(pending.remove(delivered.message()) != null,
            "a delivery reported for a message not in flight: %s", delivered.message());
        Invariants.check(busyReceivers.remove(delivered.message().receiver()),
            "a delivery reported for a receiver with nothing in flight: %s", delivered.message());
        inFlight--;
        dispatch(effects);
        if (pending.size() + 1 >= limits.maxPendingMessages()) {
          read(effects); // reading had stopped at the bound
        }
      }
      case Input.DeliveryFailed failed -> {
        Invariants.check(pending.containsKey(failed.message()),
            "a failed delivery of a message not in flight: %s", failed.message());
        // The receiver stays busy: a later message to it must not overtake this one.
        retries.put(failed.message(), nowMillis + limits.retryDelayMillis());
      }
      case Input.WatermarkRecorded recorded -> {
        recording = false;
        recordedWatermark = Math.max(recordedWatermark, recorded.timestamp());
      }
      case Input.Tick ignored -> {
        List<Message> due = new ArrayList<>();
        retries.forEach((message, at) -> {
          if (at <= nowMillis) {
            due.add(message);
          }
        });
        due.sort(LOG_ORDER);
        for (Message message : due) {
          retries.remove(message);
          effects.add(new Effect.Deliver(message));
        }
        read(effects);
      }
    }
    recordWatermark(effects, nowMillis);
    return effects;
  }

  private void accept(ReplicationBatch batch) {
    long lastTimestamp = -1;
    int index = 0;
    for (ReplicationEntry entry : batch.entries()) {
      if (entry.timestamp() <= readUpTo) {
        continue; // read before (a batch overlapping the last one): never numbered twice
      }
      if (entry.timestamp() != lastTimestamp) {
        lastTimestamp = entry.timestamp();
        index = 0;
      }
      switch (entry) {
        case ReplicationEntry.Decision decision ->
            incomplete.put(decision.transactionId(), new HashSet<>(decision.participants()));
        case ReplicationEntry.Part part -> {
          Set<EntityId> waiting = incomplete.get(part.transactionId());
          if (waiting != null) {
            waiting.remove(part.entity());
            if (waiting.isEmpty()) {
              incomplete.remove(part.transactionId());
            }
          }
          for (Operation operation : part.operations()) {
            if (operation instanceof Operation.SendMessage send) {
              pending.put(new Message(part.timestamp(), index++, part.entity(), send.receiver(),
                  send.action(), send.args()), part.transactionId());
            }
          }
        }
      }
    }
    readUpTo = Math.max(readUpTo, batch.upToTimestamp());
  }

  /** Emits the first pending message of every idle receiver, in log order, up to the bound. */
  private void dispatch(List<Effect> effects) {
    if (inFlight >= limits.maxDelivering()) {
      return;
    }
    Set<EntityId> seen = new HashSet<>();
    for (Map.Entry<Message, Long> entry : pending.entrySet()) {
      if (inFlight >= limits.maxDelivering()) {
        return;
      }
      Message message = entry.getKey();
      // Only a receiver's first pending message may go: the ones after it wait their turn, and
      // all of them while it waits for the rest of its transaction.
      if (seen.add(message.receiver()) && !incomplete.containsKey(entry.getValue())
          && busyReceivers.add(message.receiver())) {
        inFlight++;
        effects.add(new Effect.Deliver(message));
      }
    }
  }

  private void read(List<Effect> effects) {
    if (!reading && pending.size() < limits.maxPendingMessages()) {
      reading = true;
      effects.add(new Effect.Read(readUpTo, limits.readBatchMaxEntries()));
    }
  }

  private void recordWatermark(List<Effect> effects, long nowMillis) {
    long watermark = watermark();
    if (watermark > recordedWatermark && !recording
        && (lastRecordMillis == Long.MIN_VALUE
            || nowMillis - lastRecordMillis >= limits.watermarkRecordIntervalMillis())) {
      recording = true;
      lastRecordMillis = nowMillis;
      effects.add(new Effect.RecordWatermark(watermark));
    }
  }

  /**
   * The largest timestamp at or below which every message is read and delivered. (A message
   * waiting for the rest of its transaction is pending, so it holds the watermark too.)
   */
  public long watermark() {
    return pending.isEmpty() ? readUpTo
        : Math.min(readUpTo, pending.firstKey().timestamp() - 1);
  }

  /** The watermark as last recorded durably: the bound for truncating the local log. */
  public long recordedWatermark() {
    return recordedWatermark;
  }

  /** Messages read and not yet delivered. */
  public int pendingMessages() {
    return pending.size();
  }

  /** Messages emitted and not yet reported (those waiting for a retry included). */
  public int deliveringMessages() {
    return inFlight;
  }
}
