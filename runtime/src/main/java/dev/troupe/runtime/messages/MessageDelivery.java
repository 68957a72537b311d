package dev.troupe.runtime.messages;

import dev.troupe.model.EntityId;
import dev.troupe.model.Invariants.InvariantViolation;
import dev.troupe.model.Operation;
import dev.troupe.model.causal.DataCentreIds;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.Messages;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.model.causal.ReplicationEntry;
import dev.troupe.replication.DeliveryCore;
import dev.troupe.replication.DeliveryCore.Effect;
import dev.troupe.replication.DeliveryCore.Input;
import dev.troupe.runtime.Troupe;
import dev.troupe.storage.ReplicationLog;
import dev.troupe.txn.Turn;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The runtime shell of {@link DeliveryCore}: delivers the causal messages of this node's own
 * replication log (docs/ARCHITECTURE.md, "Causal messages"). {@link Troupe} starts it when it
 * opens, on every node, named data centre or not.
 *
 * <p>Thin: every input is fed to the core on the shell's one thread (so the core needs no lock),
 * and the effects run there: a {@code Read} reads the local origin of the store's {@link
 * ReplicationLog} (up to its safe timestamp) and feeds the batch back; a {@code Deliver} runs
 * {@link Troupe#deliverMessage} and feeds its completion back when it comes; a {@code
 * RecordWatermark} records the watermark (a synced write on this thread) and, when no peer
 * replicates this DC's log (an unnamed DC), truncates the local log up to it; with peers the
 * replication shell truncates it, never above the recorded watermark. The core is ticked every
 * {@code poll-interval-millis}.
 *
 * <p><b>Receivers homed elsewhere, and here.</b> With peers, the core also reads each peer's log
 * as received here, up to the recorded applied vector (fed before every tick): the messages of
 * those logs to receivers of strong types homed here are delivered here, each with its origin's
 * marker, and each origin's watermark is recorded ({@link ReplicationLog#recordDelivered(int,
 * long)}), bounding that origin's truncation. While no strong type with actions may be homed here
 * ({@link Troupe#mayReceiveMessagesHomedHere}) a peer's log is not read at all: its read is
 * answered empty up to the applied entry, so a DC whose strong types receive nothing pays
 * nothing. Every batch goes with the homes of its messages' strong receivers ({@link
 * Troupe#receiverHome}); the core decides which are delivered here.
 *
 * <p><b>Recovery.</b> The core starts from the recorded watermark; messages delivered after it are
 * emitted again and the receivers' delivered markers make them no-ops (counted as such, not as
 * deliveries).
 */
public final class MessageDelivery implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(MessageDelivery.class);

  private final Troupe troupe;
  private final ReplicationLog replicationLog;
  private final int dataCentreId;
  private final boolean truncatesLocalLog;
  /**
   * The peers, whose logs may hold messages to receivers homed here: the configured ones, then
   * those added at runtime ({@link #peersAdded}); replaced whole, read on the delivery thread.
   */
  private volatile Set<Integer> remoteOrigins;
  private final DeliveryCore core;
  private final ScheduledExecutorService executor;
  private final Queue<Input> inputs = new ArrayDeque<>();
  private final LongAdder delivered = new LongAdder();
  private final LongAdder redelivered = new LongAdder();
  private final Map<String, LongAdder> failed = new ConcurrentHashMap<>();
  private volatile boolean closed;

  private MessageDelivery(Troupe troupe, MessageSettings settings) {
    this.troupe = troupe;
    this.replicationLog = troupe.store().replicationLog();
    this.dataCentreId = troupe.settings().storage().dataCentreId();
    this.truncatesLocalLog = !troupe.settings().replication().enabled();
    this.remoteOrigins = troupe.settings().replication().enabled()
        ? Set.copyOf(troupe.settings().replication().peerIds()) : Set.of();
    this.core = new DeliveryCore(dataCentreId,
        replicationLog.deliveredVector().atLeast(dataCentreId,
            replicationLog.deliveredWatermark()), remoteOrigins, settings.limits());
    this.executor = Executors.newSingleThreadScheduledExecutor(runnable -> {
      Thread thread = new Thread(runnable, "troupe-message-delivery");
      thread.setDaemon(true);
      return thread;
    });
  }

  /** Starts delivering from the recorded watermark. */
  public static MessageDelivery start(Troupe troupe, MessageSettings settings) {
    MessageDelivery delivery = new MessageDelivery(troupe, settings);
    delivery.feed(new Input.Started());
    delivery.executor.scheduleWithFixedDelay(delivery::tick,
        settings.pollIntervalMillis(), settings.pollIntervalMillis(), TimeUnit.MILLISECONDS);
    return delivery;
  }

  /**
   * Data centres that are now peers (added at runtime, or all peers as they are now): the logs of
   * those not read yet are read too, from their recorded watermarks, for messages to receivers
   * homed here. A removed peer's log stays read (what of it was applied may hold messages).
   */
  public void peersAdded(Set<Integer> dataCentres) {
    for (int dataCentre : new java.util.TreeSet<>(dataCentres)) {
      if (dataCentre != dataCentreId && !remoteOrigins.contains(dataCentre)) {
        Set<Integer> next = new java.util.TreeSet<>(remoteOrigins);
        next.add(dataCentre);
        remoteOrigins = Set.copyOf(next);
        feed(new Input.OriginAdded(dataCentre,
            replicationLog.deliveredVector().get(dataCentre)));
      }
    }
  }

  /** Messages whose receiving action ran. */
  public long deliveredCount() {
    return delivered.sum();
  }

  /** Deliveries found already done by the receiver's marker (after a restart): no-ops. */
  public long redeliveredCount() {
    return redelivered.sum();
  }

  /** Messages consumed without effect, by reason (the error code that stopped the action). */
  public Map<String, Long> failedCounts() {
    Map<String, Long> counts = new TreeMap<>();
    failed.forEach((reason, count) -> counts.put(reason, count.sum()));
    return counts;
  }

  /** Messages read and not yet delivered (a gauge). */
  public int pendingMessages() {
    return pending;
  }

  private volatile int pending;

  /** The delivered watermark as last recorded. */
  public long recordedWatermark() {
    return replicationLog.deliveredWatermark();
  }

  private void feed(Input input) {
    try {
      executor.execute(() -> handle(input));
    } catch (RejectedExecutionException closing) {
      // Closed: the watermark recorded last is where the next start resumes.
    }
  }

  /** On the shell's thread: the applied vector first, so a tick's reads are bounded by it. */
  private void tick() {
    if (!remoteOrigins.isEmpty()) {
      handle(new Input.AppliedVectorRead(replicationLog.appliedVector()));
    }
    handle(new Input.Tick());
  }

  /** On the shell's thread only. */
  private void handle(Input input) {
    if (closed) {
      return;
    }
    inputs.add(input);
    try {
      Input next;
      while ((next = inputs.poll()) != null) {
        for (Effect effect : core.handle(next, System.currentTimeMillis())) {
          perform(effect);
        }
      }
      pending = core.pendingMessages();
    } catch (InvariantViolation violation) {
      closed = true;
      troupe.reportFatalError("message delivery", violation);
    } catch (RuntimeException unexpected) {
      log.error("message delivery: unexpected failure; delivery stops", unexpected);
      closed = true;
    }
  }

  private void perform(Effect effect) {
    switch (effect) {
      case Effect.Read read -> {
        try {
          ReplicationBatch batch = read.originDc() == dataCentreId ? readLocal(read)
              : readRemote(read);
          inputs.add(new Input.EntriesRead(batch, receiverHomes(batch)));
        } catch (RuntimeException unavailable) {
          if (unavailable instanceof InvariantViolation violation) {
            throw violation;
          }
          log.debug("message delivery: reading the log of {} failed: {}", read.originDc(),
              unavailable.toString());
          inputs.add(new Input.ReadFailed(read.originDc()));
        }
      }
      case Effect.Deliver deliver -> {
        DeliveryCore.Message message = deliver.message();
        int origin = message.originDc() == dataCentreId
            ? Turn.DeliverMessage.LOCAL_ORIGIN : message.originDc();
        deliver(message, new Turn.DeliverMessage(origin, message.timestamp(), message.index(),
            message.sender(), message.action(), message.args()));
      }
      case Effect.RecordWatermark record -> {
        if (record.originDc() != dataCentreId) {
          replicationLog.recordDelivered(record.originDc(), record.timestamp())
              .whenComplete((ignored, failure) -> {
                if (failure != null) {
                  log.warn("message delivery: recording the watermark of {} failed: {}",
                      record.originDc(), failure.toString());
                }
              });
          inputs.add(new Input.WatermarkRecorded(record.originDc(),
              replicationLog.deliveredVector().get(record.originDc())));
          return;
        }
        replicationLog.recordDelivered(record.timestamp()).whenComplete((ignored, failure) -> {
          if (failure != null) {
            log.warn("message delivery: recording the watermark failed: {}", failure.toString());
          }
        });
        if (truncatesLocalLog && replicationLog.deliveredWatermark() >= record.timestamp()) {
          // Nobody replicates this log: what is delivered is no longer needed.
          replicationLog.truncate(DependencyVector.of(Map.of(dataCentreId, record.timestamp())))
              .whenComplete((ignored, failure) -> {
                if (failure != null) {
                  log.warn("message delivery: truncating the log failed: {}", failure.toString());
                }
              });
        }
        inputs.add(new Input.WatermarkRecorded(dataCentreId,
            replicationLog.deliveredWatermark()));
      }
    }
  }

  /**
   * Runs a receiving turn and reports how it went. A failure of a delivery (an action with sync
   * calls runs as a transaction, which fails whole) is sorted by {@link DeliveryFailures}: one
   * the action would meet at every attempt consumes the message with a turn of its own (the
   * marker alone, as a single-entity turn writes it); one of this attempt only is retried.
   */
  private void deliver(DeliveryCore.Message message, Turn.DeliverMessage turn) {
    troupe.deliverMessage(message.receiver(), turn).whenComplete((outcome, failure) -> {
      if (failure == null) {
        count(message, outcome);
        feed(new Input.Delivered(message));
        return;
      }
      switch (turn.consumedOutcome() == null ? DeliveryFailures.classify(failure)
          : new DeliveryFailures.Verdict.Retry()) {
        case DeliveryFailures.Verdict.AlreadyDelivered ignored -> {
          count(message, null);
          feed(new Input.Delivered(message));
        }
        case DeliveryFailures.Verdict.Consume consume -> deliver(message,
            turn.consumed(consume.outcome()));
        case DeliveryFailures.Verdict.Retry ignored -> {
          log.debug("message delivery: {} to {} not run, retried: {}", message.action(),
              message.receiver(), failure.toString());
          feed(new Input.DeliveryFailed(message));
        }
      }
    });
  }

  private ReplicationBatch readLocal(Effect.Read read) {
    // The safe timestamp first, then the types: an entry at or below it was written before it
    // was taken, so if it holds a message, a type that sends messages had been declared before
    // (a turn runs only once its type is), and the check below sees it. With none, everything up
    // to it is read without reading it: a node whose types send no messages spends nothing here,
    // and its log is truncated all the same.
    long safe = replicationLog.localSafeTimestamp();
    return troupe.mayHaveSentMessages()
        ? replicationLog.read(dataCentreId, read.afterTimestamp(), read.maxEntries())
        : new ReplicationBatch(dataCentreId, List.of(), Math.max(safe, read.afterTimestamp()));
  }

  /**
   * A peer's log, as received here. The applied vector first, then the types: a message applied
   * here to a receiver homed here was sent after its receiver's type was declared, so that
   * declaration is applied here too (it is among the sender's dependencies, or earlier in the
   * same log), and the check below sees it. With no strong type homed here, nothing is read.
   */
  private ReplicationBatch readRemote(Effect.Read read) {
    long applied = replicationLog.appliedVector().get(read.originDc());
    return troupe.mayReceiveMessagesHomedHere()
        ? replicationLog.read(read.originDc(), read.afterTimestamp(), read.maxEntries())
        : new ReplicationBatch(read.originDc(), List.of(),
            Math.max(applied, read.afterTimestamp()));
  }

  /** The home DC of each strong receiver of the batch's messages (causal ones absent). */
  private Map<EntityId, Integer> receiverHomes(ReplicationBatch batch) {
    Map<EntityId, Integer> homes = new HashMap<>();
    Set<EntityId> seen = new HashSet<>();
    for (ReplicationEntry entry : batch.entries()) {
      if (entry instanceof ReplicationEntry.Part part) {
        for (Operation operation : part.operations()) {
          if (operation instanceof Operation.SendMessage send && seen.add(send.receiver())) {
            String home = troupe.receiverHome(send.receiver());
            if (home != null) {
              homes.put(send.receiver(), DataCentreIds.of(home));
            }
          }
        }
      }
    }
    return homes;
  }

  private void count(DeliveryCore.Message message, String outcome) {
    if (outcome == null) {
      redelivered.increment();
    } else if (Messages.DELIVERED.equals(outcome)) {
      delivered.increment();
    } else {
      failed.computeIfAbsent(outcome, reason -> new LongAdder()).increment();
      log.debug("message delivery: {} from {} to {} consumed without effect: {}",
          message.action(), message.sender(), message.receiver(), outcome);
    }
  }

  /** Stops delivering; deliveries in flight finish, and the next start resumes. */
  @Override
  public void close() {
    closed = true;
    executor.shutdownNow();
    try {
      executor.awaitTermination(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
