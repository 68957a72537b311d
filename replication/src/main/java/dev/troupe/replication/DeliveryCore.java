package dev.troupe.replication;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.Invariants;
import dev.troupe.model.Operation;
import dev.troupe.model.causal.DependencyVector;
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
import java.util.TreeSet;

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
 * read, since the parts commit one by one, each at its own timestamp), so the receiving turn,
 * which runs at this data centre afterwards, sees everything the sender saw and wrote; it commits later than the sender, so every other data
 * centre applies it after the sender's transaction (origin order).
 *
 * <p><b>Exactly once, and the watermark.</b> The receiving turn checks and writes the receiver's
 * delivered marker atomically with the action (or alone when the action cannot run: the message
 * is consumed, never retried forever); a delivery that did not run (the node overloaded, a
 * receiving transaction aborted by contention) is emitted again after a delay that doubles from
 * {@code retryDelayMillis} up to {@code maxRetryDelayMillis} at each further attempt. The <b>delivered watermark</b> is the largest
 * timestamp at or below which every message is delivered (and the log read); it is recorded
 * durably (throttled) and reading resumes from it after a crash. Messages delivered after the last
 * record are emitted again and skipped by the markers. The log's local entries may be truncated
 * only at or below the recorded watermark.
 *
 * <p><b>Receivers homed elsewhere, and here.</b> A message to a receiver of a strong type homed in
 * another data centre is not this data centre's to deliver (its actions run only at home): it is
 * skipped, and the watermark passes it. The receiver's home delivers it instead, from the log of
 * the sender's origin as received there ({@code remoteOrigins}), once the home's recorded applied
 * vector covers it ({@link Input.AppliedVectorRead}): the sender's transaction is applied there,
 * and with it everything the sending turn saw (causal application), so rule 11 holds at the home
 * as it does at the sender's data centre. Of a remote origin's log only messages to receivers
 * homed here are delivered; each origin has its own watermark (recorded, resumed from, and
 * bounding that origin's truncation) and its own receiver marker ({@code $delivered:<origin>}),
 * so deliveries from several origins never collide. Which receivers are homed where is a fact the
 * shell reads from the types and passes with each batch ({@link Input.EntriesRead#receiverHomes});
 * the rule is here. Numbering counts every message of a timestamp, skipped or not, so a message
 * has one name at every data centre.
 *
 * <p><b>Causal order across origins (rule 6).</b> A receiver homed here gets messages from
 * several logs. Timestamps extend causality across data centres (a data centre's clock moves past
 * every remote commit it applies), so its messages go in timestamp order; a message waits until
 * every other origin's log is read up to its sender's dependency on that origin (its part's
 * dependency vector): a message that causally precedes it is pending by then, and goes first. A
 * causal receiver gets messages from its sender's log only: no wait. Each origin's reading stops
 * at {@code maxPendingMessages} of its own, so messages waiting for another origin never stop
 * that origin's reads.
 */
public final class DeliveryCore {

  /**
   * One message, named by (origin, timestamp, index) in its origin's log.
   *
   * @param dependencies its sender's part's dependency vector (which other logs' entries the
   *     sending transaction may have seen)
   */
  public record Message(int originDc, long timestamp, int index, EntityId sender,
      EntityId receiver, String action, JsonNode args, DependencyVector dependencies) {
    /** A message of {@code originDc}'s log whose sender depends on nothing remote. */
    public Message(int originDc, long timestamp, int index, EntityId sender, EntityId receiver,
        String action, JsonNode args) {
      this(originDc, timestamp, index, sender, receiver, action, args, DependencyVector.EMPTY);
    }
  }

  /** What the shell tells the core. */
  public sealed interface Input {
    /** Delivery starts (once, first): the core asks for every origin's log after its watermark. */
    record Started() implements Input {}

    /**
     * The answer to a {@link Effect.Read}: the origin's entries after its timestamp.
     *
     * @param receiverHomes the home data centre of each receiver of the batch's messages that is
     *     of a strong type (a causal receiver is absent), as the types say when the batch is read
     */
    record EntriesRead(ReplicationBatch batch, Map<EntityId, Integer> receiverHomes)
        implements Input {
      public EntriesRead {
        receiverHomes = Map.copyOf(receiverHomes);
      }

      /** A batch whose receivers are all causal. */
      public EntriesRead(ReplicationBatch batch) {
        this(batch, Map.of());
      }
    }

    /** A {@link Effect.Read} failed (the store failed or closed); retried at the next tick. */
    record ReadFailed(int originDc) implements Input {}

    /**
     * A data centre became a peer while running (added at runtime): its log is read from its
     * recorded watermark once the applied vector covers its entries, like a configured peer's.
     * Known origins (this one's included) are left as they are; a peer removed at runtime stays
     * read, since what of it was applied here may still hold messages to deliver.
     */
    record OriginAdded(int originDc, long recordedWatermark) implements Input {}

    /**
     * The applied vector as recorded durably: a remote origin's messages are delivered only up to
     * its entry (their senders' transactions are applied here). Never lowers what it said before.
     */
    record AppliedVectorRead(DependencyVector applied) implements Input {}

    /** The receiving turn ran (the action applied, or the message consumed), or was a no-op. */
    record Delivered(Message message) implements Input {}

    /** The receiving turn did not run; the message is emitted again after a backoff. */
    record DeliveryFailed(Message message) implements Input {}

    /** A {@link Effect.RecordWatermark} is durable. */
    record WatermarkRecorded(int originDc, long timestamp) implements Input {}

    /** Time passes: retries, reads of new entries, watermark records. */
    record Tick() implements Input {}
  }

  /** What the core asks the shell to do. */
  public sealed interface Effect {
    /** Read an origin's log after {@code afterTimestamp}; answer {@link Input.EntriesRead}. */
    record Read(int originDc, long afterTimestamp, int maxEntries) implements Effect {}

    /** Run the message's receiving turn; answer {@link Input.Delivered} or a failure. */
    record Deliver(Message message) implements Effect {}

    /** Record an origin's delivered watermark durably; answer {@link Input.WatermarkRecorded}. */
    record RecordWatermark(int originDc, long timestamp) implements Effect {}
  }

  /** Timestamp order across origins (causal order: see the class comment), then log order. */
  private static final Comparator<Message> DELIVERY_ORDER =
      Comparator.comparingLong(Message::timestamp).thenComparingInt(Message::originDc)
          .thenComparingInt(Message::index);

  /** One origin's log as this core reads it. */
  private static final class Origin {
    final int dc;
    final boolean local;
    /** Its messages read and not yet delivered, in log order. */
    final TreeSet<Message> pending = new TreeSet<>(DELIVERY_ORDER);
    long readUpTo;
    /** A remote origin's messages are read only up to here (the recorded applied entry). */
    long readableUpTo;
    boolean reading;
    long recordedWatermark;
    boolean recording;
    long lastRecordMillis = Long.MIN_VALUE;

    Origin(int dc, boolean local, long recordedWatermark) {
      this.dc = dc;
      this.local = local;
      this.readUpTo = recordedWatermark;
      this.recordedWatermark = recordedWatermark;
      this.readableUpTo = local ? Long.MAX_VALUE : recordedWatermark;
    }

    /** The largest timestamp at or below which every message is read and delivered. */
    long watermark() {
      return pending.isEmpty() ? readUpTo : Math.min(readUpTo, pending.first().timestamp() - 1);
    }
  }

  private final int localDc;
  private final DeliveryLimits limits;
  /** Every origin read: this data centre's first, then the remote ones, by id. */
  private final Map<Integer, Origin> origins = new TreeMap<>();
  /**
   * Every message read and not yet delivered, in delivery order, with what it waits for: its
   * transaction's id (a multi-entity one may not be read whole yet) and, for a receiver homed
   * here, the other origins' dependencies.
   */
  private final TreeMap<Message, Waiting> pending = new TreeMap<>(DELIVERY_ORDER);
  /**
   * Multi-entity transactions whose decision was read but not yet every part: participant
   * entities still to come, by (origin, transaction id). Their messages wait (rule 11: a part
   * below the safe timestamp does not mean the transaction's other parts are).
   */
  private final Map<TransactionKey, Set<EntityId>> incomplete = new HashMap<>();
  /** Receivers with a message emitted and not yet reported (or waiting for its retry). */
  private final Set<EntityId> busyReceivers = new HashSet<>();
  /** Failed deliveries and when they are emitted again. */
  private final Map<Message, Long> retries = new HashMap<>();
  /** Failed attempts so far of each message being retried (the backoff's exponent). */
  private final Map<Message, Integer> attempts = new HashMap<>();
  private int inFlight;

  private record TransactionKey(int originDc, long transactionId) {}

  private record Waiting(TransactionKey transaction, DependencyVector otherOrigins) {}

  /**
   * A core that reads this data centre's own log only.
   *
   * @param originDc this data centre's id: the origin whose log is read
   * @param recordedWatermark the watermark as last recorded (0 if never)
   */
  public DeliveryCore(int originDc, long recordedWatermark, DeliveryLimits limits) {
    this(originDc, DependencyVector.of(Map.of(originDc, recordedWatermark)), Set.of(), limits);
  }

  /**
   * @param localDc this data centre's id
   * @param recordedWatermarks every origin's watermark as last recorded (absent: 0)
   * @param remoteOrigins the other data centres whose logs hold messages to receivers homed here
   *     (the peers; empty without replication)
   */
  public DeliveryCore(int localDc, DependencyVector recordedWatermarks, Set<Integer> remoteOrigins,
      DeliveryLimits limits) {
    Invariants.check(!remoteOrigins.contains(localDc),
        "data centre %d named among its own remote origins", localDc);
    this.localDc = localDc;
    this.limits = limits;
    origins.put(localDc, new Origin(localDc, true, recordedWatermarks.get(localDc)));
    for (int remote : new TreeSet<>(remoteOrigins)) {
      origins.put(remote, new Origin(remote, false, recordedWatermarks.get(remote)));
    }
    for (Origin origin : origins.values()) {
      Invariants.check(origin.recordedWatermark >= 0, "a delivered watermark of %d for %d",
          origin.recordedWatermark, origin.dc);
    }
  }

  /** Feeds one input; returns the effects to perform, in order. */
  public List<Effect> handle(Input input, long nowMillis) {
    List<Effect> effects = new ArrayList<>();
    switch (input) {
      case Input.Started ignored -> origins.values().forEach(origin -> read(origin, effects));
      case Input.EntriesRead read -> {
        ReplicationBatch batch = read.batch();
        Origin origin = origins.get(batch.originDc());
        Invariants.check(origin != null, "delivery read the log of data centre %d, which it"
            + " does not read", batch.originDc());
        origin.reading = false;
        boolean whole = accept(origin, batch, read.receiverHomes());
        dispatch(effects);
        // A batch with entries may have been cut by its size: read on at once (unless it went
        // past what this data centre has applied: the rest waits for the applied vector).
        if (!batch.entries().isEmpty() && whole) {
          read(origin, effects);
        }
      }
      case Input.OriginAdded added -> {
        Invariants.check(added.recordedWatermark() >= 0, "a delivered watermark of %d for %d",
            added.recordedWatermark(), added.originDc());
        origins.putIfAbsent(added.originDc(),
            new Origin(added.originDc(), false, added.recordedWatermark()));
      }
      case Input.ReadFailed failed -> {
        Origin origin = origins.get(failed.originDc());
        Invariants.check(origin != null, "a failed read of an unknown origin %d",
            failed.originDc());
        origin.reading = false;
      }
      case Input.AppliedVectorRead applied -> {
        for (Origin origin : origins.values()) {
          if (!origin.local) {
            origin.readableUpTo = Math.max(origin.readableUpTo, applied.applied().get(origin.dc));
          }
        }
      }
      case Input.Delivered delivered -> {
        Message message = delivered.message();
        Origin origin = origins.get(message.originDc());
        Invariants.check(pending.remove(message) != null && origin.pending.remove(message),
            "a delivery reported for a message not in flight: %s", message);
        Invariants.check(busyReceivers.remove(message.receiver()),
            "a delivery reported for a receiver with nothing in flight: %s", message);
        attempts.remove(message);
        inFlight--;
        dispatch(effects);
        if (origin.pending.size() + 1 >= limits.maxPendingMessages()) {
          read(origin, effects); // reading had stopped at the bound
        }
      }
      case Input.DeliveryFailed failed -> {
        Message message = failed.message();
        Invariants.check(pending.containsKey(message),
            "a failed delivery of a message not in flight: %s", message);
        // The receiver stays busy: a later message to it must not overtake this one.
        int attempt = attempts.merge(message, 1, Integer::sum);
        retries.put(message, nowMillis + retryDelay(attempt));
      }
      case Input.WatermarkRecorded recorded -> {
        Origin origin = origins.get(recorded.originDc());
        Invariants.check(origin != null, "a watermark recorded for an unknown origin %d",
            recorded.originDc());
        origin.recording = false;
        origin.recordedWatermark = Math.max(origin.recordedWatermark, recorded.timestamp());
      }
      case Input.Tick ignored -> {
        List<Message> due = new ArrayList<>();
        retries.forEach((message, at) -> {
          if (at <= nowMillis) {
            due.add(message);
          }
        });
        due.sort(DELIVERY_ORDER);
        for (Message message : due) {
          retries.remove(message);
          effects.add(new Effect.Deliver(message));
        }
        dispatch(effects); // messages waiting for other origins' reads
        origins.values().forEach(origin -> read(origin, effects));
      }
    }
    for (Origin origin : origins.values()) {
      recordWatermark(origin, effects, nowMillis);
    }
    return effects;
  }

  /** The delay before a message's {@code attempt}-th retry: doubling, bounded. */
  private long retryDelay(int attempt) {
    long delay = limits.retryDelayMillis();
    for (int i = 1; i < attempt && delay < limits.maxRetryDelayMillis(); i++) {
      delay = delay == 0 ? 0 : delay * 2;
    }
    return Math.min(delay, limits.maxRetryDelayMillis());
  }

  /**
   * Takes the batch's entries up to what may be read; returns whether it took the whole batch
   * (false when a remote origin's entries went past its applied entry).
   */
  private boolean accept(Origin origin, ReplicationBatch batch, Map<EntityId, Integer> homes) {
    long lastTimestamp = -1;
    int index = 0;
    boolean whole = true;
    for (ReplicationEntry entry : batch.entries()) {
      if (entry.timestamp() <= origin.readUpTo) {
        continue; // read before (a batch overlapping the last one): never numbered twice
      }
      if (entry.timestamp() > origin.readableUpTo) {
        whole = false; // not applied here yet; a read never splits a timestamp, so neither do we
        break;
      }
      if (entry.timestamp() != lastTimestamp) {
        lastTimestamp = entry.timestamp();
        index = 0;
      }
      switch (entry) {
        case ReplicationEntry.Decision decision -> incomplete.put(
            new TransactionKey(origin.dc, decision.transactionId()),
            new HashSet<>(decision.participants()));
        case ReplicationEntry.Part part -> {
          TransactionKey transaction = new TransactionKey(origin.dc, part.transactionId());
          Set<EntityId> waiting = incomplete.get(transaction);
          if (waiting != null) {
            waiting.remove(part.entity());
            if (waiting.isEmpty()) {
              incomplete.remove(transaction);
            }
          }
          for (Operation operation : part.operations()) {
            if (operation instanceof Operation.SendMessage send) {
              // Numbered whether delivered here or not: one name everywhere.
              Message message = new Message(origin.dc, part.timestamp(), index++, part.entity(),
                  send.receiver(), send.action(), send.args(), part.dependencies());
              Integer home = homes.get(send.receiver());
              if (deliversHere(origin, home)) {
                pending.put(message, new Waiting(transaction,
                    home == null ? DependencyVector.EMPTY : otherOrigins(origin, message)));
                origin.pending.add(message);
              }
            }
          }
        }
      }
    }
    // The batch holds every entry in (after, upTo], and every one of them up to the readable
    // bound was taken above.
    origin.readUpTo = Math.max(origin.readUpTo,
        Math.min(batch.upToTimestamp(), origin.readableUpTo));
    return whole && batch.upToTimestamp() <= origin.readableUpTo;
  }

  /**
   * The rule: this data centre's own messages are delivered here unless their receiver is of a
   * strong type homed elsewhere; another origin's only when their receiver is homed here.
   */
  private boolean deliversHere(Origin origin, Integer receiverHome) {
    return origin.local ? receiverHome == null || receiverHome == localDc
        : receiverHome != null && receiverHome == localDc;
  }

  /** The message's dependencies on the other origins this core reads (what must be read first). */
  private DependencyVector otherOrigins(Origin origin, Message message) {
    TreeMap<Integer, Long> others = new TreeMap<>();
    message.dependencies().entries().forEach((dc, timestamp) -> {
      if (dc != origin.dc && origins.containsKey(dc)) {
        others.put(dc, timestamp);
      }
    });
    return new DependencyVector(others);
  }

  /** Whether every other origin's log is read up to the message's dependencies on it. */
  private boolean otherOriginsRead(DependencyVector others) {
    for (Map.Entry<Integer, Long> entry : others.entries().entrySet()) {
      if (origins.get(entry.getKey()).readUpTo < entry.getValue()) {
        return false;
      }
    }
    return true;
  }

  /** Emits the first pending message of every idle receiver, in delivery order, up to the bound. */
  private void dispatch(List<Effect> effects) {
    if (inFlight >= limits.maxDelivering()) {
      return;
    }
    Set<EntityId> seen = new HashSet<>();
    for (Map.Entry<Message, Waiting> entry : pending.entrySet()) {
      if (inFlight >= limits.maxDelivering()) {
        return;
      }
      Message message = entry.getKey();
      Waiting waiting = entry.getValue();
      // Only a receiver's first pending message may go: the ones after it wait their turn, and
      // all of them while it waits for the rest of its transaction or for other origins' reads.
      if (seen.add(message.receiver()) && !incomplete.containsKey(waiting.transaction())
          && otherOriginsRead(waiting.otherOrigins())
          && busyReceivers.add(message.receiver())) {
        inFlight++;
        effects.add(new Effect.Deliver(message));
      }
    }
  }

  private void read(Origin origin, List<Effect> effects) {
    if (!origin.reading && origin.pending.size() < limits.maxPendingMessages()
        && origin.readUpTo < origin.readableUpTo) {
      origin.reading = true;
      effects.add(new Effect.Read(origin.dc, origin.readUpTo, limits.readBatchMaxEntries()));
    }
  }

  private void recordWatermark(Origin origin, List<Effect> effects, long nowMillis) {
    long watermark = origin.watermark();
    if (watermark > origin.recordedWatermark && !origin.recording
        && (origin.lastRecordMillis == Long.MIN_VALUE
            || nowMillis - origin.lastRecordMillis >= limits.watermarkRecordIntervalMillis())) {
      origin.recording = true;
      origin.lastRecordMillis = nowMillis;
      effects.add(new Effect.RecordWatermark(origin.dc, watermark));
    }
  }

  /**
   * The largest timestamp of this data centre's own log at or below which every message is read
   * and delivered. (A message waiting for the rest of its transaction is pending, so it holds the
   * watermark too.)
   */
  public long watermark() {
    return watermark(localDc);
  }

  /** {@link #watermark()} of any origin read; a skipped message never holds it. */
  public long watermark(int originDc) {
    return origins.get(originDc).watermark();
  }

  /** This data centre's watermark as last recorded durably: the bound for truncating its log. */
  public long recordedWatermark() {
    return recordedWatermark(localDc);
  }

  /** An origin's watermark as last recorded durably: the bound for truncating its entries. */
  public long recordedWatermark(int originDc) {
    return origins.get(originDc).recordedWatermark;
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
